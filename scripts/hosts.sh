#!/usr/bin/env bash
# Four "hosts" on this machine, as network namespaces joined by veth pairs:
#
#   sim --multicast--> pub --zenoh/tcp--> sub1
#                          \--zenoh/tcp--> sub2
#
# The simulator multicasts generated FAST packets to the publisher host, which decodes them
# and publishes records over Zenoh to the two subscriber hosts; each echoes every record back
# for the round trip. Prints the publisher's latency table across hosts, then the same run
# on shared memory on one host, and each subscriber's count and one-way time (the hosts share
# this machine's clock, so each subscriber times the way from the publisher to itself). Exits non-zero unless both
# subscriber hosts (host a alone with --cut) received every record.
#
# Needs root and `ip netns` (or --loopback, below). Namespaces and links get names unique to
# this run and are removed on exit. Only addresses inside these namespaces are used.
#
# Faults (each subscriber's report then tells what it missed; the others must miss nothing):
#   --cut SECS     subscriber host b's link goes down for SECS seconds, --cut-at SECS (default
#                  1) after the simulator starts sending (and host b's connection shows), then
#                  comes back up
#   --slow MS      a third subscriber host c, screen class, stops reading for MS ms after its
#                  first record (its queue, 1024 records per type, drops the oldest)
#   --queue N      hosts a and b queue N records per type (default 4096): more than a run's
#                  records, and a host starved of CPU on a busy machine still drops none
#   --reliable     hosts a and b are recorders and the publisher waits when a link is
#                  congested: every record arrives even when a host stalls (a screen's link
#                  drops while its TCP window is full: a VM that stalls a host for 100 ms
#                  loses records there), and a stalled host slows the feed
# Throughput (--throughput): no simulator; the publisher host publishes the file as fast as
# the subscriber hosts take it (--block-when-congested, no echo), the subscribers are
# recorders; prints records/s publisher -> subscriber hosts, with none missed.
# --one: subscriber host a alone (no host b).
# --express: the publisher sends each record at once (Zenoh express) instead of letting Zenoh
# batch it with the next ones: lower latency, a costlier publish call.
# --zenoh-config FILE: a Zenoh configuration for the publisher and every subscriber (e.g.
# configs/zenoh/low-latency.json5; a relative path is taken from where the script runs).
# --spin: the subscribers poll by yielding the CPU instead of sleeping until a record comes
# (`subscribe --spin`, as `demo`'s subscriber does): no wake-up per record, for a machine with a
# core to spare for each subscriber (on 2 vCPUs it was no better: BENCHMARKS.md).
# --loopback: no namespaces (a container without `ip netns`, or no root): the same processes
# on this host, multicast and Zenoh over loopback, each subscriber on an endpoint of its own;
# no --cut (there is no link to cut).
#
# Usage: scripts/hosts.sh [-n COUNT] [-d simple|complex] [-s PAUSE_US] [-p PACKET_BYTES]
#                         [--cut SECS [--cut-at SECS]] [--slow MS] [--queue N] [--no-shm]
#                         [--throughput] [--one] [--express] [--spin] [--loopback] [--reliable]
#                         [--zenoh-config FILE] [--keep DIR]
#   -s: the simulator's pause between packets (default 20 us); -p: largest packet (1024).
#   FASTFEED_BIN: the fastfeed executable (default: $CARGO_TARGET_DIR or target, debug).
set -euo pipefail

count=20000
data=simple
shm=1
keep=""
pause=20
packet=1024
cut=""
cut_at=1
slow=""
queue=4096
throughput=0
express=0
one=0
loopback=0
reliable=0
spin=()
zconfig=()
while [ $# -gt 0 ]; do
  case "$1" in
    -n) count="$2"; shift 2 ;;
    -d) data="$2"; shift 2 ;;
    -s) pause="$2"; shift 2 ;;
    -p) packet="$2"; shift 2 ;;
    --cut) cut="$2"; shift 2 ;;
    --cut-at) cut_at="$2"; shift 2 ;;
    --slow) slow="$2"; shift 2 ;;
    --queue) queue="$2"; shift 2 ;;
    --throughput) throughput=1; shm=0; shift ;;
    --express) express=1; shift ;;
    --one) one=1; shift ;;
    --spin) spin=(--spin); shift ;;
    --loopback) loopback=1; shift ;;
    --reliable) reliable=1; shift ;;
    --zenoh-config) zconfig=(--zenoh-config "$(realpath "$2")"); shift 2 ;;
    --no-shm) shm=0; shift ;;
    --keep) keep="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/{/^set/!p}' "$0"; exit 0 ;;
    *) echo "hosts.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${FASTFEED_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug/fastfeed}"
