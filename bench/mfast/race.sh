#!/usr/bin/env bash
# Races fastfeed against mFAST side by side: alternating pairs in one run on one machine.
# Needs mFAST built by ../../../shared/reference/mfast/build.sh and ./build.sh into $REF_DIR
# (default /tmp/mfast-ref; or MFAST= the folder holding bench_mfast and bench_mfast_simple)
# and a release fastfeed ($FF, default target/release/fastfeed). COMPLEX: the folder of
# complex30000.dat (default ../shared/corpus/mfast-complex). SIMPLE: the simple data file.
# Usage: bench/mfast/race.sh [PAIRS]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
REF_DIR=${REF_DIR:-/tmp/mfast-ref}
FF=${FF:-$root/target/release/fastfeed}
BIN=${MFAST:-$REF_DIR/bin}
C=${COMPLEX:-$root/../shared/corpus/mfast-complex}
S=${SIMPLE:-/tmp/race-simple.dat}
[ -f "$S" ] || "$FF" generate simple -o "$S" > /dev/null
min() { awk '/^min /{print $2; exit}'; }
mf() { grep -o 'min_ns/msg=[0-9.]*' | cut -d= -f2; }
echo "machine: $(nproc) vCPU, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%F %H:%M') UTC"
echo "pair mfast_complex ff_interpreted ratio ff_generated ratio mfast_simple ff_simple ratio ff_simple_generated ratio"
for i in $(seq "${1:-7}"); do
  m=$("$BIN/bench_mfast" -f "$C/complex30000.dat" -m gen2 -n 20 | mf)
  f=$("$FF" bench decode -t "$C/example.xml" --framing len32le "$C/complex30000.dat" --passes 20 | min)
  g=$("$FF" bench decode --generated -t "$C/example.xml" --framing len32le "$C/complex30000.dat" --passes 20 | min)
  ms=$("$BIN/bench_mfast_simple" -f "$S" -h 4 -n 20 | mf)
  fs=$("$FF" bench decode -t "$root/crates/sim/templates/simple.xml" --framing len32le \
    --skip-header 4 --reset-each-packet "$S" --passes 20 | min)
  gs=$("$FF" bench decode --generated -t "$root/crates/sim/templates/simple.xml" --framing len32le \
    --skip-header 4 --reset-each-packet "$S" --passes 20 | min)
  awk -v i="$i" -v m="$m" -v f="$f" -v g="$g" -v ms="$ms" -v fs="$fs" -v gs="$gs" \
    'BEGIN { printf "%d %.1f %.1f %.2f %.1f %.2f %.1f %.1f %.2f %.1f %.2f\n", i, m, f, m/f, g, m/g, ms, fs, ms/fs, gs, ms/gs }'
done
