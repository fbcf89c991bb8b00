// Batch invariance and determinism: a row's outputs are bitwise identical
// whatever the batch size, wherever the row sits in the batch, and from run to
// run, for every op (plain, fused, quantized) and on each kernel shape the
// launcher picks. The launcher's shape choice never depends on M, and every
// reduction has a fixed order (no atomics), which is what this checks.
#include <gtest/gtest.h>

#include <vector>

#include "dispatch_extra.h"
#include "test_support.h"

namespace {

using nktest::DeviceBuffer;
using nktest::DType;
using nktest::Op;

constexpr int64_t kMaxRows = 67;
const int64_t kLengths[] = {64, 1000, 4096, 12288, 40000, 300000};

// Runs `launch(first_row, rows)` on rows [first_row, first_row + rows) of one
// input and returns the output bytes of row `probe`.
template <class Launch>
std::vector<unsigned char> output_row(Launch&& launch, DeviceBuffer& y, int64_t row_bytes, int64_t first,
                                      int64_t rows, int64_t probe) {
  EXPECT_EQ(cudaMemset(y.data(), 0xFF, y.size()), cudaSuccess);
  EXPECT_EQ(launch(first, rows), normkit::Status::kSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<unsigned char> out(row_bytes);
  EXPECT_EQ(cudaMemcpy(out.data(), y.data() + probe * row_bytes, row_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return out;
}

template <class Launch>
void check_invariant(Launch&& launch, DeviceBuffer& y, int64_t row_bytes, const char* what, int64_t n) {
  const int64_t probe = 29;
  const auto reference = output_row(launch, y, row_bytes, probe, 1, probe);  // the row alone
  for (auto [first, rows] : {std::pair<int64_t, int64_t>{0, kMaxRows}, {probe - 3, 4}, {probe, 1}, {20, 40},
                             {0, probe + 1}}) {
    EXPECT_EQ(output_row(launch, y, row_bytes, first, rows, probe), reference)
        << what << " N=" << n << ": row " << probe << " in a batch of " << rows << " starting at " << first;
  }
}

void fill_random(DeviceBuffer& b, uint64_t seed) {
  std::vector<uint16_t> h(b.size() / 2);
  nktest::Rng rng(seed);
  for (auto& v : h) v = static_cast<uint16_t>(0x3E00 + rng.next() % 0x900);  // bf16 in about [0.1, 6)
  ASSERT_EQ(cudaMemcpy(b.data(), h.data(), h.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
}

TEST(BatchInvariance, PlainFusedAndQuantizedBitwise) {
  NK_REQUIRE_GPU();
  const uint64_t seed = nktest::fresh_seed();
  for (int64_t n : kLengths) {
    const int64_t bytes = kMaxRows * n * 2;
    DeviceBuffer x(bytes), r(bytes), h(bytes), y(bytes), w(n * 2), scales(kMaxRows * 4);
    fill_random(x, seed);
    fill_random(r, seed + 1);
    fill_random(w, seed + 2);
    for (Op op : {Op::kLayerNorm, Op::kRmsNorm}) {
      auto plain = [&](int64_t first, int64_t rows) {
        nktest::NormCall c;
        c.op = op;
        c.x_type = c.y_type = c.w_type = DType::kBF16;
        c.x = x.data() + first * n * 2;
        c.y = y.data() + first * n * 2;
        c.weight = w.data();
        c.rows = rows;
        c.cols = n;
        return nktest::launch(c);
      };
      check_invariant(plain, y, n * 2, op == Op::kLayerNorm ? "LayerNorm" : "RMSNorm", n);
      auto fused = [&](int64_t first, int64_t rows) {
        nktest::AddNormCall c;
        c.op = op;
        c.x = x.data() + first * n * 2;
        c.residual = r.data() + first * n * 2;
        c.residual_out = h.data() + first * n * 2;
        c.y = y.data() + first * n * 2;
        c.weight = w.data();
        c.rows = rows;
        c.cols = n;
        return nktest::launch_add_norm(c);
      };
      check_invariant(fused, y, n * 2, "add+norm", n);
      if (n <= 40000) {
        auto quant = [&](int64_t first, int64_t rows) {
          nktest::QuantCall c;
          c.op = op;
          c.x = x.data() + first * n * 2;
          c.y = y.data() + first * n;
          c.weight = w.data();
          c.row_scales = reinterpret_cast<float*>(scales.data()) + first;
          c.rows = rows;
          c.cols = n;
          return nktest::launch_quant(c);
        };
        check_invariant(quant, y, n, "fp8 dynamic", n);
      }
    }
  }
}

TEST(BatchInvariance, RepeatedRunsAreBitwiseEqual) {
  NK_REQUIRE_GPU();
  for (int64_t n : kLengths) {
    const int64_t bytes = kMaxRows * n * 2;
    DeviceBuffer x(bytes), y(bytes);
    fill_random(x, nktest::fresh_seed());
    nktest::NormCall c;
    c.x_type = c.y_type = c.w_type = DType::kBF16;
    c.x = x.data();
    c.y = y.data();
    c.rows = kMaxRows;
    c.cols = n;
    std::vector<unsigned char> first(bytes), again(bytes);
    ASSERT_EQ(nktest::launch(c), normkit::Status::kSuccess);
    ASSERT_EQ(cudaMemcpy(first.data(), y.data(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int i = 0; i < 5; ++i) {
      ASSERT_EQ(cudaMemset(y.data(), 0, bytes), cudaSuccess);
      ASSERT_EQ(nktest::launch(c), normkit::Status::kSuccess);
      ASSERT_EQ(cudaMemcpy(again.data(), y.data(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
      EXPECT_EQ(first, again) << "N=" << n << " run " << i;
    }
  }
}

}  // namespace
