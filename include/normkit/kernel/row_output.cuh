// normkit/kernel/row_output.cuh: the part every kernel shape shares once a
// row's statistics are known: write mean and rstd, normalize, apply the
// epilogue, and pack and store the outputs.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../block/reduce_ops.cuh"
#include "../block/row_loader.cuh"
#include "../config.cuh"
#include "../epilogue/hooks.cuh"
#include "../stats/row_stats.cuh"
#include "row_views.cuh"
#include "shifted_stores.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace detail {

/// One thread per row calls this (the leader of the row's team).
template <class Params>
NORMKIT_DEVICE void store_row_stats(const Params& p, int64_t row, const RowStats& st) {
  if (p.mean != nullptr) p.mean[row] = st.stored_mean();
  if (p.rstd != nullptr) p.rstd[row] = st.rstd;
}

/// No addend after the epilogue (epilogue_on_slot's default).
struct NoAddend {};

/// The epilogue on one slot: with its parameters loaded ahead
/// (pre, from prefetch_whole: apply_prefetched, WHOLE only), or loading
/// them itself (NoPrefetch: apply_epilogue). With a float addend, the
/// epilogue's addend form (TakesAddend): apply(v) + addend, rounded once.
template <class Problem, bool WHOLE, class Pre, class Addend = NoAddend>
NORMKIT_DEVICE void epilogue_on_slot(const typename Problem::Params& p, int64_t row, int64_t col, int valid,
                                     const Pre& pre, float (&v)[Problem::kVec], Addend addend = Addend{}) {
  constexpr int VEC = Problem::kVec;
  using E = typename Problem::Epilogue;
  constexpr bool kAdds = !std::is_same_v<Addend, NoAddend>;
  if constexpr (std::is_same_v<Pre, NoPrefetch>) {
    if constexpr (kAdds) {
      apply_epilogue_plus<E, VEC, WHOLE>(p.epilogue, row, col, valid, v, addend);
    } else {
      apply_epilogue<E, VEC, WHOLE>(p.epilogue, row, col, valid, v);
    }
  } else {
    static_assert(WHOLE, "normkit: prefetched parameters are for the WHOLE form");
    if constexpr (kAdds) {
      E::template apply_prefetched<VEC>(p.epilogue, pre, v, addend);
    } else {
      E::template apply_prefetched<VEC>(p.epilogue, pre, v);
    }
  }
}

/// Slot k's prefetched parameters from an array of them (a reference, not a
/// copy), or NoPrefetch (then pre may be null).
template <class Pre>
NORMKIT_DEVICE decltype(auto) prefetched_slot(const Pre* pre, int k) {
  if constexpr (std::is_same_v<Pre, NoPrefetch>) {
    return NoPrefetch{};
  } else {
    return (pre[k]);
  }
}

/// One slot: fp32 conversion, normalization and the epilogue, in place in v
/// (WHOLE: the slot is whole and the launcher found the WHOLE form allowed).
/// pre: the slot's parameters loaded ahead (apply_prefetched), or none
/// (NoPrefetch: the epilogue loads them).
/// addend: as epilogue_on_slot's.
template <class Problem, bool WHOLE = false, class Pre = NoPrefetch, class Addend = NoAddend>
NORMKIT_DEVICE void transform_slot(const typename Problem::Params& p, int64_t row, int64_t col, int valid,
                                   const RowStats& st, const RawSlot<typename Problem::Storage, Problem::kVec>& raw,
                                   float (&v)[Problem::kVec], const Pre& pre = Pre{}, Addend addend = Addend{}) {
  constexpr int VEC = Problem::kVec;
  slot_to_float(raw, v);
#pragma unroll
  for (int i = 0; i < VEC; ++i) v[i] = st.normalize(v[i]);
  epilogue_on_slot<Problem, WHOLE>(p, row, col, valid, pre, v, addend);
}

template <class O, class = void>
struct RoundsByAddend : std::false_type {};
template <class O>
struct RoundsByAddend<O, std::void_t<decltype(O::kRoundsByAddend)>> : std::bool_constant<O::kRoundsByAddend> {};

