// normkit/stats/row_stats.cuh: what a statistics policy hands the epilogue.
//
// A statistics policy reads a row through a *view* and combines partial
// results through a *reducer*:
//   view.for_each_slot(f): calls f(const float (&v)[VEC], int valid) for each of
//     this thread's slots, in a fixed order; v[i] for i >= valid is 0 (padding
//     and columns past N read as zero). A view over a row held in registers or
//     shared memory can be walked any number of times for free; a streaming view
//     reads memory again on each walk (View::kResident says which).
//   reducer.all_reduce(value, op): combines `value` across every thread that
//     shares the row; each receives the result.
//   view.shift (optional): a value near the row's mean, the same for every
//     thread of the row; 0 for a view without one (row_shift below).
// A policy whose `template <class View, class Reducer> static constexpr bool
// kUsesShift` is true for a view and reducer asks the kernels to fill
// view.shift from the input's pilot (one extra load per row).
// Optional, for policies whose normalization is a pure scale (x_hat = x *
// rstd: mean and mean_correction 0, as MeanSquare):
//   template <class View, class Reducer> static RowStats compute_with_max(
//       const View&, Reducer&, int64_t n, float eps, float& local_max);
// is compute, with this thread's local_max max-reduced across the row in the
// same all-reduce (local_max receives the row's maximum). Outputs that scale
// each row by max|y| then need no reduction of their own (kernel/row_output.cuh).
// Read local_max only after the last walk of the view: a kernel's view may
// fold this thread's part into it as it is walked (staged rows do).
// Offer it for every view and reducer or none (which kernel form runs must
// not change the bits), and give the same statistics as compute. A policy
// derived from MeanSquare that changes compute must hide it as well.
//
// Optional, for policies that sum (sums are not associative in fp32): fold
// this thread's slots with fold_slots(view, init, step) below instead of a
// for_each_slot of its own, reduce what it returns, and declare
//   static constexpr bool kFoldsEachPart = true;
// A view may then hold the slots of several lanes of a larger team (its
// kParts, the paired register forms: kernel/row_per_block.cuh,
// kernel/rows_per_warp.cuh):
// fold_slots folds each lane's slots on their own and returns them as
// Parts<T, kParts>, which that form's reducer combines in the larger team's
// order, so both forms give the same bits. With any other view fold_slots
// is a plain fold returning T. Policies without kFoldsEachPart never see such
// a view. map_parts(t, f) applies f to each part (to T itself otherwise). A
// policy derived from MeanSquare or TwoPass inherits kFoldsEachPart: one that
// folds on its own must set it false (its paired instantiation would not
// compile: the paired reducers reduce sums only as Parts).
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "../config.cuh"

NORMKIT_NAMESPACE_BEGIN

/// Statistics of one row. The mean is carried as a sum of two floats
/// (mean + mean_correction) so that x - mean can be formed to better than fp32
/// rounding of the mean itself: (x - mean) - mean_correction. rstd is
/// 1 / sqrt(var + eps) with the biased variance (divided by N).
struct RowStats {
  float mean;
  float mean_correction;
  float rstd;

  /// x_hat = x (normalize is then exact: x * 1 - 0): what an epilogue sees of
  /// raw x, for max|epilogue(x)| before rstd is known (kernel/row_output.cuh).
  static NORMKIT_HOST_DEVICE RowStats unit() { return RowStats{0.f, 0.f, 1.f}; }

  /// The fp32 mean that is stored for the backward pass.
  NORMKIT_HOST_DEVICE float stored_mean() const { return mean + mean_correction; }

  /// (x - mean) * rstd, with the correction applied: (x - mean) * rstd -
  /// correction * rstd, one subtraction and one fma per element (the product
  /// correction * rstd is the same for the whole row).
  NORMKIT_HOST_DEVICE float normalize(float x) const { return fmaf(x - mean, rstd, -mean_correction * rstd); }
};

namespace detail {

template <class T, class = void>
struct HasShift : std::false_type {};
template <class T>
struct HasShift<T, std::void_t<decltype(std::declval<const T&>().shift)>> : std::true_type {};

template <class Stats, class View, class Reducer, class = void>
struct UsesShift : std::false_type {};
template <class Stats, class View, class Reducer>
struct UsesShift<Stats, View, Reducer, std::void_t<decltype(Stats::template kUsesShift<View, Reducer>)>>
    : std::bool_constant<Stats::template kUsesShift<View, Reducer>> {};

}  // namespace detail

/// The view's shift, or 0 for a view that carries none.
template <class View>
NORMKIT_HOST_DEVICE float row_shift(const View& view) {
  if constexpr (detail::HasShift<View>::value) {
    return view.shift;
  } else {
    return 0.f;
  }
}

