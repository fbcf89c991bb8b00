// Memory layouts on every kernel shape: row strides larger than N (and
// different for x and y), misaligned pointers (narrower accesses), in place,
// optional weight, bias, mean and rstd.
#include <gtest/gtest.h>

#include <vector>

#include "test_support.h"

namespace {

using nktest::CaseSpec;
using nktest::DType;
using nktest::Op;
using normkit::Shape;

// One length per shape, so each layout runs through each kernel.
struct ShapeLength {
  Shape shape;
  int64_t n;
  int64_t m;
};
const ShapeLength kShapes[] = {{Shape::kRowsPerWarp, 100, 301},  {Shape::kRowPerBlock, 3001, 41},
                               {Shape::kRowInSmem, 20001, 13},   {Shape::kRowInCluster, 70001, 7},
                               {Shape::kStreaming, 300007, 3},
                               // fp32 rows of 64 KiB and 16-bit RMSNorm rows of 64 KiB: 8 slots per thread
                               // (the checked form where pointers or strides are not slot-aligned)
                               {Shape::kAuto, 16384, 5},         {Shape::kAuto, 32768, 5},
                               // 16-bit RMSNorm: 1024 threads x 8 slots; fp32: a cluster of 2 CTAs' registers
                               {Shape::kAuto, 65536, 5}};

class Layouts : public ::testing::TestWithParam<ShapeLength> {
 protected:
  CaseSpec base(Op op, DType t) const {
    CaseSpec s;
    s.op = op;
    s.x = s.y = t;
    s.w = DType::kF32;
    s.shape = GetParam().shape;
    s.cols = GetParam().n;
    s.rows = GetParam().m;
    return s;
  }
};

TEST_P(Layouts, StridesLargerThanN) {
  NK_REQUIRE_GPU();
  for (Op op : {Op::kLayerNorm, Op::kRmsNorm}) {
    for (DType t : {DType::kBF16, DType::kF32}) {
      CaseSpec s = base(op, t);
      s.x_stride = s.cols + 8;   // keeps 16-byte rows for bf16
      s.y_stride = s.cols + 37;  // odd: forces narrow stores
      nktest::expect_case_ok(s);
      s.x_stride = 2 * s.cols + 3;
      s.y_stride = s.cols;
      nktest::expect_case_ok(s);
    }
  }
}

TEST_P(Layouts, MisalignedPointers) {
  NK_REQUIRE_GPU();
  for (Op op : {Op::kLayerNorm, Op::kRmsNorm}) {
    for (int mis : {1, 2, 3, 4}) {
      CaseSpec s = base(op, DType::kBF16);
      s.x_misalign = mis;
      s.y_misalign = (mis * 3) % 8;
      nktest::expect_case_ok(s);
      CaseSpec f = base(op, DType::kF32);
      f.x_misalign = mis % 4;
      f.y_misalign = 1;
      nktest::expect_case_ok(f);
    }
  }
}

TEST_P(Layouts, InPlace) {
  NK_REQUIRE_GPU();
  for (Op op : {Op::kLayerNorm, Op::kRmsNorm}) {
    for (DType t : {DType::kBF16, DType::kF16, DType::kF32}) {
      CaseSpec s = base(op, t);
      s.in_place = true;
      nktest::expect_case_ok(s);
      s.x_stride = s.cols + 5;
      s.x_misalign = 1;
      nktest::expect_case_ok(s);
    }
  }
}

TEST_P(Layouts, OptionalWeightBiasAndStatistics) {
  NK_REQUIRE_GPU();
  for (Op op : {Op::kLayerNorm, Op::kRmsNorm}) {
    for (int mask = 0; mask < 8; ++mask) {
      CaseSpec s = base(op, DType::kBF16);
      s.weight = mask & 1;
      s.bias = mask & 2;
      s.stats_out = mask & 4;
      nktest::expect_case_ok(s);
    }
  }
}

std::string shape_param_name(const ::testing::TestParamInfo<ShapeLength>& i) {
  return std::string(normkit::shape_name(i.param.shape)) + "_" + std::to_string(i.param.n);
}

INSTANTIATE_TEST_SUITE_P(EachShape, Layouts, ::testing::ValuesIn(kShapes), shape_param_name);

}  // namespace
