// Host tests of the statistics arithmetic: Chan's merge of Welford states
// against a float64 two-pass, including the cancellation case, and the
// bitwise symmetry that lets a butterfly reduction leave identical bits in
// every lane (Welford's merge and SumMax).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include <normkit/block/reduce_ops.cuh>
#include <normkit/stats/welford.cuh>

#include "test_support.h"

namespace {

using normkit::WelfordMerge;
using normkit::WelfordState;

struct Exact {
  double mean, m2;
};

Exact two_pass(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += x;
  const double m = s / v.size();
  double m2 = 0;
  for (float x : v) m2 += (x - m) * (x - m);
  return {m, m2};
}

// Welford states of slots of 8, merged in a tree like a warp's butterfly,
// exactly as the kernels combine them.
WelfordState tree_merge(const std::vector<float>& v) {
  std::vector<WelfordState> states;
  for (size_t i = 0; i < v.size(); i += 8) {
    float slot[8] = {};
    const int valid = static_cast<int>(std::min<size_t>(8, v.size() - i));
    for (int k = 0; k < valid; ++k) slot[k] = v[i + k];
    states.push_back(normkit::stats::Welford::slot_state<8>(slot, valid));
  }
  while (states.size() > 1) {
    std::vector<WelfordState> next;
    for (size_t i = 0; i + 1 < states.size(); i += 2) next.push_back(WelfordMerge{}(states[i], states[i + 1]));
    if (states.size() % 2) next.push_back(states.back());
    states.swap(next);
  }
  return states[0];
}

std::vector<float> random_row(size_t n, double mean, double sd, uint64_t seed) {
  nktest::Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(mean + sd * rng.normal());
  return v;
}

TEST(WelfordHost, MergeMatchesTwoPass) {
  const uint64_t seed = nktest::fresh_seed();
  for (size_t n : {1u, 2u, 3u, 7u, 8u, 9u, 31u, 33u, 1000u, 4099u, 65536u}) {
    const auto v = random_row(n, 2.5, 1.5, seed + n);
    const Exact e = two_pass(v);
    const WelfordState w = tree_merge(v);
    EXPECT_EQ(w.count, static_cast<float>(n));
    EXPECT_NEAR(w.mean, e.mean, 1e-6 * (std::fabs(e.mean) + 1.5)) << "n=" << n << " seed=" << seed;
    EXPECT_NEAR(w.m2, e.m2, 1e-5 * e.m2 + 1e-6) << "n=" << n << " seed=" << seed;
  }
}

// Mean 1e4, spread 1: the one-pass formula E[x^2] - E[x]^2 in fp32 loses every
// significant digit (both terms are about 1e8 and their fp32 ulps are 8);
// Chan's merge keeps the variance to fp32 accuracy.
TEST(WelfordHost, CancellationCase) {
  const uint64_t seed = nktest::fresh_seed();
  const auto v = random_row(4099, 1e4, 1.0, seed);
  const Exact e = two_pass(v);
  const double var = e.m2 / v.size();
  const WelfordState w = tree_merge(v);
  EXPECT_NEAR(w.m2 / w.count, var, 1e-4 * var) << "seed=" << seed;

  float s = 0, s2 = 0;
  for (float x : v) {
    s += x;
    s2 += x * x;
  }
  const float naive = s2 / v.size() - (s / v.size()) * (s / v.size());
  EXPECT_GT(std::fabs(naive - var), 100 * std::fabs(w.m2 / w.count - var))
      << "the one-pass formula should be far worse here; seed=" << seed;
}

TEST(WelfordHost, MergeIsBitwiseSymmetricAndHandlesEmpty) {
  nktest::Rng rng(nktest::fresh_seed());
  for (int i = 0; i < 1000; ++i) {
    WelfordState a{static_cast<float>(1 + rng.next() % 100), static_cast<float>(rng.normal() * 100),
                   static_cast<float>(rng.uniform() * 50)};
    WelfordState b{static_cast<float>(1 + rng.next() % 100), static_cast<float>(rng.normal() * 100),
                   static_cast<float>(rng.uniform() * 50)};
    const WelfordState ab = WelfordMerge{}(a, b), ba = WelfordMerge{}(b, a);
    EXPECT_EQ(ab.count, ba.count);
    EXPECT_EQ(ab.mean, ba.mean);
    EXPECT_EQ(ab.m2, ba.m2);
    // An empty state changes nothing, bit for bit, on either side: a checked
    // kernel's empty slot must leave what the 3-slot WHOLE kernel (no such
    // slot) leaves.
    for (const WelfordState& ae : {WelfordMerge{}(a, WelfordState{0, 0, 0}), WelfordMerge{}(WelfordState{0, 0, 0}, a)}) {
      EXPECT_EQ(ae.count, a.count);
      EXPECT_EQ(ae.mean, a.mean);
      EXPECT_EQ(ae.m2, a.m2);
    }
  }
  const WelfordState none = WelfordMerge{}(WelfordState{0, 0, 0}, WelfordState{0, 0, 0});
  EXPECT_EQ(none.count, 0.f);
  EXPECT_EQ(none.m2, 0.f);
  // Means past sqrt(FLT_MAX) ~ 1.8e19: delta^2 overflows, and 0 * inf would be NaN.
  const WelfordState big{8.f, 1.9e19f, 1e36f};
  const WelfordState merged = WelfordMerge{}(big, WelfordState{0, 0, 0});
  EXPECT_EQ(merged.mean, big.mean);
  EXPECT_EQ(merged.m2, big.m2);
}

TEST(WelfordHost, SlotStateOfPartialSlotIgnoresPadding) {
  // The padding values are garbage on purpose: only `valid` elements count.
  float slot[8] = {4, 0, 0, 1, 1, 1e30f, -1e30f, 7};
  const WelfordState s = normkit::stats::Welford::slot_state<8>(slot, 5);
  EXPECT_EQ(s.count, 5.f);
  EXPECT_FLOAT_EQ(s.mean, 1.2f);
  EXPECT_NEAR(s.m2 / 5, 2.16, 1e-6);  // population variance of {4, 0, 0, 1, 1}
}

}  // namespace

// SumMax (a row's sum of squares and its max |epilogue(x)| in one all-reduce):
// each half is the plain operator's bits, in either order, and the identity
// changes nothing. A butterfly then leaves the same bits in every lane, and the
// sum of squares the same bits as when reduced alone (Sum).
TEST(ReduceOpsHost, SumMaxIsSumAndMaxBitwiseInEitherOrder) {
  nktest::Rng rng(nktest::fresh_seed());
  const normkit::SumMax op;
  const normkit::SumPair id = normkit::SumMax::identity<normkit::SumPair>();
  for (int i = 0; i < 1000; ++i) {
    const normkit::SumPair a{static_cast<float>(rng.normal() * 100), static_cast<float>(std::fabs(rng.normal()))};
    const normkit::SumPair b{static_cast<float>(rng.normal()), static_cast<float>(std::fabs(rng.normal() * 10))};
    const normkit::SumPair ab = op(a, b), ba = op(b, a);
    EXPECT_EQ(ab.first, ba.first);
    EXPECT_EQ(ab.second, ba.second);
    EXPECT_EQ(ab.first, normkit::Sum{}(a.first, b.first));
    EXPECT_EQ(ab.second, std::max(a.second, b.second));
    const normkit::SumPair ai = op(a, id);
    EXPECT_EQ(ai.first, a.first);
    EXPECT_EQ(ai.second, a.second);
  }
}
