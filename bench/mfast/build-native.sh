#!/usr/bin/env bash
# Builds mFAST and both timing harnesses again with -march=native, into $NATIVE_DIR (default
# /tmp/mfast-native), to race a fastfeed built with RUSTFLAGS="-C target-cpu=native" on equal
# terms. Needs the portable build first (../../../shared/reference/mfast/build.sh into
# $REF_DIR, default /tmp/mfast-ref): its unpacked, patched source is built again here.
# Then: MFAST=$NATIVE_DIR/bin FF=<native fastfeed> bench/mfast/race.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
REF_DIR=${REF_DIR:-/tmp/mfast-ref}
NATIVE_DIR=${NATIVE_DIR:-/tmp/mfast-native}
[ -d "$REF_DIR/mFAST" ] || { echo "no mFAST source in $REF_DIR: run ../shared/reference/mfast/build.sh" >&2; exit 1; }
mkdir -p "$NATIVE_DIR/bin"
[ -d "$NATIVE_DIR/mFAST" ] || cp -r "$REF_DIR/mFAST" "$NATIVE_DIR/"
cmake -S "$NATIVE_DIR/mFAST" -B "$NATIVE_DIR/build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE="-O3 -DNDEBUG -march=native" -DBUILD_TESTS=OFF -DBUILD_PACKAGES=OFF >/dev/null
cmake --build "$NATIVE_DIR/build" --target bench_mfast -j"$(nproc)"
cp "$(find "$NATIVE_DIR/build" -name bench_mfast -type f -perm -u+x | head -1)" "$NATIVE_DIR/bin/bench_mfast"
REF_DIR=$NATIVE_DIR CXXFLAGS="-march=native" "$here/build.sh"
echo "built $NATIVE_DIR/bin/bench_mfast and bench_mfast_simple (-march=native)"
