// Tensors with more than 2^31 elements: 64-bit row offsets on the paths that
// multiply a row index by a stride. Every element is checked written; a
// spread of rows (first, last, around the 2^31 boundary) against float64.
#include <gtest/gtest.h>

#include "test_support.h"

namespace {

using nktest::CaseSpec;
using nktest::DType;
using normkit::Shape;

TEST(Large, MoreThan2Pow31Elements) {
  NK_REQUIRE_GPU();
  size_t free_bytes = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
  const int64_t n = 4096, m = (int64_t{1} << 31) / n + 3;  // 2^31 + 12288 elements
  if (free_bytes < 10ull * (1ull << 30)) GTEST_SKIP() << "needs about 9 GiB of device memory";
  for (Shape sh : {Shape::kAuto, Shape::kRowInSmem}) {
    CaseSpec s;
    s.x = s.y = DType::kBF16;
    s.w = DType::kF32;
    s.rows = m;
    s.cols = n;
    s.shape = sh;
    s.sample_rows = 64;
    nktest::expect_case_ok(s);
  }
}

TEST(Large, ShortRowsBeyond2Pow31) {
  NK_REQUIRE_GPU();
  size_t free_bytes = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
  if (free_bytes < 10ull * (1ull << 30)) GTEST_SKIP() << "needs about 9 GiB of device memory";
  CaseSpec s;  // rows_per_warp: row index * stride past 2^31, in place
  s.op = nktest::Op::kRmsNorm;
  s.x = s.y = DType::kBF16;
  s.w = DType::kBF16;
  s.cols = 60;
  s.x_stride = 64;
  s.rows = (int64_t{1} << 31) / 64 + 5;
  s.in_place = true;
  s.sample_rows = 64;
  nktest::expect_case_ok(s);
}

}  // namespace
