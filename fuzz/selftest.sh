#!/usr/bin/env bash
# Checks that fuzz/run.sh can fail: a fuzz check that always passes hides broken fuzz
# builds. A stand-in `cargo` plays each failure; no cargo-fuzz is needed.
set -euo pipefail
cd "$(dirname "$0")"
fake=$(mktemp -d)
artifact="artifacts/decode/crash-selftest-$$"
trap 'rm -rf "$fake"; rm -f "$artifact"; rmdir artifacts/decode artifacts 2>/dev/null || true' EXIT
fail=0
expect() { # expect WANT(pass|fail) WHAT COMMAND...
  local want=$1 what=$2
  shift 2
  if "$@" > "$fake/out" 2>&1; then got=pass; else got=fail; fi
  if [ "$got" = "$want" ]; then
    echo "ok: $what"
  else
    echo "FAILED: $what: run.sh should $want, did $got" >&2
    sed 's/^/  | /' "$fake/out" >&2
    fail=1
  fi
}
# cargo as the fuzz build would behave, chosen by FAKE_CARGO.
cat > "$fake/cargo" <<'SH'
#!/usr/bin/env bash
case "$FAKE_CARGO" in
  broken) echo "error[E0425]: cannot find value in this scope" >&2; exit 101 ;;
  finding) mkdir -p artifacts/decode && touch "$ARTIFACT"; echo "Done 10 runs"; exit 0 ;;
  clean) echo "Done 10 runs in 1 second(s)"; exit 0 ;;
esac
SH
chmod +x "$fake/cargo"
export ARTIFACT="$artifact"
expect fail "an unknown target fails" ./run.sh 1 nosuchtarget
expect fail "a zero duration fails" ./run.sh 0 decode
expect fail "a broken fuzz build fails" env PATH="$fake:$PATH" FAKE_CARGO=broken ./run.sh 1 decode
expect fail "a finding fails" env PATH="$fake:$PATH" FAKE_CARGO=finding ./run.sh 1 decode
rm -f "$artifact"
expect pass "a clean run passes" env PATH="$fake:$PATH" FAKE_CARGO=clean ./run.sh 1 decode
exit $fail
