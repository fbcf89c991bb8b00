// normkit/stats/mean_square.cuh: RMSNorm's statistic, rstd = 1 / sqrt(mean(x^2) + eps).
// Nothing is subtracted, so padding (read as 0) adds nothing and needs no mask.
#pragma once

#include <cstdint>

#include "../block/reduce_ops.cuh"
#include "../config.cuh"
#include "row_stats.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace stats {

struct MeanSquare {
  /// Folds through fold_slots: the paired register forms may run it.
  static constexpr bool kFoldsEachPart = true;
  /// Reads the view once, before its only reduction (walks_before_reducing_v).
  static constexpr bool kWalksBeforeReducing = true;

  template <class View, class Reducer>
  static NORMKIT_DEVICE RowStats compute(const View& view, Reducer& reducer, int64_t n, float eps) {
    return from_sum(reducer.all_reduce(sum_squares(view), Sum{}), n, eps);
  }

  /// compute, and max-reduces `local_max` (this thread's part of another
  /// per-row value) across the row in the same all-reduce, replacing it with
  /// the row's maximum. The sum of squares is reduced in the same order as by
  /// compute (the same bits). Offered because x_hat = x * rstd here (mean and
  /// correction 0): an output that needs max|y| can take it as rstd *
  /// max|epilogue(x)| before rstd is known, and save a reduction per row
  /// (docs/performance.md, change 24; row_output.cuh, kFusedRowMax).
  template <class View, class Reducer>
  static NORMKIT_DEVICE RowStats compute_with_max(const View& view, Reducer& reducer, int64_t n, float eps,
                                                  float& local_max) {
    const auto sum_sq = sum_squares(view);  // before local_max is read: a view may fold into it as walked
    // The maximum has no order: every part carries the thread's.
    const SumPair r = reducer.all_reduce(map_parts(sum_sq, [&](float s) { return SumPair{s, local_max}; }), SumMax{});
    local_max = r.second;
    return from_sum(r.first, n, eps);
  }

 private:
  /// This thread's sum of squares (one per part: fold_slots).
  template <class View>
  static NORMKIT_DEVICE auto sum_squares(const View& view) {
    constexpr int VEC = View::kVec;
    return fold_slots(view, 0.f, [](float& sq, const float (&v)[VEC], int) {
#pragma unroll
      for (int i = 0; i < VEC; ++i) sq = fmaf(v[i], v[i], sq);
    });
  }

  static NORMKIT_DEVICE RowStats from_sum(float sum_sq, int64_t n, float eps) {
    return RowStats{0.f, 0.f, rsqrtf(sum_sq / static_cast<float>(n) + eps)};
  }
};

}  // namespace stats
NORMKIT_NAMESPACE_END
