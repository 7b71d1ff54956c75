#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 900), seeded with the corpus data.
# Usage: fuzz/run.sh [SECONDS] [TARGET...]
# Needs cargo-fuzz (`cargo install cargo-fuzz`); libFuzzer's nightly flags run on the stable
# toolchain through RUSTC_BOOTSTRAP. Findings land in fuzz/artifacts/<target>/.
# Fails (non-zero) on an unknown target, a fuzz build or run that fails, or any finding:
# fuzz/selftest.sh checks that it does.
set -euo pipefail
cd "$(dirname "$0")"
secs="${1:-900}"
shift || true
if ! [[ "$secs" =~ ^[0-9]+$ ]] || [ "$secs" -eq 0 ]; then
  echo "fuzz/run.sh: SECONDS must be a positive number, not '$secs'" >&2
  exit 2
fi
all=(decode templates framing roundtrip generated capture handler tables)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
for t in "${targets[@]}"; do
  if [ ! -f "fuzz_targets/$t.rs" ]; then
    echo "fuzz/run.sh: no fuzz target '$t' (there are: ${all[*]})" >&2
    exit 2
  fi
done
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
  # The generated decoders' sets: 0 mFAST, 1 MOEX, 2 FPL (see fuzz_targets/generated.rs).
  seed corpus/generated 000 "$shared/mfast-complex/complex30000.dat" 4 66
  seed corpus/generated 101 "$shared/moex-forts-2013/increment_a.dat" 0 800
  seed corpus/generated 002 "$shared/openfast-fpl/messages.fast" 0 119
  # Tables: a set byte, then a shape byte (template, rows per message or per entry, batch).
  seed corpus/tables '000\020' "$shared/mfast-complex/complex30000.dat" 4 66
  seed corpus/tables '001\020' "$shared/moex-forts-2013/increment_a.dat" 0 800
  seed corpus/tables '001\000' "$shared/moex-forts-2013/snapshot.dat" 0 800
  mkdir -p corpus/templates corpus/framing corpus/roundtrip
  for f in "$shared"/*/*.xml; do # several folders hold a templates.xml
    cp "$f" "corpus/templates/$(basename "$(dirname "$f")")-$(basename "$f")"
  done
  head -c 4000 "$shared/mfast-complex/complex30000.dat" > corpus/framing/mfast
fi
# The spec's blocks: an overlong size 3, a block of size zero, a block of 2.
mkdir -p corpus/framing
printf '\x00\x83\x01\x02\x03\x80\x82\x04\x05' > corpus/framing/blocks
# A pcap of one UDP datagram (Ethernet, IPv4, 8 bytes of payload), run size byte first.
mkdir -p corpus/capture
printf '\x08\xd4\xc3\xb2\xa1\x02\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\x00\x00\x01\x00\x00\x00%b%b%b%b%b' \
  '\x00\x00\x00\x00\x00\x00\x00\x00\x32\x00\x00\x00\x32\x00\x00\x00' \
  '\x01\x00\x5e\x01\x01\x01\x02\x00\x00\x00\x00\x01\x08\x00' \
  '\x45\x00\x00\x24\x00\x00\x40\x00\x40\x11\x00\x00\x0a\x00\x00\x01\xef\x01\x01\x01' \
  '\x13\x88\x3e\x81\x00\x10\x00\x00' 'FASTDATA' > corpus/capture/one-datagram.pcap
# The same with a datagram of 16 bytes sent in two IPv4 fragments (16 bytes, then 8).
printf '\x08\xd4\xc3\xb2\xa1\x02\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\x00\x00\x01\x00\x00\x00%b%b%b%b%b%b%b%b%b%b' \
  '\x00\x00\x00\x00\x00\x00\x00\x00\x32\x00\x00\x00\x32\x00\x00\x00' \
  '\x01\x00\x5e\x01\x01\x01\x02\x00\x00\x00\x00\x01\x08\x00' \
  '\x45\x00\x00\x24\x00\x01\x20\x00\x40\x11\x00\x00\x0a\x00\x00\x01\xef\x01\x01\x01' \
  '\x13\x88\x3e\x81\x00\x18\x00\x00' 'FASTDATA' \
  '\x00\x00\x00\x00\x00\x00\x00\x00\x2a\x00\x00\x00\x2a\x00\x00\x00' \
  '\x01\x00\x5e\x01\x01\x01\x02\x00\x00\x00\x00\x01\x08\x00' \
  '\x45\x00\x00\x1c\x00\x01\x00\x02\x40\x11\x00\x00\x0a\x00\x00\x01\xef\x01\x01\x01' \
  'FASTDATA' > corpus/capture/two-fragments.pcap

log=$(mktemp)
trap 'rm -f "$log"' EXIT
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t"
  echo "== fuzz $t for ${secs}s"
  status=0
  cargo fuzz run "$t" "corpus/$t" -- -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
    > "$log" 2>&1 || status=$?
  # The summary lines only; the exit status and the artifacts decide.
  grep -E "^(#[0-9]+ +DONE|Done|==[0-9]+==|SUMMARY|artifact)|stat::" "$log" || true
  if [ "$status" -ne 0 ]; then
    tail -n 30 "$log" >&2
    echo "fuzz $t: cargo fuzz failed (exit $status): a broken build or a finding" >&2
    exit 1
  fi
  if compgen -G "artifacts/$t/*" > /dev/null; then
    echo "fuzz $t: findings in fuzz/artifacts/$t" >&2
    exit 1
  fi
done
