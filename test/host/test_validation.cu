// Argument validation: every bad input gets its own Status before any CUDA
// call, so these run (and must pass) without a GPU. The pointers are fake:
// a launcher that touched them would crash or be caught by the sanitizer.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <normkit/launch/validate.cuh>
#include <normkit/status.cuh>

#include "dispatch.h"
#include "dispatch_extra.h"
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

// LaunchOptions::row_counter must share no byte with the call's memory
// (the kernels write it): refused before any CUDA call wherever its two
// words meet x, y, mean, rstd, a residual, per-row scales or the weight.
TEST(Validation, RowCounterInsideTheCallsMemory) {
  const auto words_at = [](const void* p, intptr_t bytes) {
    return reinterpret_cast<uint32_t*>(reinterpret_cast<intptr_t>(p) + bytes);
  };
  for (Op op : {Op::kLayerNorm, Op::kRmsNorm}) {
    NormCall c = valid_call(op);  // bf16 [16, 1024]: x and y 32 KiB each
    c.weight = fake(0x4000);
    c.rstd = static_cast<float*>(fake(0x2000000));
    for (intptr_t at : {intptr_t{0}, intptr_t{1000}, intptr_t{32768 - 8}, intptr_t{-4}, intptr_t{32768 - 4}}) {
      c.row_counter = words_at(c.x, at);
      EXPECT_EQ(nktest::launch(c), Status::kErrorInvalidWorkspace) << "x + " << at;
      c.row_counter = words_at(c.y, at);
      EXPECT_EQ(nktest::launch(c), Status::kErrorInvalidWorkspace) << "y + " << at;
    }
    c.row_counter = words_at(c.rstd, 15 * 4);  // the last row's rstd
    EXPECT_EQ(nktest::launch(c), Status::kErrorInvalidWorkspace);
    c.row_counter = words_at(c.weight, 2044);  // the weight's last two elements
    EXPECT_EQ(nktest::launch(c), Status::kErrorInvalidWorkspace);
    if (op == Op::kLayerNorm) {
      c.mean = static_cast<float*>(fake(0x3000000));
      c.bias = fake(0x5000);
      c.row_counter = words_at(c.mean, 0);
      EXPECT_EQ(nktest::launch(c), Status::kErrorInvalidWorkspace);
      c.row_counter = words_at(c.bias, -4);  // the second word on the bias's first element
      EXPECT_EQ(nktest::launch(c), Status::kErrorInvalidWorkspace);
    }
  }
  nktest::AddNormCall a;
  a.x = fake(0x100000);
  a.residual = fake(0x200000);
  a.residual_out = fake(0x300000);
  a.y = fake(0x400000);
  a.weight = fake(0x4000);
  a.rows = 16;
  a.cols = 1024;
  for (const void* region : {a.residual, static_cast<const void*>(a.residual_out)}) {
    a.row_counter = words_at(region, 20000);
    EXPECT_EQ(nktest::launch_add_norm(a), Status::kErrorInvalidWorkspace);
  }
  nktest::QuantCall q;
  q.x = fake(0x100000);
  q.y = fake(0x200000);
  q.weight = fake(0x4000);
  q.row_scales = static_cast<float*>(fake(0x300000));
  q.rows = 16;
  q.cols = 1024;
  q.row_counter = words_at(q.row_scales, 60);
  EXPECT_EQ(nktest::launch_quant(q), Status::kErrorInvalidWorkspace);
}

