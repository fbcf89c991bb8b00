// Tensors with more than 2^31 elements: 64-bit row offsets on the paths that
// multiply a row index by a stride. Every element is checked written; a
// spread of rows (first, last, around the 2^31 boundary) against float64.
// The fused add and the quantized output too: their own pointers (the
// residual, residual_out, y of one byte, the row scales) at such offsets.
#include <gtest/gtest.h>

#include <cuda_bf16.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "dispatch_extra.h"
#include "test_support.h"

namespace {

using nktest::CaseSpec;
using nktest::DeviceBuffer;
using nktest::DType;
using nktest::download;
using normkit::Shape;

// Rows of bf16 bits made on the device (2^31 elements are slow to make and
// copy from the host): row r's values are a mean of its own (non-zero, from
// r) plus noise from a hash of the element's index and a salt (from a fresh
// seed each run).
__global__ void fill_bf16_rows(uint16_t* p, int64_t rows, int64_t cols, uint32_t salt) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ static_cast<uint32_t>(i >> 32) * 40503u ^ salt;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    const float mean = static_cast<float>(static_cast<int>((i / cols) % 13) - 6) * 0.5f + 0.25f;
    p[i] = __bfloat16_as_ushort(__float2bfloat16(mean + (static_cast<float>(h & 0xffff) / 32768.f - 1.f) * 2.f));
  }
}

// How many of the n elements of `width` bytes at p still hold the poison
// (every byte 0xFF, or 0x7F for one-byte elements: NaN in fp8 e4m3).
template <class T>
__global__ void count_poison(const T* p, int64_t n, T poison, unsigned long long* count) {
  unsigned long long mine = 0;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    mine += p[i] == poison;
  }
  if (mine != 0) atomicAdd(count, mine);
}

template <class T>
unsigned long long poisoned(const void* p, int64_t n, T poison) {
  DeviceBuffer count(sizeof(unsigned long long));
  EXPECT_EQ(cudaMemset(count.data(), 0, sizeof(unsigned long long)), cudaSuccess);
  count_poison<T><<<1024, 256>>>(static_cast<const T*>(p), n, poison,
                                 reinterpret_cast<unsigned long long*>(count.data()));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  unsigned long long host = ~0ull;
  EXPECT_EQ(cudaMemcpy(&host, count.data(), sizeof(host), cudaMemcpyDeviceToHost), cudaSuccess);
  return host;
}

// How many of the floats in `bytes` (a statistic or scale per row, poisoned
// with NaN before the launch) are not finite and positive.
int64_t not_finite_positive(const std::vector<unsigned char>& bytes) {
  int64_t bad = 0;
  for (size_t i = 0; i + 4 <= bytes.size(); i += 4) {
    float v;
    std::memcpy(&v, &bytes[i], 4);
    bad += !(std::isfinite(v) && v > 0);
  }
  return bad;
}

constexpr int64_t kLargeCols = 4096;
constexpr int64_t kLargeRows = (int64_t{1} << 31) / kLargeCols + 3;  // 2^31 + 12288 elements
// Rows compared: the first, the last, both sides of the row where a 16-bit
// buffer's byte offset passes 2^31 (262144) and of the row where the element
// index does (524288, which a one-byte y's byte offset passes too), and a spread.
constexpr int64_t kRowAt2Pow31Elements = (int64_t{1} << 31) / kLargeCols;
const int64_t kSampleRows[] = {0,
                               1,
                               kLargeRows / 3,
                               kRowAt2Pow31Elements / 2 - 1,
                               kRowAt2Pow31Elements / 2,
                               kRowAt2Pow31Elements - 1,
                               kRowAt2Pow31Elements,
                               kRowAt2Pow31Elements + 1,
                               kLargeRows - 2,
                               kLargeRows - 1};

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

