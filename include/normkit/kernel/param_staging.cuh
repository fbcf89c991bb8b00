// normkit/kernel/param_staging.cuh: per-column epilogue parameters (weight,
// bias) copied once per CTA into shared memory, so that every row a CTA
// normalizes reads them from there instead of from L2. Epilogues opt in with
//   static constexpr int kStagedBytesPerColumn;
//   static __device__ Params stage(const Params&, unsigned char* smem,
//                                  int64_t col_base, int64_t n, int tid, int threads);
// which copies columns [col_base, col_base + n) and returns parameters that
// read them from `smem` (indexed by absolute column). Others are not staged.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../config.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace detail {

template <class Epilogue, class = void>
struct StagedBytesPerColumn : std::integral_constant<int, 0> {};
template <class Epilogue>
struct StagedBytesPerColumn<Epilogue, std::void_t<decltype(Epilogue::kStagedBytesPerColumn)>>
    : std::integral_constant<int, Epilogue::kStagedBytesPerColumn> {};

/// Bytes of shared memory the epilogue's parameters take for n columns (16-byte multiple).
template <class Epilogue>
constexpr int64_t staged_param_bytes(int64_t n) {
  // Slack: each staged vector may start at the next 16-byte boundary.
  return StagedBytesPerColumn<Epilogue>::value == 0 ? 0 : (n * StagedBytesPerColumn<Epilogue>::value + 15) / 16 * 16 + 64;
}

/// Stages the parameters when `smem` is given (then all threads of the CTA
/// must call this, and it ends with a barrier); otherwise returns them as is.
template <class Epilogue>
NORMKIT_DEVICE typename Epilogue::Params stage_params(const typename Epilogue::Params& ep, unsigned char* smem,
                                                     int64_t col_base, int64_t n) {
  if constexpr (StagedBytesPerColumn<Epilogue>::value > 0) {
    if (smem != nullptr) {
      const typename Epilogue::Params staged = Epilogue::stage(ep, smem, col_base, n, threadIdx.x, blockDim.x);
      __syncthreads();
      return staged;
    }
  }
  return ep;
}

}  // namespace detail
NORMKIT_NAMESPACE_END
