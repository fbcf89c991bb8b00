// bench/src/gpu.cu: device discovery, the benchmark stream and the L2 flush.
#include "gpu.hpp"

#include <cstdint>

#include "cuda_check.hpp"

namespace nkbench {
namespace {

// Reads every 16 bytes of the buffer. The sink is written only if the data
// has an XOR of `never` (the buffer is zeroed, so never), which keeps the
// loads from being optimized away without writing anything.
__global__ void read_flush_kernel(const uint4* buf, int64_t n, unsigned never, unsigned* sink) {
  unsigned acc = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const uint4 v = buf[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == never) *sink = acc;
}

struct FlushBuffer {
  DeviceBuffer data;
  DeviceBuffer sink;
  int64_t vecs = 0;
};

FlushBuffer make_flush_buffer(const Gpu& g) {
  FlushBuffer f;
  const int64_t l2 = g.prop.l2CacheSize > 0 ? g.prop.l2CacheSize : (64 << 20);
  const int64_t bytes = 2 * l2;
  f.vecs = bytes / 16;
  f.data = device_alloc(static_cast<size_t>(bytes));
  f.sink = device_alloc(sizeof(unsigned));
  check(cudaMemsetAsync(f.data.get(), 0, static_cast<size_t>(bytes), g.stream), "cudaMemsetAsync(flush buffer)");
  check(cudaStreamSynchronize(g.stream), "cudaStreamSynchronize(flush buffer)");
  return f;
}

Gpu make_gpu() {
  Gpu g;
  check(cudaGetDevice(&g.device), "cudaGetDevice");
  check(cudaGetDeviceProperties(&g.prop, g.device), "cudaGetDeviceProperties");
  // Never destroyed: the runtime may already be torn down when statics are.
  check(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  return g;
}

}  // namespace

bool gpu_available(std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    *why = std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(e);
    (void)cudaGetLastError();
    return false;
  }
  if (count == 0) {
    *why = "cudaGetDeviceCount found no CUDA device";
    return false;
  }
  return true;
}

const Gpu& gpu() {
  static const Gpu g = make_gpu();
  return g;
}

void flush_l2(cudaStream_t stream) {
  static const FlushBuffer f = make_flush_buffer(gpu());
  const int blocks = gpu().prop.multiProcessorCount * 4;
  read_flush_kernel<<<blocks, 512, 0, stream>>>(static_cast<const uint4*>(f.data.get()), f.vecs, 0x9e3779b9u,
                                                  static_cast<unsigned*>(f.sink.get()));
  check(cudaGetLastError(), "read_flush_kernel launch");
}

}  // namespace nkbench
