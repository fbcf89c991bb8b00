// normkit/block/reduce_ops.cuh: the values the reductions combine and the
// operators that combine them. Every operator is commutative bit for bit
// (op(a, b) == op(b, a) exactly), so a butterfly all-reduce leaves the same
// bits in every lane and results do not depend on lane order.
#pragma once

#include <type_traits>

#include "../config.cuh"

NORMKIT_NAMESPACE_BEGIN

/// Two sums reduced together (for example sum of deviations and of their squares).
struct SumPair {
  float first;
  float second;
};

/// Welford / Chan state of a set of values: count, mean and sum of squared
/// deviations from the mean (M2). The count is fp32: exact up to 2^24 and only
/// used as a weight beyond that.
struct WelfordState {
  float count;
  float mean;
  float m2;
};

namespace detail {
/// Whether a reducer's reductions cost more than a walk over a row held in
/// registers, so that statistics may trade walks for them (TwoPass's one
/// walk: stats/two_pass.cuh). A reducer says so with `static constexpr bool
/// kCostlyReductions = true`: ClusterAllReduce (each reduction synchronizes
/// the cluster's CTAs) and AloneOnSm (its CTA runs alone on its SM, so
/// nothing else loads while it waits at a barrier); wrappers forward it.
template <class R, class = void>
struct CostlyReductions : std::false_type {};
template <class R>
struct CostlyReductions<R, std::void_t<decltype(R::kCostlyReductions)>> : std::bool_constant<R::kCostlyReductions> {};
template <class R>
inline constexpr bool costly_reductions_v = CostlyReductions<R>::value;

/// a * b rounded on its own, never fused into a neighbouring add.
NORMKIT_HOST_DEVICE float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
}  // namespace detail

struct Sum {
  NORMKIT_HOST_DEVICE float operator()(float a, float b) const { return a + b; }
  NORMKIT_HOST_DEVICE SumPair operator()(SumPair a, SumPair b) const {
    return SumPair{a.first + b.first, a.second + b.second};
  }
  template <class T>
  NORMKIT_HOST_DEVICE static T identity() {
    return T{};
  }
};

struct Max {
  NORMKIT_HOST_DEVICE float operator()(float a, float b) const { return fmaxf(a, b); }
  template <class T>
  NORMKIT_HOST_DEVICE static T identity() {
    return -__builtin_huge_valf();
  }
};

/// Max over values known to be non-negative and not NaN (a row's max |y|:
/// each thread's is folded by fmaxf from +0, which drops NaNs). Such floats
/// order as their bits do as unsigned integers, so a full warp takes their
/// maximum in one redux.sync on the bits (sm_80 and later: WarpAllReduce)
/// instead of five dependent shuffles and fmaxf: the same bits as Max's.
/// Its identity is +0 (which -inf's bits would not be, as an unsigned).
struct NonNegativeMax : Max {
  template <class T>
  NORMKIT_HOST_DEVICE static T identity() {
    return T{};
  }
};

/// Sums SumPair::first and takes the maximum of SumPair::second: a row's sum
/// of squares and the maximum of a second per-element value in one
/// all-reduce (stats::MeanSquare::compute_with_max).
struct SumMax {
  NORMKIT_HOST_DEVICE SumPair operator()(SumPair a, SumPair b) const {
    return SumPair{a.first + b.first, fmaxf(a.second, b.second)};
  }
  template <class T>
  NORMKIT_HOST_DEVICE static T identity() {
    return T{0.f, -__builtin_huge_valf()};
  }
};

/// Chan, Golub and LeVeque's merge of two Welford states, written so that
/// merge(a, b) and merge(b, a) give identical bits: the mean is the
/// count-weighted average and the correction uses delta squared. Merging
/// with an empty state returns the other state itself: the formula would
/// multiply its mean by count * (1 / count), not always exactly 1, and turn
/// delta^2 * 0 into NaN past |mean| ~ 1.8e19; so an empty slot (a checked
/// kernel's padding) leaves the same bits as no slot (the 3-slot WHOLE
/// kernel, launch/launcher.cuh).
struct WelfordMerge {
  NORMKIT_HOST_DEVICE WelfordState operator()(WelfordState a, WelfordState b) const {
    if (a.count == 0.f) return b;
    if (b.count == 0.f) return a;
    const float n = a.count + b.count;
    const float inv_n = 1.0f / n;
    const float delta = b.mean - a.mean;
    WelfordState r;
    r.count = n;
    // Explicit roundings: a contracted fma(a.mean, wa, b.mean * wb) would not be symmetric.
    r.mean = detail::mul_rn(a.mean, a.count * inv_n) + detail::mul_rn(b.mean, b.count * inv_n);
    r.m2 = (a.m2 + b.m2) + delta * delta * ((a.count * b.count) * inv_n);
    return r;
  }
  template <class T>
  NORMKIT_HOST_DEVICE static T identity() {
    return T{0.f, 0.f, 0.f};
  }
};

NORMKIT_NAMESPACE_END
