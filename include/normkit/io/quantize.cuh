// normkit/io/quantize.cuh: output policies that quantize y to fp8 (e4m3, e5m2)
// or int8, for the matrix multiply that usually follows a norm.
//
// QuantStatic:     y_q = q(y / scale) with one scale for the whole tensor.
// QuantDynamicRow: per row, scale = max|y| / max(Q) (at least max(Q)^-1 / 512,
//                  as vLLM, so a row of zeros stays finite), written to
//                  row_scales[row] as fp32, then y_q = q(y / scale). The row's
//                  max|y| is reduced from the row held on chip (registers or
//                  shared memory): x is never read again for it.
// q() rounds to nearest even and saturates to the finite range of Q (int8:
// [-128, 127]); int8 with per-row scales, whose values the scale keeps in
// range, is rounded by one fma without saturating (a NaN y then gives -1, not
// 0; docs/variants.md). Dequantize with y ~ y_q * scale.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../block/vector_access.cuh"
#include "../config.cuh"
#include "../types.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace output {

template <class Q>
struct QuantStatic {
  static_assert(is_quantized_type_v<Q>, "normkit::output::QuantStatic: Q must be float8_e4m3, float8_e5m2 or int8_t");
  using Type = Q;
  struct Params {
    float inv_scale = 1.f;  ///< 1 / scale, set by the launcher from a positive, finite scale
  };
  static constexpr bool kNeedsRowAbsMax = false;
  static constexpr bool kScalesByFactor = true;  ///< pack quantizes v * factor
  static void prepare(Params&) {}

  template <class P>
  static NORMKIT_DEVICE float row_factor(const P& p, int64_t, float, bool) {
    return p.output.inv_scale;
  }

  template <int VEC, class P>
  static NORMKIT_DEVICE detail::RawSlot<Q, VEC> pack(const P&, float factor, const float (&v)[VEC]) {
    float scaled[VEC];
#pragma unroll
    for (int i = 0; i < VEC; ++i) scaled[i] = v[i] * factor;
    return detail::float_to_slot<Q, VEC>(scaled);
  }
};

template <class Q>
struct QuantDynamicRow {
  static_assert(is_quantized_type_v<Q>,
                "normkit::output::QuantDynamicRow: Q must be float8_e4m3, float8_e5m2 or int8_t");
  using Type = Q;
  struct Params {
    float* row_scales = nullptr;  ///< fp32 [rows]: the scale of each row
    /// row_scales holds [M] (the row counter's overlap check, launch/validate.cuh).
    static constexpr bool kRegionsKnown = true;
  };
  static constexpr bool kNeedsRowAbsMax = true;
  static constexpr bool kScalesByFactor = true;  ///< pack quantizes v * factor
  static void prepare(Params&) {}

  template <class P>
  static NORMKIT_DEVICE float row_factor(const P& p, int64_t row, float absmax, bool leader) {
    constexpr float kMax = QuantLimits<Q>::kMax;
    const float scale = fmaxf(absmax / kMax, 1.0f / (kMax * 512.0f));
    if (leader) p.output.row_scales[row] = scale;
    return 1.0f / scale;
  }

  /// int8: where the kernel folds the row factor into rstd (so pack's
  /// factor would be 1) and the epilogue takes an addend, the epilogue's own
  /// fma adds kRoundingAddend (y * w + 1.5 * 2^23, rounded once) and
  /// pack_rounded takes the bytes: one rounding of the exact product and one
  /// instruction an element fewer than pack's fma after the epilogue's
  /// multiplication (kernel/row_output.cuh, store_slots; docs/performance.md,
  /// change 79). The same values in every kernel shape and access width.
  static constexpr bool kRoundsByAddend = std::is_same_v<Q, int8_t>;
  static constexpr float kRoundingAddend = detail::kInt8RoundingBias;

  template <int VEC, class P>
  static NORMKIT_DEVICE detail::RawSlot<Q, VEC> pack_rounded(const P&, const float (&v)[VEC]) {
    static_assert(kRoundsByAddend && VEC % 4 == 0, "normkit: pack_rounded is int8's, 4 values a word");
    detail::RawSlot<Q, VEC> r;
    uint32_t* words = reinterpret_cast<uint32_t*>(r.v);
#pragma unroll
    for (int i = 0; i < VEC / 4; ++i)
      words[i] = detail::int8x4_word_from_biased(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]);
    return r;
  }

  template <int VEC, class P>
  static NORMKIT_DEVICE detail::RawSlot<Q, VEC> pack(const P& p, float factor, const float (&v)[VEC]) {
    if constexpr (std::is_same_v<Q, int8_t> && VEC % 4 == 0) {
      // |v * factor| <= 127 up to the rounding of max|y| (a few ulps), so the
      // saturating conversion is not needed: one fma per element (change 43).
      detail::RawSlot<Q, VEC> r;
      uint32_t* words = reinterpret_cast<uint32_t*>(r.v);
#pragma unroll
      for (int i = 0; i < VEC / 4; ++i)
        words[i] = detail::int8x4_word_scaled_in_range(factor, v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]);
      return r;
    } else {
      return QuantStatic<Q>::template pack<VEC>(p, factor, v);
    }
  }
};

}  // namespace output
NORMKIT_NAMESPACE_END
