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
//
// Optionally, for the register shapes' WHOLE form (rows that fill the team's
// slots exactly, every access a whole slot: docs/performance.md, change 17):
//   template <int VEC> static bool whole_slots(const Params&);   // host
//   template <int VEC> static __device__ void apply_whole(const Params&,
//       int64_t row, int64_t col0, float (&v)[VEC]);
// apply_whole is apply with valid == VEC, called only when whole_slots held at
// launch (so it may skip alignment checks). Without them, apply is called.
// apply_whole may also take a second template parameter, ParamCaching
// (epilogue/param_slot.cuh): how the kernel would have the parameters cached
// (Scale passes it to its weight's loads); one without it is called as
// apply_whole<VEC>.
// Optionally, with apply_whole, its parameters loaded ahead:
//   template <int VEC> struct Prefetched;   // one slot's parameters
//   template <int VEC> static __device__ Prefetched<VEC> prefetch_whole(
//       const Params&, int64_t col0);
//   template <int VEC> static __device__ void apply_prefetched(const Params&,
//       const Prefetched<VEC>&, float (&v)[VEC]);
//   using PrefetchOwner = <the epilogue itself>;
// apply_prefetched(p, prefetch_whole(p, col0), v) must give apply_whole's
// values; kernels whose rows wait on latency (row_per_block's roomy form
// below 8 slots, small batches) load the slots with the row, before the
// statistics (detail::HasPrefetch; docs/performance.md, change 66). A type
// derived from an epilogue with these hooks inherits them, but its inherited
// PrefetchOwner names the base, so it runs without them (its apply_whole may
// differ) unless it redeclares PrefetchOwner (and the hooks, if needed).
// Optionally, with those, their form for kernels that hold a slot's
// parameters in registers for every row they run (the ring:
// kernel/row_ring.cuh):
//   template <int VEC> static __device__ Prefetched<VEC> hold_whole(
//       const Params&, int64_t col0);
//   template <int VEC> static __device__ void apply_held(const Params&,
//       const Prefetched<VEC>&, float (&v)[VEC]);
// with apply_prefetched's values, and no branch on what the parameters are
// (Scale reads a null weight's slot as ones: a branch on null held over every
// row made ptxas keep two copies of the row's walks, and spill;
// detail::HasHeld).
// Optionally, each of apply, apply_whole, apply_prefetched and apply_held with a trailing
// `float addend`: apply(v) + addend rounded once (Scale: fmaf(v, w, addend)).
// Outputs that round by adding a constant (int8 with per-row scales) then
// round in the epilogue's own fma instead of after it: one instruction an
// element fewer and one rounding of the exact product (detail::TakesAddend;
// docs/performance.md, change 79). An epilogue without them runs as before.
// Optionally, with apply_whole:
//   static __device__ bool whole_params_present(const Params&);
//   template <int VEC> static __device__ void apply_whole_present(
//       const Params&, int64_t row, int64_t col0, float (&v)[VEC]);
// apply_whole_present is apply_whole where whole_params_present held (the
// same values), for kernels that test it once a row rather than per slot
// (Affine: both parameters non-null; detail::HasPresentForm).
// Optionally, `static constexpr bool kHomogeneous = true` declares that
// apply(c * v) == c * apply(v) for c > 0 up to rounding (Scale; not Affine,
// whose bias is not scaled): per-row quantization then finds max|y| within the
// statistics' reduction (epilogue/hooks.cuh, epilogue_homogeneous_v).
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
/// and Gemma's RMSNorm; a null w then scales by 1. (No read-only loads, unlike
/// Scale: no problem measured faster with them; LayerNorm bf16 12288 lost 15
/// points, change 57.)
template <class W, bool WEIGHT_OFFSET = false>
struct Affine {
  static_assert(std::is_same_v<W, float> || std::is_same_v<W, half> || std::is_same_v<W, bfloat16>,
                "normkit::epilogue::Affine: weight/bias type must be float, half or bfloat16");
  using Weight = W;
  struct Params {
    const W* weight = nullptr;
    const W* bias = nullptr;
    /// weight and bias hold N each (the row counter's overlap check, launch/validate.cuh).
    static constexpr bool kRegionsKnown = true;
  };

