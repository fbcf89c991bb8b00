#!/usr/bin/env bash
# The one script for the GPU machine: build, run the whole GPU test suite, run
# it again under compute-sanitizer (memcheck, racecheck, initcheck, synccheck),
# run the benchmarks and the PyTorch comparison. Logs and results go to $OUT.
#
#   bash .ci/gpu.sh [stages...]     stages: build test sanitize bench compare (default: all)
#
# Each stage prints one summary line; the last lines of the output are a table
# of every stage's result.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/normkit-gpu-out}
BUILD=${BUILD:-build-gpu}
JOBS=${JOBS:-$(nproc)}
mkdir -p "$OUT"
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(build test sanitize bench compare)
summary=()
want() { local s; for s in "${stages[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
note() { summary+=("$1"); echo "== $1"; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader | tee "$OUT/gpu.txt"

if want build; then
  start=$SECONDS
  gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S . -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DNORMKIT_BUILD_CAPI=ON >"$OUT/configure.log" 2>&1 &&
    cmake --build "$BUILD" -j "$JOBS" >"$OUT/build.log" 2>&1
  rc=$?
  note "build: rc=$rc in $((SECONDS - start)) s"
  [ $rc -ne 0 ] && tail -40 "$OUT/build.log"
fi

gpu_tests=$(ls "$BUILD"/test/test_gpu_* "$BUILD"/test/test_host_* 2>/dev/null | grep -v -e '\.cmake$' -e '\[')

# Runs one gtest binary, appending its totals to a file: name passed failed skipped rc seconds.
run_gtest() {  # tool binary totals_file
  local tool=$1 bin=$2 totals=$3 name log start rc
  name=$(basename "$bin")
  log="$OUT/${tool}_${name}.log"
  start=$SECONDS
  if [ "$tool" = plain ]; then
    "$bin" --gtest_brief=0 >"$log" 2>&1
  else
    compute-sanitizer --tool "$tool" --error-exitcode 99 --print-limit 20 "$bin" --gtest_brief=0 >"$log" 2>&1
  fi
  rc=$?
  local passed failed skipped errors
  passed=$(grep -c '^\[       OK \]' "$log")
  failed=$(grep -c '^\[  FAILED  \].*ms)' "$log")
  skipped=$(grep -c '^\[  SKIPPED \].*ms)' "$log")
  errors=$(grep -m1 -o 'ERROR SUMMARY: [0-9]* error' "$log" | grep -o '[0-9]*' || true)
  echo "$name $passed $failed $skipped $rc $((SECONDS - start)) ${errors:-na}" >>"$totals"
}
export -f run_gtest
export OUT

summarize() {  # label totals_file
  awk -v label="$1" '{p+=$2; f+=$3; s+=$4; if ($5 != 0) bad = bad " " $1 "(rc=" $5 ")"; if ($7 != "na") e += $7}
       END {printf "%s: %d passed, %d failed, %d skipped, sanitizer errors %d%s\n", label, p, f, s, e, (bad ? ";" bad : "")}' "$2"
}

if want test; then
  start=$SECONDS
  : >"$OUT/totals_plain.txt"
  for b in $gpu_tests; do run_gtest plain "$b" "$OUT/totals_plain.txt"; done
  note "$(summarize tests "$OUT/totals_plain.txt") in $((SECONDS - start)) s"
  cat "$OUT/totals_plain.txt"
  grep -h -A3 '^\[  FAILED  \]\|Failure$' "$OUT"/plain_*.log | head -60
  grep -h '^\[ numerics \]\|^\[ cancel' "$OUT"/plain_*.log
fi

if want sanitize; then
  start=$SECONDS
  : >"$OUT/totals_sanitize.txt"
  for tool in memcheck racecheck initcheck synccheck; do
    for b in $gpu_tests; do echo "$tool $b"; done
  done | xargs -P "${SANITIZE_JOBS:-6}" -L 1 bash -c 'run_gtest "$0" "$1" "$OUT/totals_sanitize_$0.txt"'
  for tool in memcheck racecheck initcheck synccheck; do
    note "$(summarize "compute-sanitizer $tool" "$OUT/totals_sanitize_$tool.txt")"
  done
  note "sanitize stage: $((SECONDS - start)) s"
  grep -h -B2 -A12 '========= \(Invalid\|Race\|Uninitialized\|Barrier\|Error\)' "$OUT"/memcheck_*.log "$OUT"/racecheck_*.log \
    "$OUT"/initcheck_*.log "$OUT"/synccheck_*.log 2>/dev/null | head -80
fi

if want bench; then
  start=$SECONDS
  "$BUILD"/bench/normkit_bench --benchmark_out="$OUT/bench.json" --benchmark_out_format=json \
    ${BENCH_ARGS:-} >"$OUT/bench.txt" 2>&1
  rc=$?
  note "bench: rc=$rc in $((SECONDS - start)) s"
  python3 bench/report.py "$OUT/bench.json" --markdown "$OUT/benchmarks.md" --plot "$OUT/benchmarks.png" \
    --commit "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" >"$OUT/report.txt" 2>&1
  note "report: rc=$?"
  tail -30 "$OUT/report.txt"
fi

if want compare; then
  start=$SECONDS
  PYTHONUNBUFFERED=1 python3 bench/compare_pytorch.py --lib "$BUILD"/bench/libnormkit_capi.so \
    --out "$OUT/compare.json" ${COMPARE_ARGS:-} >"$OUT/compare.txt" 2>&1
  note "compare: rc=$? in $((SECONDS - start)) s"
  tail -45 "$OUT/compare.txt"
fi

echo
echo "==== summary"
printf '%s\n' "${summary[@]}"
