// The launcher's contract on a device: bad input touches no memory, launches
// run on the caller's stream and inside CUDA graph capture, and a failed
// launch is reported as a Status, not dropped.
#include <gtest/gtest.h>

#include <vector>

#include <normkit/launch/launcher.cuh>

#include "test_support.h"

namespace {

using nktest::DeviceBuffer;
using nktest::DType;
using nktest::NormCall;
using nktest::Op;
using normkit::Status;

struct Buffers {
  DeviceBuffer x, y, stats;
  int64_t rows, cols;
  Buffers(int64_t m, int64_t n) : x(m * n * 2), y(m * n * 2), stats(m * 8), rows(m), cols(n) {
    EXPECT_EQ(cudaMemset(x.data(), 0x3C, x.size()), cudaSuccess);  // bf16 0x3C3C: about 0.0115
    EXPECT_EQ(cudaMemset(y.data(), 0xFF, y.size()), cudaSuccess);
    EXPECT_EQ(cudaMemset(stats.data(), 0xFF, stats.size()), cudaSuccess);
    // cudaMemset runs on the legacy stream, which a non-blocking stream does
    // not wait for: finish it before any test launches on such a stream.
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  NormCall call() const {
    NormCall c;
    c.x_type = c.y_type = c.w_type = DType::kBF16;
    c.x = x.data();
    c.y = y.data();
    c.mean = reinterpret_cast<float*>(stats.data());
    c.rstd = reinterpret_cast<float*>(stats.data()) + rows;
    c.rows = rows;
    c.cols = cols;
    return c;
  }
  bool outputs_untouched() const {
    std::vector<unsigned char> h(y.size()), s(stats.size());
    EXPECT_EQ(cudaMemcpy(h.data(), y.data(), h.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(s.data(), stats.data(), s.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    for (unsigned char b : h)
      if (b != 0xFF) return false;
    for (unsigned char b : s)
      if (b != 0xFF) return false;
    return true;
  }
};

TEST(Launch, BadInputTouchesNoMemory) {
  NK_REQUIRE_GPU();
  Buffers b(64, 1000);
  std::vector<NormCall> bad;
  NormCall c = b.call();
  c.eps = -1;
  bad.push_back(c);
  c = b.call();
  c.x_stride = 999;
  bad.push_back(c);
  c = b.call();
  c.y = static_cast<char*>(const_cast<void*>(c.x)) + 10;  // partial overlap
  bad.push_back(c);
  c = b.call();
  c.shape = normkit::Shape::kRowsPerWarp;  // a forced shape that cannot hold N = 2000
  c.cols = 2000;
  c.rows = 32;
  bad.push_back(c);
  c = b.call();
  c.cols = 0;
  bad.push_back(c);
  for (const NormCall& call : bad) {
    EXPECT_NE(nktest::launch(call), Status::kSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_TRUE(b.outputs_untouched());
  }
  NormCall none = b.call();
  none.rows = 0;
  EXPECT_EQ(nktest::launch(none), Status::kSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(b.outputs_untouched());
}

TEST(Launch, RunsOnTheCallersStreamAndInsideGraphCapture) {
  NK_REQUIRE_GPU();
  for (int64_t n : {100, 5000, 40000, 300000}) {  // a register, staged, cluster and streaming shape
    Buffers ref(8, n), graph(8, n);
    cudaStream_t stream;
    NK_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    NormCall c = ref.call();
    c.stream = stream;
    ASSERT_EQ(nktest::launch(c), Status::kSuccess);
    NK_CUDA_OK(cudaStreamSynchronize(stream));

    cudaGraph_t g;
    cudaGraphExec_t exec;
    NK_CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    NormCall gc = graph.call();
    gc.stream = stream;
    const Status captured = nktest::launch(gc);
    NK_CUDA_OK(cudaStreamEndCapture(stream, &g));
    ASSERT_EQ(captured, Status::kSuccess);
    EXPECT_TRUE(graph.outputs_untouched()) << "capture must not execute";
    NK_CUDA_OK(cudaGraphInstantiate(&exec, g, 0));
    NK_CUDA_OK(cudaGraphLaunch(exec, stream));
    NK_CUDA_OK(cudaStreamSynchronize(stream));
    std::vector<unsigned char> a(ref.y.size()), bb(graph.y.size());
    NK_CUDA_OK(cudaMemcpy(a.data(), ref.y.data(), a.size(), cudaMemcpyDeviceToHost));
    NK_CUDA_OK(cudaMemcpy(bb.data(), graph.y.data(), bb.size(), cudaMemcpyDeviceToHost));
    EXPECT_EQ(a, bb) << "graph replay differs from a direct launch, N=" << n;
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(g);
    cudaStreamDestroy(stream);
  }
}

__global__ void never_runs(int* out) { *out = 1; }

TEST(Launch, FailedLaunchIsReported) {
  NK_REQUIRE_GPU();
  // Every launcher launches through detail::launch_kernel. A configuration the
  // runtime refuses (2048 threads per CTA) must come back as kErrorCudaLaunch,
  // with the runtime's error cleared so that it does not surface in a later,
  // unrelated call.
  DeviceBuffer out(4);
  const normkit::Status s = normkit::detail::launch_kernel(&never_runs, 1, 2048, 0, 1, nullptr,
                                                          reinterpret_cast<int*>(out.data()));
  EXPECT_EQ(s, Status::kErrorCudaLaunch) << normkit::status_string(s);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  const normkit::Status too_much_smem =
      normkit::detail::launch_kernel(&never_runs, 1, 32, size_t{1} << 30, 1, nullptr, reinterpret_cast<int*>(out.data()));
  EXPECT_EQ(too_much_smem, Status::kErrorCudaLaunch);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

}  // namespace
