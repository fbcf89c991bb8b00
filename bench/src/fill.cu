// bench/src/fill.cu: the hash-based fill kernel behind fill_uniform.
#include "fill.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "cuda_check.hpp"
#include "gpu.hpp"

namespace nkbench {
namespace {

// SplitMix64's finalizer: a counter-based generator, so every element is
// independent and the grid can take any shape.
__device__ __forceinline__ uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

template <class T>
__device__ __forceinline__ T from_float(float v) {
  if constexpr (std::is_same_v<T, float>) return v;
  else if constexpr (std::is_same_v<T, __half>) return __float2half_rn(v);
  else return __float2bfloat16_rn(v);
}

template <class T>
__global__ void fill_uniform_kernel(T* dst, int64_t count, float lo, float span, uint64_t seed) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const uint64_t bits = mix64(seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(i + 1));
    const float u = static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);  // 24 bits: [0, 1)
    dst[i] = from_float<T>(lo + span * u);
  }
}

template <class T>
void launch_fill(void* dst, int64_t count, float lo, float hi, uint64_t seed, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int64_t wanted = (count + kThreads - 1) / kThreads;
  const int64_t cap = static_cast<int64_t>(gpu().prop.multiProcessorCount) * 8;  // enough to saturate memory
  const unsigned blocks = static_cast<unsigned>(wanted < cap ? wanted : cap);
  fill_uniform_kernel<T><<<blocks, kThreads, 0, stream>>>(static_cast<T*>(dst), count, lo, hi - lo, seed);
  check(cudaGetLastError(), "fill_uniform_kernel launch");
}

}  // namespace

void fill_uniform(void* dst, DType dtype, int64_t count, float lo, float hi, uint64_t seed, cudaStream_t stream) {
  if (count <= 0) return;
  switch (dtype) {
    case DType::kF32: return launch_fill<float>(dst, count, lo, hi, seed, stream);
    case DType::kF16: return launch_fill<__half>(dst, count, lo, hi, seed, stream);
    case DType::kBF16: return launch_fill<__nv_bfloat16>(dst, count, lo, hi, seed, stream);
  }
}

}  // namespace nkbench
