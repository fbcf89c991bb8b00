// bench/src/timing.hpp: how one launch is timed. Every benchmark, the copy
// ceilings included, goes through measure(), so ops and ceilings are always
// timed the same way.
#pragma once

#include <cuda_runtime.h>

#include <functional>

namespace nkbench {

/// Enqueues one call on the stream; throws BenchError if the call fails.
using Launch = std::function<void(cudaStream_t)>;

enum class Method {
  /// One launch per sample between CUDA events, the L2 flushed before each:
  /// what a large, memory-bound call costs from DRAM.
  kFlushed,
  /// Many launches captured into one CUDA graph, replayed and divided, no
  /// flush: the per-call cost of small batches without CPU launch overhead.
  kGraphReplay,
};

/// Seconds per call over the samples.
struct Timing {
  double median_s = 0;
  double min_s = 0;
  double max_s = 0;
  int samples = 0;
};

/// Samples per measurement: NORMKIT_BENCH_SAMPLES, else 25.
int samples_per_measurement();

/// Launches captured per graph in kGraphReplay.
inline constexpr int kLaunchesPerGraph = 200;

/// Times `launch` on the benchmark stream; throws BenchError on any failure.
Timing measure(const Launch& launch, Method method);

}  // namespace nkbench
