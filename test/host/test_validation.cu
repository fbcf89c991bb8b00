// Argument validation: every bad input gets its own Status before any CUDA
// call, so these run (and must pass) without a GPU. The pointers are fake:
// a launcher that touched them would crash or be caught by the sanitizer.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include <normkit/launch/validate.cuh>
#include <normkit/status.cuh>

#include "dispatch.h"
#include "test_support.h"

namespace {

using normkit::Status;
using nktest::DType;
using nktest::NormCall;
using nktest::Op;

// Addresses that are never dereferenced by a correct launcher on bad input.
void* fake(uintptr_t a) { return reinterpret_cast<void*>(a); }

NormCall valid_call(Op op = Op::kLayerNorm) {
  NormCall c;
  c.op = op;
  c.x_type = c.y_type = c.w_type = DType::kBF16;
  c.x = fake(0x100000);
  c.y = fake(0x900000);
  c.rows = 16;
  c.cols = 1024;
  return c;
}

TEST(Validation, StatusStringsAreDistinct) {
  for (int i = 0; i <= static_cast<int>(Status::kErrorInvalidWorkspace); ++i) {
    for (int j = 0; j < i; ++j) {
      EXPECT_STRNE(normkit::status_string(static_cast<Status>(i)), normkit::status_string(static_cast<Status>(j)));
    }
  }
}

TEST(Validation, NullRequiredPointers) {
  for (Op op : {Op::kLayerNorm, Op::kRmsNorm}) {
    NormCall c = valid_call(op);
    c.x = nullptr;
    EXPECT_EQ(nktest::launch(c), Status::kErrorNullPointer);
    c = valid_call(op);
    c.y = nullptr;
    EXPECT_EQ(nktest::launch(c), Status::kErrorNullPointer);
  }
}

TEST(Validation, MisalignedRowCounter) {
  // LaunchOptions::row_counter must hold 32-bit words: refused before any
  // CUDA call, whatever the shape.
  for (Op op : {Op::kLayerNorm, Op::kRmsNorm}) {
    NormCall c = valid_call(op);
    c.row_counter = static_cast<uint32_t*>(fake(0x700002));
    EXPECT_EQ(nktest::launch(c), Status::kErrorInvalidWorkspace);
  }
}

TEST(Validation, BadShapes) {
  NormCall c = valid_call();
  c.cols = 0;
  EXPECT_EQ(nktest::launch(c), Status::kErrorInvalidShape);
  c.rows = 0;  // N == 0 is an error even when there are no rows
  EXPECT_EQ(nktest::launch(c), Status::kErrorInvalidShape);
  c = valid_call();
  c.rows = -1;
  EXPECT_EQ(nktest::launch(c), Status::kErrorInvalidShape);
  c = valid_call();
  c.cols = -5;
  EXPECT_EQ(nktest::launch(c), Status::kErrorInvalidShape);
}

TEST(Validation, StrideSmallerThanN) {
  NormCall c = valid_call();
  c.x_stride = 1023;
  EXPECT_EQ(nktest::launch(c), Status::kErrorInvalidStride);
  c = valid_call();
  c.y_stride = 0;
  EXPECT_EQ(nktest::launch(c), Status::kErrorInvalidStride);
  c = valid_call();
  c.x_stride = -7;
  EXPECT_EQ(nktest::launch(c), Status::kErrorInvalidStride);
}

TEST(Validation, BadEpsilon) {
  for (float eps : {-1e-5f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    for (Op op : {Op::kLayerNorm, Op::kRmsNorm}) {
      NormCall c = valid_call(op);
      c.eps = eps;
      EXPECT_EQ(nktest::launch(c), Status::kErrorInvalidEpsilon) << eps;
    }
  }
}

TEST(Validation, ZeroRowsIsANoOpEvenWithNullPointers) {
  NormCall c = valid_call();
  c.rows = 0;
  c.x = nullptr;
  c.y = nullptr;
  EXPECT_EQ(nktest::launch(c), Status::kSuccess);
}

TEST(Validation, PartialOverlapOfYAndX) {
  NormCall c = valid_call();
  c.y = static_cast<char*>(const_cast<void*>(c.x)) + 2 * 100;  // y starts 100 elements into x
  EXPECT_EQ(nktest::launch(c), Status::kErrorOverlap);
  // y == x but a different stride: rows would clobber each other.
  c = valid_call();
  c.y = const_cast<void*>(c.x);
  c.y_stride = 2048;
  EXPECT_EQ(nktest::launch(c), Status::kErrorOverlap);
  // y == x but a wider element type.
  c = valid_call();
  c.y = const_cast<void*>(c.x);
  c.y_type = DType::kF32;
  EXPECT_EQ(nktest::launch(c), Status::kErrorOverlap);
  // mean or rstd inside x or y.
  c = valid_call();
  c.mean = static_cast<float*>(c.y) + 10;
  EXPECT_EQ(nktest::launch(c), Status::kErrorOverlap);
  c = valid_call();
  c.rstd = static_cast<float*>(const_cast<void*>(c.x));
  EXPECT_EQ(nktest::launch(c), Status::kErrorOverlap);
  c = valid_call();
  c.mean = static_cast<float*>(fake(0x2000000));
  c.rstd = c.mean + 8;
  EXPECT_EQ(nktest::launch(c), Status::kErrorOverlap);
}

TEST(Validation, InterleavedRowsOfOneBufferAreNotAnOverlap) {
  // x and y are the two halves of each row of one [rows, 2 * cols] buffer.
  normkit::detail::Region x{fake(0x100000), 16, 1024, 2048, 2};
  normkit::detail::Region y{fake(0x100000 + 2048), 16, 1024, 2048, 2};
  EXPECT_FALSE(normkit::detail::regions_overlap(x, y));
  EXPECT_FALSE(normkit::detail::regions_overlap(y, x));
  normkit::detail::Region y2{fake(0x100000 + 2046), 16, 1024, 2048, 2};  // one element into x's row
  EXPECT_TRUE(normkit::detail::regions_overlap(x, y2));
  EXPECT_TRUE(normkit::detail::regions_overlap(y2, x));
  normkit::detail::Region y3{fake(0x100000 + 16 * 4096), 16, 1024, 2048, 2};  // right after x's last row
  EXPECT_FALSE(normkit::detail::regions_overlap(x, y3));
  normkit::detail::Region y4{fake(0x100000 + 15 * 4096), 16, 1024, 2048, 2};  // shares x's last row
  EXPECT_TRUE(normkit::detail::regions_overlap(x, y4));
  // Brute force against a byte map on random small layouts.
  nktest::Rng rng(nktest::fresh_seed());
  for (int t = 0; t < 2000; ++t) {
    const int64_t rows_a = 1 + rng.next() % 5, rows_b = 1 + rng.next() % 5, cols = 1 + rng.next() % 6;
    const int64_t stride = cols + rng.next() % 6;
    const int64_t off = static_cast<int64_t>(rng.next() % 60);
    normkit::detail::Region a{fake(0x1000), rows_a, cols, stride, 1};
    normkit::detail::Region b{fake(0x1000 + off), rows_b, cols, stride, 1};
    std::vector<int> map(200, 0);
    for (int64_t r = 0; r < rows_a; ++r)
      for (int64_t c = 0; c < cols; ++c) map[r * stride + c] |= 1;
    for (int64_t r = 0; r < rows_b; ++r)
      for (int64_t c = 0; c < cols; ++c) map[off + r * stride + c] |= 2;
    bool truth = false;
    for (int v : map) truth |= v == 3;
    EXPECT_EQ(normkit::detail::regions_overlap(a, b), truth)
        << "rows " << rows_a << "/" << rows_b << " cols " << cols << " stride " << stride << " off " << off;
  }
}

TEST(Validation, ValidArgumentsReachTheDevice) {
  // Valid fake arguments pass validation; without a GPU the launcher then says
  // so (it never reports success for work it did not do).
  if (nktest::gpu_available()) GTEST_SKIP() << "covered by the GPU tests on a machine with a device";
  EXPECT_EQ(nktest::launch(valid_call()), Status::kErrorNoDevice);
}

}  // namespace