/// Whether store_slots rounds in the epilogue: the output rounds by an
/// addend (Output::kRoundsByAddend: pack_rounded) and the epilogue takes one
/// (TakesAddend), where the row factor is folded into rstd (FOLDED: pack's
/// factor is then 1, so pack(1, v) == pack_rounded(v + kRoundingAddend)).
template <class Problem, bool FOLDED>
inline constexpr bool kRoundsInEpilogue = FOLDED && RoundsByAddend<typename Problem::Output>::value &&
                                          TakesAddend<typename Problem::Epilogue, Problem::kVec>::value;

/// max |y| over the valid elements of one transformed slot, folded into amax.
template <int VEC>
NORMKIT_DEVICE float fold_absmax(float amax, const float (&v)[VEC], int valid) {
#pragma unroll
  for (int i = 0; i < VEC; ++i) amax = i < valid ? fmaxf(amax, fabsf(v[i])) : amax;
  return amax;
}

/// Nothing to do once a slot is stored (store_slots' default).
struct NoRefill {
  NORMKIT_DEVICE void operator()(int) const {}
};

/// Transforms, packs and stores K slots of a row (or chunk starting at col_base).
/// Each slot is stored as soon as it is packed, so no array of packed outputs
/// stays live (registers go to rows in flight instead). WHOLE: the K slots
/// lie within the first n columns and every access is slot-aligned
/// (Params::whole_access; RowLoader's WHOLE).
/// pre: K slots' parameters loaded ahead (prefetch_whole), read only when Pre
/// is not NoPrefetch (otherwise the epilogue loads them and pre may be null:
/// prefetched_slot).
/// refill(k) runs once slot k is stored (and raw[k] read for the last time):
/// a kernel that holds its rows in registers may load the next row's slot k
/// into raw[k] there (normalize_held_part's ROLL).
/// FOLDED: the caller folded the row factor into st (output_factor with
/// kFoldsRowFactor), so `factor` is 1; outputs that round by an addend then
/// round in the epilogue's fma (kRoundsInEpilogue).
template <class Problem, int K, bool WHOLE = false, bool FOLDED = false, class Pre = NoPrefetch,
          class Refill = NoRefill>
NORMKIT_DEVICE void store_slots(const typename Problem::Params& p, int64_t row, int64_t col_base, int64_t n,
                                int first_slot, int lane, int team, const RowStats& st, float factor,
                                const RawSlot<typename Problem::Storage, Problem::kVec> (&raw)[K],
                                const Pre* pre = nullptr, const Refill& refill = Refill{}) {
  constexpr int VEC = Problem::kVec;
  using Y = typename Problem::Y;
  using Output = typename Problem::Output;
  Y* dst = p.y + row * p.y_stride + col_base;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t c = RowLoader<Y, VEC>::column(first_slot + k, lane, team);
    const int valid = WHOLE ? VEC : slot_valid(n, c, VEC);
    float v[VEC];
    RawSlot<Y, VEC> out[1];
    if constexpr (kRoundsInEpilogue<Problem, FOLDED>) {
      transform_slot<Problem, WHOLE>(p, row, col_base + c, valid, st, raw[k], v, prefetched_slot(pre, k),
                                     Output::kRoundingAddend);
      out[0] = Output::template pack_rounded<VEC>(p, v);
    } else {
      transform_slot<Problem, WHOLE>(p, row, col_base + c, valid, st, raw[k], v, prefetched_slot(pre, k));
      out[0] = Output::template pack<VEC>(p, factor, v);
    }
    RowLoader<Y, VEC>::template store_raw<1, WHOLE, kShiftsStores<Problem>>(dst, n, first_slot + k, lane, team,
                                                                             p.y_access, out);
    refill(k);
  }
}

