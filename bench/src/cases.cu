// bench/src/cases.cu: see cases.hpp.
#include "cases.hpp"

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

}  // namespace

void run_norm_case(benchmark::State& state, const NormCase& c) {
  for (auto _ : state) {
    try {
      const normkit::LaunchOptions opts{c.shape};
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
