// normkit/epilogue/affine.cuh: the epilogues of LayerNorm (y = x_hat * w + b)
// and RMSNorm (y = x_hat * w), with optional Gemma-style (1 + w) scaling.
//
// An epilogue is a policy type: a Params struct the caller fills, and
//   template <int VEC> static __device__ void apply(const Params&, int64_t row,
//       int64_t col0, int valid, float (&v)[VEC]);
// which turns the normalized values x_hat of one slot (columns col0 ..
// col0 + VEC, the first `valid` of them real) into outputs, in place, in fp32.
// The kernel converts (or quantizes) and stores them afterwards. A caller's own
// epilogue follows the same form (see examples/custom_epilogue.cu).
#pragma once

#include <cstdint>
#include <type_traits>

#include "../config.cuh"
#include "../types.cuh"
#include "param_slot.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace epilogue {
namespace detail {
/// Copies p[col_base, col_base + n) to dst; returns dst shifted so that it is
/// indexed by absolute column (or null if p is null).
template <class W>
NORMKIT_DEVICE const W* stage_vector(const W* p, W* dst, int64_t col_base, int64_t n, int tid, int threads) {
  if (p == nullptr) return nullptr;
  for (int64_t i = tid; i < n; i += threads) dst[i] = p[col_base + i];
  return dst - col_base;
}
}  // namespace detail
}  // namespace epilogue
NORMKIT_NAMESPACE_END

NORMKIT_NAMESPACE_BEGIN
namespace epilogue {

/// y = x_hat * w + b. w and b may each be null (then 1 and 0). With
/// WEIGHT_OFFSET, the scale is (1 + w), TransformerEngine's zero-centred gamma
/// and Gemma's RMSNorm; a null w then scales by 1.
template <class W, bool WEIGHT_OFFSET = false>
struct Affine {
  static_assert(std::is_same_v<W, float> || std::is_same_v<W, half> || std::is_same_v<W, bfloat16>,
                "normkit::epilogue::Affine: weight/bias type must be float, half or bfloat16");
  using Weight = W;
  struct Params {
    const W* weight = nullptr;
    const W* bias = nullptr;
  };

  /// Weight and bias can be staged in shared memory (see kernel/param_staging.cuh).
  static constexpr int kStagedBytesPerColumn = 2 * static_cast<int>(sizeof(W));
  static NORMKIT_DEVICE Params stage(const Params& p, unsigned char* smem, int64_t col_base, int64_t n, int tid,
                                     int threads) {
    W* w = reinterpret_cast<W*>(smem);
    W* b = w + (n + 7) / 8 * 8;
    return Params{detail::stage_vector(p.weight, w, col_base, n, tid, threads),
                  detail::stage_vector(p.bias, b, col_base, n, tid, threads)};
  }

  template <int VEC>
  static NORMKIT_DEVICE void apply(const Params& p, int64_t /*row*/, int64_t col0, int valid, float (&v)[VEC]) {
    float w[VEC], b[VEC];
    load_param_slot<W, VEC>(p.weight, col0, valid, WEIGHT_OFFSET ? 0.f : 1.f, w);
    load_param_slot<W, VEC>(p.bias, col0, valid, 0.f, b);
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
      const float scale = WEIGHT_OFFSET ? 1.0f + w[i] : w[i];
      v[i] = fmaf(v[i], scale, b[i]);
    }
  }
};

/// y = x_hat * w (RMSNorm's epilogue), w optional; (1 + w) with WEIGHT_OFFSET.
template <class W, bool WEIGHT_OFFSET = false>
struct Scale {
  static_assert(std::is_same_v<W, float> || std::is_same_v<W, half> || std::is_same_v<W, bfloat16>,
                "normkit::epilogue::Scale: weight type must be float, half or bfloat16");
  using Weight = W;
  struct Params {
    const W* weight = nullptr;
  };

  static constexpr int kStagedBytesPerColumn = static_cast<int>(sizeof(W));
  static NORMKIT_DEVICE Params stage(const Params& p, unsigned char* smem, int64_t col_base, int64_t n, int tid,
                                     int threads) {
    return Params{detail::stage_vector(p.weight, reinterpret_cast<W*>(smem), col_base, n, tid, threads)};
  }

  template <int VEC>
  static NORMKIT_DEVICE void apply(const Params& p, int64_t /*row*/, int64_t col0, int valid, float (&v)[VEC]) {
    float w[VEC];
    load_param_slot<W, VEC>(p.weight, col0, valid, WEIGHT_OFFSET ? 0.f : 1.f, w);
#pragma unroll
    for (int i = 0; i < VEC; ++i) v[i] *= WEIGHT_OFFSET ? 1.0f + w[i] : w[i];
  }
};

}  // namespace epilogue
NORMKIT_NAMESPACE_END
