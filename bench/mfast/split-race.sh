#!/bin/bash
# old vs new binaries, alternating: min ns/msg
cd /work/main
C=../shared/corpus/mfast-complex; M=../shared/corpus/moex-forts-2013; S=/tmp/race-simple.dat
min() { awk '/^min /{print $2; exit}'; }
echo "load $(cut -d' ' -f1-3 /proc/loadavg) $(date -u +%H:%M)"
printf "%-6s %8s %8s %8s %8s %8s %s\n" bin cx_int cx_gen moex simple simple_gen handle
for r in 1 2 3; do
for b in "$@"; do
  FF=/tmp/ff-$b
  a=$($FF bench decode -t $C/example.xml --framing len32le $C/complex30000.dat --passes 20 | min)
  g=$($FF bench decode --generated -t $C/example.xml --framing len32le $C/complex30000.dat --passes 20 | min)
  m=$($FF bench decode -t $M/templates.xml $M/increment_a.dat --passes 21 | min)
  s=$($FF bench decode -t crates/sim/templates/simple.xml --framing len32le --skip-header 4 --reset-each-packet $S --passes 20 | min)
  sg=$($FF bench decode --generated -t crates/sim/templates/simple.xml --framing len32le --skip-header 4 --reset-each-packet $S --passes 20 | min)
  h=$($FF handle configs/moex-forts.toml --bench --passes 11 2>&1 | awk '/whole path/{print $3}' | tr "
" " ")
  printf "%-6s %8s %8s %8s %8s %8s %s\n" $b $a $g $m $s $sg "$h"
done
done
