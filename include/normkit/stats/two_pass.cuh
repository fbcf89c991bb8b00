// normkit/stats/two_pass.cuh: mean, then deviations from it, over a row that
// stays on chip (registers or shared memory), so the second pass costs no
// memory traffic.
//
// Pass 1 sums every element (padding reads 0, so it adds nothing) and rounds
// the mean m to fp32. Pass 2 sums d = x - m and d * d over the valid elements
// only: a padding element would contribute (0 - m)^2, the tutorial's trap 1.
// The first sum, c = sum(d) / N, is the fp32 rounding error of m (plus the
// summation error of pass 1); carrying it as the mean correction makes
// x - mean exact to fp32 precision of the deviation, not of the mean (the
// corrected two-pass algorithm of Chan, Golub and LeVeque). The variance is
// sum(d^2) / N - c^2, which has no cancellation since c is tiny.
//
// On a streaming view each pass reads the row from memory again.
#pragma once

#include <cstdint>

#include "../block/reduce_ops.cuh"
#include "../config.cuh"
#include "row_stats.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace stats {

struct TwoPass {

  template <class View, class Reducer>
  static NORMKIT_DEVICE RowStats compute(const View& view, Reducer& reducer, int64_t n, float eps) {
    constexpr int VEC = View::kVec;
    const float inv_n = 1.0f / static_cast<float>(n);
    float sum = 0.f;
    view.for_each_slot([&](const float (&v)[VEC], int) {
#pragma unroll
      for (int i = 0; i < VEC; ++i) sum += v[i];
    });
    const float mean = reducer.all_reduce(sum, Sum{}) * inv_n;

    SumPair dev{0.f, 0.f};
    view.for_each_slot([&](const float (&v)[VEC], int valid) {
      if (valid == VEC) {  // the common case: no mask to apply
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
          const float d = v[i] - mean;
          dev.first += d;
          dev.second = fmaf(d, d, dev.second);
        }
      } else {
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
          const float d = i < valid ? v[i] - mean : 0.f;
          dev.first += d;
          dev.second = fmaf(d, d, dev.second);
        }
      }
    });
    dev = reducer.all_reduce(dev, Sum{});
    const float correction = dev.first * inv_n;
    const float var = fmaxf(fmaf(-correction, correction, dev.second * inv_n), 0.f);
    return RowStats{mean, correction, rsqrtf(var + eps)};
  }
};

}  // namespace stats
NORMKIT_NAMESPACE_END
