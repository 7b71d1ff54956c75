#!/usr/bin/env bash
# Issue 12's latency over Zenoh, for a many-core machine: the default transport (with
# --express) against configs/zenoh/low-latency.json5, alternated within each round, with Zenoh
# alone (the zping example) beside them as the floor. What BENCHMARKS.md's "The low-latency
# transport on 16 cores" ran.
# FF: the fastfeed binary (default target/release/fastfeed). ZPING: the zping example
# (`cargo build --release -p fastfeed-bus-zenoh --example zping`). ROUNDS (default 3).
# SECTIONS: packets (six records a packet), one (one record a packet), hosts
# (scripts/hosts.sh --loopback), ns (scripts/hosts.sh across network-namespace hosts, one
# record a packet, subscribers sleeping and spinning; needs root and `ip netns`); default all
# but ns.
# Usage: bench/zenoh/latency.sh > latency.txt
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
FF=${FF:-$root/target/release/fastfeed}
Z=${ZPING:-$root/target/release/examples/zping}
LL=$root/configs/zenoh/low-latency.json5
SECTIONS=${SECTIONS:-packets one hosts}
has() { case " $SECTIONS " in *" $1 "*) return 0 ;; esac; return 1; }
echo "== $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), $(date -u '+%F %H:%M:%S') UTC"
demo() { # the demo's one-way line, the round trip's percentiles and the subscriber's count
  local o; o=$(cd /tmp && timeout 90 "$FF" demo simple --pacing spin --bus zenoh "$@" 2>&1)
  echo "demo [$*]: $(grep -o 'one-way latency.*' <<<"$o") | $(grep -o 'round trip /record.*' <<<"$o" | awk '{print "rt p50",$8,"p90",$9,"p99",$10}') | $(grep -o 'received [0-9]* records' <<<"$o") $(grep -o 'missed [0-9]*' <<<"$o" | tail -1)"
}
for r in $(seq "${ROUNDS:-3}"); do
  echo "-- round $r $(date -u +%T)"
  if has packets || has one; then
    echo "zping low-latency, every 20 us: $(ZPING_LOWLATENCY=1 timeout 40 "$Z" 20000 20 2>&1 | tail -1)"
    echo "zping low-latency, every 100 us: $(ZPING_LOWLATENCY=1 timeout 40 "$Z" 10000 100 2>&1 | tail -1)"
  fi
  if has packets; then
    demo -n 60000 -p 100 -s 200 --express
    demo -n 60000 -p 100 -s 200 --zenoh-config "$LL"
  fi
  if has one; then
    demo -n 30000 -p 40 -s 100 --express
    demo -n 30000 -p 40 -s 100 --zenoh-config "$LL"
    demo -n 30000 -p 40 -s 200 --zenoh-config "$LL"
  fi
done
if has hosts; then
  echo "-- scripts/hosts.sh --loopback $(date -u +%T)"
  for cfg in "" "--zenoh-config $LL" "" "--zenoh-config $LL"; do
    # shellcheck disable=SC2086 # $cfg is two words or none
    FASTFEED_BIN=$FF timeout 100 "$root/scripts/hosts.sh" --loopback -n 20000 -p 100 -s 200 --no-shm $cfg 2>&1 \
      | grep -iE 'one.way|received|==' | head -6
  done
fi
if has ns; then
  echo "-- scripts/hosts.sh across namespace hosts $(date -u +%T)"
  for r in $(seq "${ROUNDS:-3}"); do
    for spin in "" --spin; do
      # shellcheck disable=SC2086 # $spin is one word or none
      echo "round $r ${spin:-sleeping}: $(FASTFEED_BIN=$FF timeout 100 "$root/scripts/hosts.sh" --one -n 20000 -p 40 -s 100 \
        --no-shm --zenoh-config "$LL" $spin 2>&1 | grep -iE 'one.way|hosts.sh:' | tr '\n' ' ')"
    done
  done
fi
echo "== done $(date -u +%T)"
