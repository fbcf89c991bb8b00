// bench/src/copy.cu: the two copies behind the ceiling, and its cache.
#include "copy.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "cuda_check.hpp"
#include "fill.hpp"
#include "gpu.hpp"

namespace nkbench {
namespace {

constexpr int kCopyThreads = 256;
constexpr int kCopyUnroll = 4;  // independent 16-byte loads in flight per thread

__global__ void __launch_bounds__(kCopyThreads) vector_copy_kernel(const uint4* __restrict__ src,
                                                                   uint4* __restrict__ dst, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + (kCopyUnroll - 1) * stride < n; i += kCopyUnroll * stride) {
    uint4 v[kCopyUnroll];
#pragma unroll
    for (int k = 0; k < kCopyUnroll; ++k) v[k] = src[i + k * stride];
#pragma unroll
    for (int k = 0; k < kCopyUnroll; ++k) dst[i + k * stride] = v[k];
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

/// Enough resident blocks to fill every SM, fewer when the copy is small.
unsigned vector_copy_blocks(int64_t vecs) {
  static const int per_sm = [] {
    int n = 0;
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, vector_copy_kernel, kCopyThreads, 0),
          "cudaOccupancyMaxActiveBlocksPerMultiprocessor(vector_copy_kernel)");
    return n < 1 ? 1 : n;
  }();
  const int64_t resident = static_cast<int64_t>(per_sm) * gpu().prop.multiProcessorCount;
  const int64_t wanted = (vecs + kCopyThreads - 1) / kCopyThreads;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min(resident, wanted)));
}

/// Source and destination, grown to the largest copy asked for so far.
struct CopyBuffers {
  DeviceBuffer src, dst;
  int64_t bytes = 0;
};

CopyBuffers& copy_buffers(int64_t bytes) {
  static CopyBuffers b;
  if (b.bytes < bytes) {
    b.src.reset();
    b.dst.reset();
    b.src = device_alloc(static_cast<size_t>(bytes));
    b.dst = device_alloc(static_cast<size_t>(bytes));
    fill_uniform(b.src.get(), DType::kF32, bytes / 4, -1.f, 1.f, 0xc0de, gpu().stream);
    b.bytes = bytes;
  }
  return b;
}

}  // namespace

int64_t copy_moved_bytes(int64_t bytes_moved) {
  const int64_t copied = (bytes_moved / 2 + 15) / 16 * 16;
  return 2 * std::max<int64_t>(copied, 16);
}

Timing time_copy(CopyKind kind, int64_t bytes_moved, Method method) {
  const int64_t bytes = copy_moved_bytes(bytes_moved) / 2;
  CopyBuffers& b = copy_buffers(bytes);
  const void* src = b.src.get();
  void* dst = b.dst.get();
  if (kind == CopyKind::kMemcpy) {
    return measure(
        [=](cudaStream_t s) {
          check(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice, s),
                "cudaMemcpyAsync");
        },
        method);
  }
  const int64_t vecs = bytes / 16;
  const unsigned blocks = vector_copy_blocks(vecs);
  return measure(
      [=](cudaStream_t s) {
        vector_copy_kernel<<<blocks, kCopyThreads, 0, s>>>(static_cast<const uint4*>(src), static_cast<uint4*>(dst),
                                                           vecs);
        check(cudaGetLastError(), "vector_copy_kernel launch");
      },
      method);
}

double copy_ceiling_tbps(int64_t bytes_moved, Method method) {
  static std::map<std::pair<int64_t, Method>, double> cache;
  const auto key = std::make_pair(bytes_moved, method);
  const auto hit = cache.find(key);
  if (hit != cache.end()) return hit->second;
  const double moved = static_cast<double>(copy_moved_bytes(bytes_moved));
  double best = 0;
  for (CopyKind kind : {CopyKind::kMemcpy, CopyKind::kVector}) {
    best = std::max(best, moved / time_copy(kind, bytes_moved, method).median_s * 1e-12);
  }
  cache.emplace(key, best);
  return best;
}

}  // namespace nkbench
