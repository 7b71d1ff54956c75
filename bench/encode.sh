#!/usr/bin/env bash
# Encoding against decoding on every corpus set with messages to time (issue 10: encoding at
# most twice the decode time of the same messages), one or more builds alternated, three
# rounds: `bench decode` and `bench encode` min ns/msg and their ratio.
# Usage: bench/encode.sh BINARY BINARY...
set -euo pipefail
. "$(dirname "$0")/common.sh"
F=../shared/corpus/openfast-fpl
SIM=(-t crates/sim/templates/simple.xml --framing len32le --skip-header 4 --reset-each-packet "$S")
# Each set: a name, `bench encode`'s window, then bench's arguments.
sets=(
  "complex30000|16|-t $C/example.xml --framing len32le $C/complex30000.dat"
  "moex_incr_a|16|-t $M/templates.xml $M/increment_a.dat"
  "moex_incr_b|64|-t $M/templates.xml $M/increment_b.dat"
  "moex_snapshot|64|-t $M/templates.xml $M/snapshot.dat"
  "fpl_sample||-t $F/FASTTestTemplate.xml $F/messages.fast"
)
printf "%-24s %-14s %9s %9s %7s\n" binary set decode encode ratio
for _ in 1 2 3; do
  for FF in "$@"; do
    for s in "${sets[@]}"; do
      IFS='|' read -r name window args <<< "$s"
      # The FPL sample is three messages: many passes, no window (all of them at once).
      if [ -z "$window" ]; then passes=20001; win=(); else passes=11; win=(--window "$window"); fi
      # shellcheck disable=SC2086
      d=$("$FF" bench decode $args --passes $passes | min)
      # shellcheck disable=SC2086
      e=$("$FF" bench encode $args --passes $passes "${win[@]}" | min)
      printf "%-24s %-14s %9s %9s %7s\n" "$FF" "$name" "$d" "$e" "$(awk -v d="$d" -v e="$e" 'BEGIN{printf "%.2fx", e/d}')"
    done
    d=$("$FF" bench decode "${SIM[@]}" --passes 11 | min)
    e=$("$FF" bench encode "${SIM[@]}" --passes 11 --window 16 | min)
    printf "%-24s %-14s %9s %9s %7s\n" "$FF" simple "$d" "$e" "$(awk -v d="$d" -v e="$e" 'BEGIN{printf "%.2fx", e/d}')"
  done
done
