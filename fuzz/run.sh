#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 900), seeded with the corpus data.
# Usage: fuzz/run.sh [SECONDS] [TARGET...]
# Needs cargo-fuzz (`cargo install cargo-fuzz`); libFuzzer's nightly flags run on the stable
# toolchain through RUSTC_BOOTSTRAP. Findings land in fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")"
secs="${1:-900}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(decode templates framing roundtrip)
shared=../../shared/corpus
export RUSTC_BOOTSTRAP=1

seed() { # seed DIR PREFIX-BYTE(octal) FILE SKIP LEN: one input = a set-picking byte + a slice
  mkdir -p "$1"
  { printf "\\$2"; dd if="$3" iflag=skip_bytes,count_bytes skip="$4" count="$5" status=none; } \
    > "$1/$(basename "$3")-$4"
}
if [ -d "$shared" ]; then
  seed corpus/decode 000 "$shared/mfast-complex/complex30000.dat" 4 66
  seed corpus/decode 001 "$shared/moex-forts-2013/increment_a.dat" 0 800
  seed corpus/decode 001 "$shared/moex-forts-2013/snapshot.dat" 0 800
  seed corpus/decode 002 "$shared/openfast-fpl/messages.fast" 0 119
  mkdir -p corpus/templates corpus/framing corpus/roundtrip
  cp "$shared"/*/*.xml corpus/templates/ 2>/dev/null || true
  head -c 4000 "$shared/mfast-complex/complex30000.dat" > corpus/framing/mfast
fi

for t in "${targets[@]}"; do
  mkdir -p "corpus/$t"
  echo "== fuzz $t for ${secs}s"
  cargo fuzz run "$t" "corpus/$t" -- -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 2>&1 |
    grep -E "^(#[0-9]+ +DONE|Done|==[0-9]+==|SUMMARY|artifact)|stat::" || true
  # A crash makes cargo fuzz exit non-zero and leaves an artifact: fail loudly.
  if compgen -G "artifacts/$t/*" > /dev/null; then
    echo "fuzz $t: findings in fuzz/artifacts/$t" >&2
    exit 1
  fi
done
