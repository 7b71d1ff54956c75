#!/bin/sh
# The OPRA-like data's decode figures of BENCHMARKS.md ("OPRA-like data (issue 10)"):
# generates two million OPRA-like and simple messages, then alternates the runs ROUNDS times
# (default 3) in one session, printing each run's minimum and median ns/msg and msg/s.
# FF: the fastfeed binary (default target/release/fastfeed); DIR: where the data goes.
set -e
FF=${FF:-target/release/fastfeed}
DIR=${DIR:-/tmp}
ROUNDS=${1:-3}
[ -f "$DIR/opra2m.dat" ] || "$FF" generate opra -n 2000000 -o "$DIR/opra2m.dat"
[ -f "$DIR/simple2m.dat" ] || "$FF" generate simple -n 2000000 -o "$DIR/simple2m.dat"
O="-t crates/sim/templates/opra.xml --framing len32le --skip-header 6 --reset-each-packet $DIR/opra2m.dat --passes 21"
S="-t crates/sim/templates/simple.xml --framing len32le --skip-header 4 --reset-each-packet $DIR/simple2m.dat --passes 21"
uptime
round=1
while [ "$round" -le "$ROUNDS" ]; do
  for run in "opra-1:$O" "opra-2:$O --threads 2" "opra-2-bych:$O --threads 2 --by-channel" \
             "opra-gen-1:$O --generated" "opra-gen-2:$O --generated --threads 2 --by-channel" \
             "simple-1:$S" "simple-2:$S --threads 2"; do
    name=${run%%:*}; args=${run#*:}
    printf "%s %s " "$round" "$name"
    # shellcheck disable=SC2086
    "$FF" bench decode $args 2>/dev/null |
      awk '/^min/{printf "min %s ns %s msg/s ", $2, $5} /^median/{print "median", $2, "ns", $5, "msg/s"}'
  done
  round=$((round + 1))
done
uptime
