#!/usr/bin/env bash
# The training run of a profile-guided build (bench/pgo/build.sh): the decoders on data that
# the races do not time. The simulator's complex, simple and OPRA-like data (interpreted and
# generated; the complex data's MarketData messages also re-encoded with mFAST's example.xml,
# so the decoder generated for it runs), and MOEX's line B and snapshot (line A is what the
# benchmarks time); the feed handler on the simulator's CME-style pcap and on MOEX line B.
# Also decode to JSON, to Parquet and to FIX, so those paths are not left cold.
# Usage: bench/pgo/train.sh FASTFEED WORKDIR
set -euo pipefail
FF=$1
W=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
T=$root/crates/sim/templates
C=${CORPUS:-$root/../shared/corpus}
M=$C/moex-forts-2013
mkdir -p "$W"
"$FF" generate complex -n 100000 --seed 7 -o "$W/complex.dat" 2> /dev/null
"$FF" generate simple -n 200000 --seed 7 -o "$W/simple.dat" 2> /dev/null
"$FF" generate opra -n 500000 --seed 7 -o "$W/opra.dat" > /dev/null 2>&1
cx="--framing len32le --skip-header 4 --reset-each-packet"
"$FF" decode -t "$T/complex.xml" $cx "$W/complex.dat" --only MarketData -o "$W/md.jsonl" 2> /dev/null
"$FF" encode -t "$C/mfast-complex/example.xml" --framing len32le "$W/md.jsonl" -o "$W/mfast.dat" 2> /dev/null
for g in "" --generated; do
  "$FF" bench decode $g -t "$T/complex.xml" $cx "$W/complex.dat" --passes 5 > /dev/null
  "$FF" bench decode $g -t "$C/mfast-complex/example.xml" --framing len32le "$W/mfast.dat" --passes 5 > /dev/null
  "$FF" bench decode $g -t "$T/simple.xml" $cx "$W/simple.dat" --passes 5 > /dev/null
  "$FF" bench decode $g -t "$T/opra.xml" --framing len32le --skip-header 6 --reset-each-packet \
    "$W/opra.dat" --passes 5 > /dev/null
  for f in increment_b snapshot; do
    "$FF" bench decode $g -t "$M/templates.xml" "$M/$f.dat" --passes 5 > /dev/null
  done
done
"$FF" bench decode -t "$T/complex.xml" $cx "$W/complex.dat" --passes 3 --threads 2 > /dev/null
# The feed handler's whole path: the simulator's CME-style pcap, and MOEX line B on both lines.
"$FF" generate cme -n 50000 -o "$W/cme.pcap" 2> /dev/null
sed "s|\"cme/sample.pcap\"|\"$W/cme.pcap\"|; s|\.\./crates/sim|$root/crates/sim|" \
  "$root/configs/cme.toml" > "$W/cme.toml"
sed "s|\.\./\.\./shared/corpus|$C|; s|increment_a\.dat|increment_b.dat|" \
  "$root/configs/moex-forts.toml" > "$W/moex-b.toml"
"$FF" handle "$W/cme.toml" --bench --passes 3 > /dev/null 2>&1
"$FF" handle "$W/moex-b.toml" --bench --passes 3 > /dev/null 2>&1
"$FF" decode -t "$M/templates.xml" "$M/increment_b.dat" -o "$W/out.jsonl" 2> /dev/null
"$FF" decode -t "$T/complex.xml" $cx "$W/complex.dat" --format parquet --template MarketData \
  --entries MDEntries -o "$W/md.parquet" 2> /dev/null
"$FF" fix decode -t "$M/templates.xml" "$M/increment_b.dat" -o "$W/out.fix" 2> /dev/null
