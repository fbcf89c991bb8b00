// Residual add fused with RMSNorm / LayerNorm: residual_out holds exactly
// round(x + residual), y is the norm of that stored value and mean and rstd
// its statistics (against float64), in place and out of place, on every
// kernel shape; bad arguments rejected.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "dispatch_extra.h"
#include "test_support.h"

namespace {

using nktest::DeviceBuffer;
using nktest::DType;
using nktest::Op;
using normkit::Shape;

struct FusedCase {
  Op op = Op::kRmsNorm;
  DType t = DType::kBF16, w = DType::kBF16;
  Shape shape = Shape::kAuto;
  int64_t rows = 7, cols = 1000;
  bool in_place = false;  // residual_out == residual and y == x (vLLM's form)
  int64_t stride = -1;    // row stride of every buffer (-1: contiguous)
  int64_t shift = 0;      // every buffer starts this many elements into its allocation (misaligned when odd)
  bool aligned_outputs = false;  // out of place: y and residual_out start at their allocations (shift 0)
  bool stats = true;             // pass mean (LayerNorm) and rstd buffers; checked against float64
};

std::string describe(const FusedCase& c) {
  return std::string(c.op == Op::kRmsNorm ? "add+RMSNorm" : "add+LayerNorm") + " " + nktest::dtype_name(c.t) +
         " w=" + nktest::dtype_name(c.w) + " shape=" + normkit::shape_name(c.shape) + " M=" + std::to_string(c.rows) +
         " N=" + std::to_string(c.cols) + (c.in_place ? " in_place" : "") + " stride=" + std::to_string(c.stride) +
         " shift=" + std::to_string(c.shift) + (c.aligned_outputs ? " aligned_outputs" : "") +
         (c.stats ? "" : " no_stats");
}

/// Runs one case and checks it; `ran`, if given, receives the plan that ran.
void check_fused(const FusedCase& c, normkit::LaunchPlan* ran_out = nullptr) {
  SCOPED_TRACE(describe(c));
  const uint64_t seed = nktest::fresh_seed();
  nktest::Rng rng(seed);
  const int64_t M = c.rows, N = c.cols, S = c.stride < 0 ? N : c.stride;
  const int e = nktest::dtype_size(c.t), we = nktest::dtype_size(c.w);
  // Each buffer holds `shift` elements before the rows and 16 bytes after
  // them; those and the padding between strided rows must keep their bytes.
  const size_t lead = static_cast<size_t>(c.shift) * e;
  // Where the outputs' rows start (the inputs' lead unless aligned_outputs).
  const size_t olead = c.aligned_outputs && !c.in_place ? 0 : lead;
  const size_t bytes = static_cast<size_t>((M - 1) * S + N) * e + lead + 16;
  std::vector<unsigned char> hx(bytes, 0), hr(bytes, 0), hw(N * we), hb(N * we);
  for (size_t i = 0; i < bytes; ++i) hx[i] = hr[i] = static_cast<unsigned char>(rng.next());
  for (int64_t r = 0; r < M; ++r) {
    const double mu = 4 * rng.normal(), mr = 4 * rng.normal();
    for (int64_t j = 0; j < N; ++j) {
      nktest::store_as(c.t, mu + rng.normal(), &hx[lead + (r * S + j) * e]);
      nktest::store_as(c.t, mr + 2 * rng.normal(), &hr[lead + (r * S + j) * e]);
    }
  }
  for (int64_t j = 0; j < N; ++j) {
    nktest::store_as(c.w, 1 + 0.3 * rng.normal(), &hw[j * we]);
    nktest::store_as(c.w, 0.3 * rng.normal(), &hb[j * we]);
  }
  // mean and rstd: fp32 [M] and a 16-byte guard, poisoned (NaN) before the launch.
  const size_t stats_bytes = static_cast<size_t>(M) * 4 + 16;
  DeviceBuffer dx(bytes), dr(bytes), dro(bytes), dy(bytes), dw(N * we), db(N * we), dm(stats_bytes), ds(stats_bytes);
  ASSERT_EQ(cudaMemcpy(dx.data(), hx.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dr.data(), hr.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dw.data(), hw.data(), hw.size(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(db.data(), hb.data(), hb.size(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(dro.data(), 0xFF, bytes), cudaSuccess);
  ASSERT_EQ(cudaMemset(dy.data(), 0xFF, bytes), cudaSuccess);
  ASSERT_EQ(cudaMemset(dm.data(), 0xFF, stats_bytes), cudaSuccess);
  ASSERT_EQ(cudaMemset(ds.data(), 0xFF, stats_bytes), cudaSuccess);
  nktest::AddNormCall call;
  call.op = c.op;
  call.x_type = c.t;
  call.w_type = c.w;
  unsigned char* px = static_cast<unsigned char*>(dx.data()) + lead;
  unsigned char* pr = static_cast<unsigned char*>(dr.data()) + lead;
  call.x = px;
  call.residual = pr;
  call.residual_out = c.in_place ? pr : static_cast<unsigned char*>(dro.data()) + olead;
  call.y = c.in_place ? px : static_cast<unsigned char*>(dy.data()) + olead;
  call.weight = dw.data();
  call.bias = db.data();
  call.mean = c.stats ? reinterpret_cast<float*>(dm.data()) : nullptr;
  call.rstd = c.stats ? reinterpret_cast<float*>(ds.data()) : nullptr;
  call.rows = M;
  call.cols = N;
  call.x_stride = call.residual_stride = call.residual_out_stride = call.y_stride = c.stride;
  call.eps = 1e-5f;
  call.shape = c.shape;
  // The plan functions (add_rms_norm_plan, add_layer_norm_plan) name the
  // kernel that runs, for aligned and misaligned rows alike.
  normkit::LaunchPlan planned, ran;
  ASSERT_EQ(nktest::plan_add_norm(call, &planned), normkit::Status::kSuccess);
  call.launched = &ran;
  ASSERT_EQ(nktest::launch_add_norm(call), normkit::Status::kSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(ran.shape, planned.shape) << normkit::shape_name(ran.shape) << " ran, " << normkit::shape_name(planned.shape)
                                      << " planned";
  EXPECT_EQ(ran.cluster, planned.cluster);
  EXPECT_EQ(ran.threads, planned.threads);
  EXPECT_EQ(ran.vecs, planned.vecs);
  EXPECT_EQ(ran.smem_bytes, planned.smem_bytes);
  if (ran_out != nullptr) *ran_out = ran;
  std::vector<unsigned char> gy(bytes), gro(bytes), gm(stats_bytes), gs(stats_bytes);
  ASSERT_EQ(cudaMemcpy(gm.data(), dm.data(), stats_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(gs.data(), ds.data(), stats_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(gy.data(), c.in_place ? dx.data() : dy.data(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(gro.data(), c.in_place ? dr.data() : dro.data(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  // Bytes outside the rows: the inputs' own (in place) or the poison.
  int64_t touched = 0;
  for (size_t i = 0; i < bytes; ++i) {
    const bool in_row = i >= olead && static_cast<int64_t>((i - olead) / e) % S < N &&
                        static_cast<int64_t>((i - olead) / e) / S < M;
    if (in_row) continue;
    const unsigned char want_y = c.in_place ? hx[i] : 0xFF, want_ro = c.in_place ? hr[i] : 0xFF;
    if ((gy[i] != want_y || gro[i] != want_ro) && touched++ == 0) {
      ADD_FAILURE() << "a byte outside the rows was written: offset " << i << " seed " << seed;
    }
  }
  EXPECT_EQ(touched, 0);
  if (!c.in_place) {
    // Out of place, x and the residual are read only.
    EXPECT_TRUE(nktest::download(dx.data(), bytes) == hx) << "x changed, seed " << seed;
    EXPECT_TRUE(nktest::download(dr.data(), bytes) == hr) << "the residual changed, seed " << seed;
  }
  // The statistics' buffers: their guards always, mean for RMSNorm (which
  // has none) and both when not asked for keep the poison.
  int64_t stats_touched = 0;
  for (size_t i = 0; i < stats_bytes; ++i) {
    const bool mean_written = c.stats && c.op == Op::kLayerNorm && i < static_cast<size_t>(M) * 4;
    const bool rstd_written = c.stats && i < static_cast<size_t>(M) * 4;
    stats_touched += (!mean_written && gm[i] != 0xFF) + (!rstd_written && gs[i] != 0xFF);
  }
  EXPECT_EQ(stats_touched, 0) << "bytes of mean or rstd written that should not be, seed " << seed;

  const nktest::Tolerance tol = nktest::output_tolerance(c.t);
  int64_t bad_h = 0, bad_y = 0, bad_stats = 0;
  std::vector<double> h(N);
  std::vector<unsigned char> want_h(e);
  for (int64_t r = 0; r < M; ++r) {
    for (int64_t j = 0; j < N; ++j) {
      const size_t off = lead + (r * S + j) * e;
      // h = x + residual in fp32, rounded to the residual's type: bit for bit.
      const float sum = static_cast<float>(nktest::load_as(c.t, &hx[off])) + static_cast<float>(nktest::load_as(c.t, &hr[off]));
      nktest::store_as(c.t, sum, want_h.data());
      const size_t out_off = olead + (r * S + j) * e;
      if (std::memcmp(want_h.data(), &gro[out_off], e) != 0 && bad_h++ == 0) {
        ADD_FAILURE() << "residual_out row " << r << " col " << j << ": got " << nktest::load_as(c.t, &gro[out_off])
                      << " want " << nktest::load_as(c.t, want_h.data()) << " seed " << seed;
      }
      h[j] = nktest::load_as(c.t, want_h.data());
    }
    const auto ref = nktest::reference_row(c.op, h.data(), N, 1e-5);
    if (c.stats) {
      // The bounds run_case holds the plain norms' statistics to.
      float got_mean, got_rstd;
      std::memcpy(&got_mean, &gm[r * 4], 4);
      std::memcpy(&got_rstd, &gs[r * 4], 4);
      if (c.op == Op::kLayerNorm && !nktest::mean_within(ref, got_mean) && bad_stats++ == 0) {
        ADD_FAILURE() << "mean row " << r << ": got " << got_mean << " want " << ref.mean << " seed " << seed;
      }
      if (!nktest::rstd_within(ref, got_rstd) && bad_stats++ == 0) {
        ADD_FAILURE() << "rstd row " << r << ": got " << got_rstd << " want " << ref.rstd << " seed " << seed;
      }
    }
    for (int64_t j = 0; j < N; ++j) {
      const double w = nktest::load_as(c.w, &hw[j * we]);
      const double b = c.op == Op::kLayerNorm ? nktest::load_as(c.w, &hb[j * we]) : 0.0;
      const double want = (h[j] - ref.mean) * ref.rstd * w + b;
      const double got = nktest::load_as(c.t, &gy[olead + (r * S + j) * e]);
      if (!(std::fabs(got - want) <= tol.atol + tol.rtol * std::fabs(want)) && bad_y++ == 0) {
        ADD_FAILURE() << "y row " << r << " col " << j << ": got " << got << " want " << want << " seed " << seed;
      }
    }
  }
  EXPECT_EQ(bad_h, 0);
  EXPECT_EQ(bad_y, 0);
  EXPECT_EQ(bad_stats, 0);
}

TEST(Fused, AddRmsNormAndAddLayerNormOnEveryShape) {
  NK_REQUIRE_GPU();
  // 256 and 4096: rows the team's slots hold exactly (the register shapes'
  // WHOLE form; 37 rows leave a rows_per_warp CTA's last rows inactive, which
  // in place must not touch the residual).
  const std::pair<Shape, int64_t> shapes[] = {{Shape::kRowsPerWarp, 1},     {Shape::kRowsPerWarp, 257},
                                              {Shape::kRowsPerWarp, 256},   {Shape::kRowPerBlock, 4099},
                                              {Shape::kRowPerBlock, 4096},  {Shape::kRowInSmem, 20000},
                                              {Shape::kRowInCluster, 70001}, {Shape::kStreaming, 300007},
                                              {Shape::kAuto, 768},          {Shape::kAuto, 8192},
                                              {Shape::kAuto, 32768},  // 8 slots per thread (RMSNorm)
                                              {Shape::kAuto, 65536},   // RMSNorm: 1024 threads x 8 slots
                                              {Shape::kAuto, 131072},  // RMSNorm: 2 CTAs' registers
                                              {Shape::kAuto, 262144},  // RMSNorm: 4 CTAs' registers
                                              {Shape::kAuto, 200003}};  // 4 CTAs; 8, on chip past 256 KiB
  for (Op op : {Op::kRmsNorm, Op::kLayerNorm}) {
    for (const auto& [shape, n] : shapes) {
      for (bool in_place : {false, true}) {
        FusedCase c;
        c.op = op;
        c.shape = shape;
        c.cols = n;
        c.rows = n > 100000 ? 3 : 37;
        c.in_place = in_place;
        check_fused(c);
      }
    }
  }
}

TEST(Fused, DtypesStridesAndFp32Weights) {
  NK_REQUIRE_GPU();
  for (Op op : {Op::kRmsNorm, Op::kLayerNorm}) {
    for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
      FusedCase c;
      c.op = op;
      c.t = c.w = t;
      c.cols = 3001;
      c.rows = 19;
      check_fused(c);
      c.stride = 3011;
      check_fused(c);
      // In place (vLLM's form) in every dtype, one element off alignment, and
      // without the optional statistics (nothing written to their buffers).
      c.in_place = true;
      c.shift = 1;
      check_fused(c);
      c.stats = false;
      check_fused(c);
    }
    FusedCase c;
    c.op = op;
    c.w = DType::kF32;
    c.cols = 5120;
    check_fused(c);
    // fp32 rows of 128 KiB: 1024 threads x 8 slots; of 256 KiB: a cluster
    // of 2 CTAs' registers (LayerNorm with TwoPass in one walk there).
    for (int64_t n : {32768, 65536}) {
      for (bool in_place : {false, true}) {
        FusedCase f;
        f.op = op;
        f.t = f.w = DType::kF32;
        f.cols = n;
        f.rows = 5;
        f.in_place = in_place;
        check_fused(f);
      }
    }
  }
}

// Rows one or more elements off 16-byte alignment (x, the residual and the
// outputs, in place and out of place): the checked forms, whose accesses
// narrow to the rows' alignment (2 bytes at a one-element bf16 offset); no
// byte outside the rows is written, and h and y match the reference. bf16
// N = 32768 (512 threads x 8 slots), 65536 (1024 x 8), 131072 (a cluster of
// 2); 4099 and 5000 the checked 4-slot kernel; 512 and 1024 whole warps
// (rows_per_warp's 32 lanes, row_per_block's 64 threads) whose shifted
// stores meet at the warps' edges; 1000 a row that ends inside a warp (the
// words past column n element by element); 96 groups of 8 lanes (narrow
// stores); an odd stride gives rows of alternating alignment.
TEST(Fused, MisalignedRowsInPlaceAndOut) {
  NK_REQUIRE_GPU();
  struct Case {
    int64_t cols, shift, stride;
  };
  const Case cases[] = {{32768, 1, -1}, {32768, 3, 32768 + 5}, {65536, 1, -1}, {65536, 7, -1},
                        {131072, 1, -1}, {131072, 2, 131072 + 3}, {4099, 1, -1}, {5000, 3, 5001},
                        {512, 1, -1},    {1024, 5, 1024 + 1},  {1000, 1, 1003},  {96, 3, -1}};
  for (const Case& k : cases) {
    if (nktest::quick_mode() && k.cols > 65536) continue;
    for (bool in_place : {false, true}) {
      FusedCase c;
      c.cols = k.cols;
      c.rows = k.cols > 65536 ? 5 : 9;
      c.shift = k.shift;
      c.stride = k.stride;
      c.in_place = in_place;
      check_fused(c);
      // add + LayerNorm at the short lengths too (its long rows: the tests below).
      if (k.cols <= 5000) {
        c.op = Op::kLayerNorm;
        check_fused(c);
      }
    }
  }
}

// add + LayerNorm rows of 16 bits past 64 KiB across a cluster's registers
// in parts of 4 slots in 1024 threads (change 105: clusters of 2 at 65536,
// 8 at 262144), at 131072 in split parts (8 slots, half in shared memory,
// clusters of 2: change 115), more rows than the resident clusters (66 and
// 15 on the H200), so that clusters take several rows; in place and out,
// strided, and misaligned (the checked loops; in place the shifted stores).
TEST(Fused, AddLayerNormRowsManyPerCluster) {
  NK_REQUIRE_GPU();
  const bool quick = nktest::quick_mode();
  struct Case {
    int64_t cols, rows, shift;
    bool in_place;
    int64_t stride = -1;
    DType t = DType::kBF16;
    bool aligned_outputs = false;
  };
  // Under the sanitizers (quick), one case of each cluster size with more
  // rows than clusters, so that each cluster's reduction slots (and split
  // parts' shared memory) turn over; the rest with a few rows (with more,
  // racecheck ran this binary past its 300 s, run 258). Misaligned inputs
  // with aligned outputs run the checked split loop without shifted stores.
  const Case cases[] = {{65536, quick ? 68 : 200, 0, false},   {65536, quick ? 8 : 140, 0, true, 65536 + 40},
                        {131072, quick ? 68 : 140, 0, false},  {131072, quick ? 6 : 140, 0, true},
                        {262144, quick ? 18 : 70, 0, false},   {262144, quick ? 3 : 70, 0, true},
                        {65536, quick ? 6 : 70, 1, true},      {131072, quick ? 4 : 70, 1, false},
                        {262144, quick ? 2 : 34, 3, true},     {131072, quick ? 4 : 70, 0, false, -1, DType::kF16},
                        {65536, quick ? 4 : 70, 1, false, -1, DType::kF16}, {131072, quick ? 4 : 70, 1, true},
                        {131072, quick ? 4 : 70, 0, true, 131072 + 24, DType::kF16},
                        {131072, quick ? 8 : 70, 1, false, -1, DType::kBF16, true}};
  for (const Case& k : cases) {
    FusedCase c;
    c.op = Op::kLayerNorm;
    c.cols = k.cols;
    c.rows = k.rows;
    c.shift = k.shift;
    c.in_place = k.in_place;
    c.stride = k.stride;
    c.t = c.w = k.t;
    c.aligned_outputs = k.aligned_outputs;
    normkit::LaunchPlan plan;
    check_fused(c, &plan);
    const bool split = k.cols == 131072;  // 8 slots, half in shared memory, in clusters of 2
    EXPECT_EQ(plan.shape, Shape::kRowInClusterRegisters) << describe(c);
    EXPECT_EQ(plan.cluster, static_cast<int>(k.cols / (split ? 65536 : 32768))) << describe(c);
    EXPECT_EQ(plan.vecs, split ? 8 : 4) << describe(c);
    EXPECT_EQ(plan.threads, 1024) << describe(c);
    EXPECT_EQ(plan.smem_bytes, split ? normkit::kernel::split_part_smem_bytes(1024) : 0) << describe(c);
  }
}

// add + LayerNorm rows of 16 bits past 32 KiB up to 64 KiB in one CTA of
// up to 1024 threads at 4 slots, alone on its SM, TwoPass in one walk
// (change 104): whole rows (24576: 768 threads; 32768: 1024), rows the
// checked form holds (16385: one partial slot, 544 threads; 20000: 2500
// slots in 640 threads), in place and out, strided, misaligned (the
// checked form; in place the shifted stores), bf16 and fp16.
TEST(Fused, AddLayerNormRowsInOneCtaOf1024Threads) {
  NK_REQUIRE_GPU();
  struct Case {
    int64_t cols, threads, shift, stride;
    DType t;
  };
  const Case cases[] = {{32768, 1024, 0, -1, DType::kBF16},       {32768, 1024, 0, 32768 + 24, DType::kF16},
                        {24576, 768, 0, -1, DType::kBF16},        {20000, 640, 0, -1, DType::kBF16},
                        {16385, 544, 0, 16385 + 7, DType::kBF16}, {32768, 1024, 1, -1, DType::kBF16},
                        {24576, 768, 3, 24576 + 5, DType::kF16}};
  for (const Case& k : cases) {
    for (bool in_place : {false, true}) {
      FusedCase c;
      c.op = Op::kLayerNorm;
      c.t = c.w = k.t;
      c.cols = k.cols;
      c.rows = nktest::quick_mode() ? 5 : 150;  // more rows than SMs: CTAs follow one another on an SM
      c.shift = k.shift;
      c.stride = k.stride;
      c.in_place = in_place;
      normkit::LaunchPlan plan;
      check_fused(c, &plan);
      EXPECT_EQ(plan.shape, Shape::kRowPerBlock) << describe(c);
      EXPECT_EQ(plan.vecs, 4) << describe(c);
      EXPECT_EQ(plan.threads, k.threads) << describe(c);
    }
  }
}

TEST(Fused, BadArgumentsAreRejected) {
  // No device needed: validation happens before any CUDA call.
  nktest::AddNormCall c;
  c.x = reinterpret_cast<void*>(0x100000);
  c.y = reinterpret_cast<void*>(0x200000);
  c.residual = reinterpret_cast<void*>(0x300000);
  c.residual_out = reinterpret_cast<void*>(0x400000);
  c.rows = 8;
  c.cols = 1024;
  nktest::AddNormCall bad = c;
  bad.residual = nullptr;
  EXPECT_EQ(nktest::launch_add_norm(bad), normkit::Status::kErrorNullPointer);
  bad = c;
  bad.residual_out = nullptr;
  EXPECT_EQ(nktest::launch_add_norm(bad), normkit::Status::kErrorNullPointer);
  bad = c;
  bad.residual_out = c.y;  // h and y in the same buffer
  EXPECT_EQ(nktest::launch_add_norm(bad), normkit::Status::kErrorOverlap);
  bad = c;
  bad.residual_out = static_cast<char*>(const_cast<void*>(c.residual)) + 64;  // partly over residual
  EXPECT_EQ(nktest::launch_add_norm(bad), normkit::Status::kErrorOverlap);
  bad = c;
  bad.residual_out = const_cast<void*>(c.x);  // h over x
  EXPECT_EQ(nktest::launch_add_norm(bad), normkit::Status::kErrorOverlap);
  bad = c;
  bad.residual_stride = 100;
  EXPECT_EQ(nktest::launch_add_norm(bad), normkit::Status::kErrorInvalidStride);
  bad = c;
  bad.eps = -1;
  EXPECT_EQ(nktest::launch_add_norm(bad), normkit::Status::kErrorInvalidEpsilon);
  bad = c;
  bad.rows = 0;
  bad.residual = nullptr;
  EXPECT_EQ(nktest::launch_add_norm(bad), normkit::Status::kSuccess);  // M == 0: nothing to do
}

}  // namespace
