#!/usr/bin/env bash
# Builds everything on this (GPU-less) machine and lays the GPU test, benchmark
# and C-ABI binaries out in prebuilt/ (ignored by git) for `.ci/gpu.sh`, so
# that device time is not spent compiling, and packs them into
# carry/prebuilt.tar.xz (about 26 MB; prebuilt/ itself is about 85 MB, past
# what the device tool carries). On the device (carry: carry):
#   tar xJf carry/prebuilt.tar.xz
#   export LD_LIBRARY_PATH=$PWD/prebuilt/test:$PWD/prebuilt/bench:$PWD/prebuilt/lib:/usr/local/cuda/lib64
#   BUILD=prebuilt bash .ci/gpu.sh test sanitize bench compare
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -DNORMKIT_BUILD_CAPI=ON >/dev/null
cmake --build "$build" -j "$(nproc)"
rm -rf prebuilt && mkdir -p prebuilt/test prebuilt/bench prebuilt/lib prebuilt/examples
cp "$build"/examples/quickstart "$build"/examples/custom_kernel "$build"/examples/custom_epilogue prebuilt/examples/
for f in "$build"/test/test_*; do
  case "$f" in *.cmake | *\[*) ;; *) cp "$f" prebuilt/test/ ;; esac
done
cp "$build"/test/libnormkit_test_support.so prebuilt/test/
cp "$build"/bench/normkit_bench "$build"/bench/libnormkit_capi.so prebuilt/bench/
lib=$(ldd "$build"/bench/normkit_bench | awk '/libbenchmark/ {print $3}')
[ -n "$lib" ] && cp "$lib" prebuilt/lib/
strip --strip-debug prebuilt/test/* prebuilt/bench/* prebuilt/examples/* 2>/dev/null || true
# (git's own exclude file: .git may be a file, in a worktree)
exclude=$(git rev-parse --git-path info/exclude 2>/dev/null || echo .git/info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx '/prebuilt/' "$exclude" 2>/dev/null || echo '/prebuilt/' >>"$exclude"
du -sh prebuilt
mkdir -p carry
grep -qx '/carry/' "$exclude" 2>/dev/null || echo '/carry/' >>"$exclude"
tar cf - prebuilt | xz -T"$(nproc)" -6 >carry/prebuilt.tar.xz
du -sh carry/prebuilt.tar.xz
