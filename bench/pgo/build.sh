#!/usr/bin/env bash
# A profile-guided release build of fastfeed: an instrumented build, a training run, then a
# build that uses the profile. Needs the llvm-tools component (`rustup component add
# llvm-tools`) for llvm-profdata. TRAIN: the training command, given the instrumented binary
# and a scratch folder (default bench/pgo/train.sh: the simulator's data and MOEX line B).
# Train on your own feed's templates and captures: most of the gain is the interpreter's
# indirect calls promoted for the field orders it saw (see BENCHMARKS.md, "Profile-guided").
# Usage: bench/pgo/build.sh [OUT]   (default target/pgo/fastfeed)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$root/target/pgo/fastfeed}
TARGET=${CARGO_TARGET_DIR:-$root/target}
TRAIN=${TRAIN:-$root/bench/pgo/train.sh}
profdata=$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | awk '/^host/{print $2}')/bin/llvm-profdata
[ -x "$profdata" ] || { echo "no llvm-profdata: rustup component add llvm-tools" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-generate=$work/raw" CARGO_TARGET_DIR="$TARGET/pgo-gen" \
  cargo build --release --locked -p fastfeed
LLVM_PROFILE_FILE="$work/raw/ff-%p-%m.profraw" "$TRAIN" "$TARGET/pgo-gen/release/fastfeed" "$work/data"
"$profdata" merge -o "$work/merged.profdata" "$work/raw"
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-use=$work/merged.profdata -Cllvm-args=-pgo-warn-missing-function=false" \
  CARGO_TARGET_DIR="$TARGET/pgo-use" cargo build --release --locked -p fastfeed
mkdir -p "$(dirname "$OUT")"
cp "$TARGET/pgo-use/release/fastfeed" "$OUT"
echo "profile-guided build: $OUT"
