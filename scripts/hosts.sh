#!/usr/bin/env bash
# Four "hosts" on this machine, as network namespaces joined by veth pairs:
#
#   sim --multicast--> pub --zenoh/tcp--> sub1
#                          \--zenoh/tcp--> sub2
#
# The simulator multicasts generated FAST packets to the publisher host, which decodes them
# and publishes records over Zenoh to the two subscriber hosts; each echoes every record back
# for the round trip. Prints the publisher's latency table across hosts, then the same run
# on shared memory on one host, and each subscriber's count. Exits non-zero unless both
# subscriber hosts accounted for every record without missing any.
#
# Needs root and `ip netns`. Namespaces and links get names unique to this run and are
# removed on exit. Only addresses inside these namespaces are used.
#
# Usage: scripts/hosts.sh [-n COUNT] [-d simple|complex] [--no-shm] [--keep DIR]
#   FASTFEED_BIN: the fastfeed executable (default: $CARGO_TARGET_DIR or target, debug).
set -euo pipefail

count=20000
data=simple
shm=1
keep=""
while [ $# -gt 0 ]; do
  case "$1" in
    -n) count="$2"; shift 2 ;;
    -d) data="$2"; shift 2 ;;
    --no-shm) shm=0; shift ;;
    --keep) keep="$2"; shift 2 ;;
    -h|--help) sed -n 2,17p "$0"; exit 0 ;;
    *) echo "hosts.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${FASTFEED_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug/fastfeed}"
[ -x "$bin" ] || { echo "hosts.sh: no fastfeed executable at $bin (cargo build -p fastfeed-cli, or set FASTFEED_BIN)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "hosts.sh: needs root (network namespaces)" >&2; exit 2; }
command -v ip >/dev/null || { echo "hosts.sh: needs iproute2's ip" >&2; exit 2; }

# Unique per run: the pid and a random tag (interface names are at most 15 characters).
tag="$(printf '%x%04x' $$ $((RANDOM)))"
tag="${tag: -8}"
ns_sim="ffsim$tag" ns_pub="ffpub$tag" ns_a="ffsa$tag" ns_b="ffsb$tag"
work="${keep:-$(mktemp -d)}"
mkdir -p "$work"
pids=()

cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for ns in "$ns_sim" "$ns_pub" "$ns_a" "$ns_b"; do ip netns del "$ns" 2>/dev/null || true; done
  [ -n "$keep" ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for ns in "$ns_sim" "$ns_pub" "$ns_a" "$ns_b"; do
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
link "$ns_pub" 10.201.2.1 "$ns_a" 10.201.2.2 a
link "$ns_pub" 10.201.3.1 "$ns_b" 10.201.3.2 b
# Multicast leaves the simulator host on its only link.
ip -n "$ns_sim" route add 224.0.0.0/4 dev "vma$tag"

# A group of our own (239/8, administratively scoped), from the pid.
group="239.201.$(( ($$ >> 8) & 255 )).$(( $$ & 255 )):$(( 20000 + $$ % 20000 ))"
feed="hosts$tag"
file="$work/$data$count.dat"
"$bin" generate "$data" -o "$file" -n "$count" >/dev/null

in_ns() { local ns="$1"; shift; ip netns exec "$ns" "$@"; }

for s in a b; do
  if [ "$s" = a ]; then ns="$ns_a" ep=tcp/10.201.2.1:7447; else ns="$ns_b" ep=tcp/10.201.3.1:7447; fi
  in_ns "$ns" "$bin" subscribe --feed "$feed" --bus zenoh --connect "$ep" --idle-timeout 30 \
    --report-json "$work/sub_$s.json" --dump "$work/sub_$s.records" >"$work/sub_$s.out" 2>&1 &
  pids+=($!)
done

fifo="$work/pub.fifo"
mkfifo "$fifo"
in_ns "$ns_pub" "$bin" publish "$data" --feed "$feed" --bus zenoh \
  --listen tcp/10.201.2.1:7447 --listen tcp/10.201.3.1:7447 \
  -g "$group" -i 10.201.1.2 --wait-subscribers 2 --idle-timeout 30 \
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
in_ns "$ns_sim" "$bin" multicast -f "$file" -g "$group" -i 10.201.1.1 -s 20 -q
cat <&3 >"$work/pub.out"
pub_ok=0; wait "$pub_pid" || pub_ok=$?
sub_ok=0
for p in "${pids[@]:0:2}"; do wait "$p" || sub_ok=1; done
pids=()

echo "== across hosts: sim -> multicast -> publisher host -> Zenoh (TCP over veth) -> 2 subscriber hosts"
echo "== $data, $count messages"
sed -n '/^times in microseconds/,$p' "$work/pub.out"
for s in a b; do echo "subscriber host $s: $(tail -n 1 "$work/sub_$s.out")"; done

if [ "$shm" = 1 ]; then
  echo "== one host, shared memory (fastfeed demo --bus shm)"
  "$bin" demo "$data" -n "$count" -s 20 -g "239.202.$(( $$ & 255 )).1:$(( 20000 + $$ % 20000 ))" --bus shm \
    | sed -n '/^times in microseconds/,$p' || echo "(shared-memory demo failed)"
fi

# Each subscriber drains one record type after another: compare as multisets.
if ! cmp -s <(sort "$work/sub_a.records") <(sort "$work/sub_b.records"); then
  echo "hosts.sh: the two subscriber hosts received different records" >&2
  exit 1
fi
if [ "$pub_ok" != 0 ] || [ "$sub_ok" != 0 ]; then
  echo "hosts.sh: publisher exit $pub_ok, subscribers ok: $([ $sub_ok = 0 ] && echo yes || echo no)" >&2
  cat "$work/pub.err" >&2
  exit 1
fi
echo "hosts.sh: both subscriber hosts received every record"