[ -x "$bin" ] || { echo "hosts.sh: no fastfeed executable at $bin (cargo build -p fastfeed-cli, or set FASTFEED_BIN)" >&2; exit 2; }
if [ "$loopback" = 0 ]; then
  [ "$(id -u)" = 0 ] || { echo "hosts.sh: needs root (network namespaces; or --loopback)" >&2; exit 2; }
  command -v ip >/dev/null || { echo "hosts.sh: needs iproute2's ip (or --loopback)" >&2; exit 2; }
elif [ -n "$cut" ]; then
  echo "hosts.sh: --cut needs network namespaces (no --loopback)" >&2; exit 2
fi

# Unique per run: the pid and a random tag (interface names are at most 15 characters).
tag="$(printf '%08x' $(( (($$ << 15) | RANDOM) & 0xffffffff )))"
ns_sim="ffsim$tag" ns_pub="ffpub$tag" ns_a="ffsa$tag" ns_b="ffsb$tag" ns_c="ffsc$tag"
subs=(a b)
[ "$one" = 0 ] || subs=(a)
[ -z "$slow" ] || subs+=(c)
if [ "$one" = 1 ] && [ -n "$cut" ]; then echo "hosts.sh: --cut needs host b (no --one)" >&2; exit 2; fi
work="${keep:-$(mktemp -d)}"
mkdir -p "$work"
pids=()

cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for ns in "$ns_sim" "$ns_pub" "$ns_a" "$ns_b" "$ns_c"; do ip netns del "$ns" 2>/dev/null || true; done
  [ -n "$keep" ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

sub_ns() { case "$1" in a) echo "$ns_a" ;; b) echo "$ns_b" ;; c) echo "$ns_c" ;; esac; }
sub_net() { case "$1" in a) echo 2 ;; b) echo 3 ;; c) echo 4 ;; esac; }

# Addresses: the simulator's and the publisher's on their link, and a subscriber host's
# endpoint (the publisher's side of its link).
sim_ip=10.201.1.1 pub_ip=10.201.1.2
sub_ep() { echo "tcp/10.201.$(sub_net "$1").1:7447"; }
if [ "$loopback" = 1 ]; then
  sim_ip=127.0.0.1 pub_ip=127.0.0.1
  sub_ep() { echo "tcp/127.0.0.1:$(( 30000 + ($$ % 1000) * 8 + $(sub_net "$1") ))"; }
fi

if [ "$loopback" = 0 ]; then
for ns in "$ns_sim" "$ns_pub" $(for s in "${subs[@]}"; do sub_ns "$s"; done); do
  ip netns add "$ns"
  ip -n "$ns" link set lo up
done

# link NS1 ADDR1 NS2 ADDR2 NAME: a veth pair between two namespaces, a /24 each side.
link() {
  ip link add "v${5}a$tag" netns "$1" type veth peer name "v${5}b$tag" netns "$3"
  ip -n "$1" addr add "$2/24" dev "v${5}a$tag"
  ip -n "$3" addr add "$4/24" dev "v${5}b$tag"
  ip -n "$1" link set "v${5}a$tag" up
  ip -n "$3" link set "v${5}b$tag" up
}
link "$ns_sim" 10.201.1.1 "$ns_pub" 10.201.1.2 m
for s in "${subs[@]}"; do link "$ns_pub" "10.201.$(sub_net "$s").1" "$(sub_ns "$s")" "10.201.$(sub_net "$s").2" "$s"; done
# Multicast leaves the simulator host on its only link.
ip -n "$ns_sim" route add 224.0.0.0/4 dev "vma$tag"
fi

