// normkit/stats/two_pass.cuh: mean and variance of a row, accurate when
// |mean| >> std (the corrected two-pass algorithm of Chan, Golub and LeVeque),
// in one of two forms chosen at compile time from the view and the reducer.
//
// Two walks (a row held on chip and reduced within one CTA): walk 1 sums x
// (padding reads 0) and rounds the mean m to fp32; walk 2 sums d = x - m and
// d^2 over the *valid* elements only (a padding element would add (0 - m)^2:
// the tutorial's trap 1). c = sum(d) / N is m's rounding error plus walk 1's
// summation error; it is carried as the mean correction, so x - mean is
// formed as (x - m) - c, and var = sum(d^2) / N - c^2 has no cancellation
// since c is tiny.
//
// One walk (a streaming view, where each walk reads memory again, or a
// reducer whose reductions cost more than a walk, detail::costly_reductions_v:
// a cluster's, where each reduction may be a cluster barrier, or a CTA's
// alone on its SM, AloneOnSm, where nothing else runs while it waits at a barrier;
// the staged shapes use one even with a single CTA, where it measured better
// too):
// sums of d = x - K and d^2, with K the row's shift (view.shift: the input's
// pilot, the mean of the row's first 16 bytes). With c = sum(d) / N and
// q = sum(d^2) / N: mean = K + c, kept as the pair (K, c), and var = q - c^2,
// accepted when c^2 <= var (then q <= 2 var, and the difference loses under
// two bits). Otherwise (a poor shift; rare, as the pilot averages several
// elements) a second walk about m = K + c as above. Measured on the H200
// (docs/performance.md, change 6): one walk wins where reductions or walks
// are expensive, but for a row held in registers and reduced within its CTA
// the registers the shift costs outweigh the walk it saves; not in a CTA of
// 1024 threads of 4 slots, alone on its SM (change 104: 16-bit LayerNorm N =
// 32768, two walks 81.6% of the copy, one 87.0%).
//
// Which form and branch run depends only on the row and the kernel shape, so
// results are batch invariant.
#pragma once

#include <cfloat>
#include <cstdint>
#include <type_traits>

#include "../block/reduce_ops.cuh"
#include "../block/warp_reduce.cuh"
#include "../config.cuh"
#include "row_stats.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace stats {

struct TwoPass {
  /// A row in registers reduced within its CTA takes two walks, two reductions.
  static constexpr int kRowReductions = 2;
  /// Folds through fold_slots: the paired register forms may run it.
  static constexpr bool kFoldsEachPart = true;

  /// Whether a view and reducer take the one-walk form (see above).
  template <class View, class Reducer>
  static constexpr bool kOneWalk =
      !View::kResident || ::normkit::detail::costly_reductions_v<Reducer>;

  /// Only the one-walk form shifts (kernels then fill view.shift).
  template <class View, class Reducer>
  static constexpr bool kUsesShift = kOneWalk<View, Reducer>;

  template <class View, class Reducer>
  static NORMKIT_DEVICE RowStats compute(const View& view, Reducer& reducer, int64_t n, float eps) {
    constexpr int VEC = View::kVec;
    const float inv_n = 1.0f / static_cast<float>(n);
    if constexpr (kOneWalk<View, Reducer>) {
      const float shift = row_shift(view);
      const SumPair s1 = reducer.all_reduce(centered_sums(view, shift), Sum{});
      const float c = s1.first * inv_n;
      const float var1 = fmaxf(fmaf(-c, c, s1.second * inv_n), 0.f);
      RowStats st{shift, c, rsqrtf(var1 + eps)};
      // Retry on a poor shift, on NaN (the second walk propagates it), and on
      // sum(d^2) overflowing to Inf, which a walk about the mean may avoid.
      const bool retry = !(c * c <= var1 && var1 <= FLT_MAX);
      if (reduction_branch(reducer, retry)) {
        const RowStats again = corrected(view, reducer, shift + c, inv_n, eps);
        if (retry) st = again;
      }
      return st;
    } else {
      const auto sum = fold_slots(view, 0.f, [](float& acc, const float (&v)[VEC], int) {
#pragma unroll
        for (int i = 0; i < VEC; ++i) acc += v[i];
      });
      return corrected(view, reducer, reducer.all_reduce(sum, Sum{}) * inv_n, inv_n, eps);
    }
  }

 private:
  /// The walk about a known mean m: RowStats{m, sum(x - m) / N, rstd}.
  template <class View, class Reducer>
  static NORMKIT_DEVICE RowStats corrected(const View& view, Reducer& reducer, float m, float inv_n, float eps) {
    const SumPair s = reducer.all_reduce(centered_sums(view, m), Sum{});
    const float correction = s.first * inv_n;
    const float var = fmaxf(fmaf(-correction, correction, s.second * inv_n), 0.f);
    return RowStats{m, correction, rsqrtf(var + eps)};
  }

  /// sum(x - k) and sum((x - k)^2) over this thread's valid elements (one
  /// pair per part: fold_slots).
  template <class View>
  static NORMKIT_DEVICE auto centered_sums(const View& view, float k) {
    constexpr int VEC = View::kVec;
    return fold_slots(view, SumPair{0.f, 0.f}, [k](SumPair& acc, const float (&v)[VEC], int valid) {
      if (valid == VEC) {  // the common case: no mask to apply
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
          const float d = v[i] - k;
          acc.first += d;
          acc.second = fmaf(d, d, acc.second);
        }
      } else {
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
          const float d = i < valid ? v[i] - k : 0.f;
          acc.first += d;
          acc.second = fmaf(d, d, acc.second);
        }
      }
    });
  }
};

}  // namespace stats
NORMKIT_NAMESPACE_END
