#!/usr/bin/env bash
# One device lease's checks in one call (a 16-core machine lent for minutes), each part under
# its own timeout so a cut run keeps what it had. Parts (SECTIONS, default all):
#   cpus   each CPU's own speed (one pinned thread per CPU in turn)
#   race   the race with mFAST on the fastest CPU (RACE_PAIRS alternating pairs; with FF2, a
#          second fastfeed build, RACE_ROUNDS rounds of both builds in turn), MOEX increment_a
#   lat    Zenoh alone, then scripts/hosts.sh one record a packet over the low-latency transport,
#          subscribers sleeping and spinning (ROUNDS rounds): across network-namespace hosts
#          where `ip netns` works, else on loopback
#   thr    scripts/hosts.sh --throughput: records/s from one publisher to a recorder host
#   scale  decode scaling at 1 and all cores
# D: a folder holding fastfeed, zping, bench_mfast, bench_mfast_simple (stripped x86-64
# builds), corpus/{mfast-complex,moex-forts-2013} and, for a machine without iproute2, bin/ip.
# Usage: D=.dev bench/device/lease.sh | tee log
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
D=$(cd "${D:-$root/.dev}" && pwd)
FF=$D/fastfeed
n=$(nproc)
SECTIONS=${SECTIONS:-cpus race lat thr scale}
has() { case " $SECTIONS " in *" $1 "*) return 0 ;; esac; return 1; }
command -v ip > /dev/null || export PATH=$PATH:$D/bin
echo "== $(date -u '+%F %T') UTC: $n CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
lscpu | grep -E '^(Thread|Core|Socket|NUMA node|L2|L3|Hypervisor|Virtualization)' || true
netns=0
if out=$(ip netns add ff-lease-probe 2>&1); then ip netns del ff-lease-probe; netns=1; fi
echo "network namespaces: $netns $out ($(command -v ip))"
sc() { # SECS SECTIONS [VAR=VALUE...]: bench/scaling/run.sh's parts, on data it generates once
  local secs=$1 parts=$2; shift 2
  timeout "$secs" env FF="$FF" MFAST="$D" C="$D/corpus" DIR=/tmp/ff-lease OPRA_N=2000000 SIMPLE_N=2000000 \
    SECTIONS="$parts" "$@" "$root/bench/scaling/run.sh" 2>&1 | grep -v '^-\|^total\|^cpu core_id\|^generated\|^decode with'
}
# Each CPU's speed first: the race then runs on the fastest, both programs pinned to it, as
# these machines' vCPUs differ by up to 2x (BENCHMARKS.md, "Sixteen cores").
pin=()
if has cpus; then
  echo "== cpus $(date -u +%T)"
  sc 60 cpus | grep '^cpu' | tee /tmp/ff-lease-cpus.txt
  fast=$(sort -k3 -g /tmp/ff-lease-cpus.txt | awk 'NR == 1 {print $2}')
  [ -n "$fast" ] && pin=(taskset -c "$fast") && echo "fastest: CPU $fast"
fi
if has race; then
  echo "== race, ${pin[*]:-not pinned} $(date -u +%T)"
  mkdir -p /tmp/ff-lease
  # With FF2 (another build, e.g. $D/fastfeed-bmi), RACE_ROUNDS rounds alternate the two.
  for r in $(seq "${RACE_ROUNDS:-1}"); do
    for ff in "$FF" ${FF2:+"$FF2"}; do
      [ -n "${FF2:-}" ] && echo "-- round $r: $(basename "$ff")"
      FF=$ff MFAST=$D COMPLEX=$D/corpus/mfast-complex SIMPLE=/tmp/ff-lease/race-simple.dat \
        timeout 150 "${pin[@]}" "$root/bench/mfast/race.sh" "${RACE_PAIRS:-3}" | tail -n +2
    done
  done
  echo "MOEX increment_a: $("${pin[@]}" "$FF" bench decode -t "$D/corpus/moex-forts-2013/templates.xml" \
    "$D/corpus/moex-forts-2013/increment_a.dat" --passes 21 | grep -E '^min')"
fi
LL=$root/configs/zenoh/low-latency.json5
if has lat; then
  echo "== latency, one record a packet, low-latency transport $(date -u +%T)"
  for r in $(seq "${ROUNDS:-3}"); do
    echo "zping alone (loopback), every 20 us: $(ZPING_LOWLATENCY=1 timeout 40 "$D/zping" 20000 20 2>&1 | tail -1)"
    for where in ns loopback; do
      [ "$where" = ns ] && [ "$netns" = 0 ] && continue
      lo=""; [ "$where" = loopback ] && lo=--loopback
      for spin in "" --spin; do
        # shellcheck disable=SC2086 # $lo and $spin are one word or none
        echo "round $r $where ${spin:-sleeping}: $(FASTFEED_BIN=$FF timeout 45 "$root/scripts/hosts.sh" $lo --one \
          -n 20000 -p 40 -s 100 --no-shm --zenoh-config "$LL" $spin 2>&1 | grep -iE 'one.way|hosts.sh:|error' | tr '\n' ' ')"
      done
    done
  done
fi
if has thr; then
  echo "== throughput, one publisher to one recorder host $(date -u +%T)"
  lo=""; [ "$netns" = 0 ] && lo=--loopback
  for d in simple complex simple complex; do
    # shellcheck disable=SC2086 # $lo is one word or none
    echo "$d: $(FASTFEED_BIN=$FF timeout 60 "$root/scripts/hosts.sh" $lo --throughput --one -d "$d" -n 1000000 2>&1 \
      | grep -iE 'throughput:|missed|hosts.sh:|error' | tr '\n' ' ')"
  done
fi
has scale && { echo "== scaling $(date -u +%T)"; sc 90 scale THREADS="1 $n" | grep -E 'threads|own'; }
echo "== done $(date -u +%T)"