# A group of our own (239/8, administratively scoped), from the pid.
group="239.201.$(( ($$ >> 8) & 255 )).$(( $$ & 255 )):$(( 20000 + $$ % 20000 ))"
feed="hosts$tag"
file="$work/$data$count.dat"
"$bin" generate "$data" -o "$file" -n "$count" -p "$packet" >/dev/null

in_ns() {
  local ns="$1"; shift
  if [ "$loopback" = 1 ]; then "$@"; else ip netns exec "$ns" "$@"; fi
}

listen=()
for s in "${subs[@]}"; do
  ep="$(sub_ep "$s")"
  listen+=(--listen "$ep")
  extra=(--queue "$queue" --dump "$work/sub_$s.records" "${spin[@]}")
  [ "$reliable" = 0 ] || [ "$s" = c ] || extra+=(--recorder)
  [ "$s" != c ] || extra=(--stall-ms "$slow" --queue 1024 --dump "$work/sub_$s.records" "${spin[@]}")
  # Recorders, no echo, no dump: the publisher waits for them, and nothing else loads them.
  [ "$throughput" = 0 ] || extra=(--queue "$queue" --recorder --no-echo)
  in_ns "$(sub_ns "$s")" "$bin" subscribe --feed "$feed" --bus zenoh --connect "$ep" --idle-timeout 30 \
    "${zconfig[@]}" "${extra[@]}" --report-json "$work/sub_$s.json" >"$work/sub_$s.out" 2>&1 &
  pids+=($!)
done

fifo="$work/pub.fifo"
mkfifo "$fifo"
source=(-g "$group" -i "$pub_ip")
[ "$express" = 0 ] || source+=(--express)
[ "$reliable" = 0 ] || source+=(--block-when-congested)
[ "$throughput" = 0 ] || source=(-f "$file" --block-when-congested --no-echo)
in_ns "$ns_pub" "$bin" publish "$data" --feed "$feed" --bus zenoh "${listen[@]}" "${zconfig[@]}" \
  "${source[@]}" --wait-subscribers "${#subs[@]}" --idle-timeout 30 \
  --report-json "$work/pub.json" >"$fifo" 2>"$work/pub.err" &
pub_pid=$!
pids+=($pub_pid)
exec 3<"$fifo"
read -r -t 60 line <&3 || line=""
if [ "$line" != ready ]; then
  echo "hosts.sh: the publisher did not start:" >&2
  cat "$work/pub.err" >&2
  exit 1
fi
cutter=""
# Host b's established TCP connections (local -> peer): the same one after the cut means
# Zenoh's session outlived it; another means the session closed and --connect reconnected.
conns() { ip netns exec "$ns_b" ss -tnH state established 2>/dev/null | awk '{ print $3 "->" $4 }' | sort | tr '\n' ' '; }
if [ -n "$cut" ]; then
  # The subscriber host's side of its link: its session sees the network vanish.
  # The publisher is ready once host b's subscriber said hello; its connection is counted
  # from when ss shows it (up to 20 s), so the cut always falls on a live session.
  ( before="$(conns)" waited=0
    while [ -z "$before" ] && [ "$waited" -lt 200 ]; do
      sleep 0.1; waited=$((waited + 1)); before="$(conns)"
    done
    sleep "$cut_at"
    before="$(conns)"
    ip -n "$ns_b" link set "vbb$tag" down
    state="$(ip -n "$ns_b" -o link show "vbb$tag" | grep -o 'state [A-Z]*' || true)"
    echo "cut: link to host b down for $cut s (${state:-state unknown})" >"$work/cut.log"
    sleep "$cut"
    ip -n "$ns_b" link set "vbb$tag" up
    # Up to 5 s for a connection to show (a new session: --connect retries with back-off).
    after="" waited=0
    while [ -z "$after" ] && [ "$waited" -lt 50 ]; do
      sleep 0.1; waited=$((waited + 1)); after="$(conns)"
    done
    echo "cut: host b's TCP connections before: ${before:-none}; after the link came back: ${after:-none} (within $((waited / 10)).$((waited % 10)) s)" >>"$work/cut.log"
    if [ -n "$before" ] && [ "$before" = "$after" ]; then
      echo "cut: the Zenoh session outlived the cut" >>"$work/cut.log"
    elif [ -n "$after" ]; then
      echo "cut: the Zenoh session closed; host b reconnected" >>"$work/cut.log"
    else
      echo "cut: no connection on host b 5 s after the restore (the session closed and had not reconnected, or the run ended)" >>"$work/cut.log"
    fi ) &
  cutter=$!