  template <int VEC>
  static NORMKIT_DEVICE void apply(const Params& p, int64_t /*row*/, int64_t col0, int valid, float (&v)[VEC]) {
    float w[VEC], b[VEC];
    load_param_slot<W, VEC>(p.weight, col0, valid, WEIGHT_OFFSET ? 0.f : 1.f, w);
    load_param_slot<W, VEC>(p.bias, col0, valid, 0.f, b);
    combine(w, b, v);
  }

  template <int VEC>
  static bool whole_slots(const Params& p) {
    return param_aligned<W, VEC>(p.weight) && param_aligned<W, VEC>(p.bias);
  }

  /// (No ParamCaching: weight and bias together, 256 KiB at fp32 N = 32768,
  /// do not stay in L1 beside the row's loads; kept there, LayerNorm fp32
  /// measured 1.5 points slower: change 62.)
  template <int VEC>
  static NORMKIT_DEVICE void apply_whole(const Params& p, int64_t /*row*/, int64_t col0, float (&v)[VEC]) {
    float w[VEC], b[VEC];
    if (p.weight != nullptr && p.bias != nullptr) {  // the usual case: no fill values to set up
      load_whole_param_slot<W, VEC>(p.weight, col0, 0.f, w);
      load_whole_param_slot<W, VEC>(p.bias, col0, 0.f, b);
    } else {
      load_whole_param_slot<W, VEC>(p.weight, col0, WEIGHT_OFFSET ? 0.f : 1.f, w);
      load_whole_param_slot<W, VEC>(p.bias, col0, 0.f, b);
    }
    combine(w, b, v);
  }

  /// apply_whole's values where both parameters are present, without its
  /// branch on null: kernels that test whole_params_present once a row walk
  /// the row's slots with it (epilogue/hooks.cuh, HasPresentForm). The
  /// branch in every slot kept each slot's two loads in a block of their
  /// own; tested once a row, per-row-quantized LayerNorm bf16 5120-16384 read
  /// 1.1-2.6 points more of the copy on an H100 (docs/performance.md,
  /// change 183).
  static NORMKIT_DEVICE bool whole_params_present(const Params& p) {
    return p.weight != nullptr && p.bias != nullptr;
  }
  template <int VEC>
  static NORMKIT_DEVICE void apply_whole_present(const Params& p, int64_t /*row*/, int64_t col0, float (&v)[VEC]) {
    float w[VEC], b[VEC];
    detail::RawSlot<W, VEC> raw_w, raw_b;
    detail::load_slot_raw<16, W, VEC>(p.weight + col0, raw_w);
    detail::load_slot_raw<16, W, VEC>(p.bias + col0, raw_b);
    detail::slot_to_float(raw_w, w);
    detail::slot_to_float(raw_b, b);
    combine(w, b, v);
  }

  /// The WHOLE form's weight and bias slots loaded ahead (kernels whose rows
  /// wait on latency: row_per_block's roomy form), applied later by
  /// apply_prefetched with apply_whole's values.
  using PrefetchOwner = Affine;
  template <int VEC>
  struct Prefetched {
    detail::RawSlot<W, VEC> w, b;
  };
  template <int VEC>
  static NORMKIT_DEVICE Prefetched<VEC> prefetch_whole(const Params& p, int64_t col0) {
    Prefetched<VEC> pre{};
    if (p.weight != nullptr) detail::load_slot_raw<16, W, VEC>(p.weight + col0, pre.w);
    if (p.bias != nullptr) detail::load_slot_raw<16, W, VEC>(p.bias + col0, pre.b);
    return pre;
  }
  template <int VEC>
  static NORMKIT_DEVICE void apply_prefetched(const Params& p, const Prefetched<VEC>& pre, float (&v)[VEC]) {
    float w[VEC], b[VEC];
    detail::slot_to_float(pre.w, w);
    detail::slot_to_float(pre.b, b);
    if (p.weight == nullptr) {
#pragma unroll
      for (int i = 0; i < VEC; ++i) w[i] = WEIGHT_OFFSET ? 0.f : 1.f;
    }
    if (p.bias == nullptr) {
#pragma unroll
      for (int i = 0; i < VEC; ++i) b[i] = 0.f;
    }
    combine(w, b, v);
  }