/// Transforms K slots of a row into y (fp32, held by the caller) and returns
/// this thread's max |y| over their valid elements: the walk that finds a
/// row's maximum where it cannot ride on the statistics (kFusedRowMax false:
/// LayerNorm's bias), keeping what it computed for the output walk
/// (store_held_slots) instead of transforming each slot again there.
/// pre: as store_slots'.
/// ONCE: where the epilogue has a present form (kTestsParamsOnce), WHOLE
/// and nothing is prefetched, its parameters are tested once for the K
/// slots (whole_params_present) and the slots then walked without a branch
/// each (WithPresentParams): the same values, so the same bits. The caller
/// chooses it where the registers allow (normalize_held_part).
template <class Problem, int K, bool WHOLE = false, class Pre = NoPrefetch, bool ONCE = false>
NORMKIT_DEVICE float transform_held_slots(const typename Problem::Params& p, int64_t row, int64_t col_base, int64_t n,
                                          int first_slot, int lane, int team, const RowStats& st,
                                          const RawSlot<typename Problem::Storage, Problem::kVec> (&raw)[K],
                                          float (&y)[K][Problem::kVec], const Pre* pre = nullptr) {
  if constexpr (ONCE && WHOLE && std::is_same_v<Pre, NoPrefetch> && kTestsParamsOnce<Problem>) {
    if (Problem::Epilogue::whole_params_present(p.epilogue)) {
      return transform_held_slots<WithPresentParams<Problem>, K, WHOLE, Pre>(p, row, col_base, n, first_slot, lane,
                                                                             team, st, raw, y, pre);
    }
  }
  constexpr int VEC = Problem::kVec;
  float amax = 0.f;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t c = RowLoader<float, VEC>::column(first_slot + k, lane, team);
    const int valid = WHOLE ? VEC : slot_valid(n, c, VEC);
    transform_slot<Problem, WHOLE>(p, row, col_base + c, valid, st, raw[k], y[k], prefetched_slot(pre, k));
    amax = fold_absmax(amax, y[k], valid);
  }
  return amax;
}

/// Packs and stores K slots transformed already (transform_held_slots):
/// pack(factor, y), store_slots' values for an unfolded row factor.
template <class Problem, int K, bool WHOLE = false>
NORMKIT_DEVICE void store_held_slots(const typename Problem::Params& p, int64_t row, int64_t col_base, int64_t n,
                                     int first_slot, int lane, int team, float factor,
                                     const float (&y)[K][Problem::kVec]) {
  constexpr int VEC = Problem::kVec;
  using Y = typename Problem::Y;
  Y* dst = p.y + row * p.y_stride + col_base;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const RawSlot<Y, VEC> out[1] = {Problem::Output::template pack<VEC>(p, factor, y[k])};
    RowLoader<Y, VEC>::template store_raw<1, WHOLE, kShiftsStores<Problem>>(dst, n, first_slot + k, lane, team,
                                                                             p.y_access, out);
  }
}

/// amax folded with max |y| of one slot, x in fp32 (columns col .. col + VEC,
/// the first `valid` real), for statistics st (pre: as transform_slot's).
/// NORMALIZE false: x goes to the epilogue as it is, for st ==
/// RowStats::unit() only (whose normalization gives x itself: the same
/// values, one fma per element fewer; see RowMaxTap).
template <class Problem, bool WHOLE = false, class Pre = NoPrefetch, bool NORMALIZE = true>
NORMKIT_DEVICE float fold_slot_absmax(float amax, const typename Problem::Params& p, int64_t row, int64_t col,
                                      int valid, const RowStats& st, const float (&x)[Problem::kVec],
                                      const Pre& pre = Pre{}) {
  constexpr int VEC = Problem::kVec;
  float v[VEC];
#pragma unroll
  for (int i = 0; i < VEC; ++i) v[i] = NORMALIZE ? st.normalize(x[i]) : x[i];
  epilogue_on_slot<Problem, WHOLE>(p, row, col, valid, pre, v);
  return fold_absmax(amax, v, valid);
}

/// max |y| of K slots for statistics st (for outputs that scale each row by
/// its maximum; with RowStats::unit(), max |epilogue(x)|: kFusedRowMax).
/// pre: as store_slots'. transform_held_slots' walk, its y left unused (the
/// compiler drops it): one loop for both.
template <class Problem, int K, bool WHOLE = false, class Pre = NoPrefetch>
NORMKIT_DEVICE float absmax_slots(const typename Problem::Params& p, int64_t row, int64_t col_base, int64_t n,
                                  int first_slot, int lane, int team, const RowStats& st,
                                  const RawSlot<typename Problem::Storage, Problem::kVec> (&raw)[K],
                                  const Pre* pre = nullptr) {
  float unused[K][Problem::kVec];
  return transform_held_slots<Problem, K, WHOLE, Pre>(p, row, col_base, n, first_slot, lane, team, st, raw, unused,
                                                      pre);
}

