// bench/src/timing.cu: event-timed samples, flushed single launches and
// CUDA-graph replay, reduced to median, min and max.
#include "timing.hpp"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <type_traits>
#include <vector>

#include "cuda_check.hpp"
#include "gpu.hpp"

namespace nkbench {
namespace {

constexpr int kWarmupLaunches = 3;

template <class H, cudaError_t (*Destroy)(H)>
struct HandleDeleter {
  void operator()(H h) const noexcept { Destroy(h); }
};
using Event = std::unique_ptr<std::remove_pointer_t<cudaEvent_t>, HandleDeleter<cudaEvent_t, cudaEventDestroy>>;
using Graph = std::unique_ptr<std::remove_pointer_t<cudaGraph_t>, HandleDeleter<cudaGraph_t, cudaGraphDestroy>>;
using GraphExec =
    std::unique_ptr<std::remove_pointer_t<cudaGraphExec_t>, HandleDeleter<cudaGraphExec_t, cudaGraphExecDestroy>>;

Event make_event() {
  cudaEvent_t e = nullptr;
  check(cudaEventCreate(&e), "cudaEventCreate");
  return Event(e);
}

/// Times `samples` runs of `one_sample`, each between a pair of events, with
/// `before` (untimed) enqueued ahead of each; one synchronization at the end,
/// so the host never stalls the stream between samples.
template <class Before, class Body>
std::vector<double> event_samples(int samples, cudaStream_t stream, Before before, Body one_sample) {
  std::vector<Event> start, stop;
  for (int i = 0; i < samples; ++i) {
    start.push_back(make_event());
    stop.push_back(make_event());
  }
  for (int i = 0; i < samples; ++i) {
    before();
    check(cudaEventRecord(start[i].get(), stream), "cudaEventRecord");
    one_sample();
    check(cudaEventRecord(stop[i].get(), stream), "cudaEventRecord");
  }
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize after timed samples");
  std::vector<double> seconds(samples);
  for (int i = 0; i < samples; ++i) {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start[i].get(), stop[i].get()), "cudaEventElapsedTime");
    seconds[i] = ms * 1e-3;
  }
  return seconds;
}

Timing summarize(std::vector<double> seconds, double divisor) {
  std::sort(seconds.begin(), seconds.end());
  const size_t n = seconds.size();
  Timing t;
  t.samples = static_cast<int>(n);
  t.median_s = (n % 2 ? seconds[n / 2] : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2])) / divisor;
  t.min_s = seconds.front() / divisor;
  t.max_s = seconds.back() / divisor;
  return t;
}

Timing time_flushed(const Launch& launch, cudaStream_t stream) {
  for (int i = 0; i < kWarmupLaunches; ++i) launch(stream);
  auto seconds = event_samples(
      samples_per_measurement(), stream, [&] { flush_l2(stream); }, [&] { launch(stream); });
  return summarize(std::move(seconds), 1.0);
}

Graph capture(const Launch& launch, cudaStream_t stream) {
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  try {
    for (int i = 0; i < kLaunchesPerGraph; ++i) launch(stream);
  } catch (...) {
    cudaGraph_t broken = nullptr;
    (void)cudaStreamEndCapture(stream, &broken);  // leave the stream usable
    if (broken) cudaGraphDestroy(broken);
    (void)cudaGetLastError();
    throw;
  }
  cudaGraph_t g = nullptr;
  check(cudaStreamEndCapture(stream, &g), "cudaStreamEndCapture");
  return Graph(g);
}

Timing time_graph(const Launch& launch, cudaStream_t stream) {
  // Warm up outside the capture: first launches query and cache kernel
  // attributes, which need not (and should not) end up in the graph.
  for (int i = 0; i < kWarmupLaunches; ++i) launch(stream);
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize before capture");
  Graph graph = capture(launch, stream);
  cudaGraphExec_t raw = nullptr;
  check(cudaGraphInstantiate(&raw, graph.get(), 0), "cudaGraphInstantiate");
  GraphExec exec(raw);
  check(cudaGraphLaunch(exec.get(), stream), "cudaGraphLaunch (warm-up)");
  auto seconds = event_samples(
      samples_per_measurement(), stream, [] {},
      [&] { check(cudaGraphLaunch(exec.get(), stream), "cudaGraphLaunch"); });
  return summarize(std::move(seconds), kLaunchesPerGraph);
}

}  // namespace

int samples_per_measurement() {
  static const int n = [] {
    const char* env = std::getenv("NORMKIT_BENCH_SAMPLES");
    const int v = env ? std::atoi(env) : 0;
    return v > 0 ? v : 25;
  }();
  return n;
}

Timing measure(const Launch& launch, Method method) {
  const cudaStream_t stream = gpu().stream;
  return method == Method::kFlushed ? time_flushed(launch, stream) : time_graph(launch, stream);
}

}  // namespace nkbench
