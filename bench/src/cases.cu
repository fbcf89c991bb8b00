// bench/src/cases.cu: see cases.hpp.
#include "cases.hpp"

#include <cstdlib>
#include <string>

#include "cuda_check.hpp"

namespace nkbench {
namespace {

void set_timing_counters(benchmark::State& state, const Timing& t, double bytes) {
  state.SetIterationTime(t.median_s);
  state.counters["bytes"] = bytes;
  state.counters["TBps"] = bytes / t.median_s * 1e-12;
  state.counters["min_us"] = t.min_s * 1e6;
  state.counters["max_us"] = t.max_s * 1e6;
  state.counters["spread"] = (t.max_s - t.min_s) / t.median_s;
}

/// The row counter every call gets (LaunchOptions::row_counter, what a
/// caller after the fastest cluster rows passes: docs/performance.md, change
/// 130); NORMKIT_BENCH_ROW_COUNTER=0 runs without one (the fixed stride), for
/// A/B runs. Allocated once, zero; each call leaves it zero.
uint32_t* bench_row_counter() {
  static uint32_t* const counter = [] {
    const char* env = std::getenv("NORMKIT_BENCH_ROW_COUNTER");
    if (env != nullptr && std::string(env) == "0") return static_cast<uint32_t*>(nullptr);
    void* p = nullptr;
    check(cudaMalloc(&p, 2 * sizeof(uint32_t)), "cudaMalloc (row counter)");
    check(cudaMemset(p, 0, 2 * sizeof(uint32_t)), "cudaMemset (row counter)");
    return static_cast<uint32_t*>(p);
  }();
  return counter;
}

}  // namespace

void run_norm_case(benchmark::State& state, const NormCase& c) {
  for (auto _ : state) {
    try {
      normkit::LaunchOptions opts{c.shape};
      opts.row_counter = bench_row_counter();
      normkit::LaunchPlan ran;  // what the timed calls ran (their stagger)
      opts.launched = &ran;
      normkit::LaunchPlan plan;
      check(c.op->plan(c.cols, opts, &plan), "normkit plan");
      OpInstance inst = c.op->setup(c.rows, c.cols, c.input_offset);
      const Launch launch = [&](cudaStream_t s) {
        check(inst.forward(s, opts), "normkit forward");
        check(cudaGetLastError(), "after normkit forward");
      };
      const Timing t = measure(launch, c.method);
      const int64_t bytes = c.op->bytes_moved(c.rows, c.cols);
      const double ceiling = copy_ceiling_tbps(bytes, c.method);
      set_timing_counters(state, t, static_cast<double>(bytes));
      state.counters["copy_TBps"] = ceiling;
      state.counters["copy_share"] = state.counters["TBps"].value / ceiling;
      state.counters["row_counter"] = opts.row_counter != nullptr ? 1 : 0;
      state.counters["start_stagger_cycles"] = ran.start_stagger_cycles;
      state.SetLabel(normkit::shape_name(plan.shape));
    } catch (const BenchError& e) {
      state.SkipWithError(e.what());
      break;
    }
  }
}

void run_copy_case(benchmark::State& state, CopyKind kind, int64_t bytes_moved, Method method) {
  for (auto _ : state) {
    try {
      const Timing t = time_copy(kind, bytes_moved, method);
      set_timing_counters(state, t, static_cast<double>(copy_moved_bytes(bytes_moved)));
      state.SetLabel(copy_kind_name(kind));
    } catch (const BenchError& e) {
      state.SkipWithError(e.what());
      break;
    }
  }
}

}  // namespace nkbench
