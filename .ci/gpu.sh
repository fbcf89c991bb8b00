#!/usr/bin/env bash
# The one script for the GPU machine: build, run the whole GPU test suite, run
# it again under compute-sanitizer (memcheck, racecheck, initcheck, synccheck),
# run the benchmarks and the PyTorch comparison. Logs and results go to $OUT.
#
#   bash .ci/gpu.sh [stages...]     stages: build profile test sanitize bench compare
#                                   (default: build test sanitize bench compare)
#
# Environment: BUILD (build folder, or prebuilt binaries laid out as one),
# JOBS, SANITIZE_JOBS, SANITIZE_TIMEOUT (per run), STAGE_LIMIT (test+sanitize
# deadline, s), SHARDS and SHARDS_MID (gtest shards of the heaviest and the
# middle-weight binaries), SHARDS_RACECHECK (the heaviest under racecheck), BENCH_LIMIT, COMPARE_LIMIT, BENCH_ARGS, COMPARE_ARGS,
# COMMIT (what the benchmark report names; the device's copy of .git may lag),
# SANITIZERS (the compute-sanitizer tools the sanitize stage runs; default all four),
# GPU_TESTS (a regex of the test binaries the test and sanitize stages run; default all),
# PROFILE_FILTERS (the benchmarks the profile stage runs ncu on; copy/vector/ for the copy
# kernel), PROFILE_METRICS (memory: DRAM, L2, L1 and issue metrics instead of ncu's sections).
# The plain run and all four tools over the whole suite need more than one
# 420 s stage on 16 cores (run 217: racecheck finished, the other three were
# cut off): for a complete pass run `SANITIZERS=racecheck` and
# `SANITIZERS="memcheck initcheck synccheck"` as two calls.
# Every stage ends by its own deadline, leaving nothing running: do not wrap
# this script in `timeout` (that would orphan its jobs, which then disturb the
# benchmarks). Each stage prints one summary line; the last lines of the output
# are every stage's result.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/normkit-gpu-out}
BUILD=${BUILD:-build-gpu}
JOBS=${JOBS:-$(nproc)}
LOGS="$OUT/logs"  # per-run logs; packed into logs.tgz at the end ($OUT returns at most 8 files)
mkdir -p "$OUT" "$LOGS"
export LOGS
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(build test sanitize bench compare)
summary=()
want() { local s; for s in "${stages[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
note() { summary+=("$1"); echo "== $1"; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader | tee "$LOGS/gpu.txt"

if want build; then
  start=$SECONDS
  gen=(); keep_going=(-k)
  command -v ninja >/dev/null && { gen=(-G Ninja); keep_going=(-k 0); }
  # Keep going past a failing target, so that one broken benchmark does not cost the test run.
  cmake -S . -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DNORMKIT_BUILD_CAPI=ON >"$LOGS/configure.log" 2>&1 &&
    cmake --build "$BUILD" -j "$JOBS" -- "${keep_going[@]}" >"$LOGS/build.log" 2>&1
  rc=$?
  note "build: rc=$rc in $((SECONDS - start)) s"
  [ $rc -ne 0 ] && grep -m20 -B2 -A8 'error' "$LOGS/build.log"
fi

# GPU_TESTS: an extended regex of the test binaries to run (default: every one),
# e.g. 'test_gpu_(quant|row_counter)' to recheck what a change touched.
gpu_tests=$(ls "$BUILD"/test/test_gpu_* "$BUILD"/test/test_host_validation 2>/dev/null | grep -v -e '\.cmake$' -e '\[' |
  grep -E "${GPU_TESTS:-.}")
host_only_tests=$(ls "$BUILD"/test/test_host_* 2>/dev/null | grep -v -e '\.cmake$' -e '\[' -e validation)

# Runs one gtest binary, appending its totals to a file: name passed failed skipped rc seconds.
run_gtest() {  # tool binary totals_file [shard shards]
  local tool=$1 bin=$2 totals=$3 shard=${4:-0} shards=${5:-1} name log start rc limit
  name=$(basename "$bin")
  [ "$shards" -gt 1 ] && name="$name.$shard"
  # Never outlive the stage's deadline: a job that cannot start in time is
  # recorded as not run (rc 125) rather than left behind.
  limit=$((DEADLINE - $(date +%s)))
  if [ "$limit" -lt 10 ]; then
    echo "$name 0 0 0 125 0 na" >>"$totals"
    return
  fi
  [ "$limit" -gt "${SANITIZE_TIMEOUT:-300}" ] && limit=${SANITIZE_TIMEOUT:-300}
  export GTEST_SHARD_INDEX=$shard GTEST_TOTAL_SHARDS=$shards
  log="$LOGS/${tool}_${name}.log"
  start=$SECONDS
  if [ "$tool" = plain ]; then
    timeout "$limit" "$bin" --gtest_brief=0 >"$log" 2>&1
  else
    # Launch.FailedLaunchIsReported makes the runtime refuse two launches on
    # purpose; the sanitizers would count those API errors, so it runs plain only.
    # Racecheck (shared-memory hazards, which do not depend on the tensor's size)
    # skips Large.MoreThan2Pow31Elements: 2^31 elements through the staged kernel
    # took 331 s and then over 394 s under racecheck (device runs 17 and 24), past
    # one call's budget; test_gpu_shapes racechecks the same kernels, and
    # memcheck still runs the large test (its 64-bit offsets are the point).
    local exclude=-Launch.FailedLaunchIsReported
    [ "$tool" = racecheck ] && exclude="$exclude:Large.MoreThan2Pow31Elements"
    # Racecheck also narrows test_gpu_row_counter to one layout and batch.
    NKTEST_QUICK=1 NKTEST_RACECHECK=$([ "$tool" = racecheck ] && echo 1 || echo 0) timeout "$limit" compute-sanitizer --tool "$tool" --error-exitcode 99 \
      --print-limit 20 "$bin" --gtest_brief=0 --gtest_filter="$exclude" >"$log" 2>&1
  fi
  rc=$?
  local passed failed skipped errors
  passed=$(grep -c '^\[       OK \]' "$log")
  failed=$(grep -c '^\[  FAILED  \].*ms)' "$log")
  skipped=$(grep -c '^\[  SKIPPED \].*ms)' "$log")
  # memcheck, initcheck, synccheck: "ERROR SUMMARY: N errors"; racecheck:
  # "RACECHECK SUMMARY: H hazards displayed (N errors, W warnings)".
  errors=$(grep -m1 -o 'ERROR SUMMARY: [0-9]* error\|RACECHECK SUMMARY: .*([0-9]* error' "$log" |
    grep -o '[0-9]* error' | grep -o '[0-9]*' || true)
  echo "$name $passed $failed $skipped $rc $((SECONDS - start)) ${errors:-na}" >>"$totals"
}
export -f run_gtest
export OUT

summarize() {  # label totals_file
  awk -v label="$1" '{p+=$2; f+=$3; s+=$4; if ($5 != 0) bad = bad " " $1 "(rc=" $5 ")"; if ($7 != "na") e += $7}
       END {printf "%s: %d passed, %d failed, %d skipped, sanitizer errors %d%s\n", label, p, f, s, e, (bad ? ";" bad : "")}' "$2"
}

if want profile; then
  # Nsight Compute on a few kernels the performance notes discuss.
  start=$SECONDS
  # PROFILE_METRICS=memory: instead of the sections, the DRAM, L2, L1 and
  # issue metrics of docs/performance.md's measurement 153 (is a row bound
  # by L2, by DRAM or by issue?), one pass each, summed up in ncu_memory.txt.
  sel=(--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats)
  if [ "${PROFILE_METRICS:-}" = memory ]; then
    m=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
    m=$m,lts__t_sectors.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed
    m=$m,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum
    m=$m,lts__t_sectors_srcunit_tex_op_write.sum,l1tex__t_sector_hit_rate.pct
    m=$m,sm__inst_issued.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active
    sel=(--metrics "$m")
  fi
  # Names end in /iterations:1/manual_time, so filters end with '/' rather than '$'.
  for filter in ${PROFILE_FILTERS:-sweep/layer_norm/bf16/N:4096/ sweep/rms_norm/bf16/N:4096/ \
    sweep/layer_norm/bf16/N:262144/ sweep/rms_norm_fp8/bf16/N:4096/ small_batch/layer_norm/bf16/N:8192/M:32/}; do
    name=$(echo "$filter" | tr '/:' '__')
    # The copy benchmark's kernel for copy/vector/, normkit's kernels otherwise.
    kernels='regex:row|rows'
    case "$filter" in copy/*) kernels='regex:vector_copy' ;; esac
    NORMKIT_BENCH_SAMPLES=3 timeout 120 ncu --clock-control none --launch-skip 2 --launch-count 1 -k "$kernels" \
      "${sel[@]}" "$BUILD"/bench/normkit_bench --benchmark_filter="$filter" >"$LOGS/ncu_$name.txt" 2>&1
    if [ "${PROFILE_METRICS:-}" = memory ]; then
      echo "== $filter" >>"$LOGS/ncu_memory.txt"
      grep -E '^ +(gpu__|dram__|lts__|l1tex__|sm__)' "$LOGS/ncu_$name.txt" | awk '{print "  " $1, $3}' >>"$LOGS/ncu_memory.txt"
    fi
  done
  [ -f "$LOGS/ncu_memory.txt" ] && cat "$LOGS/ncu_memory.txt"
  note "profile: $((SECONDS - start)) s"
fi

# The plain runs and the sanitizer runs share one pool of parallel jobs (the
# sanitizers are mostly CPU-bound; the machine has 16 cores).
tools=()
want test && tools+=(plain)
want sanitize && tools+=(${SANITIZERS:-memcheck racecheck initcheck synccheck})
if [ ${#tools[@]} -gt 0 ]; then
  start=$SECONDS
  export DEADLINE=$(( $(date +%s) + ${STAGE_LIMIT:-420} ))
  for tool in "${tools[@]}"; do : >"$LOGS/totals_$tool.txt"; done
  # The binaries with the most GPU work run as gtest shards, so that the slow
  # sanitizers (racecheck) finish in parallel; under racecheck the two heaviest
  # take twice the shards (8 shards of test_gpu_shapes took 210-275 s each
  # there, against SANITIZE_TIMEOUT's 300: device runs 212 and 214), and the
  # racecheck runs are queued first, so that the longest jobs start first
  # instead of waiting behind the quick ones for a free slot.
  jobs_of() {  # tool
    local tool=$1 b shards i
    for b in $gpu_tests; do
      case "$(basename "$b")" in
        # Under racecheck test_gpu_shapes' shards ran past 300 s: shard 0 of
        # 16 in runs 258 and 264, of 32 in run 267, and in run 278 one test
        # took 263 s and cut off the test sharded with it (each such test is
        # now two). So one test a shard there: 45 shards for its 45 tests
        # (never more shards than tests: a shard with no test is a sanitizer
        # error; test_gpu_dtypes' 30 keep 16).
        test_gpu_shapes)
          shards=$([ "$tool" = racecheck ] && echo "${SHARDS_RACECHECK:-45}" || echo "${SHARDS:-8}") ;;
        test_gpu_dtypes) shards=$([ "$tool" = racecheck ] && echo 16 || echo "${SHARDS:-8}") ;;
        # test_gpu_fused under racecheck ran past 300 s whole (runs 258, 264); in 4 shards 78 s (run 265).
        test_gpu_fused) shards=$([ "$tool" = racecheck ] && echo 4 || echo 1) ;;
        # Under racecheck test_gpu_large keeps one test (the other is skipped
        # above), so a second shard would run none and the sanitizer would
        # report that as an error (device run 33).
        test_gpu_large) shards=$([ "$tool" = racecheck ] && echo 1 || echo "${SHARDS_MID:-2}") ;;
        # test_gpu_quant under racecheck ran past the stage whole (run 244: 420 s); in 4 shards its
        # shard 2 took 290 s of the 300 (run 304), so one test a shard: 10 shards for its 10 tests.
        test_gpu_quant) shards=$([ "$tool" = racecheck ] && echo 10 || echo "${SHARDS_MID:-2}") ;;
        # test_gpu_layout's first of 2 shards ran past 300 s under racecheck in run 267 (297 s in 264),
        # its first of 4 took 278 s in run 278.
        test_gpu_layout) shards=$([ "$tool" = racecheck ] && echo 6 || echo "${SHARDS_MID:-2}") ;;
        test_gpu_invariance | test_gpu_traps) shards=${SHARDS_MID:-2} ;;
        # One test a shard (as many shards as tests): test_gpu_offset's shard 0 of 3, which held
        # two tests, ran past 300 s under racecheck among 15 other jobs (forty-fifth session, run 10).
        test_gpu_offset) shards=4 ;;  # each checks rows up to 131072 (262144 plain)
        test_gpu_row_counter) shards=6 ;;  # rows of 131072-262144 in clusters
        *) shards=1 ;;
      esac
      for ((i = 0; i < shards; ++i)); do echo "$tool $b $i $shards"; done
    done
    [ "$tool" = plain ] && for b in $host_only_tests; do echo "$tool $b 0 1"; done
  }
  ordered=()
  for tool in "${tools[@]}"; do
    if [ "$tool" = racecheck ]; then ordered=("$tool" "${ordered[@]}"); else ordered+=("$tool"); fi
  done
  for tool in "${ordered[@]}"; do jobs_of "$tool"; done | xargs -P "${SANITIZE_JOBS:-16}" -L 1 bash -c 'run_gtest "$0" "$1" "$LOGS/totals_$0.txt" "$2" "$3"'
  for tool in "${tools[@]}"; do
    label=$([ "$tool" = plain ] && echo "tests" || echo "compute-sanitizer $tool")
    note "$(summarize "$label" "$LOGS/totals_$tool.txt")"
  done
  note "test and sanitize stages: $((SECONDS - start)) s"
  for tool in "${tools[@]}"; do echo "-- $tool"; cat "$LOGS/totals_$tool.txt"; done
  grep -h -A3 '^\[  FAILED  \]\|Failure$' "$LOGS"/plain_*.log 2>/dev/null | head -60
  grep -h '^\[ numerics \]\|^\[ cancel' "$LOGS"/plain_*.log 2>/dev/null
  grep -h -B2 -A12 '========= \(Invalid\|Race\|Uninitialized\|Barrier\|Error\)' "$LOGS"/memcheck_*.log \
    "$LOGS"/racecheck_*.log "$LOGS"/initcheck_*.log "$LOGS"/synccheck_*.log 2>/dev/null | head -80
fi

if want test; then
  # The examples check themselves against a host computation and exit non-zero on a mismatch.
  for ex in quickstart custom_kernel custom_epilogue; do
    if [ -x "$BUILD/examples/$ex" ]; then
      "$BUILD/examples/$ex" >"$LOGS/example_$ex.log" 2>&1
      note "example $ex: rc=$? $(tail -1 "$LOGS/example_$ex.log")"
    fi
  done
fi

if want bench; then
  start=$SECONDS
  timeout "${BENCH_LIMIT:-240}" "$BUILD"/bench/normkit_bench --benchmark_out="$OUT/bench.json" --benchmark_out_format=json \
    ${BENCH_ARGS:-} >"$LOGS/bench.txt" 2>&1
  rc=$?
  note "bench: rc=$rc in $((SECONDS - start)) s"
  python3 bench/report.py "$OUT/bench.json" --md "$OUT/benchmarks.md" --png "$OUT/benchmarks.png" \
    --commit "${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}" >"$LOGS/report.txt" 2>&1
  note "report: rc=$?"
  tail -30 "$LOGS/report.txt"
fi

if want compare; then
  start=$SECONDS
  PYTHONUNBUFFERED=1 timeout "${COMPARE_LIMIT:-300}" python3 bench/compare_pytorch.py --lib "$BUILD"/bench/libnormkit_capi.so \
    --out "$OUT/compare.json" ${COMPARE_ARGS:-} >"$LOGS/compare.txt" 2>&1
  note "compare: rc=$? in $((SECONDS - start)) s"
  tail -45 "$LOGS/compare.txt"
fi

printf '%s\n' "${summary[@]}" >"$LOGS/summary.txt"
tar czf "$OUT/logs-$(IFS=-; echo "${stages[*]}").tgz" -C "$OUT" logs && rm -rf "$LOGS"
echo
echo "==== summary"
printf '%s\n' "${summary[@]}"
