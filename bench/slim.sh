#!/usr/bin/env bash
# Builds a slim normkit_bench on this (GPU-less) machine: the harness and only
# the op units named, from the headers of TREE, with extra compiler DEFINES
# (an experiment's macros). For A/B runs on the GPU machine (bench/ab.sh),
# where a full build of every op would cost minutes of device time. The
# harness objects are compiled once per OUTDIR and shared by its variants.
#
#   bash bench/slim.sh TREE OUTDIR NAME "DEFINES" op_unit...
#   e.g. bash bench/slim.sh ../exp carry/slim exp "-DNORMKIT_EXP_SOMETHING" rms_norm_bf16 add_rms_norm_bf16
# (libbenchmark is looked for where Debian and Ubuntu install it.)
#
# Writes OUTDIR/NAME (the binary) and copies libbenchmark (under its soname)
# beside it; run it there with LD_LIBRARY_PATH=OUTDIR.
set -euo pipefail
tree=$(cd "$1" && pwd) out=$2 name=$3 defines=$4
shift 4
here=$(cd "$(dirname "$0")" && pwd)
src=$here/src
mkdir -p "$out/common" "$out/$name.o"
flags=(-O3 -DNDEBUG --generate-code=arch=compute_90,code=[compute_90,sm_90] -std=c++17 -Xcompiler=-Wall,-Wextra)
pids=()
for f in main suites cases timing copy gpu fill op_registry; do
  [ -f "$out/common/$f.o" ] || { nvcc "${flags[@]}" -I"$tree/include" -c "$src/$f.cu" -o "$out/common/$f.o" & pids+=($!); }
done
for op in "$@"; do
  # shellcheck disable=SC2086
  nvcc "${flags[@]}" $defines -I"$tree/include" -c "$src/ops/$op.cu" -o "$out/$name.o/$op.o" & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
lib=$(ls /usr/lib/x86_64-linux-gnu/libbenchmark.so.1* | head -1)
g++ "$out"/common/*.o "$out/$name.o"/*.o -o "$out/$name" "$lib" -L/usr/local/cuda/lib64 -lcudart
soname=$(objdump -p "$lib" | awk '/SONAME/ {print $2}')
cp -L "$lib" "$out/$soname"
echo "built $out/$name"
