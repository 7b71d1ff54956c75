#!/usr/bin/env bash
# Decode and publish scaling across cores, for a many-core machine (issue 10): one script run
# start to end, each figure written as it is measured so a cut-off run keeps what it had.
# FF: the fastfeed binary (default target/release/fastfeed). MFAST: a folder holding
# bench_mfast and bench_mfast_simple (bench/mfast/build.sh), for the single-core race; left
# out, the race is skipped. C: the corpus folder (default ../shared/corpus). DIR: scratch space.
# COPIES, OPRA_N, SIMPLE_N, DEMO_N: the data sizes. THREADS: the thread counts (default 1 2 4 ... up to the cores, and the cores).
# SECTIONS: which parts run (default all: race cpus scale publish demo tables).
# TABLES_N: messages of the generated complex capture for the tables part (default 16500000, 1.1 GB).
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

SECTIONS=${SECTIONS:-race cpus scale publish demo tables}
has() { case " $SECTIONS " in *" $1 "*) return 0 ;; esac; return 1; }
# The share of CPU time the host took from this VM (steal) since the last call.
steal_prev=""
steal() {
  local now; now=$(awk '/^cpu /{t=0; for (i=2;i<=NF;i++) t+=$i; print $9, t}' /proc/stat)
  if [ -n "$steal_prev" ]; then
    awk -v a="$steal_prev" -v b="$now" 'BEGIN { split(a,x," "); split(b,y," ");
      d=y[2]-x[2]; v = d>0 ? 100*(y[1]-x[1])/d : 0; printf "steal %.1f%%", v }'
  fi
  steal_prev=$now
}
if [ -n "${MFAST:-}" ] && has race; then
  echo "== race with mFAST, one core: min ns/msg of 20 passes, alternating"
  FF=$FF MFAST=$MFAST COMPLEX=$x SIMPLE=$DIR/race-simple.dat "$root/bench/mfast/race.sh" 3
  mo=$C/moex-forts-2013
  echo "MOEX increment_a: $("$FF" bench decode -t "$mo/templates.xml" "$mo/increment_a.dat" --passes 21 | grep -E '^min')"
fi

# One line per run: name, threads, min and median ms per pass, speed-up over 1 thread.
scale() {
  local name=$1; shift
  local one=""
  for t in $THREADS; do
    steal > /dev/null
    out=$("$FF" bench decode "$@" --passes 11 --threads "$t" 2>&1)
    st=$(steal)
    ms=$(echo "$out" | awk '/^min /{m=$0} /^median /{d=$0} END {print m " | " d}')
    wall=$(echo "$out" | awk '/^min /{print $2}')
    [ -z "$one" ] && one=$wall
    awk -v n="$name" -v t="$t" -v w="$wall" -v o="$one" -v l="$ms" -v st="$st" \
      'BEGIN { printf "%-22s threads %2d  %.2fx  %s  %s\n", n, t, o/w, l, st }'
    echo "$out" | grep "^threads' own" || true
  done
}
O=(-t "$root/crates/sim/templates/opra.xml" --framing len32le --skip-header 6 --reset-each-packet "$DIR/opra.dat")
S=(-t "$root/crates/sim/templates/simple.xml" --framing len32le --skip-header 4 --reset-each-packet "$DIR/simple.dat")
K=(-t "$x/example.xml" --framing len32le "$big")
if has cpus; then
  echo "== one thread pinned on each CPU in turn: complex30000, min ns/msg of 11 passes (a slow CPU holds back every threaded pass)"
  for c in $(seq 0 $((n - 1))); do
    printf "cpu %2d %s\n" "$c" "$(taskset -c "$c" "$FF" bench decode -t "$x/example.xml" --framing len32le \
      "$x/complex30000.dat" --passes 11 | awk '/^min /{print $2}')"
  done
fi
has scale && {
echo "== decode scaling (bench decode --threads T, pinned one per physical core first, taking 64 KiB jobs or whole channels as they finish; --static: one fixed share each; ns/msg is wall time over all threads)"
scale complex16 "${K[@]}"
scale complex16-static "${K[@]}" --static
scale complex16-generated "${K[@]}" --generated
scale simple4m "${S[@]}"
scale opra8m "${O[@]}"
scale opra8m-static "${O[@]}" --static
scale opra8m-generated "${O[@]}" --generated
scale opra8m-by-channel "${O[@]}" --by-channel
scale opra8m-by-channel-static "${O[@]}" --by-channel --static
THREADS="$n" scale complex16-no-pin "${K[@]}" --no-pin
THREADS="1 $n" scale complex30000-small -t "$x/example.xml" --framing len32le "$x/complex30000.dat"

}
has publish && {
echo "== publisher scaling: publish opra -f opra.dat --no-echo --threads T (decode, convert, publish on shared memory, nobody subscribed)"
for t in $THREADS; do
  [ "$t" -gt 16 ] && continue
  echo "-- threads $t"
  timeout 120 "$FF" publish opra -f "$DIR/opra.dat" --no-echo --threads "$t" 2>&1 | grep -E '^== all|over all threads|^publisher capacity'
done

}
has demo && {
echo "== end to end: demo opra (multicast on loopback, publisher threads, subscriber echoing)"
for s in 0 1; do
  echo "-- demo opra -n ${DEMO_N:-4000000} -s $s"
  timeout 150 "$FF" demo opra -n "${DEMO_N:-4000000}" -s "$s" > "$DIR/demo-s$s.txt" 2>&1
  grep -E '^== all|over all threads|dropped|^subscriber:|^conditions:' "$DIR/demo-s$s.txt"
done
}
has scale && {
echo "== second round, for the noise"
scale complex16 "${K[@]}"
scale complex16-static "${K[@]}" --static
scale opra8m "${O[@]}"
scale opra8m-static "${O[@]}" --static
}
has tables && {
echo "== tables: decode --format parquet --threads T of a generated complex capture (issue 11: disk-bound speed)"
tb=$DIR/tables.dat
[ -f "$tb" ] || "$FF" generate complex -n "${TABLES_N:-16500000}" -o "$tb" > /dev/null
echo "input $(stat -c %s "$tb") bytes; disk: $(dd if=/dev/zero of="$DIR/dd.tmp" bs=1M count=1024 conv=fdatasync 2>&1 | tail -1)"
rm -f "$DIR/dd.tmp"
TB=(-t "$root/crates/sim/templates/complex.xml" --framing len32le --skip-header 4 --reset-each-packet "$tb")
for t in $THREADS; do
  for f in parquet; do
    start=$(date +%s.%N)
    /usr/bin/time -f "%U+%S s CPU, peak %M KB" -o "$DIR/time.txt" "$FF" decode "${TB[@]}" --format "$f" \
      --template MarketData --entries MDEntries -q --threads "$t" -o "$DIR/tables.$f" 2> /dev/null
    end=$(date +%s.%N)
    awk -v t="$t" -v f="$f" -v a="$start" -v b="$end" -v n="$(stat -c %s "$tb")" -v o="$(stat -c %s "$DIR/tables.$f")" \
      -v c="$(cat "$DIR/time.txt")" 'BEGIN { printf "%-8s threads %2d  %.2f s  %.0f MB/s in  %.0f MB/s out  %s\n", f, t, b-a, n/(b-a)/1e6, o/(b-a)/1e6, c }'
    rm -f "$DIR/tables.$f"
  done
done
}
echo "== done $(date -u '+%H:%M:%S')"
