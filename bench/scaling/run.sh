#!/usr/bin/env bash
# Decode and publish scaling across cores, for a many-core machine (issue 10): one script run
# start to end, each figure written as it is measured so a cut-off run keeps what it had.
# FF: the fastfeed binary (default target/release/fastfeed). MFAST: a folder holding
# bench_mfast and bench_mfast_simple (bench/mfast/build.sh), for the single-core race; left
# out, the race is skipped. C: the corpus folder (default ../shared/corpus). DIR: scratch space.
# COPIES, OPRA_N, SIMPLE_N, DEMO_N: the data sizes. THREADS: the thread counts (default 1 2 4 ... up to the cores, and the cores).
# Usage: bench/scaling/run.sh > scaling.txt
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
FF=${FF:-$root/target/release/fastfeed}
C=${C:-$root/../shared/corpus}
DIR=${DIR:-/tmp/ff-scaling}
mkdir -p "$DIR"
n=$(nproc)
if [ -z "${THREADS:-}" ]; then
  THREADS=""; t=1
  while [ "$t" -lt "$n" ]; do THREADS="$THREADS $t"; t=$((t * 2)); done
  THREADS="$THREADS $n"
fi
echo "== machine: $n CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%F %H:%M') UTC"
lscpu | grep -E '^(Thread|Core|Socket|NUMA node|L2|L3|CPU max|CPU MHz)' || true
echo "cpu core_id package: $(for c in /sys/devices/system/cpu/cpu[0-9]*; do
  printf '%s:%s:%s ' "${c##*cpu}" "$(cat "$c/topology/core_id" 2>/dev/null)" \
    "$(cat "$c/topology/physical_package_id" 2>/dev/null)"; done)"

# Data big enough that a pass on every core is not over before the threads all start.
x=$C/mfast-complex
big=$DIR/complex16.dat
[ -f "$big" ] || for _ in $(seq "${COPIES:-16}"); do cat "$x/complex30000.dat"; done > "$big"
[ -f "$DIR/opra.dat" ] || "$FF" generate opra -n "${OPRA_N:-8000000}" -o "$DIR/opra.dat" > /dev/null
[ -f "$DIR/simple.dat" ] || "$FF" generate simple -n "${SIMPLE_N:-4000000}" -o "$DIR/simple.dat" > /dev/null
[ -f "$DIR/race-simple.dat" ] || "$FF" generate simple -o "$DIR/race-simple.dat" > /dev/null
ls -l "$DIR"

mf() { grep -o 'min_ns/msg=[0-9.]*' | cut -d= -f2; }
ffmin() { awk '/^min /{print $2; exit}'; }
if [ -n "${MFAST:-}" ]; then
  echo "== race with mFAST, one core: min ns/msg of 20 passes, alternating"
  echo "pair mfast_complex ff_interpreted ratio ff_generated ratio mfast_simple ff_simple ratio ff_simple_generated ratio"
  for i in 1 2 3; do
    m=$("$MFAST/bench_mfast" -f "$x/complex30000.dat" -m gen2 -n 20 | mf)
    f=$("$FF" bench decode -t "$x/example.xml" --framing len32le "$x/complex30000.dat" --passes 20 | ffmin)
    g=$("$FF" bench decode --generated -t "$x/example.xml" --framing len32le "$x/complex30000.dat" --passes 20 | ffmin)
    ms=$("$MFAST/bench_mfast_simple" -f "$DIR/race-simple.dat" -h 4 -n 20 | mf)
    fs=$("$FF" bench decode -t "$root/crates/sim/templates/simple.xml" --framing len32le \
      --skip-header 4 --reset-each-packet "$DIR/race-simple.dat" --passes 20 | ffmin)
    gs=$("$FF" bench decode --generated -t "$root/crates/sim/templates/simple.xml" --framing len32le \
      --skip-header 4 --reset-each-packet "$DIR/race-simple.dat" --passes 20 | ffmin)
    awk -v i="$i" -v m="$m" -v f="$f" -v g="$g" -v ms="$ms" -v fs="$fs" -v gs="$gs" \
      'BEGIN { printf "%d %.1f %.1f %.2f %.1f %.2f %.1f %.1f %.2f %.1f %.2f\n", i, m, f, m/f, g, m/g, ms, fs, ms/fs, gs, ms/gs }'
  done
  mo=$C/moex-forts-2013
  echo "MOEX increment_a: $("$FF" bench decode -t "$mo/templates.xml" "$mo/increment_a.dat" --passes 21 | grep -E '^min')"
fi

# One line per run: name, threads, min and median ms per pass, speed-up over 1 thread.
scale() {
  local name=$1; shift
  local one=""
  for t in $THREADS; do
    out=$("$FF" bench decode "$@" --passes 11 --threads "$t" 2>&1)
    ms=$(echo "$out" | awk '/^min /{m=$0} /^median /{d=$0} END {print m " | " d}')
    wall=$(echo "$out" | awk '/^min /{print $2}')
    [ -z "$one" ] && one=$wall
    awk -v n="$name" -v t="$t" -v w="$wall" -v o="$one" -v l="$ms" \
      'BEGIN { printf "%-22s threads %2d  %.2fx  %s\n", n, t, o/w, l }'
  done
}
O=(-t "$root/crates/sim/templates/opra.xml" --framing len32le --skip-header 6 --reset-each-packet "$DIR/opra.dat")
S=(-t "$root/crates/sim/templates/simple.xml" --framing len32le --skip-header 4 --reset-each-packet "$DIR/simple.dat")
K=(-t "$x/example.xml" --framing len32le "$big")
echo "== decode scaling (bench decode --threads T, pinned one per physical core first; ns/msg is wall time over all threads)"
scale complex16 "${K[@]}"
scale complex16-generated "${K[@]}" --generated
scale simple4m "${S[@]}"
scale opra8m "${O[@]}"
scale opra8m-generated "${O[@]}" --generated
scale opra8m-by-channel "${O[@]}" --by-channel
THREADS="$n" scale complex16-no-pin "${K[@]}" --no-pin
THREADS="1 $n" scale complex30000-small -t "$x/example.xml" --framing len32le "$x/complex30000.dat"

echo "== publisher scaling: publish opra -f opra.dat --no-echo --threads T (decode, convert, publish on shared memory, nobody subscribed)"
for t in $THREADS; do
  [ "$t" -gt 16 ] && continue
  echo "-- threads $t"
  timeout 120 "$FF" publish opra -f "$DIR/opra.dat" --no-echo --threads "$t" 2>&1 | grep -E '^== all|over all threads|^publisher capacity'
done

echo "== end to end: demo opra (multicast on loopback, publisher threads, subscriber echoing)"
for s in 0 1; do
  echo "-- demo opra -n ${DEMO_N:-4000000} -s $s"
  timeout 150 "$FF" demo opra -n "${DEMO_N:-4000000}" -s "$s" 2>&1 | grep -E '^== all|over all threads|dropped|^subscriber:|^conditions:|^one-way' | head -8
done
echo "== second round, for the noise"
scale complex16 "${K[@]}"
scale opra8m "${O[@]}"
echo "== done $(date -u '+%H:%M:%S')"