/// Whether y is rstd times epilogue(x): the statistics normalize by a scale
/// alone (they offer compute_with_max) and the epilogue is homogeneous. A
/// positive row factor then moves freely between rstd and y.
template <class Problem, class View, class Reducer>
inline constexpr bool kScalesWithRstd = epilogue_homogeneous_v<typename Problem::Epilogue> &&
                                        stats_has_compute_with_max_v<typename Problem::Stats, View, Reducer>;

/// Whether a row's max|y| rides on the statistics' reduction: the output
/// needs it and kScalesWithRstd, so max|y| = rstd * max|epilogue(x)|, which
/// is known before rstd is (docs/performance.md, change 24). Its bits do not
/// depend on the kernel shape (a maximum has no order), so rows stay batch
/// invariant.
template <class Problem, class View, class Reducer>
inline constexpr bool kFusedRowMax = Problem::Output::kNeedsRowAbsMax && kScalesWithRstd<Problem, View, Reducer>;

template <class O, class = void>
struct ScalesByFactor : std::false_type {};
template <class O>
struct ScalesByFactor<O, std::void_t<decltype(O::kScalesByFactor)>> : std::bool_constant<O::kScalesByFactor> {};

/// Whether the output's row factor may be folded into rstd: kScalesWithRstd
/// and the output scales by its factor (kScalesByFactor). Then
/// pack(factor, epilogue(x * rstd)) == pack(1, epilogue(x * (rstd * factor))):
/// one multiplication per element fewer (quantized outputs; change 26).
template <class Problem, class View, class Reducer>
inline constexpr bool kFoldsRowFactor =
    ScalesByFactor<typename Problem::Output>::value && kScalesWithRstd<Problem, View, Reducer>;

/// The output's row factor (Output::row_factor, which may write the row's
/// scale), called once mean and rstd are stored: folded into st.rstd where
/// kFoldsRowFactor allows, leaving a factor of exactly 1, which the compiler
/// drops from pack. st then serves the output walk only.
template <class Problem, class View, class Reducer>
NORMKIT_DEVICE float output_factor(const typename Problem::Params& p, int64_t row, float amax, bool leader,
                                   RowStats& st) {
  const float factor = Problem::Output::row_factor(p, row, amax, leader);
  if constexpr (kFoldsRowFactor<Problem, View, Reducer>) {
    st.rstd *= factor;
    return 1.0f;
  } else {
    return factor;
  }
}

/// kFusedRowMax's statistics: compute_with_max over `view`, with this
/// thread's max |epilogue(x)| in `m` (by reference: a view may still fold
/// into it as it is walked, and compute_with_max reads it after the walk);
/// the row's max|y| = rstd * max |epilogue(x)| in *amax.
template <class Problem, class View, class Reducer>
NORMKIT_DEVICE RowStats stats_with_row_max(const typename Problem::Params& p, const View& view, Reducer& reducer,
                                           float& m, float* amax) {
  const RowStats st = Problem::Stats::compute_with_max(view, reducer, p.cols, p.eps, m);
  *amax = m * st.rstd;
  return st;
}

