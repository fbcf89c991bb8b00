// normkit/io/output.cuh: how the fp32 outputs of the epilogue become y.
//
// An output policy has
//   using Type = ...;                          // element type of y
//   struct Params { ... };
//   static constexpr bool kNeedsRowAbsMax;     // wants max |y| of the row first
//   static void prepare(Params&);              // host, before a launch
//   template <class P> static __device__ float row_factor(const P&, int64_t row,
//       float absmax, bool leader);
//   template <int VEC, class P> static __device__ detail::RawSlot<Type, VEC>
//       pack(const P&, float factor, const float (&v)[VEC]);
// row_factor is called once per row by every thread of the row (leader is true
// for exactly one of them, which may write per-row side outputs such as a
// scale); pack converts one slot; the kernel stores the packed slots to y.
// absmax is max|y| of the row; for a row holding inf or NaN it may be NaN
// (taken as rstd * max|epilogue(x)| where kernel/row_output.cuh fuses it), so
// a policy should map a non-finite absmax to something safe (QuantDynamicRow:
// fmaxf drops the NaN and keeps the scale's floor).
// Optionally `static constexpr bool kScalesByFactor = true` declares that
// pack(p, c, v) == pack(p, 1, c * v) up to rounding: kernels may then fold the
// factor into rstd (kernel/row_output.cuh, output_factor).
#pragma once

#include <cstdint>

#include "../block/vector_access.cuh"
#include "../config.cuh"
#include "../types.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace output {

/// y = convert(v): round to nearest even into Y.
template <class Y>
struct Convert {
  using Type = Y;
  struct Params {};
  static constexpr bool kNeedsRowAbsMax = false;
  static void prepare(Params&) {}

  template <class P>
  static NORMKIT_DEVICE float row_factor(const P&, int64_t, float, bool) {
    return 1.0f;
  }

  template <int VEC, class P>
  static NORMKIT_DEVICE detail::RawSlot<Y, VEC> pack(const P&, float /*factor*/, const float (&v)[VEC]) {
    return detail::float_to_slot<Y, VEC>(v);
  }
};

}  // namespace output
NORMKIT_NAMESPACE_END