// Fused add + RMSNorm (bf16, out of place) over 2^31 + 12288 elements:
// residual_out and y fully written (no poison left), rstd finite; the sample
// rows' h bit for bit (round(x + residual)), y against float64, and every
// output of the row bitwise equal to the same row run alone (M = 1), so that
// a wrong 64-bit offset on any of the four row pointers shows.
TEST(Large, FusedAddRmsNormBeyond2Pow31) {
  NK_REQUIRE_GPU();
  // Under the sanitizers (quick mode) this would take minutes: the plain run
  // checks it, and memcheck runs MoreThan2Pow31Elements' offsets.
  if (nktest::quick_mode()) GTEST_SKIP() << "skipped in quick mode (2^31 elements)";
  size_t free_bytes = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
  if (free_bytes < 19ull * (1ull << 30)) GTEST_SKIP() << "needs about 17 GiB of device memory";
  const int64_t M = kLargeRows, N = kLargeCols;
  const size_t bytes = static_cast<size_t>(M * N) * 2;
  DeviceBuffer dx(bytes), dr(bytes), dro(bytes), dy(bytes), dw(N * 2), ds(M * 4);
  const uint64_t seed = nktest::fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  fill_bf16_rows<<<1024, 256>>>(reinterpret_cast<uint16_t*>(dx.data()), M, N, static_cast<uint32_t>(seed));
  fill_bf16_rows<<<1024, 256>>>(reinterpret_cast<uint16_t*>(dr.data()), M, N, static_cast<uint32_t>(seed >> 32));
  fill_bf16_rows<<<64, 256>>>(reinterpret_cast<uint16_t*>(dw.data()), 1, N, static_cast<uint32_t>(seed) ^ 0x77u);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_EQ(cudaMemset(dro.data(), 0xFF, bytes), cudaSuccess);
  ASSERT_EQ(cudaMemset(dy.data(), 0xFF, bytes), cudaSuccess);
  ASSERT_EQ(cudaMemset(ds.data(), 0xFF, M * 4), cudaSuccess);
  nktest::AddNormCall call;
  call.op = nktest::Op::kRmsNorm;
  call.x_type = call.w_type = DType::kBF16;
  call.x = dx.data();
  call.residual = dr.data();
  call.residual_out = dro.data();
  call.y = dy.data();
  call.weight = dw.data();
  call.rstd = reinterpret_cast<float*>(ds.data());
  call.rows = M;
  call.cols = N;
  ASSERT_EQ(nktest::launch_add_norm(call), normkit::Status::kSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(poisoned<uint16_t>(dro.data(), M * N, 0xFFFF), 0u) << "residual_out elements not written";
  EXPECT_EQ(poisoned<uint16_t>(dy.data(), M * N, 0xFFFF), 0u) << "y elements not written";
  const std::vector<unsigned char> rstd = download(ds.data(), M * 4);
  EXPECT_EQ(not_finite_positive(rstd), 0) << "rstd not written or not finite";
  const std::vector<unsigned char> w = download(dw.data(), N * 2);
  const nktest::Tolerance tol = nktest::output_tolerance(DType::kBF16);
  DeviceBuffer one_ro(N * 2), one_y(N * 2), one_s(4);
  for (int64_t r : kSampleRows) {
    SCOPED_TRACE("row " + std::to_string(r));
    const size_t off = static_cast<size_t>(r * N) * 2;
    const std::vector<unsigned char> x = download(dx.data() + off, N * 2), res = download(dr.data() + off, N * 2);
    const std::vector<unsigned char> ro = download(dro.data() + off, N * 2), y = download(dy.data() + off, N * 2);
    std::vector<double> h(N);
    int64_t bad_h = 0, bad_y = 0;
    for (int64_t j = 0; j < N; ++j) {
      unsigned char want[2];
      nktest::store_as(DType::kBF16,
                       static_cast<float>(nktest::load_as(DType::kBF16, &x[j * 2])) +
                           static_cast<float>(nktest::load_as(DType::kBF16, &res[j * 2])),
                       want);
      bad_h += std::memcmp(want, &ro[j * 2], 2) != 0;
      h[j] = nktest::load_as(DType::kBF16, want);
    }
    const nktest::RowReference ref = nktest::reference_row(nktest::Op::kRmsNorm, h.data(), N, call.eps);
    for (int64_t j = 0; j < N; ++j) {
      const double want = h[j] * ref.rstd * nktest::load_as(DType::kBF16, &w[j * 2]);
      bad_y += !(std::fabs(nktest::load_as(DType::kBF16, &y[j * 2]) - want) <= tol.atol + tol.rtol * std::fabs(want));
    }
    EXPECT_EQ(bad_h, 0);
    EXPECT_EQ(bad_y, 0);
    // The row alone, from the same memory, into poisoned outputs.
    ASSERT_EQ(cudaMemset(one_ro.data(), 0xFF, N * 2), cudaSuccess);
    ASSERT_EQ(cudaMemset(one_y.data(), 0xFF, N * 2), cudaSuccess);
    ASSERT_EQ(cudaMemset(one_s.data(), 0xFF, 4), cudaSuccess);
    nktest::AddNormCall alone = call;
    alone.x = dx.data() + off;
    alone.residual = dr.data() + off;
    alone.residual_out = one_ro.data();
    alone.y = one_y.data();
    alone.rstd = reinterpret_cast<float*>(one_s.data());
    alone.rows = 1;
    ASSERT_EQ(nktest::launch_add_norm(alone), normkit::Status::kSuccess);
    EXPECT_TRUE(download(one_ro.data(), N * 2) == ro) << "residual_out differs from the row alone";
    EXPECT_TRUE(download(one_y.data(), N * 2) == y) << "y differs from the row alone";
    EXPECT_EQ(std::memcmp(download(one_s.data(), 4).data(), &rstd[r * 4], 4), 0) << "rstd differs from the row alone";
  }
}

// RMSNorm to fp8 e4m3 with per-row scales (bf16 x) over 2^31 + 12288
// elements: every byte of y written (no NaN poison left: finite rows never
// give NaN), every scale finite and positive, and the sample rows' y and
// scale bitwise equal to the same row run alone (M = 1). The one-byte
// output's and the scales' row offsets are their own arithmetic.
TEST(Large, PerRowFp8Beyond2Pow31) {
  NK_REQUIRE_GPU();
  if (nktest::quick_mode()) GTEST_SKIP() << "skipped in quick mode (2^31 elements)";
  size_t free_bytes = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
  if (free_bytes < 8ull * (1ull << 30)) GTEST_SKIP() << "needs about 6.5 GiB of device memory";
  const int64_t M = kLargeRows, N = kLargeCols;
  DeviceBuffer dx(static_cast<size_t>(M * N) * 2), dy(static_cast<size_t>(M * N)), dw(N * 2), ds(M * 4);
  const uint64_t seed = nktest::fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  fill_bf16_rows<<<1024, 256>>>(reinterpret_cast<uint16_t*>(dx.data()), M, N, static_cast<uint32_t>(seed));
  fill_bf16_rows<<<64, 256>>>(reinterpret_cast<uint16_t*>(dw.data()), 1, N, static_cast<uint32_t>(seed >> 32));
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_EQ(cudaMemset(dy.data(), 0x7F, static_cast<size_t>(M * N)), cudaSuccess);
  ASSERT_EQ(cudaMemset(ds.data(), 0xFF, M * 4), cudaSuccess);
  nktest::QuantCall call;
  call.op = nktest::Op::kRmsNorm;
  call.x_type = DType::kBF16;
  call.q_type = nktest::QType::kE4M3;
  call.x = dx.data();
  call.y = dy.data();
  call.weight = dw.data();
  call.row_scales = reinterpret_cast<float*>(ds.data());
  call.rows = M;
  call.cols = N;
  ASSERT_EQ(nktest::launch_quant(call), normkit::Status::kSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(poisoned<uint8_t>(dy.data(), M * N, 0x7F), 0u) << "y bytes not written (or NaN)";
  const std::vector<unsigned char> scales = download(ds.data(), M * 4);
  EXPECT_EQ(not_finite_positive(scales), 0) << "row scales not written or not finite";
  DeviceBuffer one_y(N), one_s(4);
  for (int64_t r : kSampleRows) {
    SCOPED_TRACE("row " + std::to_string(r));
    ASSERT_EQ(cudaMemset(one_y.data(), 0x7F, N), cudaSuccess);
    ASSERT_EQ(cudaMemset(one_s.data(), 0xFF, 4), cudaSuccess);
    nktest::QuantCall alone = call;
    alone.x = dx.data() + static_cast<size_t>(r * N) * 2;
    alone.y = one_y.data();
    alone.row_scales = reinterpret_cast<float*>(one_s.data());
    alone.rows = 1;
    ASSERT_EQ(nktest::launch_quant(alone), normkit::Status::kSuccess);
    EXPECT_TRUE(download(one_y.data(), N) == download(dy.data() + static_cast<size_t>(r * N), N))
        << "y differs from the row alone";
    EXPECT_EQ(std::memcmp(download(one_s.data(), 4).data(), &scales[r * 4], 4), 0)
        << "the row scale differs from the row alone";
  }
}

}  // namespace