 private:
  template <int VEC>
  static NORMKIT_DEVICE void combine(const float (&w)[VEC], const float (&b)[VEC], float (&v)[VEC]) {
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
      const float scale = WEIGHT_OFFSET ? 1.0f + w[i] : w[i];
      v[i] = fmaf(v[i], scale, b[i]);
    }
  }
};

/// y = x_hat * w (RMSNorm's epilogue), w optional; (1 + w) with WEIGHT_OFFSET.
/// READ_ONLY_LOADS: the WHOLE form reads w through the read-only path
/// (ld.global.nc), which lets the compiler issue it ahead of earlier stores;
/// same values, a different schedule, chosen per problem where it measured
/// faster (docs/performance.md, change 61).
template <class W, bool WEIGHT_OFFSET = false, bool READ_ONLY_LOADS = false>
struct Scale {
  static_assert(std::is_same_v<W, float> || std::is_same_v<W, half> || std::is_same_v<W, bfloat16>,
                "normkit::epilogue::Scale: weight type must be float, half or bfloat16");
  using Weight = W;
  /// (x * c) * w == c * (x * w): a positive row factor commutes with the epilogue.
  static constexpr bool kHomogeneous = true;
  struct Params {
    const W* weight = nullptr;
    /// weight holds N (the row counter's overlap check, launch/validate.cuh).
    static constexpr bool kRegionsKnown = true;
  };

  template <int VEC>
  static NORMKIT_DEVICE void apply(const Params& p, int64_t /*row*/, int64_t col0, int valid, float (&v)[VEC]) {
    float w[VEC];
    load_param_slot<W, VEC>(p.weight, col0, valid, WEIGHT_OFFSET ? 0.f : 1.f, w);
    scale(w, v);
  }

  /// Each hook with a trailing addend c: v * w + c rounded once (one fma),
  /// for outputs that round by adding a constant (int8 with per-row scales;
  /// epilogue/hooks.cuh, TakesAddend).
  template <int VEC>
  static NORMKIT_DEVICE void apply(const Params& p, int64_t /*row*/, int64_t col0, int valid, float (&v)[VEC],
                                   float addend) {
    float w[VEC];
    load_param_slot<W, VEC>(p.weight, col0, valid, WEIGHT_OFFSET ? 0.f : 1.f, w);
    scale_add(w, v, addend);
  }

  template <int VEC>
  static bool whole_slots(const Params& p) {
    return param_aligned<W, VEC>(p.weight);
  }

  /// kKeepInL1 (the 8-slot kernels) reads a null weight's slots from
  /// fill_param_slot (the same values: v * 1) instead of branching on null
  /// per slot: the branches kept the walks' weight loads from being issued
  /// ahead, and cost an address computation each (docs/performance.md,
  /// change 67).
  template <int VEC, ParamCaching CACHING = ParamCaching::kDefault>
  static NORMKIT_DEVICE void apply_whole(const Params& p, int64_t /*row*/, int64_t col0, float (&v)[VEC]) {
    float w[VEC];
    if (!whole_weight<VEC, CACHING>(p, col0, w)) return;  // a scale of 1 (WEIGHT_OFFSET: 1 + 0)
    scale(w, v);
  }
  template <int VEC, ParamCaching CACHING = ParamCaching::kDefault>
  static NORMKIT_DEVICE void apply_whole(const Params& p, int64_t /*row*/, int64_t col0, float (&v)[VEC],
                                         float addend) {
    float w[VEC];
    if (!whole_weight<VEC, CACHING>(p, col0, w)) {
#pragma unroll
      for (int i = 0; i < VEC; ++i) v[i] += addend;  // v * 1 + c
      return;
    }
    scale_add(w, v, addend);
  }