// Where the counter may lie: right before or after each region, not in it.
// Params-shaped structs stand for the library's policies (which declare
// kRegionsKnown); a caller's policy that does not declare it is not seen,
// whatever its fields (a `weight` pointer may hold one scalar).
struct NoFields {};
struct Residuals {
  const uint16_t* residual = nullptr;
  uint16_t* residual_out = nullptr;
  int64_t residual_stride = 0, residual_out_stride = 0;
  static constexpr bool kRegionsKnown = true;
};
struct RowScales {
  float* row_scales = nullptr;
  static constexpr bool kRegionsKnown = true;
};
struct WeightBias {
  const float* weight = nullptr;
  const float* bias = nullptr;
  static constexpr bool kRegionsKnown = true;
};
struct CallersWeight {  // a caller's epilogue: its weight one scalar, say
  const float* weight = nullptr;
  float bias = 0.f;
};
template <class In, class Out, class Epi>
struct FakeParams {
  const uint16_t* x = nullptr;
  uint16_t* y = nullptr;
  float* mean = nullptr;
  float* rstd = nullptr;
  int64_t rows = 4, cols = 100, x_stride = 128, y_stride = 100;
  In input;
  Out output;
  Epi epilogue;
};

TEST(Validation, RowCounterBesideTheCallsMemoryIsAccepted) {
  using normkit::detail::row_counter_overlaps;
  const auto words = [](uintptr_t a) { return reinterpret_cast<uint32_t*>(a); };
  FakeParams<Residuals, RowScales, WeightBias> p;
  p.x = reinterpret_cast<const uint16_t*>(0x10000);       // rows of 256 bytes, 200 used: ends at 0x10000 + 968
  p.y = reinterpret_cast<uint16_t*>(0x20000);             // 800 bytes
  p.mean = reinterpret_cast<float*>(0x30000);             // 16 bytes
  p.rstd = reinterpret_cast<float*>(0x30100);
  p.input.residual = reinterpret_cast<const uint16_t*>(0x40000);
  p.input.residual_out = reinterpret_cast<uint16_t*>(0x50000);
  p.input.residual_stride = p.input.residual_out_stride = 100;
  p.output.row_scales = reinterpret_cast<float*>(0x60000);
  p.epilogue.weight = reinterpret_cast<const float*>(0x70000);  // 400 bytes
  p.epilogue.bias = reinterpret_cast<const float*>(0x80000);
  EXPECT_FALSE(row_counter_overlaps(p, nullptr));
  const std::pair<uintptr_t, uintptr_t> regions[] = {{0x10000, 0x10000 + 3 * 256 + 200}, {0x20000, 0x20000 + 800},
                                                     {0x30000, 0x30010},  {0x30100, 0x30110},
                                                     {0x40000, 0x40000 + 800}, {0x50000, 0x50000 + 800},
                                                     {0x60000, 0x60010},  {0x70000, 0x70000 + 400},
                                                     {0x80000, 0x80000 + 400}};
  for (const auto& [begin, end] : regions) {
    EXPECT_FALSE(row_counter_overlaps(p, words(begin - 8))) << std::hex << begin;
    EXPECT_TRUE(row_counter_overlaps(p, words(begin - 4))) << std::hex << begin;
    EXPECT_TRUE(row_counter_overlaps(p, words(end - 4))) << std::hex << begin;
    EXPECT_FALSE(row_counter_overlaps(p, words(end))) << std::hex << begin;
  }
  // In the gap between two of x's rows (bytes 200-255 of each 256): not x's.
  EXPECT_FALSE(row_counter_overlaps(p, words(0x10000 + 256 + 200)));
  EXPECT_TRUE(row_counter_overlaps(p, words(0x10000 + 256 + 196)));
  // Params whose policies do not declare kRegionsKnown are checked for x,
  // y, mean and rstd alone: a counter right after a caller's one-scalar
  // weight is accepted.
  FakeParams<NoFields, NoFields, CallersWeight> plain;
  plain.x = p.x;
  plain.y = p.y;
  plain.epilogue.weight = p.epilogue.weight;
  EXPECT_TRUE(row_counter_overlaps(plain, words(0x10000)));
  EXPECT_FALSE(row_counter_overlaps(plain, words(0x40000)));
  EXPECT_FALSE(row_counter_overlaps(plain, words(0x70000 + 4)));
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
