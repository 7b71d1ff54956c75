#!/usr/bin/env bash
# Builds bench_mfast_packets: mFAST's generated decoder for the simulator's simple data, to race
# `fastfeed bench decode` against. Needs mFAST built by ../../../shared/reference/mfast/build.sh
# into $REF_DIR (default /tmp/mfast-ref); writes $REF_DIR/bin/bench_mfast_simple.
# mFAST has no uInt8/uInt16 (QuickFAST extensions): the templates are given to it with those
# fields as uInt32, which the wire encodes the same way (fastfeed also range-checks them).
# CXXFLAGS: more compiler flags (build-native.sh gives -march=native).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
REF_DIR=${REF_DIR:-/tmp/mfast-ref}
gen="$REF_DIR/build/src/fast_type_gen/fast_type_gen-1.3.0"
[ -x "$gen" ] || { echo "no mFAST build in $REF_DIR: run ../shared/reference/mfast/build.sh" >&2; exit 1; }
out="$REF_DIR/simple"
mkdir -p "$out" "$REF_DIR/bin"
sed -e 's/<uInt8 /<uInt32 /g; s#</uInt8>#</uInt32>#g; s/<uInt16 /<uInt32 /g; s#</uInt16>#</uInt32>#g' \
  "$here/../../crates/sim/templates/simple.xml" > "$out/simple.xml"
(cd "$out" && "$gen" simple.xml)
lib="$REF_DIR/build/src/mfast"
c++ -O3 -DNDEBUG ${CXXFLAGS:-} -DBOOST_ALL_NO_LIB -DMFAST_STATIC_DEFINE -DMFAST_CODER_STATIC_DEFINE \
  -I"$out" -I"$REF_DIR/mFAST/src" -I"$REF_DIR/mFAST/tinyxml2" \
  "$out/simple.cpp" "$here/bench_mfast_packets.cpp" -o "$REF_DIR/bin/bench_mfast_simple" \
  "$lib/libmfast.a" "$lib/coder/libmfast_coder.a" "$lib/xml_parser/libmfast_xml_parser.a" "$lib/libmfast.a"
echo "built $REF_DIR/bin/bench_mfast_simple"