  /// The WHOLE form's weight slot loaded ahead (kernels whose rows wait on
  /// latency: row_per_block's roomy form), applied later by apply_prefetched
  /// with apply_whole's values.
  using PrefetchOwner = Scale;
  template <int VEC>
  struct Prefetched {
    detail::RawSlot<W, VEC> w;
  };
  template <int VEC>
  static NORMKIT_DEVICE Prefetched<VEC> prefetch_whole(const Params& p, int64_t col0) {
    Prefetched<VEC> pre{};
    if (p.weight != nullptr) detail::load_slot_raw<16, W, VEC>(p.weight + col0, pre.w);
    return pre;
  }
  template <int VEC>
  static NORMKIT_DEVICE void apply_prefetched(const Params& p, const Prefetched<VEC>& pre, float (&v)[VEC]) {
    if (p.weight == nullptr) return;
    float w[VEC];
    detail::slot_to_float(pre.w, w);
    scale(w, v);
  }
  template <int VEC>
  static NORMKIT_DEVICE void apply_prefetched(const Params& p, const Prefetched<VEC>& pre, float (&v)[VEC],
                                              float addend) {
    float w[VEC];
    if (p.weight == nullptr) {
#pragma unroll
      for (int i = 0; i < VEC; ++i) w[i] = WEIGHT_OFFSET ? 0.f : 1.f;
    } else {
      detail::slot_to_float(pre.w, w);
    }
    scale_add(w, v, addend);
  }

  /// The weight's slot held for every row (the ring): a null weight's slot
  /// is read from fill_param_slot (1, or 0 with WEIGHT_OFFSET: v * 1 either
  /// way), so apply_held takes no branch.
  template <int VEC>
  static NORMKIT_DEVICE Prefetched<VEC> hold_whole(const Params& p, int64_t col0) {
    Prefetched<VEC> pre;
    const W* src = p.weight != nullptr ? p.weight + col0 : detail::fill_param_slot<W, WEIGHT_OFFSET>();
    detail::load_slot_raw<16, W, VEC>(src, pre.w);
    return pre;
  }
  template <int VEC>
  static NORMKIT_DEVICE void apply_held(const Params&, const Prefetched<VEC>& pre, float (&v)[VEC]) {
    float w[VEC];
    detail::slot_to_float(pre.w, w);
    scale(w, v);
  }
  template <int VEC>
  static NORMKIT_DEVICE void apply_held(const Params&, const Prefetched<VEC>& pre, float (&v)[VEC], float addend) {
    float w[VEC];
    detail::slot_to_float(pre.w, w);
    scale_add(w, v, addend);
  }

 private:
  /// The WHOLE form's weight slot in w; false for a null weight (a scale of
  /// 1) where the caching does not read it from fill_param_slot.
  template <int VEC, ParamCaching CACHING>
  static NORMKIT_DEVICE bool whole_weight(const Params& p, int64_t col0, float (&w)[VEC]) {
    if constexpr (CACHING == ParamCaching::kKeepInL1) {
      const W* src = p.weight != nullptr ? p.weight + col0 : detail::fill_param_slot<W, WEIGHT_OFFSET>();
      detail::RawSlot<W, VEC> raw;
      detail::load_slot_raw<16, W, VEC, READ_ONLY_LOADS, true>(src, raw);
      detail::slot_to_float(raw, w);
      return true;
    } else {
      if (p.weight == nullptr) return false;
      load_whole_param_slot<W, VEC, READ_ONLY_LOADS, CACHING>(p.weight, col0, 0.f, w);
      return true;
    }
  }

  template <int VEC>
  static NORMKIT_DEVICE void scale(const float (&w)[VEC], float (&v)[VEC]) {
#pragma unroll
    for (int i = 0; i < VEC; ++i) v[i] *= WEIGHT_OFFSET ? 1.0f + w[i] : w[i];
  }
  template <int VEC>
  static NORMKIT_DEVICE void scale_add(const float (&w)[VEC], float (&v)[VEC], float addend) {
#pragma unroll
    for (int i = 0; i < VEC; ++i) v[i] = fmaf(v[i], WEIGHT_OFFSET ? 1.0f + w[i] : w[i], addend);
  }
};

}  // namespace epilogue
NORMKIT_NAMESPACE_END
