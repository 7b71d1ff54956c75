#!/usr/bin/env bash
# Two or more fastfeed builds side by side, alternating, three rounds: the minimum ns/msg of
# `bench decode` on complex30000 (interpreted and generated), MOEX increment_a, the simulator's
# simple data (interpreted and generated), and the feed handler's whole path
# (`handle configs/moex-forts.toml --bench`: line A, then lines A+B). For checking that a
# change (a code move, say) leaves the speed alone. SIMPLE: the simple data file.
# Usage: bench/ab.sh BINARY BINARY...
set -euo pipefail
. "$(dirname "$0")/common.sh"
printf "%-28s %8s %8s %8s %8s %8s  %s\n" binary cx_int cx_gen moex simple simple_gen "handler A, A+B"
for _ in 1 2 3; do
  for FF in "$@"; do
    a=$("$FF" bench decode -t $C/example.xml --framing len32le $C/complex30000.dat --passes 20 | min)
    g=$("$FF" bench decode --generated -t $C/example.xml --framing len32le $C/complex30000.dat --passes 20 | min)
    m=$("$FF" bench decode -t $M/templates.xml $M/increment_a.dat --passes 21 | min)
    s=$("$FF" bench decode -t crates/sim/templates/simple.xml --framing len32le --skip-header 4 \
      --reset-each-packet "$S" --passes 20 | min)
    sg=$("$FF" bench decode --generated -t crates/sim/templates/simple.xml --framing len32le \
      --skip-header 4 --reset-each-packet "$S" --passes 20 | min)
    h=$("$FF" handle configs/moex-forts.toml --bench --passes 11 2>&1 | awk '/whole path/{printf "%s ", $3}')
    printf "%-28s %8s %8s %8s %8s %8s  %s\n" "$FF" "$a" "$g" "$m" "$s" "$sg" "$h"
  done
done
