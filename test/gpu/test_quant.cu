// Quantizing outputs (fp8 e4m3, e5m2, int8) with static per-tensor and
// dynamic per-row scales: every element within one quantization step of the
// float64 reference, scales against max|y| / max(Q); bad scales rejected.
#include <gtest/gtest.h>

#include <cuda_fp8.h>

#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "dispatch_extra.h"
#include "test_support.h"

namespace {

using nktest::DeviceBuffer;
using nktest::DType;
using nktest::Op;
using nktest::QType;
using normkit::Shape;

double qmax(QType q) { return q == QType::kE4M3 ? 448.0 : q == QType::kE5M2 ? 57344.0 : 127.0; }

double dequant(QType q, unsigned char b) {
  switch (q) {
    case QType::kE4M3: {
      __nv_fp8_e4m3 v;
      v.__x = b;
      return static_cast<float>(v);
    }
    case QType::kE5M2: {
      __nv_fp8_e5m2 v;
      v.__x = b;
      return static_cast<float>(v);
    }
    case QType::kInt8: return static_cast<int8_t>(b);
  }
  return 0;
}

// Spacing of representable values of q around magnitude a.
double step(QType q, double a) {
  if (q == QType::kInt8) return 1.0;
  const int mant = q == QType::kE4M3 ? 3 : 2;
  const int min_exp = q == QType::kE4M3 ? -6 : -14;
  const int e = a > 0 ? std::max(static_cast<int>(std::floor(std::log2(a))), min_exp) : min_exp;
  return std::ldexp(1.0, e - mant);
}

struct QuantCase {
  Op op = Op::kRmsNorm;
  DType x = DType::kBF16;
  QType q = QType::kE4M3;
  bool dynamic = true;
  Shape shape = Shape::kAuto;
  int64_t rows = 33, cols = 4096;
  int64_t x_pad = 0;    ///< x's row stride is cols + x_pad
  int64_t x_shift = 0;  ///< x starts this many elements into its buffer (misaligned when odd)
  int64_t y_pad = 0;    ///< y's row stride is cols + y_pad
  int64_t y_shift = 0;  ///< y starts this many bytes into its buffer
  normkit::LanePairing pairing = normkit::LanePairing::kAuto;
  bool weight = true;  ///< false: no weight (a scale of 1)
  uint64_t seed = 0;  ///< the inputs' seed; 0: a fresh one
  normkit::LaunchPlan* launched = nullptr;  ///< receives the plan that ran
};

/// What a launch wrote: y's bytes and the row scales.
struct QuantOutputs {
  std::vector<unsigned char> y;
  std::vector<float> scales;
};

// Checks one launch against the float64 reference; its outputs in *out if given.
void check_quant(const QuantCase& c, QuantOutputs* out = nullptr) {
  SCOPED_TRACE(std::string(c.op == Op::kRmsNorm ? "RMSNorm" : "LayerNorm") + " x=" + nktest::dtype_name(c.x) +
               " q=" + nktest::qtype_name(c.q) + (c.dynamic ? " dynamic" : " static") + " shape=" +
               normkit::shape_name(c.shape) + " N=" + std::to_string(c.cols) + " pad " + std::to_string(c.x_pad) +
               " shift " + std::to_string(c.x_shift) + " y pad " + std::to_string(c.y_pad) + " y shift " +
               std::to_string(c.y_shift) + " pairing " +
               std::to_string(static_cast<int>(c.pairing)) + (c.weight ? "" : " no weight"));
  const uint64_t seed = c.seed != 0 ? c.seed : nktest::fresh_seed();
  nktest::Rng rng(seed);
  const int64_t M = c.rows, N = c.cols;
  const int e = nktest::dtype_size(c.x);
  const int64_t S = N + c.x_pad;
  auto xi = [&](int64_t r, int64_t j) { return (c.x_shift + r * S + j) * e; };  // byte index of x[r][j]
  std::vector<unsigned char> hx((c.x_shift + M * S) * e), hw(N * e), hb(N * e);
  for (int64_t r = 0; r < M; ++r) {
    const double mu = 2 * rng.normal(), sd = 0.5 + rng.uniform();
    for (int64_t j = 0; j < N; ++j) nktest::store_as(c.x, mu + sd * rng.normal(), &hx[xi(r, j)]);
  }
  for (int64_t j = 0; j < N; ++j) {
    nktest::store_as(c.x, 1 + 0.3 * rng.normal(), &hw[j * e]);
    nktest::store_as(c.x, 0.2 * rng.normal(), &hb[j * e]);
  }
  // y: rows of stride YS from byte y_shift, then a 16-byte guard; the row
  // scales: M floats and a 16-byte guard.
  const int64_t YS = N + c.y_pad;
  const size_t y_bytes = static_cast<size_t>(c.y_shift + (M - 1) * YS + N + 16), scale_bytes = M * 4 + 16;
  DeviceBuffer dx(hx.size()), dy(y_bytes), dw(hw.size()), db(hb.size()), dscale(scale_bytes);
  ASSERT_EQ(cudaMemcpy(dx.data(), hx.data(), hx.size(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dw.data(), hw.data(), hw.size(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(db.data(), hb.data(), hb.size(), cudaMemcpyHostToDevice), cudaSuccess);
  const double static_scale = 4.0 / qmax(c.q);  // |y| up to about 4 fills the range; larger saturates
  nktest::QuantCall call;
  call.op = c.op;
  call.x_type = c.x;
  call.q_type = c.q;
  call.x = dx.data() + c.x_shift * e;
  call.x_stride = S;
  call.y = dy.data() + c.y_shift;
  call.y_stride = YS;
  call.weight = c.weight ? dw.data() : nullptr;
  call.bias = db.data();
  call.static_scale = c.dynamic ? 0.f : static_cast<float>(static_scale);
  call.row_scales = c.dynamic ? reinterpret_cast<float*>(dscale.data()) : nullptr;  // (null: kept poisoned)
  call.rows = M;
  call.cols = N;
  call.eps = 1e-5f;
  call.shape = c.shape;
  call.pairing = c.pairing;
  call.launched = c.launched;
  // Two launches, y poisoned with 0x7F (NaN in fp8, 127 in int8) and then
  // with 0x80 (-0 in fp8, -128 in int8): an element left unwritten differs
  // between them whatever values the format can hold; the bytes outside the
  // rows and the guards must keep each launch's poison.
  std::vector<unsigned char> gy, gy2, gsb;
  for (const unsigned char poison : {0x7F, 0x80}) {
    ASSERT_EQ(cudaMemset(dy.data(), poison, y_bytes), cudaSuccess);
    ASSERT_EQ(cudaMemset(dscale.data(), 0xFF, scale_bytes), cudaSuccess);
    ASSERT_EQ(nktest::launch_quant(call), normkit::Status::kSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<unsigned char>& got = poison == 0x7F ? gy : gy2;
    got.resize(y_bytes);
    gsb.resize(scale_bytes);
    ASSERT_EQ(cudaMemcpy(got.data(), dy.data(), y_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(gsb.data(), dscale.data(), scale_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    int64_t outside = 0;
    for (size_t i = 0; i < y_bytes; ++i) {
      const int64_t k = static_cast<int64_t>(i) - c.y_shift;
      const bool in_row = k >= 0 && k / YS < M && k % YS < N;
      outside += !in_row && got[i] != poison;
    }
    for (size_t i = c.dynamic ? static_cast<size_t>(M) * 4 : 0; i < scale_bytes; ++i) outside += gsb[i] != 0xFF;
    EXPECT_EQ(outside, 0) << "bytes outside y's rows or the row scales written, seed " << seed;
  }
  int64_t unwritten = 0;
  for (int64_t r = 0; r < M; ++r) {
    for (int64_t j = 0; j < N; ++j) unwritten += gy[c.y_shift + r * YS + j] != gy2[c.y_shift + r * YS + j];
  }
  EXPECT_EQ(unwritten, 0) << "elements of y not written (or not the same in two runs), seed " << seed;
  std::vector<float> gs(M);
  std::memcpy(gs.data(), gsb.data(), M * 4);
  int64_t bad = 0;
  std::vector<double> xr(N), y(N);
  for (int64_t r = 0; r < M; ++r) {
    for (int64_t j = 0; j < N; ++j) xr[j] = nktest::load_as(c.x, &hx[xi(r, j)]);
    const auto ref = nktest::reference_row(c.op, xr.data(), N, 1e-5);
    double amax = 0;
    for (int64_t j = 0; j < N; ++j) {
      const double b = c.op == Op::kLayerNorm ? nktest::load_as(c.x, &hb[j * e]) : 0.0;
      const double w = c.weight ? nktest::load_as(c.x, &hw[j * e]) : 1.0;
      y[j] = (xr[j] - ref.mean) * ref.rstd * w + b;
      amax = std::max(amax, std::fabs(y[j]));
    }
    double scale = static_scale;
    if (c.dynamic) {
      const double want = std::max(amax / qmax(c.q), 1.0 / (qmax(c.q) * 512));  // floor for all-zero rows
      EXPECT_NEAR(gs[r], want, 1e-4 * want) << "row scale, row " << r << " seed " << seed;
      scale = gs[r];
    }
    for (int64_t j = 0; j < N; ++j) {
      const double v = std::max(-qmax(c.q), std::min(qmax(c.q), y[j] / scale));
      const double got = dequant(c.q, gy[c.y_shift + r * YS + j]);
      // One step of the format at the reference's magnitude, plus the fp32
      // computation's own error of y (about 1e-6 absolute here), which near
      // y = 0 can exceed the tiny steps of fp8 subnormals.
      const double fp32_error = 2e-6 * (1 + std::fabs(y[j])) / scale;
      if (!(std::fabs(got - v) <= step(c.q, std::fabs(v)) * 1.0001 + fp32_error) && bad++ == 0) {
        ADD_FAILURE() << "row " << r << " col " << j << ": got " << got << " want " << v << " (step "
                      << step(c.q, std::fabs(v)) << ") seed " << seed;
      }
    }
  }
  EXPECT_EQ(bad, 0);
  // A static scale writes no row scales (their buffer keeps its NaN poison,
  // which would compare unequal to itself): only y is returned then.
  if (out != nullptr) {
    std::vector<unsigned char> rows(M * N);
    for (int64_t r = 0; r < M; ++r) std::memcpy(&rows[r * N], &gy[c.y_shift + r * YS], N);
    *out = QuantOutputs{rows, c.dynamic ? gs : std::vector<float>{}};
  }
}

TEST(Quant, EveryFormatBothScalings) {
  NK_REQUIRE_GPU();
  for (Op op : {Op::kRmsNorm, Op::kLayerNorm}) {
    for (QType q : {QType::kE4M3, QType::kE5M2, QType::kInt8}) {
      for (bool dynamic : {false, true}) {
        // x in every dtype (weight and bias in x's; bf16 at more lengths),
        // at lengths of the register shapes and of a staged one.
        for (DType x : {DType::kBF16, DType::kF16, DType::kF32}) {
          // (16-bit x: 20000 is LayerNorm's checked CTA of 640 threads at
          // 4 slots and RMSNorm's staged row; 40000 staged for both.)
          const std::vector<int64_t> lengths = x == DType::kBF16
                                                   ? std::vector<int64_t>{1, 100, 768, 4096, 4099, 20000, 40000}
                                                   : std::vector<int64_t>{1, 768, 4099, 20000};
          for (int64_t n : lengths) {
            QuantCase c;
            c.op = op;
            c.x = x;
            c.q = q;
            c.dynamic = dynamic;
            c.cols = n;
            check_quant(c);
          }
        }
        // Strided and misaligned x and y (y's rows one byte off and 5 bytes
        // apart beyond N): the checked forms' narrow stores.
        QuantCase c;
        c.op = op;
        c.q = q;
        c.dynamic = dynamic;
        c.cols = 4099;
        c.rows = 17;
        c.x_shift = 1;
        c.x_pad = 8;
        c.y_shift = 1;
        c.y_pad = 5;
        check_quant(c);
      }
    }
  }
}

// Dynamic per-row scales (e4m3, bf16) of `rows` rows on each forced shape and N.
template <size_t K>
void check_forced_shapes(const std::pair<Shape, int64_t> (&shapes)[K], int64_t rows) {
  for (const auto& [shape, n] : shapes) {
    QuantCase c;
    c.shape = shape;
    c.cols = n;
    c.rows = rows;
    check_quant(c);
  }
}

TEST(Quant, DynamicRowScalesOnEveryOnChipShape) {
  NK_REQUIRE_GPU();
  const std::pair<Shape, int64_t> shapes[] = {{Shape::kRowsPerWarp, 300}, {Shape::kRowPerBlock, 5000},
                                              {Shape::kRowInSmem, 30000}, {Shape::kRowInCluster, 200001}};
  check_forced_shapes(shapes, 9);
  for (DType x : {DType::kF16, DType::kF32}) {
    QuantCase c;
    c.x = x;
    c.cols = 3000;
    check_quant(c);
  }
}

// A LayerNorm case of `rows` rows of n, x starting `shift` elements into
// its buffer (misaligned when odd) with rows padded alike, reporting its
// plan to `launched`.
QuantCase layer_norm_case(DType x, QType q, bool dynamic, int64_t n, int64_t rows, int64_t shift,
                          normkit::LaunchPlan* launched) {
  QuantCase c;
  c.op = Op::kLayerNorm;
  c.x = x;
  c.q = q;
  c.dynamic = dynamic;
  c.cols = n;
  c.rows = rows;
  c.x_shift = shift;
  c.x_pad = 8 * shift;
  c.launched = launched;
  return c;
}

// 16-bit LayerNorm rows of 32-64 KiB of x held in one CTA of up to 1024
// threads at 4 slots (change 157; before, staged in one CTA), bf16 and fp16
// x, with either scaling, aligned (the WHOLE form) and misaligned (the
// checked form). With per-row scales the plan splits bf16 N = 32768 over a
// cluster of 2 CTAs of 512 threads (change 185), so those rows also run
// forced into one CTA, which per-row rows of other lengths (32760) still take.
TEST(Quant, LayerNormRowsInOneWideCta) {
  NK_REQUIRE_GPU();
  for (auto [x, q] : {std::pair{DType::kBF16, QType::kE4M3}, std::pair{DType::kBF16, QType::kInt8},
                      std::pair{DType::kF16, QType::kE5M2}}) {
    for (bool dynamic : {false, true}) {
      for (int64_t shift : {0, 1}) {
        normkit::LaunchPlan launched;
        check_quant(layer_norm_case(x, q, dynamic, 32768, 7, shift, &launched));
        EXPECT_EQ(launched.shape, dynamic ? Shape::kRowInClusterRegisters : Shape::kRowPerBlock);
        EXPECT_EQ(launched.threads, dynamic ? 512 : 1024);
        EXPECT_EQ(launched.vecs, 4);
        EXPECT_EQ(launched.cluster, dynamic ? 2 : 1);
        if (dynamic) {
          QuantCase one = layer_norm_case(x, q, dynamic, 32768, 7, shift, &launched);
          one.shape = Shape::kRowPerBlock;
          check_quant(one);
          EXPECT_EQ(launched.shape, Shape::kRowPerBlock);
          EXPECT_EQ(launched.threads, 1024);
          check_quant(layer_norm_case(x, q, dynamic, 32760, 7, shift, &launched));
          EXPECT_EQ(launched.shape, Shape::kRowPerBlock);
          EXPECT_EQ(launched.threads, 1024);
        }
      }
    }
  }
}

// row_per_block's tight form (kernel/row_per_block.cuh, change 181):
// per-row-quantized LayerNorm rows of 4 slots in CTAs of 321-384 threads, compiled for
// three CTAs an SM. In a batch of more rows than SMs (not the roomy form)
// and unpaired, against the float64 reference, as a batch of 8 (the roomy
// form) is; which form ran is checked, so a launcher that never chose it
// fails here. (Bitwise against the roomy form: test_gpu_invariance,
// RowsKeepTheirBitsAcrossTheRoomyForm, whose rows share their weights; here
// the weights are drawn after the rows, so batches of two sizes differ.) 11264
// and 12288 (352 and 384 threads in 16 bits) and fp32 x at 6144 (384
// threads of 4 floats a slot) run it; 10240 (320 threads: two CTAs an SM
// either way), 10272 (352 threads whose slots overhang the row: the checked
// form), static scales, per-row RMSNorm (its kernel fits 56 registers
// already: kTightFourSlotRows), misaligned x (the checked form) and fp32 x
// at 4096 (256 threads) do not.
TEST(Quant, TightFormRowsMatchTheReference) {
  NK_REQUIRE_GPU();
  int device = 0, sms = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  struct Case {
    Op op;
    DType x;
    QType q;
    int64_t n;
    bool dynamic;
    int64_t shift;
    bool tight;  ///< whether the tight form must run in the large batch
  };
  const Case cases[] = {
      {Op::kLayerNorm, DType::kBF16, QType::kE4M3, 12288, true, 0, true},
      {Op::kLayerNorm, DType::kBF16, QType::kInt8, 11264, true, 0, true},
      {Op::kLayerNorm, DType::kF16, QType::kE5M2, 11264, true, 0, true},
      {Op::kLayerNorm, DType::kBF16, QType::kE4M3, 10272, true, 0, false},
      {Op::kRmsNorm, DType::kBF16, QType::kE4M3, 12288, true, 0, false},
      {Op::kLayerNorm, DType::kBF16, QType::kE4M3, 10240, true, 0, false},
      {Op::kLayerNorm, DType::kBF16, QType::kE4M3, 12288, false, 0, false},
      {Op::kLayerNorm, DType::kBF16, QType::kE4M3, 12288, true, 1, false},
      {Op::kLayerNorm, DType::kF32, QType::kE4M3, 6144, true, 0, true},
      {Op::kLayerNorm, DType::kF32, QType::kE4M3, 4096, true, 0, false},
  };
  for (const Case& k : cases) {
    const std::string what = std::string(k.op == Op::kLayerNorm ? "LayerNorm" : "RMSNorm") + " " +
                             nktest::dtype_name(k.x) + " " + nktest::qtype_name(k.q) + " N=" + std::to_string(k.n) +
                             (k.dynamic ? " per-row" : " static") + " shift " + std::to_string(k.shift);
    QuantCase c;
    c.op = k.op;
    c.x = k.x;
    c.q = k.q;
    c.cols = k.n;
    c.dynamic = k.dynamic;
    c.x_shift = k.shift;
    c.x_pad = k.shift * 8;
    c.pairing = normkit::LanePairing::kOff;
    c.seed = nktest::fresh_seed();
    normkit::LaunchPlan ran;
    c.launched = &ran;
    c.rows = sms + 37;
    check_quant(c);
    EXPECT_EQ(ran.shape, Shape::kRowPerBlock) << what;
    EXPECT_FALSE(ran.roomy) << what;
    EXPECT_EQ(ran.tight, k.tight) << what << ": " << ran.threads << " threads of " << ran.vecs << " slots";
    // The WHOLE form (slots that hold the row exactly, aligned x) runs roomy in a batch of 8.
    const bool whole = k.shift == 0 && int64_t{ran.threads} * ran.vecs * (16 / nktest::dtype_size(k.x)) == k.n;
    c.rows = 8;
    check_quant(c);
    EXPECT_FALSE(ran.tight) << what << ": a batch of 8";
    EXPECT_EQ(ran.roomy, whole) << what << ": a batch of 8";
  }
}

// 16-bit LayerNorm rows past 64 KiB of x (N = 65536-262144 in bf16 or
// fp16) across a cluster's registers: with a static scale at 8 slots
// (change 163: clusters of 2 CTAs of 512 and 1024 threads, 4 of 1024;
// before, staged), with per-row scales at 4 slots, y held (change 172:
// clusters of 4 and 8 CTAs of 512 threads, 8 of 1024; before, staged),
// aligned (the WHOLE form) and misaligned (the checked form); then more rows
// than resident clusters, so that each cluster strides over rows and reuses
// its reducer.
TEST(Quant, LayerNormRowsAcrossClusterRegisters) {
  NK_REQUIRE_GPU();
  for (auto [x, q] : {std::pair{DType::kBF16, QType::kE4M3}, std::pair{DType::kF16, QType::kInt8}}) {
    for (int64_t n : {65536, 131072, 262144}) {
      for (bool dynamic : {false, true}) {
        for (int64_t shift : {0, 1}) {
          normkit::LaunchPlan launched;
          check_quant(layer_norm_case(x, q, dynamic, n, 3, shift, &launched));
          EXPECT_EQ(launched.shape, Shape::kRowInClusterRegisters) << n;
          if (dynamic) {
            EXPECT_EQ(launched.vecs, 4) << n;
            EXPECT_EQ(launched.cluster, n == 65536 ? 4 : 8) << n;
            EXPECT_EQ(launched.threads, n == 262144 ? 1024 : 512) << n;
          } else {
            EXPECT_EQ(launched.vecs, 8) << n;
            EXPECT_EQ(launched.cluster, n == 262144 ? 4 : 2) << n;
          }
        }
      }
    }
  }
  const int64_t many = nktest::quick_mode() ? 140 : 300;
  for (bool dynamic : {false, true}) {
    check_quant(layer_norm_case(DType::kBF16, QType::kE4M3, dynamic, 131072, many, 0, nullptr));
  }
}

// Rows of 32-128 KiB held at 8 slots per thread (CTAs of up to 1024
// threads), longer ones split across a cluster in registers (row_in_cluster_registers), each slot-aligned (the
// WHOLE form) and misaligned (the checked form), and forced.
TEST(Quant, WideAndClusterRegisterRows) {
  NK_REQUIRE_GPU();
  // Under racecheck one quantized type (the types differ only in the pack,
  // which touches no shared memory), and below 137 rows of 131072 instead of
  // 400: the ring holds those rows in shared memory, and with 400 the test
  // alone ran past the 300 s a racecheck shard allows (device run 11 of the
  // thirty-ninth session).
  const std::vector<QType> wide_types =
      nktest::racecheck_mode() ? std::vector<QType>{QType::kE4M3}
                               : std::vector<QType>{QType::kE4M3, QType::kE5M2, QType::kInt8};
  for (QType q : wide_types) {
    for (int64_t n : {16384, 24576, 32768, 65536, 131072, 262144}) {
      for (int64_t shift : {0, 1}) {
        QuantCase c;
        c.q = q;
        c.cols = n;
        c.rows = n > 65536 ? 3 : 7;
        c.x_shift = shift;
        c.x_pad = 8 * shift;
        check_quant(c);
      }
    }
  }
  // 65536 in one CTA of 1024 threads: what devices without clusters run
  // (the H200's plan splits it over 2 CTAs' registers: change 76).
  const std::pair<Shape, int64_t> forced[] = {{Shape::kRowPerBlock, 32768},
                                              {Shape::kRowPerBlock, 65536},
                                              {Shape::kRowInClusterRegisters, 4096},  // 2 CTAs of one warp
                                              {Shape::kRowInClusterRegisters, 65536},
                                              {Shape::kRowInSmem, 16384},
                                              {Shape::kRowInCluster, 65536}};
  check_forced_shapes(forced, 5);
  // LayerNorm with per-row scales and no weight: the held-y walk tests the
  // parameters once a row and takes its per-slot branches when one is null
  // (change 183): rows_per_warp (768), row_per_block of 128 and 512 threads
  // (4096, 16384), the tight form (12288), which always branches.
  for (int64_t n : {768, 4096, 12288, 16384}) {
    for (int64_t shift : {0, 1}) {
      QuantCase c = layer_norm_case(DType::kBF16, QType::kE4M3, true, n, 5, shift, nullptr);
      c.weight = false;
      check_quant(c);
    }
  }
  // No weight: the 8-slot row_per_block reads a slot of ones for it instead
  // of branching per slot (epilogue::Scale under ParamCaching::kKeepInL1);
  // 512 and 1024 threads, and a cluster (which branches), aligned and not.
  for (QType q : {QType::kE4M3, QType::kInt8}) {
    for (int64_t n : {32768, 65536, 131072}) {
      for (int64_t shift : {0, 1}) {
        QuantCase c;
        c.q = q;
        c.cols = n;
        c.rows = 3;
        c.weight = false;
        c.x_shift = shift;
        check_quant(c);
      }
    }
  }
  // fp32 x (4 elements a slot: 64 KiB rows at N = 16384, 1024 threads at
  // 32768, a cluster of 2 at 65536), both norms: LayerNorm (TwoPass, whose row maximum
  // is a reduction of its own) takes these shapes only with fp32 x.
  for (Op op : {Op::kRmsNorm, Op::kLayerNorm}) {
    for (int64_t n : {16384, 32768, 65536}) {
      for (int64_t shift : {0, 1}) {
        QuantCase f32;
        f32.op = op;
        f32.x = DType::kF32;
        f32.cols = n;
        f32.rows = 5;
        f32.x_shift = shift;
        f32.x_pad = 4 * shift;
        check_quant(f32);
      }
    }
  }
  // More rows than resident clusters, so each cluster strides over rows and
  // reuses its reducer: 3000 rows in clusters of 2 one-warp CTAs, and 400
  // rows of 131072 (clusters of 2 CTAs of 1024 threads, 66 resident on an
  // H100 or H200; under racecheck 137, past twice that, so that the ring,
  // which looks two rows ahead, still refills chunks of rows it ran).
  QuantCase many;
  many.shape = Shape::kRowInClusterRegisters;
  many.cols = 4096;
  many.rows = 3000;
  check_quant(many);
  many.shape = Shape::kAuto;
  many.cols = 131072;
  many.rows = nktest::racecheck_mode() ? 137 : 400;
  check_quant(many);
}

// Rolled rows (kernel/row_cluster_registers.cuh, kRollsRows: each row's
// output walk loads the next row's part into the registers it frees, at a
// CTA size compiled in): per-row fp8 and int8 over clusters of 2 CTAs of 512
// threads (N = 65536: 132 clusters on the H200), 2 of 1024 (131072: 66) and
// 4 of 1024 (262144: 33), fp32 x in 2 of 1024 (65536), with 2-3 rows a
// cluster and a last round that leaves clusters idle; x strided (still
// slot-aligned), no weight, and the plan that ran checked to be the rolled
// one. Those of 1024-thread CTAs run through the ring instead
// (kernel/row_ring.cuh, kRingsRows: 7 chunks, 4 a row, so 2-3 rows a
// cluster wrap it), which the plan that ran records as its shared memory
// (none where the rows run the checked loop: misaligned, checked too).
TEST(Quant, RolledRowsManyPerCluster) {
  NK_REQUIRE_GPU();
  struct Case {
    DType x;
    int64_t cols, rows, x_pad;
    bool weight;
    int threads;
  };
  const Case cases[] = {{DType::kBF16, 65536, 300, 0, true, 512},   {DType::kBF16, 65536, 290, 64, true, 512},
                        {DType::kBF16, 131072, 150, 0, true, 1024}, {DType::kBF16, 131072, 140, 0, false, 1024},
                        {DType::kBF16, 262144, 80, 128, true, 1024}, {DType::kF32, 65536, 150, 0, true, 1024}};
  for (QType q : {QType::kE4M3, QType::kInt8}) {
    for (const Case& k : cases) {
      // Under compute-sanitizer the 65536 rows (both CTA sizes, strided,
      // fp32) stand for the longer ones, which the plain run checks.
      if (nktest::quick_mode() && k.cols > 65536) continue;
      QuantCase c;
      c.x = k.x;
      c.q = q;
      c.cols = k.cols;
      c.rows = k.rows;
      c.x_pad = k.x_pad;
      c.weight = k.weight;
      normkit::LaunchPlan ran;
      c.launched = &ran;
      check_quant(c);
      EXPECT_EQ(ran.shape, Shape::kRowInClusterRegisters) << "N=" << k.cols;
      EXPECT_EQ(ran.threads, k.threads) << "N=" << k.cols;
      const size_t ring = k.threads == normkit::kernel::kRingTeam ? normkit::kernel::ring_smem_bytes(k.threads) : 0;
      EXPECT_EQ(ran.smem_bytes, ring) << "N=" << k.cols;
      if (ring > 0 && k.cols == 131072 && !nktest::quick_mode()) {
        QuantCase misaligned = c;
        misaligned.rows = 3;
        misaligned.x_shift = 1;
        check_quant(misaligned);
        EXPECT_EQ(ran.smem_bytes, 0u) << "misaligned rows run the checked loop, without the ring";
      }
    }
  }
}

// Rows quantized with a static scale in row_cluster_registers: bf16
// RMSNorm ones read their first slots from the prefetching loop's ring in
// clusters of 2 (N = 131072: 66 on the H200; change 143) and run through
// the ring (kernel/row_ring.cuh, kRingsRows: change 107) in clusters of 4
// (262144: 30-33); fp32 LayerNorm ones read their first slots from the
// prefetch ring (kernel/row_prefetch.cuh, kPrefetchesRows: change 99), as
// plain rows of their type do, in clusters of 2 (65536) and 4 (131072);
// with 2-5 rows a cluster so that each ring turns over, x strided (still
// slot-aligned), and the plan that ran checked to be that loop; misaligned
// rows run the checked plain loop, without a ring.
TEST(Quant, StaticRowsRingedOrPrefetchedManyPerCluster) {
  NK_REQUIRE_GPU();
  struct Case {
    Op op;
    DType x;
    int64_t cols, rows, x_pad;
    int cluster;
  };
  const Case cases[] = {{Op::kRmsNorm, DType::kBF16, 131072, 150, 0, 2},
                        {Op::kRmsNorm, DType::kBF16, 262144, 80, 128, 4},
                        {Op::kLayerNorm, DType::kF32, 65536, 150, 64, 2},
                        {Op::kLayerNorm, DType::kF32, 131072, 80, 0, 4}};
  const size_t prefetch_ring = normkit::kernel::prefetch_smem_bytes(normkit::kernel::kPrefetchTeam);
  const size_t ring = normkit::kernel::ring_smem_bytes(normkit::kernel::kRingTeam);
  for (QType q : {QType::kE4M3, QType::kInt8}) {
    for (const Case& k : cases) {
      // Under compute-sanitizer the rows of 131072 (clusters of 2 and 4)
      // stand for the longer ones, which the plain run checks, and fewer of
      // them (still more than the clusters, so that rings turn over).
      if (nktest::quick_mode() && k.cols > 131072) continue;
      QuantCase c;
      c.op = k.op;
      c.x = k.x;
      c.q = q;
      c.dynamic = false;
      c.cols = k.cols;
      c.rows = nktest::quick_mode() && k.cols == 131072 ? (k.cluster == 2 ? 80 : 40) : k.rows;
      c.x_pad = k.x_pad;
      normkit::LaunchPlan ran;
      c.launched = &ran;
      check_quant(c);
      EXPECT_EQ(ran.shape, Shape::kRowInClusterRegisters) << "N=" << k.cols;
      EXPECT_EQ(ran.cluster, k.cluster) << "N=" << k.cols;
      EXPECT_EQ(ran.threads, 1024) << "N=" << k.cols;
      if (k.x == DType::kBF16 && k.cluster >= 4) {
        EXPECT_EQ(ran.smem_bytes, ring) << "N=" << k.cols << ": the ring";
      } else {
        EXPECT_EQ(ran.smem_bytes, prefetch_ring) << "N=" << k.cols << ": the prefetching loop";
      }
      QuantCase misaligned = c;
      misaligned.rows = 3;
      misaligned.x_pad = 0;
      misaligned.x_shift = 1;
      check_quant(misaligned);
      EXPECT_EQ(ran.shape, Shape::kRowInClusterRegisters) << "N=" << k.cols;
      EXPECT_EQ(ran.smem_bytes, 0u) << "N=" << k.cols << ": misaligned rows run the checked loop, without the ring";
    }
  }
}

// The paired register forms (half the threads or lanes, two lanes' slots
// each: kernel/row_per_block.cuh, kernel/rows_per_warp.cuh) against the
// float64 reference and bitwise against the unpaired forms, for every
// quantized problem the plan lets pair (RMSNorm 16-bit and fp32, LayerNorm
// fp32; per-row scales and, since change 100, static ones) and some it does
// not (16-bit LayerNorm; 4099, not whole; 16-bit 128 and fp32 128, groups
// spanning 32 columns; static rows of up to 2 KiB; misaligned x, which
// runs the checked forms). Lanes of 3 slots (N = 192, 384, 768) and threads
// of 5 (16-bit N = 2560, 5120; fp32 2560) pair as those of 4 do. Pairing
// on, off and automatic must give the same bits.
TEST(Quant, PairedRowsGiveTheSameBitsAsUnpaired) {
  NK_REQUIRE_GPU();
  struct Problem {
    Op op;
    DType x;
    QType q;
    std::vector<std::pair<int64_t, bool>> lengths;  ///< N, and whether the plan pairs it
    bool dynamic = true;                            ///< per-row scales; false: a static scale
  };
  // 192, 384 and 768: 3-slot lanes (groups of 8, 16 and 32); 128: groups of 4, not paired.
  const std::vector<std::pair<int64_t, bool>> sixteen_bit = {
      {128, false},  {192, true},   {256, true},   {384, true},  {512, true},   {768, true},   {1024, true},
      {2048, true},  {2560, true},  {4096, true},  {4099, false}, {5120, true}, {8192, true}, {12288, true},
      {16384, true}};
  const Problem problems[] = {
      {Op::kRmsNorm, DType::kBF16, QType::kE4M3, sixteen_bit},
      {Op::kRmsNorm, DType::kBF16, QType::kE5M2, {{1024, true}, {2048, true}, {8192, true}}},
      {Op::kRmsNorm, DType::kBF16, QType::kInt8,
       {{256, true}, {384, true}, {512, true}, {768, true}, {1024, true}, {2048, true}, {5120, true}, {8192, true},
        {16384, true}}},
      {Op::kRmsNorm, DType::kF16, QType::kE4M3, {{1024, true}, {4096, true}, {12288, true}}},
      {Op::kLayerNorm, DType::kBF16, QType::kE4M3, {{1024, false}, {8192, false}}},
      {Op::kRmsNorm, DType::kF32, QType::kE4M3,
       {{256, true}, {384, true}, {1024, true}, {2048, true}, {2560, true}, {4096, true}, {8192, true}}},
      {Op::kLayerNorm, DType::kF32, QType::kE4M3,
       {{128, false}, {512, true}, {1024, true}, {2048, true}, {2560, true}, {4096, true}, {8192, true}}},
      // Static scales (change 100): row_per_block's rows pair as per-row
      // scales' do; rows of up to 2 KiB keep plain rows' 2-slot lanes.
      {Op::kRmsNorm, DType::kBF16, QType::kE4M3,
       {{256, false}, {1024, false}, {2048, true}, {5120, true}, {12288, true}, {16384, true}}, false},
      {Op::kRmsNorm, DType::kBF16, QType::kInt8, {{4096, true}, {16384, true}}, false},
      {Op::kLayerNorm, DType::kF32, QType::kInt8, {{2048, true}, {8192, true}}, false},
      {Op::kLayerNorm, DType::kBF16, QType::kE4M3, {{8192, false}}, false}};
  for (const Problem& pr : problems) {
    for (const auto& [n, pairs] : pr.lengths) {
      for (int64_t shift : {0, 1}) {
        QuantCase c;
        c.op = pr.op;
        c.x = pr.x;
        c.q = pr.q;
        c.cols = n;
        c.rows = 19;
        c.x_shift = shift;
        c.x_pad = shift * 8;
        c.dynamic = pr.dynamic;
        c.seed = nktest::fresh_seed();
        // Whether the plan (a function of N and the types) pairs the row is
        // checked, so that a plan that never paired would fail here rather
        // than compare the unpaired form with itself.
        nktest::QuantCall call;
        call.op = pr.op;
        call.x_type = pr.x;
        call.q_type = pr.q;
        call.cols = n;
        if (pr.dynamic) {
          call.row_scales = reinterpret_cast<float*>(16);  // planned only, never touched
        } else {
          call.static_scale = 1.f;
        }
        normkit::LaunchPlan plan;
        ASSERT_EQ(nktest::plan_quant(call, &plan), normkit::Status::kSuccess);
        EXPECT_EQ(plan.may_pair, pairs) << nktest::dtype_name(pr.x) << " N=" << n
                                        << (pr.dynamic ? " per-row" : " static");
        QuantOutputs unpaired, paired, automatic;
        normkit::LaunchPlan ran;
        c.launched = &ran;
        c.pairing = normkit::LanePairing::kOff;
        check_quant(c, &unpaired);
        EXPECT_FALSE(ran.paired);
        c.pairing = normkit::LanePairing::kOn;
        check_quant(c, &paired);
        // The paired kernel ran where the plan pairs and x is slot-aligned.
        EXPECT_EQ(ran.paired, pairs && shift == 0) << nktest::dtype_name(pr.x) << " N=" << n << " shift " << shift;
        c.pairing = normkit::LanePairing::kAuto;
        check_quant(c, &automatic);
        EXPECT_FALSE(ran.paired);  // 19 rows: far below the L2 cache
        EXPECT_TRUE(unpaired.y == paired.y && unpaired.scales == paired.scales)
            << nktest::dtype_name(pr.x) << " " << nktest::qtype_name(pr.q) << " N=" << n << " shift " << shift
            << ": paired and unpaired outputs differ";
        EXPECT_TRUE(unpaired.y == automatic.y && unpaired.scales == automatic.scales)
            << nktest::dtype_name(pr.x) << " " << nktest::qtype_name(pr.q) << " N=" << n << " shift " << shift;
      }
    }
  }
}

// int8 has no NaN. A row whose y is NaN (here one NaN at a random column of
// random x) is written as 0 under a static scale (the saturating
// conversion's rule) and as -1 under per-row scales (the low byte of the
// rounding fma's NaN, 0x7fffffff), with the smallest row scale; the other
// rows are untouched by it. On the rows_per_warp (unpaired and paired),
// row_per_block (4, 5 and 8 slots: N = 65536 in 1024 threads) and
// cluster-register (N = 131072) shapes.
TEST(Quant, Int8RowsWithANanAreWrittenAsDocumented) {
  NK_REQUIRE_GPU();
  const int64_t rows = 3;
  const uint64_t seed = nktest::fresh_seed();
  nktest::Rng rng(seed);
  for (int64_t n : {256, 1024, 4096, 5120, 65536, 131072}) {
    std::vector<uint16_t> hx(rows * n), hw(n, 0x3f80);  // bf16; weight 1
    for (auto& v : hx) v = static_cast<uint16_t>(0x3f80 + rng.next() % 0xb0);  // random in [1, 2.75)
    hx[n + static_cast<int64_t>(rng.next() % n)] = 0x7fc0;  // NaN somewhere in row 1
    DeviceBuffer x(hx.size() * 2), w(n * 2), y(rows * n), scales(rows * 4);
    ASSERT_EQ(cudaMemcpy(x.data(), hx.data(), hx.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(w.data(), hw.data(), n * 2, cudaMemcpyHostToDevice), cudaSuccess);
    for (normkit::LanePairing pairing : {normkit::LanePairing::kOff, normkit::LanePairing::kOn}) {
      for (bool per_row : {false, true}) {
        nktest::QuantCall c;
        c.q_type = QType::kInt8;
        c.x = x.data();
        c.y = y.data();
        c.weight = w.data();
        c.rows = rows;
        c.cols = n;
        c.pairing = pairing;
        if (per_row) {
          c.row_scales = reinterpret_cast<float*>(scales.data());
        } else {
          c.static_scale = 0.01f;
        }
        ASSERT_EQ(cudaMemset(y.data(), 0x5a, y.size()), cudaSuccess);
        ASSERT_EQ(cudaMemset(scales.data(), 0x5a, scales.size()), cudaSuccess);  // a static scale writes none
        ASSERT_EQ(nktest::launch_quant(c), normkit::Status::kSuccess);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        std::vector<int8_t> out(rows * n);
        std::vector<float> sc(rows);
        ASSERT_EQ(cudaMemcpy(out.data(), y.data(), out.size(), cudaMemcpyDeviceToHost), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(sc.data(), scales.data(), rows * 4, cudaMemcpyDeviceToHost), cudaSuccess);
        const int8_t want = per_row ? -1 : 0;
        int64_t bad = 0, positive = 0;
        for (int64_t j = 0; j < n; ++j) {
          bad += out[n + j] != want;
          positive += out[j] > 0 && out[2 * n + j] > 0;  // rows 0 and 2: x in [1, 2.75), w = 1
        }
        EXPECT_EQ(bad, 0) << "N=" << n << (per_row ? " per-row" : " static") << ": the NaN row (seed " << seed << ")";
        EXPECT_EQ(positive, n) << "N=" << n << (per_row ? " per-row" : " static") << ": the other rows (seed " << seed
                               << ")";
        if (per_row) {
          EXPECT_EQ(sc[1], 1.0f / (127.0f * 512.0f)) << "N=" << n;
          EXPECT_TRUE(std::isfinite(sc[0]) && sc[0] > 0 && std::isfinite(sc[2]) && sc[2] > 0) << "N=" << n;
        }
      }
    }
  }
}

TEST(Quant, BadScalesAndShapesAreRejected) {
  nktest::QuantCall c;  // validation happens before any CUDA call: no device needed
  c.x = reinterpret_cast<void*>(0x100000);
  c.y = reinterpret_cast<void*>(0x900000);
  c.rows = 4;
  c.cols = 512;
  // Both norms, every format: no scale at all, a static scale that is not
  // positive and finite (0 included), and both kinds of scale at once.
  for (Op op : {Op::kRmsNorm, Op::kLayerNorm}) {
    for (QType q : {QType::kE4M3, QType::kE5M2, QType::kInt8}) {
      nktest::QuantCall a = c;
      a.op = op;
      a.q_type = q;
      EXPECT_EQ(nktest::launch_quant(a), normkit::Status::kErrorInvalidScale);
      for (float s : {-1.f, 0.f, -0.f, NAN, INFINITY}) {
        nktest::QuantCall b = a;
        b.static_scale = s;
        EXPECT_EQ(nktest::launch_quant(b), normkit::Status::kErrorInvalidScale) << s;
      }
      nktest::QuantCall both = a;
      both.static_scale = 1.f;
      both.row_scales = reinterpret_cast<float*>(0x2000000);
      EXPECT_EQ(nktest::launch_quant(both), normkit::Status::kErrorInvalidScale);
    }
  }
  nktest::QuantCall both = c;
  both.static_scale = 1.f;
  both.row_scales = reinterpret_cast<float*>(0x2000000);
  EXPECT_EQ(nktest::launch_quant(both), normkit::Status::kErrorInvalidScale);
  nktest::QuantCall overlap = c;
  overlap.row_scales = reinterpret_cast<float*>(0x900000);  // scales over y
  EXPECT_EQ(nktest::launch_quant(overlap), normkit::Status::kErrorOverlap);
  nktest::QuantCall streaming = c;  // a per-row scale needs the row on chip: never streamed
  streaming.row_scales = reinterpret_cast<float*>(0x2000000);
  streaming.shape = Shape::kStreaming;
  // 16-bit LayerNorm rows with per-row scales are never held at 8 slots
  // (they spill in row_per_block; across a cluster's registers experiment
  // 162 measured them 9-13 points under staging): at 4 slots (change 172) a
  // cluster of 8 CTAs of 1024 threads holds at most 262144 columns, so a
  // row of 524288, which 8-slot parts would hold, is refused.
  nktest::QuantCall two_pass = streaming;
  two_pass.op = Op::kLayerNorm;
  two_pass.cols = 524288;
  two_pass.shape = Shape::kRowInClusterRegisters;
  if (nktest::gpu_available()) {
    EXPECT_EQ(nktest::launch_quant(streaming), normkit::Status::kErrorUnsupportedShape);
    EXPECT_EQ(nktest::launch_quant(two_pass), normkit::Status::kErrorUnsupportedShape);
  }
  // An unsupported output type cannot reach a launch: the typed launchers
  // refuse it at compile time (ctest compile_fail_quant_output_half).
}

}  // namespace
