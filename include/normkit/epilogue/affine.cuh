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