/// A row's statistics and, for outputs that need it (kNeedsRowAbsMax), its
/// max|y| in *amax (0 otherwise). local_absmax(st) returns this thread's
/// max|y| over its share of the row for statistics st (absmax_slots): a
/// non-negative, non-NaN float folded by fmaxf from +0 (fold_absmax), as the
/// reduction's NonNegativeMax requires (-inf's bits would win it). Fused
/// (kFusedRowMax), it is called with RowStats::unit() (max|epilogue(x)|)
/// before the statistics and reduced with them; otherwise after them, with a
/// reduction of its own. (Skipping the unit normalization, one fma per
/// element, compiled the 4-slot kernels to 64 registers instead of 54 and
/// measured 2-10 points slower at N = 768-5120 and 12288: change 26.)
template <class Problem, class View, class Reducer, class LocalAbsMax>
NORMKIT_DEVICE RowStats row_stats_and_absmax(const typename Problem::Params& p, const View& view, Reducer& reducer,
                                             LocalAbsMax&& local_absmax, float* amax) {
  using Stats = typename Problem::Stats;
  if constexpr (kFusedRowMax<Problem, View, Reducer>) {
    float m = local_absmax(RowStats::unit());
    return stats_with_row_max<Problem>(p, view, reducer, m, amax);
  } else {
    const RowStats st = Stats::compute(view, reducer, p.cols, p.eps);
    *amax = 0.f;
    if constexpr (Problem::Output::kNeedsRowAbsMax) *amax = reducer.all_reduce(local_absmax(st), NonNegativeMax{});
    return st;
  }
}

/// A view's tap (StagedView, InterleavedParts) for kFusedRowMax: folds max
/// |epilogue(x)| of each slot walked into *m, for slot s of `lane` in a team
/// of `team`, columns from col_base. WHOLE: every slot walked is whole and
/// every access slot-aligned; otherwise a slot the walk marks whole
/// (std::true_type) takes the whole form where the row's accesses allow
/// (Params::whole_access). BARE: x goes to the epilogue without the unit
/// statistics' normalization (x * 1 - 0: the same values, one fma per element
/// fewer), for the 8-slot kernels only: elsewhere that fma is what kept
/// ptxas from keeping the walk's conversions of x alive for the output walk
/// (spills; changes 26 and 62), which those kernels prevent on their own
/// (normalize_register_part's kWideTap).
template <class Problem, bool WHOLE, bool BARE = false>
struct RowMaxTap {
  const typename Problem::Params& p;
  int64_t row;
  int64_t col_base;
  int lane;
  int team;
  float* m;
  template <int VEC, class Whole>
  NORMKIT_DEVICE void operator()(const float (&x)[VEC], int valid, int s, Whole) const {
    const int64_t col = col_base + RowLoader<typename Problem::Storage, VEC>::column(s, lane, team);
    if (WHOLE || (Whole::value && p.whole_access)) {
      *m = fold_slot_absmax<Problem, true, NoPrefetch, !BARE>(*m, p, row, col, VEC, RowStats::unit(), x);
    } else {
      *m = fold_slot_absmax<Problem, false, NoPrefetch, !BARE>(*m, p, row, col, valid, RowStats::unit(), x);
    }
  }
};

/// row_stats_and_absmax for a chunk staged in shared memory (row_chunked).
/// Where kFusedRowMax holds, max |epilogue(x)| is folded into the statistics'
/// own walk through the view's tap instead of a walk of its own before it:
/// one pass over shared memory, and over the weight's loads from L2, fewer
/// (docs/performance.md, change 30). The maximum is the same set of values
/// either way, so its bits do not change.
template <class Problem, class Reducer, class S, int VEC, class LocalAbsMax>
NORMKIT_DEVICE RowStats staged_row_stats_and_absmax(const typename Problem::Params& p, int64_t row, int64_t col_base,
                                                    const StagedView<S, VEC>& view, Reducer& reducer,
                                                    LocalAbsMax&& local_absmax, float* amax) {
  if constexpr (kFusedRowMax<Problem, StagedView<S, VEC>, Reducer>) {
    float m = 0.f;
    using Tap = RowMaxTap<Problem, false>;
    const StagedView<S, VEC, Tap> tapped{view.chunk, view.n,     view.slots, view.lane,
                                         view.team,  view.shift, Tap{p, row, col_base, view.lane, view.team, &m}};
    // The tap folds into m as the walk goes; compute_with_max reads it after.
    return stats_with_row_max<Problem>(p, tapped, reducer, m, amax);
  } else {
    return row_stats_and_absmax<Problem>(p, view, reducer, local_absmax, amax);
  }
}

}  // namespace detail
NORMKIT_NAMESPACE_END