namespace stats {
namespace detail {
template <class T, class = void>
struct RowReductions : std::integral_constant<int, 1> {};
template <class T>
struct RowReductions<T, std::void_t<decltype(T::kRowReductions)>> : std::integral_constant<int, T::kRowReductions> {};
}  // namespace detail

/// Reductions per row a statistics policy makes over a row held in registers
/// (its optional kRowReductions; 1 without it). The plan holds the rows of a
/// policy with two in fewer threads, 4 slots each, on short rows (plan.cuh,
/// preferred_vecs), and in 16-bit never at 8 slots in one CTA
/// (allows_wide_slots), only across a cluster's (allows_cluster_register_slots).
template <class Stats>
inline constexpr int row_reductions_v = detail::RowReductions<Stats>::value;

namespace detail {
template <class T, class = void>
struct WalksBeforeReducing : std::false_type {};
template <class T>
struct WalksBeforeReducing<T, std::void_t<decltype(T::kWalksBeforeReducing)>>
    : std::bool_constant<T::kWalksBeforeReducing> {};
}  // namespace detail

/// Whether a statistics policy reads its view only before its first
/// reduction (its optional kWalksBeforeReducing; false without it): a kernel
/// may then reuse the row's registers once that reduction starts (the
/// cluster-register kernel loads the next row into them: kernel/row_relay.cuh).
/// A policy derived from one that declares it (MeanSquare) inherits it, so a
/// derived compute that walks the view after a reduction must declare it
/// false again.
template <class Stats>
inline constexpr bool walks_before_reducing_v = detail::WalksBeforeReducing<Stats>::value;
}  // namespace stats

/// The partial values of the lanes a thread stands in for (a view's kParts
/// > 1), each folded on its own; what such a view's reducer reduces.
template <class T, int P>
struct Parts {
  T part[P];
};

namespace detail {
template <class T, class = void>
struct ViewParts : std::integral_constant<int, 1> {};
template <class T>
struct ViewParts<T, std::void_t<decltype(T::kParts)>> : std::integral_constant<int, T::kParts> {};

template <class T, class = void>
struct FoldsEachPart : std::false_type {};
template <class T>
struct FoldsEachPart<T, std::void_t<decltype(T::kFoldsEachPart)>> : std::bool_constant<T::kFoldsEachPart> {};
}  // namespace detail

/// Lanes a view's thread stands in for (1 but for the paired form's views).
template <class View>
inline constexpr int view_parts_v = detail::ViewParts<View>::value;

/// Whether a statistics policy folds through fold_slots (kFoldsEachPart), so
/// that the paired register forms may run it.
template <class Stats>
inline constexpr bool stats_folds_each_part_v = detail::FoldsEachPart<Stats>::value;

/// step(acc, v, valid) folded over this thread's slots in view order, from
/// init: T for a view of one part; for a view of several, each part's slots
/// folded on their own (view.for_each_part_slot), as Parts<T, kParts>.
template <class T, class View, class Step>
NORMKIT_DEVICE auto fold_slots(const View& view, T init, Step&& step) {
  constexpr int VEC = View::kVec;
  constexpr int P = view_parts_v<View>;
  if constexpr (P == 1) {
    T acc = init;
    view.for_each_slot([&](const float (&v)[VEC], int valid) { step(acc, v, valid); });
    return acc;
  } else {
    Parts<T, P> acc;
#pragma unroll
    for (int i = 0; i < P; ++i) acc.part[i] = init;
    view.for_each_part_slot([&](const float (&v)[VEC], int valid, int i) { step(acc.part[i], v, valid); });
    return acc;
  }
}

/// f applied to a fold's result: to each part of Parts, to a plain value itself.
template <class T, class F>
NORMKIT_DEVICE auto map_parts(const T& t, F&& f) {
  return f(t);
}
template <class T, int P, class F>
NORMKIT_DEVICE auto map_parts(const Parts<T, P>& t, F&& f) {
  Parts<decltype(f(t.part[0])), P> r;
#pragma unroll
  for (int i = 0; i < P; ++i) r.part[i] = f(t.part[i]);
  return r;
}

namespace detail {
template <class Stats, class View, class Reducer, class = void>
struct HasComputeWithMax : std::false_type {};
template <class Stats, class View, class Reducer>
struct HasComputeWithMax<Stats, View, Reducer,
                         std::void_t<decltype(Stats::compute_with_max(
                             std::declval<const View&>(), std::declval<Reducer&>(), int64_t{}, 0.f,
                             std::declval<float&>()))>> : std::true_type {};
}  // namespace detail

/// Whether a statistics policy offers compute_with_max (x_hat = x * rstd) for this view and reducer.
template <class Stats, class View, class Reducer>
inline constexpr bool stats_has_compute_with_max_v = detail::HasComputeWithMax<Stats, View, Reducer>::value;

/// Whether a statistics policy wants view.shift filled for this view and reducer.
template <class Stats, class View, class Reducer>
inline constexpr bool stats_uses_shift_v = detail::UsesShift<Stats, View, Reducer>::value;

NORMKIT_NAMESPACE_END
