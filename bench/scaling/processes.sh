#!/usr/bin/env bash
# Is it the code or the machine? (issue 10: "find what stops N cores giving N x")
# Runs N independent single-thread `bench decode` processes, each pinned to its own CPU and
# sharing nothing (no threads, no counters, no cache lines, separate address spaces), and
# compares their summed speed-up with `bench decode --threads N` in one process. If the
# processes stop where the threads stop, what stops both is the machine (vCPUs sharing
# physical cores, busy neighbours, clocks), not fastfeed's threading.
# Then pairs: CPU 0 beside each other CPU, to find vCPUs that slow each other down.
# Then tables: N single-worker Parquet conversions of 1/N of a capture each, against one
# conversion of the whole with --threads N.
# FF: the fastfeed binary. C: the corpus folder. DIR: scratch. THREADS: the counts.
# Usage: bench/scaling/processes.sh > processes.txt
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
FF=${FF:-$root/target/release/fastfeed}
C=${C:-$root/../shared/corpus}
DIR=${DIR:-/tmp/ff-scaling}
mkdir -p "$DIR"
n=$(nproc)
THREADS=${THREADS:-"1 2 4 8 12 16"}
x=$C/mfast-complex
big=$DIR/complex16.dat
[ -f "$big" ] || for _ in $(seq 16); do cat "$x/complex30000.dat"; done > "$big"
[ -f "$DIR/simple.dat" ] || "$FF" generate simple -n "${SIMPLE_N:-4000000}" -o "$DIR/simple.dat" > /dev/null 2>&1
K=(-t "$x/example.xml" --framing len32le "$big")
S=(-t "$root/crates/sim/templates/simple.xml" --framing len32le --skip-header 4 --reset-each-packet "$DIR/simple.dat")
echo "== $n CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), $(date -u '+%F %H:%M') UTC"

# The median ns/msg of one pinned process: bench's "median" line, second field.
median() { awk '/^median /{print $2}'; }

# N pinned processes at once; prints each one's median ns/msg.
procs() {
  local count=$1 passes=$2; shift 2
  for c in $(seq 0 $((count - 1))); do
    taskset -c "$c" "$FF" bench decode "$@" --passes "$passes" > "$DIR/p$c.txt" 2>&1 &
  done
  wait
  for c in $(seq 0 $((count - 1))); do median < "$DIR/p$c.txt"; done
}

race() {
  local name=$1 ppasses=$2 tpasses=$3; shift 3
  local pbase tbase
  for round in 1 2; do
    for t in $THREADS; do
      [ "$t" -gt "$n" ] && continue
      ms=$(procs "$t" "$ppasses" "$@" | xargs)
      [ "$t" = 1 ] && pbase=$ms
      psum=$(echo "$ms" | awk -v b="$pbase" '{ s=0; for (i=1;i<=NF;i++) s+=b/$i; printf "%.2f", s }')
      pmin=$(echo "$ms" | tr ' ' '\n' | sort -n | head -1); pmax=$(echo "$ms" | tr ' ' '\n' | sort -n | tail -1)
      tm=$("$FF" bench decode "$@" --passes "$tpasses" --threads "$t" 2>&1 | median)
      [ "$t" = 1 ] && tbase=$tm
      awk -v nm="$name" -v r="$round" -v t="$t" -v ps="$psum" -v a="$pmin" -v b="$pmax" -v tb="$tbase" -v tm="$tm" \
        'BEGIN { printf "%-10s round %d  N %2d  processes %5.2fx (each %s-%s ns/msg)  threads %5.2fx (%.1f ns/msg wall)\n", nm, r, t, ps, a, b, tb/tm, tm }'
    done
  done
}

echo "== N pinned processes (sum of each one's speed over one alone) against --threads N (median of the passes)"
race complex16 21 41 "${K[@]}"
race simple4m 9 21 "${S[@]}"

echo "== pairs: CPU 0 and CPU j at once, each one's median ns/msg (complex30000 x16, 9 passes)"
alone=$(taskset -c 0 "$FF" bench decode "${K[@]}" --passes 9 2>&1 | median)
echo "cpu 0 alone $alone"
for j in $(seq 1 $((n - 1))); do
  taskset -c 0 "$FF" bench decode "${K[@]}" --passes 9 > "$DIR/a.txt" 2>&1 &
  taskset -c "$j" "$FF" bench decode "${K[@]}" --passes 9 > "$DIR/b.txt" 2>&1 &
  wait
  echo "cpu 0 with cpu $j: $(median < "$DIR/a.txt") / $(median < "$DIR/b.txt")"
done

echo "== tables: $n single-worker Parquet conversions of 1/$n of a capture each, at once, against --threads $n over the whole"
piece=$DIR/piece.dat
"$FF" generate complex -n "${PIECE_N:-1031250}" -o "$piece" > /dev/null 2>&1
for _ in $(seq "$n"); do cat "$piece"; done > "$DIR/whole.dat"
TB=(-t "$root/crates/sim/templates/complex.xml" --framing len32le --skip-header 4 --reset-each-packet
  --format parquet --template MarketData --entries MDEntries -q)
for round in 1 2; do
  s=$(date +%s.%N)
  for c in $(seq 0 $((n - 1))); do
    "$FF" decode "${TB[@]}" --threads 1 "$piece" -o "$DIR/piece$c.parquet" 2> /dev/null &
  done
  wait
  e=$(date +%s.%N)
  "$FF" decode "${TB[@]}" --threads "$n" "$DIR/whole.dat" -o "$DIR/whole.parquet" 2> /dev/null
  e2=$(date +%s.%N)
  awk -v r="$round" -v n="$n" -v a="$s" -v b="$e" -v c="$e2" -v sz="$(stat -c %s "$DIR/whole.dat")" \
    'BEGIN { printf "round %d: %d processes %.2f s (%.0f MB/s), --threads %d %.2f s (%.0f MB/s)\n", r, n, b-a, sz/(b-a)/1e6, n, c-b, sz/(c-b)/1e6 }'
  rm -f "$DIR"/piece*.parquet "$DIR/whole.parquet"
done
rm -f "$DIR/whole.dat" "$piece"
echo "== done $(date -u '+%H:%M:%S')"
