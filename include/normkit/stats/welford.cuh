// normkit/stats/welford.cuh: single-pass statistics with Welford states merged
// by Chan's formula. One reduction per row instead of two, and one read of the
// row in the streaming kernel (where TwoPass needs two).
//
// Each slot's valid elements become a small Welford state (their mean and M2,
// computed exactly from the registers), merged into the thread's running state;
// thread states are then merged across the row. The mean is an fp32 value with
// no correction term, so for rows whose mean is large against their spread the
// error of y is about half an ulp of the mean divided by the standard deviation
// (as in PyTorch); TwoPass removes that error where the row is on chip.
#pragma once

#include <cstdint>

#include "../block/reduce_ops.cuh"
#include "../config.cuh"
#include "row_stats.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace stats {

struct Welford {

  /// Welford state of the first `valid` elements of a slot.
  template <int VEC>
  static NORMKIT_HOST_DEVICE WelfordState slot_state(const float (&v)[VEC], int valid) {
    if (valid >= VEC) {
      float s = 0.f;
      for (int i = 0; i < VEC; ++i) s += v[i];
      const float m = s * (1.0f / VEC);
      float m2 = 0.f;
      for (int i = 0; i < VEC; ++i) m2 = fmaf(v[i] - m, v[i] - m, m2);
      return WelfordState{static_cast<float>(VEC), m, m2};
    }
    if (valid <= 0) return WelfordState{0.f, 0.f, 0.f};
    float s = 0.f;
    for (int i = 0; i < VEC; ++i) s += i < valid ? v[i] : 0.f;
    const float m = s / static_cast<float>(valid);
    float m2 = 0.f;
    for (int i = 0; i < VEC; ++i) {
      const float d = i < valid ? v[i] - m : 0.f;
      m2 = fmaf(d, d, m2);
    }
    return WelfordState{static_cast<float>(valid), m, m2};
  }

  template <class View, class Reducer>
  static NORMKIT_DEVICE RowStats compute(const View& view, Reducer& reducer, int64_t n, float eps) {
    constexpr int VEC = View::kVec;
    WelfordState state{0.f, 0.f, 0.f};
    view.for_each_slot([&](const float (&v)[VEC], int valid) {
      state = WelfordMerge{}(state, slot_state<VEC>(v, valid));
    });
    state = reducer.all_reduce(state, WelfordMerge{});
    const float var = fmaxf(state.m2 / static_cast<float>(n), 0.f);
    return RowStats{state.mean, 0.f, rsqrtf(var + eps)};
  }
};

}  // namespace stats
NORMKIT_NAMESPACE_END
