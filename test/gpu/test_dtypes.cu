// Every dtype combination the launchers accept (x, y in {f32, f16, bf16},
// w and b in {f32, type of x}) for LayerNorm and RMSNorm, on lengths that
// land in each automatically chosen shape.
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "test_support.h"

namespace {

using nktest::CaseSpec;
using nktest::DType;
using nktest::Op;

using Combo = std::tuple<Op, DType, DType, DType>;
class Dtypes : public ::testing::TestWithParam<Combo> {};

TEST_P(Dtypes, AgainstFloat64Reference) {
  NK_REQUIRE_GPU();
  const auto [op, x, y, w] = GetParam();
  for (int64_t n : {1, 33, 768, 1025, 4099, 8192, 20000, 100003}) {
    for (int64_t m : {1, 77}) {
      CaseSpec s;
      s.op = op;
      s.x = x;
      s.y = y;
      s.w = w;
      s.rows = m;
      s.cols = n;
      nktest::expect_case_ok(s);
    }
  }
}

std::vector<Combo> combos() {
  std::vector<Combo> v;
  for (Op op : {Op::kLayerNorm, Op::kRmsNorm})
    for (DType x : {DType::kF32, DType::kF16, DType::kBF16})
      for (DType y : {DType::kF32, DType::kF16, DType::kBF16}) {
        v.emplace_back(op, x, y, DType::kF32);
        if (x != DType::kF32) v.emplace_back(op, x, y, x);
      }
  return v;
}

std::string combo_name(const ::testing::TestParamInfo<Combo>& i) {
  const auto [op, x, y, w] = i.param;
  return std::string(op == Op::kLayerNorm ? "LN" : "RMS") + "_x" + nktest::dtype_name(x) + "_y" +
         nktest::dtype_name(y) + "_w" + nktest::dtype_name(w);
}

INSTANTIATE_TEST_SUITE_P(AllCombinations, Dtypes, ::testing::ValuesIn(combos()), combo_name);

}  // namespace
