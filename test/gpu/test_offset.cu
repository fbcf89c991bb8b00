// The weight offset ((1 + w): Gemma's RMSNorm, TransformerEngine's
// zero-centred gamma) end to end, through the policy front end a caller
// writes (normkit::RmsNorm / normkit::LayerNorm with Scale<bf16, true> and
// Affine<bf16, true>): every row length class the plan has a kernel shape
// for, from rows_per_warp to a cluster's registers (bf16 N = 131072 in
// clusters of 2 and 262144 in clusters of 4, the prefetching loop; 262144
// ran the ring from change 107 to change 140), contiguous, strided and one
// element off alignment, against a float64 reference of the bf16 inputs, y
// poisoned before each launch and every element checked (the padding
// between strided rows must stay poisoned); and rows that run a ring
// (aligned) must keep the bits of the same rows misaligned (the checked
// plain loop).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "normkit/layer_norm.cuh"
#include "normkit/rms_norm.cuh"
#include "test_support.h"

namespace {

using nktest::DeviceBuffer;
using nktest::DType;
using nktest::Op;
using bf16 = normkit::bfloat16;

using GemmaRms = normkit::RmsNorm<normkit::io<bf16>, normkit::epilogue::Scale<bf16, /*WEIGHT_OFFSET=*/true>>;

// The same (1 + w) scaling written as a caller writes an epilogue of its own
// (the contract examples/custom_epilogue.cu shows: Params and apply() over
// one slot, nothing else: no apply_whole, no hooks), so that the launcher's
// handling of a caller's epilogue runs on every shape the plan picks.
struct CallerOffsetScale {
  struct Params {
    const bf16* weight;
  };
  template <int VEC>
  static __device__ void apply(const Params& p, int64_t /*row*/, int64_t col0, int valid, float (&v)[VEC]) {
    for (int i = 0; i < VEC; ++i) {
      if (i < valid) v[i] *= 1.0f + __bfloat162float(p.weight[col0 + i]);
    }
  }
};
using CallerOffsetRms = normkit::RmsNorm<normkit::io<bf16>, CallerOffsetScale>;
using CentredLayerNorm =
    normkit::LayerNorm<normkit::io<bf16>, normkit::stats::TwoPass, normkit::epilogue::Affine<bf16, /*WEIGHT_OFFSET=*/true>>;

constexpr uint16_t kPoison = 0xffff;  // a bf16 NaN

struct Layout {
  int64_t n, rows;
  int misalign;  ///< elements x and y start past 16-byte alignment
  int64_t pad;   ///< elements between rows (stride n + pad)
  bool in_place = false;  ///< y is x (x's padding then holds the poison y's would)
};

/// One call's inputs as bf16 bits: rows of x (mean 3, std 1.5: a non-zero
/// mean), the weight w (zero-centred, so scales 1 + w of 0.5-1.5), the bias.
struct Inputs {
  std::vector<uint16_t> x, w, b;
};

Inputs make_inputs(int64_t rows, int64_t n, uint64_t seed) {
  nktest::Rng rng(seed);
  Inputs in;
  in.x.resize(rows * n);
  in.w.resize(n);
  in.b.resize(n);
  for (auto& v : in.x) nktest::store_as(DType::kBF16, 3.0 + 1.5 * rng.normal(), &v);
  for (auto& v : in.w) nktest::store_as(DType::kBF16, rng.uniform() - 0.5, &v);
  for (auto& v : in.b) nktest::store_as(DType::kBF16, 2.0 * rng.uniform() - 1.0, &v);
  return in;
}

struct Result {
  normkit::Status status = normkit::Status::kSuccess;
  std::vector<uint16_t> y;  ///< rows of n, contiguous (the padding checked and dropped)
  std::vector<float> rstd, mean;
  normkit::LaunchPlan ran;
  int64_t padding_written = 0;  ///< padding elements no longer poisoned
};

/// Runs Norm over `in` laid out as `l`, y (same layout) and the statistics poisoned first.
template <class Norm>
Result run(bool layer_norm, const Inputs& in, const Layout& l) {
  Result r;
  const int64_t stride = l.n + l.pad;
  const size_t elems = static_cast<size_t>((l.rows - 1) * stride + l.n + l.misalign);
  std::vector<uint16_t> hx(elems, l.in_place ? kPoison : 0);
  for (int64_t row = 0; row < l.rows; ++row) {
    std::memcpy(&hx[l.misalign + row * stride], &in.x[row * l.n], l.n * 2);
  }
  DeviceBuffer dx(elems * 2), dy(elems * 2), dw(l.n * 2), db(l.n * 2), dr(l.rows * 4), dm(l.rows * 4);
  EXPECT_EQ(cudaMemcpy(dx.data(), hx.data(), elems * 2, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(dw.data(), in.w.data(), l.n * 2, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(db.data(), in.b.data(), l.n * 2, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemset(dy.data(), 0xff, elems * 2), cudaSuccess);
  EXPECT_EQ(cudaMemset(dr.data(), 0xff, l.rows * 4), cudaSuccess);
  EXPECT_EQ(cudaMemset(dm.data(), 0xff, l.rows * 4), cudaSuccess);
  typename Norm::Args a;
  a.x = reinterpret_cast<const bf16*>(dx.data()) + l.misalign;
  a.y = (l.in_place ? reinterpret_cast<bf16*>(dx.data()) : reinterpret_cast<bf16*>(dy.data())) + l.misalign;
  a.epilogue.weight = reinterpret_cast<const bf16*>(dw.data());
  if constexpr (std::is_same_v<Norm, CentredLayerNorm>) {
    a.epilogue.bias = reinterpret_cast<const bf16*>(db.data());
    a.mean = reinterpret_cast<float*>(dm.data());
  }
  a.rstd = reinterpret_cast<float*>(dr.data());
  a.rows = l.rows;
  a.cols = l.n;
  a.x_row_stride = a.y_row_stride = stride;
  a.eps = layer_norm ? 1e-5f : 1e-6f;
  normkit::LaunchOptions o;
  o.launched = &r.ran;
  r.status = Norm::forward(a, nullptr, o);
  if (r.status != normkit::Status::kSuccess) return r;
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<uint16_t> hy(elems);
  EXPECT_EQ(cudaMemcpy(hy.data(), l.in_place ? dx.data() : dy.data(), elems * 2, cudaMemcpyDeviceToHost),
            cudaSuccess);
  r.y.resize(l.rows * l.n);
  for (int64_t row = 0; row < l.rows; ++row) {
    std::memcpy(&r.y[row * l.n], &hy[l.misalign + row * stride], l.n * 2);
    if (row + 1 < l.rows) {
      for (int64_t c = l.n; c < stride; ++c) r.padding_written += hy[l.misalign + row * stride + c] != kPoison;
    }
  }
  for (int i = 0; i < l.misalign; ++i) r.padding_written += hy[i] != kPoison;
  r.rstd.resize(l.rows);
  r.mean.resize(l.rows);
  EXPECT_EQ(cudaMemcpy(r.rstd.data(), dr.data(), l.rows * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(r.mean.data(), dm.data(), l.rows * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  return r;
}

/// Elements of r outside bf16's tolerance of the float64 reference
/// y = (x - mean) * rstd * (1 + w) (+ b), and statistics off by more than
/// 1e-5 (relative rstd; mean against the row's spread).
template <bool LAYER_NORM>
int64_t count_bad(const Inputs& in, const Layout& l, const Result& r, std::string* first) {
  const nktest::Tolerance tol = nktest::output_tolerance(DType::kBF16);
  std::vector<double> w(l.n), b(l.n);
  for (int64_t c = 0; c < l.n; ++c) {
    w[c] = 1.0 + nktest::load_as(DType::kBF16, &in.w[c]);
    b[c] = LAYER_NORM ? nktest::load_as(DType::kBF16, &in.b[c]) : 0.0;
  }
  std::vector<int64_t> bad(l.rows, 0);
  std::vector<std::string> what(l.rows);
  nktest::parallel_for(l.rows, [&](int64_t begin, int64_t end) {
    std::vector<double> x(l.n);
    for (int64_t row = begin; row < end; ++row) {
      for (int64_t c = 0; c < l.n; ++c) x[c] = nktest::load_as(DType::kBF16, &in.x[row * l.n + c]);
      const auto ref = nktest::reference_row(LAYER_NORM ? Op::kLayerNorm : Op::kRmsNorm, x.data(), l.n,
                                             LAYER_NORM ? 1e-5 : 1e-6);
      if (!(std::fabs(r.rstd[row] / ref.rstd - 1.0) <= 1e-5) ||
          (LAYER_NORM && !(std::fabs(r.mean[row] - ref.mean) <= 1e-5 / ref.rstd))) {
        if (bad[row]++ == 0) what[row] = "row " + std::to_string(row) + " statistics";
      }
      for (int64_t c = 0; c < l.n; ++c) {
        const double want = (x[c] - ref.mean) * ref.rstd * w[c] + b[c];
        const double got = nktest::load_as(DType::kBF16, &r.y[row * l.n + c]);
        if (!(std::fabs(got - want) <= tol.atol + tol.rtol * std::fabs(want))) {
          if (bad[row]++ == 0) {
            what[row] = "row " + std::to_string(row) + " col " + std::to_string(c) + ": " + std::to_string(got) +
                        " against " + std::to_string(want);
          }
        }
      }
    }
  });
  int64_t total = 0;
  for (int64_t row = 0; row < l.rows; ++row) {
    if (bad[row] > 0 && first->empty()) *first = what[row];
    total += bad[row];
  }
  return total;
}

template <class Norm, bool LAYER_NORM>
void check_lengths() {
  const bool quick = nktest::quick_mode();
  // Rows for each length: past the resident clusters at 131072 (66 of 2)
  // and 262144 (30-33 of 4), so that rings turn over; fewer under the
  // sanitizers, which skip 262144 (the plain run checks it).
  const Layout layouts[] = {
      {1, 300, 0, 0},          {97, 1000, 1, 0},         {256, 3000, 0, 0},         {768, 2000, 0, 64},
      {4099, 300, 1, 0},       {8192, 400, 0, 0},        {32768, 150, 0, 8},        {65536, 100, 1, 0},
      {131072, quick ? 70 : 150, 0, 0}, {131072, quick ? 20 : 40, 1, 0}, {262144, 80, 0, 64}, {262144, 30, 1, 0},
      // In place (y over x), strided and misaligned.
      {97, 300, 1, 3, true},    {4099, 300, 0, 5, true},  {32768, 50, 1, 0, true},  {131072, 20, 0, 64, true}};
  const uint64_t seed = nktest::fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  for (const Layout& l : layouts) {
    if (quick && l.n > 131072) continue;
    const std::string what = std::string(LAYER_NORM ? "LayerNorm (1 + w)" : "RMSNorm (1 + w)") +
                             " N=" + std::to_string(l.n) + " M=" + std::to_string(l.rows) +
                             " misalign=" + std::to_string(l.misalign) + " pad=" + std::to_string(l.pad) +
                             (l.in_place ? " in place" : "");
    const Inputs in = make_inputs(l.rows, l.n, seed + l.n + l.misalign);
    const Result r = run<Norm>(LAYER_NORM, in, l);
    ASSERT_EQ(r.status, normkit::Status::kSuccess) << what;
    std::string first;
    EXPECT_EQ(count_bad<LAYER_NORM>(in, l, r, &first), 0) << what << " (shape " << normkit::shape_name(r.ran.shape)
                                                          << "), first: " << first;
    EXPECT_EQ(r.padding_written, 0) << what << ": written outside the rows";
  }
}

TEST(WeightOffset, GemmaRmsNormMatchesTheReferenceAtEveryShape) { NK_REQUIRE_GPU(); check_lengths<GemmaRms, false>(); }

// A caller's own epilogue through the launcher (issue 4), at every length
// class, strided and misaligned, against the float64 reference.
TEST(WeightOffset, CallersOwnEpilogueMatchesTheReferenceAtEveryShape) {
  NK_REQUIRE_GPU();
  check_lengths<CallerOffsetRms, false>();
}

TEST(WeightOffset, ZeroCentredLayerNormMatchesTheReferenceAtEveryShape) {
  NK_REQUIRE_GPU();
  check_lengths<CentredLayerNorm, true>();
}

// Gemma's rows in a cluster's registers: at N = 131072 (clusters of 2) and
// 262144 (clusters of 4) the prefetching loop, at 524288 (clusters of 8)
// the ring (change 140; 262144 ran it from change 107), both holding the
// weight's (1 + w) slots in their own way; the same rows one
// element off alignment run the checked plain loop, and must give the same
// bits, y and rstd, as must the probe row run alone (a cluster's only row).
TEST(WeightOffset, GemmaRowsKeepTheirBitsInEveryLoop) {
  NK_REQUIRE_GPU();
  const uint64_t seed = nktest::fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  const bool quick = nktest::quick_mode();
  struct Case {
    int64_t n, rows;
    size_t smem;  ///< the loop's shared memory the aligned rows must run with
  };
  const Case cases[] = {{131072, quick ? 70 : 150, normkit::kernel::prefetch_smem_bytes(normkit::kernel::kPrefetchTeam)},
                        {262144, quick ? 40 : 80, normkit::kernel::prefetch_smem_bytes(normkit::kernel::kPrefetchTeam)},
                        // Past the 14-16 resident clusters of 8, so that rings turn over.
                        {524288, quick ? 20 : 40, normkit::kernel::ring_smem_bytes(normkit::kernel::kRingTeam)}};
  for (const Case& k : cases) {
    const std::string what = "N=" + std::to_string(k.n);
    const Inputs in = make_inputs(k.rows, k.n, seed + k.n);
    const Result aligned = run<GemmaRms>(false, in, {k.n, k.rows, 0, 0});
    const Result misaligned = run<GemmaRms>(false, in, {k.n, k.rows, 1, 0});
    ASSERT_EQ(aligned.status, normkit::Status::kSuccess) << what;
    ASSERT_EQ(misaligned.status, normkit::Status::kSuccess) << what;
    EXPECT_EQ(aligned.ran.shape, normkit::Shape::kRowInClusterRegisters) << what;
    EXPECT_EQ(aligned.ran.smem_bytes, k.smem) << what << ": the loop the plan gives these rows";
    EXPECT_EQ(misaligned.ran.smem_bytes, 0u) << what << ": misaligned rows run the checked loop";
    int64_t differing_rows = 0;
    for (int64_t r = 0; r < k.rows; ++r) {
      differing_rows += std::memcmp(&aligned.y[r * k.n], &misaligned.y[r * k.n], k.n * 2) != 0 ||
                        std::memcmp(&aligned.rstd[r], &misaligned.rstd[r], 4) != 0;
    }
    EXPECT_EQ(differing_rows, 0) << what << ": aligned rows differ from the checked loop's";
    const int64_t probe = k.rows - 3;
    Inputs one;
    one.x.assign(in.x.begin() + probe * k.n, in.x.begin() + (probe + 1) * k.n);
    one.w = in.w;
    one.b = in.b;
    const Result alone = run<GemmaRms>(false, one, {k.n, 1, 0, 0});
    ASSERT_EQ(alone.status, normkit::Status::kSuccess) << what;
    EXPECT_EQ(std::memcmp(alone.y.data(), &aligned.y[probe * k.n], k.n * 2), 0) << what << ": row " << probe
                                                                               << " differs from the row alone";
    EXPECT_EQ(alone.rstd[0], aligned.rstd[probe]) << what;
  }
}

}  // namespace
