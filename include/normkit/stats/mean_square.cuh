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

  template <class View, class Reducer>
  static NORMKIT_DEVICE RowStats compute(const View& view, Reducer& reducer, int64_t n, float eps) {
    constexpr int VEC = View::kVec;
    float sq = 0.f;
    view.for_each_slot([&](const float (&v)[VEC], int) {
#pragma unroll
      for (int i = 0; i < VEC; ++i) sq = fmaf(v[i], v[i], sq);
    });
    const float ms = reducer.all_reduce(sq, Sum{}) / static_cast<float>(n);
    return RowStats{0.f, 0.f, rsqrtf(ms + eps)};
  }
};

}  // namespace stats
NORMKIT_NAMESPACE_END