fi
sim_start=$(date +%s.%N)
# Long pauses are slept: spinning through them would take a core from the hosts.
pacing=spin
[ "$pause" -lt 200 ] || pacing=sleep
[ "$throughput" = 1 ] || in_ns "$ns_sim" "$bin" multicast -f "$file" -g "$group" -i "$sim_ip" -s "$pause" --pacing "$pacing" -q
sim_end=$(date +%s.%N)
cat <&3 >"$work/pub.out"
pub_ok=0; wait "$pub_pid" || pub_ok=$?
[ -z "$cutter" ] || wait "$cutter"
declare -A sub_rc
for i in "${!subs[@]}"; do rc=0; wait "${pids[$i]}" || rc=$?; sub_rc[${subs[$i]}]=$rc; done
pids=()

if [ "$loopback" = 1 ]; then
  echo "== one host, loopback (--loopback): sim -> multicast -> publisher -> Zenoh (TCP) -> ${#subs[@]} subscriber(s)"
else
  echo "== across hosts: sim -> multicast -> publisher host -> Zenoh (TCP over veth) -> ${#subs[@]} subscriber host(s)"
fi
echo "== $data, $count messages"
sed -n '/^times in microseconds/,$p' "$work/pub.out"
[ "$throughput" = 0 ] || awk -v n="$(grep -m1 '^  "records":' "$work/pub.json" | tr -dc 0-9)" \
  -v ms="$(grep -m1 '"first_to_last_packet_ms":' "$work/pub.json" | sed 's/.*: *//; s/,//')" \
  'BEGIN { printf "throughput: %d records in %.1f ms: %.0f records/s from the publisher host to every subscriber host\n", n, ms, n / (ms / 1e3) }'
[ "$throughput" = 1 ] || echo "simulator sent for $(awk "BEGIN { printf \"%.2f\", $sim_end - $sim_start }") s"
[ ! -f "$work/cut.log" ] || cat "$work/cut.log"
for s in "${subs[@]}"; do
  # The hosts are namespaces of one machine: one clock, so each times the way to itself.
  oneway="$(grep -m1 '^one way from the publisher' "$work/sub_$s.out" || true)"
  [ -z "$oneway" ] || echo "subscriber host $s: $oneway"
  echo "subscriber host $s: $(tail -n 1 "$work/sub_$s.out")"
done

if [ "$shm" = 1 ]; then
  echo "== one host, shared memory (fastfeed demo --bus shm)"
  "$bin" demo "$data" -n "$count" -s 20 -g "239.202.$(( $$ & 255 )).1:$(( 20000 + $$ % 20000 ))" --bus shm \
    | sed -n '/^times in microseconds/,$p' || echo "(shared-memory demo failed)"
fi

# Each subscriber drains one record type after another: compare as multisets.
if [ -z "$cut" ] && [ "$throughput" = 0 ] && [ "$one" = 0 ] && ! cmp -s <(sort "$work/sub_a.records") <(sort "$work/sub_b.records"); then
  echo "hosts.sh: the two subscriber hosts received different records" >&2
  exit 1
fi
# The cut host b and the slow host c may miss records (their reports count them); the others
# must have every one.
whole=(a)
[ -n "$cut" ] || [ "$one" = 1 ] || whole+=(b)
failed=""
# Exit status 0 says every record was accounted for (received or counted missed); these
# hosts must also have missed none.
for s in "${whole[@]}"; do
  [ "${sub_rc[$s]}" = 0 ] && grep -q '^  "missed": 0,' "$work/sub_$s.json" || failed+=" $s"
done
if [ "$pub_ok" != 0 ] || [ -n "$failed" ]; then
  echo "hosts.sh: publisher exit $pub_ok; subscriber hosts that missed records or failed:${failed:- none}" >&2
  cat "$work/pub.err" >&2
  exit 1
fi
echo "hosts.sh: subscriber host(s) ${whole[*]} received every record"
