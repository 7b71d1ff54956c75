#!/usr/bin/env bash
# The generated decoders only, two or more fastfeed builds alternating (ROUNDS, default
# three): the minimum ns/msg of `bench decode --generated` on complex30000 (20 passes), MOEX
# increment_a (21) and the simulator's simple data (20). bench/ab.sh times everything; this is
# the quicker check for a change to the generated code or to `primitives::Stops`.
# Usage: bench/abgen.sh BINARY BINARY...   (SIMPLE: the simple data file)
set -euo pipefail
. "$(dirname "$0")/common.sh"
printf "%-28s %8s %8s %8s\n" binary cx_gen moex_gen simple_gen
for _ in $(seq "${ROUNDS:-3}"); do
  for FF in "$@"; do
    g=$("$FF" bench decode --generated -t $C/example.xml --framing len32le $C/complex30000.dat --passes 20 | min)
    m=$("$FF" bench decode --generated -t $M/templates.xml $M/increment_a.dat --passes 21 | min)
    sg=$("$FF" bench decode --generated -t crates/sim/templates/simple.xml --framing len32le \
      --skip-header 4 --reset-each-packet "$S" --passes 20 | min)
    printf "%-28s %8s %8s %8s\n" "$FF" "$g" "$m" "$sg"
  done
done
