// bench/src/main.cu: normkit_bench. Refuses to run without a GPU; otherwise
// records the device in the JSON context, warms it up, registers the sets and
// runs Google Benchmark (all its --benchmark_* flags apply).
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>
#include <normkit/config.cuh>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "copy.hpp"
#include "cuda_check.hpp"
#include "gpu.hpp"
#include "suites.hpp"
#include "timing.hpp"

namespace {

void add_context(const nkbench::Gpu& g) {
  const cudaDeviceProp& p = g.prop;
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  benchmark::AddCustomContext("gpu_name", p.name);
  benchmark::AddCustomContext("gpu_compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor));
  benchmark::AddCustomContext("gpu_sm_count", std::to_string(p.multiProcessorCount));
  benchmark::AddCustomContext("gpu_l2_bytes", std::to_string(p.l2CacheSize));
  benchmark::AddCustomContext("gpu_memory_bytes", std::to_string(p.totalGlobalMem));
  benchmark::AddCustomContext("cuda_driver_version", std::to_string(driver));
  benchmark::AddCustomContext("cuda_runtime_version", std::to_string(runtime));
  benchmark::AddCustomContext("normkit_version", std::to_string(NORMKIT_VERSION_MAJOR) + "." +
                                                     std::to_string(NORMKIT_VERSION_MINOR) + "." +
                                                     std::to_string(NORMKIT_VERSION_PATCH));
  benchmark::AddCustomContext("samples_per_benchmark", std::to_string(nkbench::samples_per_measurement()));
  benchmark::AddCustomContext("launches_per_graph", std::to_string(nkbench::kLaunchesPerGraph));
  benchmark::AddCustomContext("timing", "median of samples; sweep: one launch per sample, L2 flushed (read of 2x L2) "
                                        "before each; small_batch: CUDA-graph replay, per call, no flush");
  if (const char* commit = std::getenv("NORMKIT_BENCH_COMMIT")) benchmark::AddCustomContext("commit", commit);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);  // handles --help and the --benchmark_* flags
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  std::string why;
  if (!nkbench::gpu_available(&why)) {
    std::fprintf(stderr,
                 "normkit_bench: no usable CUDA device (%s).\n"
                 "normkit_bench measures GPU kernels and reports nothing without a GPU; run it on a machine "
                 "with an NVIDIA GPU.\n",
                 why.c_str());
    return 2;
  }
  try {
    add_context(nkbench::gpu());
    // Raise the clocks before the first measurement, and fail early if the
    // binary has no kernel image for this device.
    for (int i = 0; i < 4; ++i) {
      nkbench::time_copy(nkbench::CopyKind::kVector, int64_t(1) << 30, nkbench::Method::kFlushed);
    }
  } catch (const nkbench::BenchError& e) {
    std::fprintf(stderr, "normkit_bench: the device cannot run benchmarks: %s\n", e.what());
    return 2;
  }
  nkbench::register_benchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
