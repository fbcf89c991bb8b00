// Batch invariance and determinism: a row's outputs are bitwise identical
// whatever the batch size, wherever the row sits in the batch, whether its
// rows are aligned for whole-slot accesses or not, and from run to run, for
// every op (plain, fused, quantized) and on each kernel shape the launcher
// picks. The launcher's shape choice never depends on M, every reduction has
// a fixed order (no atomics), and the register shapes' WHOLE form computes
// exactly what their checked form does, which is what this checks.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "dispatch_extra.h"
#include "test_support.h"

namespace {

using nktest::DeviceBuffer;
using nktest::DType;
using nktest::Op;

constexpr int64_t kMaxRows = 67;
// 32768 and 65536: 8 slots per thread (65536: a CTA of 1024 threads; 16-bit
// LayerNorm at 32768: 1024 threads of 4 slots, change 104; add + LayerNorm
// at 65536: a cluster of 2 such CTAs, change 105); 131072: a cluster of 2
// CTAs' registers (RMSNorm, plain, fused and quantized; LayerNorm bf16 with
// TwoPass too since change 101, per-row quantized LayerNorm staged; add +
// LayerNorm in 2 CTAs of 8 slots, half in shared memory, change 115);
// 262144: a cluster of 4 (RMSNorm
// prefetched, add + RMSNorm in registers, LayerNorm staged; add + LayerNorm
// in 8 CTAs of 4 slots).
const int64_t kLengths[] = {64, 768, 1000, 4096, 12288, 32768, 40000, 65536, 131072, 150000, 262144, 300000};

// Under compute-sanitizer (nktest::quick_mode) the tests over kLengths and
// the aligned/misaligned one keep rows up to 65536 and leave the longer ones
// to the plain run: with them, racecheck ran these tests past its deadline
// (device run 106). The long-row kernels still run under every sanitizer in
// the shape, quant, fused and layout tests (misaligned included: test_layout
// at N = 65536, whose fp32 rows take a cluster's registers).
bool left_to_plain_run(int64_t n) { return nktest::quick_mode() && n > 65536; }

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
  for (auto& v : h) v = static_cast<uint16_t>(0x3E00 + rng.next() % 0x900);  // bf16 in [0.125, 32640]
  ASSERT_EQ(cudaMemcpy(b.data(), h.data(), h.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
}

TEST(BatchInvariance, PlainFusedAndQuantizedBitwise) {
  NK_REQUIRE_GPU();
  const uint64_t seed = nktest::fresh_seed();
  for (int64_t n : kLengths) {
    if (left_to_plain_run(n)) continue;
    const int64_t bytes = kMaxRows * n * 2;
    DeviceBuffer x(bytes), r(bytes), h(bytes), y(bytes), w(n * 2), scales(kMaxRows * 4), xi(bytes), ri(bytes);
    fill_random(x, seed);
    fill_random(r, seed + 1);
    fill_random(w, seed + 2);
    for (Op op : {Op::kLayerNorm, Op::kRmsNorm}) {
      // The fields the three calls share, for rows first .. first + rows of
      // y rows of y_row_bytes (all bf16: NormCall sets its types below).
      auto shared = [&](auto& c, int64_t first, int64_t rows, int64_t y_row_bytes) {
        c.op = op;
        c.x = x.data() + first * n * 2;
        c.y = y.data() + first * y_row_bytes;
        c.weight = w.data();
        c.rows = rows;
        c.cols = n;
      };
      auto plain = [&](int64_t first, int64_t rows) {
        nktest::NormCall c;
        shared(c, first, rows, n * 2);
        c.x_type = c.y_type = c.w_type = DType::kBF16;
        return nktest::launch(c);
      };
      check_invariant(plain, y, n * 2, op == Op::kLayerNorm ? "LayerNorm" : "RMSNorm", n);
      auto fused = [&](int64_t first, int64_t rows) {
        nktest::AddNormCall c;
        shared(c, first, rows, n * 2);
        c.residual = r.data() + first * n * 2;
        c.residual_out = h.data() + first * n * 2;
        return nktest::launch_add_norm(c);
      };
      check_invariant(fused, y, n * 2, "add+norm", n);
      // In place (vLLM's form: y over x, h over the residual), each launch
      // from fresh copies of the inputs.
      auto fused_in_place = [&](int64_t first, int64_t rows) {
        EXPECT_EQ(cudaMemcpy(xi.data(), x.data(), bytes, cudaMemcpyDeviceToDevice), cudaSuccess);
        EXPECT_EQ(cudaMemcpy(ri.data(), r.data(), bytes, cudaMemcpyDeviceToDevice), cudaSuccess);
        nktest::AddNormCall c;
        c.op = op;
        c.x = xi.data() + first * n * 2;
        c.y = xi.data() + first * n * 2;
        c.residual = ri.data() + first * n * 2;
        c.residual_out = ri.data() + first * n * 2;
        c.weight = w.data();
        c.rows = rows;
        c.cols = n;
        return nktest::launch_add_norm(c);
      };
      check_invariant(fused_in_place, xi, n * 2, "add+norm in place", n);
      // Every length, the staged and cluster shapes past 131072 included
      // (until the eleventh session the quantized rows stopped at 131072, a
      // limit that had only followed the shapes as they were added).
      auto quant = [&](int64_t first, int64_t rows) {
        nktest::QuantCall c;
        shared(c, first, rows, n);
        c.row_scales = reinterpret_cast<float*>(scales.data()) + first;
        return nktest::launch_quant(c);
      };
      check_invariant(quant, y, n, "fp8 dynamic", n);
    }
  }
}

// The same rows launched from a 16-byte-aligned x (the WHOLE forms: register
// shapes where N fills the team's slots, and the whole batches of the staged
// and streaming shapes' output walk) and from x one element off alignment
// (the checked forms): y must be bitwise equal, for each op. N = 384 and 768
// cover the 3-slot rows_per_warp kernel, whose rows run the checked 4-slot
// kernel when misaligned; N = 5120 the 5-slot row_per_block kernel of the
// per-row-quantized outputs (fp8 and int8), checked and WHOLE; N = 32768 the
// 8-slot row_per_block kernel in CTAs of 512 threads (fused add: its roomy
// form, WHOLE and checked), and for 16-bit LayerNorm, plain and fused, 4
// slots in CTAs of 1024 threads (24576: 768; change 104). With 37 rows
// (no more than the SMs) the aligned row_per_block rows run the roomy form
// (below 8 slots with the parameters loaded ahead), the misaligned ones the
// checked form. N = 65536 the 8-slot row_per_block kernel in CTAs of 1024
// threads (add + LayerNorm: a cluster of 2 CTAs of 4 slots, change 105),
// and 131072 the cluster-register kernel (clusters of 2 such CTAs) of
// RMSNorm, plain, fused and quantized, and of 16-bit LayerNorm (change 101;
// add + LayerNorm in split parts of 8 slots, change 115); 262144 that of clusters of 4 (add
// + RMSNorm, RMSNorm prefetched where aligned) and 8 (add + LayerNorm). The
// fused add also in place (misaligned outputs: y and
// residual_out in the checked forms' narrow stores). Quantized outputs with
// per-row scales and, in e4m3, with a static scale (16-bit LayerNorm past
// 64 KiB across a cluster's registers: change 163).
TEST(BatchInvariance, AlignedAndMisalignedRowsAreBitwiseEqual) {
  NK_REQUIRE_GPU();
  const uint64_t seed = nktest::fresh_seed();
  const int64_t rows = 37;  // not a multiple of the rows a rows_per_warp CTA holds
  for (int64_t n : {64, 256, 384, 768, 1024, 4096, 5120, 8192, 24576, 32768, 40000, 65536, 131072, 262144, 300000}) {
    if (left_to_plain_run(n)) continue;
    const int64_t bytes = rows * n * 2;
    DeviceBuffer x(bytes + 16), r(bytes + 16), h(bytes), y(bytes), w(n * 2), scales(rows * 4);
    DeviceBuffer x_ref(bytes), r_ref(bytes);
    DeviceBuffer x_io(bytes + 16), r_io(bytes + 16);  // in place: the rows are written over
    fill_random(x_ref, seed);
    fill_random(r_ref, seed + 1);
    fill_random(w, seed + 2);
    unsigned char* x_off = x.data() + 2;  // one bf16 element past 16-byte alignment
    unsigned char* r_off = r.data() + 2;
    ASSERT_EQ(cudaMemcpy(x_off, x_ref.data(), bytes, cudaMemcpyDeviceToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(r_off, r_ref.data(), bytes, cudaMemcpyDeviceToDevice), cudaSuccess);
    auto outputs = [&](auto&& launch, const void* xp, const void* rp, int64_t y_bytes) {
      EXPECT_EQ(cudaMemset(y.data(), 0xFF, y.size()), cudaSuccess);
      EXPECT_EQ(launch(xp, rp), normkit::Status::kSuccess);
      EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      std::vector<unsigned char> out(y_bytes);
      EXPECT_EQ(cudaMemcpy(out.data(), y.data(), y_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
      return out;
    };
    for (Op op : {Op::kLayerNorm, Op::kRmsNorm}) {
      const char* name = op == Op::kLayerNorm ? "LayerNorm" : "RMSNorm";
      // The plain norm with a given statistics policy (LayerNorm also with
      // Welford: its empty slots must merge as nothing).
      auto plain_with = [&](nktest::StatsKind stats) {
        return [&, stats](const void* xp, const void*) {
          nktest::NormCall c;
          c.op = op;
          c.stats = stats;
          c.x_type = c.y_type = c.w_type = DType::kBF16;
          c.x = xp;
          c.y = y.data();
          c.weight = w.data();
          c.rows = rows;
          c.cols = n;
          return nktest::launch(c);
        };
      };
      const auto plain = plain_with(nktest::StatsKind::kTwoPass);
      EXPECT_EQ(outputs(plain, x_ref.data(), nullptr, bytes), outputs(plain, x_off, nullptr, bytes))
          << name << " N=" << n;
      if (op == Op::kLayerNorm) {
        const auto welford = plain_with(nktest::StatsKind::kWelford);
        EXPECT_EQ(outputs(welford, x_ref.data(), nullptr, bytes), outputs(welford, x_off, nullptr, bytes))
            << "LayerNorm (Welford) N=" << n;
      }
      auto fused = [&](const void* xp, const void* rp) {
        nktest::AddNormCall c;
        c.op = op;
        c.x = xp;
        c.residual = rp;
        c.residual_out = h.data();
        c.y = y.data();
        c.weight = w.data();
        c.rows = rows;
        c.cols = n;
        return nktest::launch_add_norm(c);
      };
      EXPECT_EQ(outputs(fused, x_ref.data(), r_ref.data(), bytes), outputs(fused, x_off, r_off, bytes))
          << "add+" << name << " N=" << n;
      // In place (y = x, residual_out = residual): misaligned outputs run the
      // checked forms, aligned ones the WHOLE forms; y and h bitwise equal.
      auto in_place = [&](unsigned char* xp, unsigned char* rp) {
        EXPECT_EQ(cudaMemcpy(xp, x_ref.data(), bytes, cudaMemcpyDeviceToDevice), cudaSuccess);
        EXPECT_EQ(cudaMemcpy(rp, r_ref.data(), bytes, cudaMemcpyDeviceToDevice), cudaSuccess);
        nktest::AddNormCall c;
        c.op = op;
        c.x = xp;
        c.residual = rp;
        c.residual_out = rp;
        c.y = xp;
        c.weight = w.data();
        c.rows = rows;
        c.cols = n;
        EXPECT_EQ(nktest::launch_add_norm(c), normkit::Status::kSuccess);
        EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        std::vector<unsigned char> out(2 * bytes);
        EXPECT_EQ(cudaMemcpy(out.data(), xp, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
        EXPECT_EQ(cudaMemcpy(out.data() + bytes, rp, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
        return out;
      };
      EXPECT_EQ(in_place(x_io.data(), r_io.data()), in_place(x_io.data() + 2, r_io.data() + 2))
          << "add+" << name << " in place N=" << n;
      // One quantized call: per-row scales, or the static scale 1/32 (per_row false).
      auto quant_with = [&](nktest::QType q, bool weighted, bool per_row) {
        return [&, q, weighted, per_row](const void* xp, const void*) {
          nktest::QuantCall c;
          c.op = op;
          c.q_type = q;
          c.x = xp;
          c.y = y.data();
          c.weight = weighted ? w.data() : nullptr;
          if (per_row) {
            c.row_scales = reinterpret_cast<float*>(scales.data());
          } else {
            c.static_scale = 1.0f / 32;
          }
          c.rows = rows;
          c.cols = n;
          return nktest::launch_quant(c);
        };
      };
      // Quantized also without a weight (a scale of 1, which the ring and
      // the 8-slot kernels read from a slot of ones instead of branching).
      for (nktest::QType q : {nktest::QType::kE4M3, nktest::QType::kE5M2, nktest::QType::kInt8}) {
        for (bool weighted : {true, false}) {
          const auto quant = quant_with(q, weighted, true);
          EXPECT_EQ(outputs(quant, x_ref.data(), nullptr, rows * n), outputs(quant, x_off, nullptr, rows * n))
              << nktest::qtype_name(q) << " " << name << " N=" << n << (weighted ? "" : ", no weight");
        }
      }
      // With a static scale too (16-bit LayerNorm past 64 KiB across a
      // cluster's registers since change 163, RMSNorm's ring); the types
      // differ only in the pack, so e4m3 alone.
      const auto quant_static = quant_with(nktest::QType::kE4M3, true, false);
      EXPECT_EQ(outputs(quant_static, x_ref.data(), nullptr, rows * n), outputs(quant_static, x_off, nullptr, rows * n))
          << "static e4m3 " << name << " N=" << n;
    }
  }
}

// The launcher runs per-row-quantized rows it may pair (plan.cuh, pairs_fit)
// in the paired register forms when the batch's x is larger than the L2
// cache, and unpaired otherwise (launch/launcher.cuh, run_paired): a row
// must keep its bits across that line. Rows of bf16 N = 256, 768 and 1024
// (rows_per_warp: groups of 8 lanes at 4 slots, 32 at 3, 32 at 4), 5120
// (row_per_block at 5 slots) and 8192 (row_per_block at 4), RMSNorm to fp8
// and int8 with per-row scales: alone, and
// in a batch past the L2 size; and the whole batch with pairing off, every
// row.
TEST(BatchInvariance, QuantizedRowsKeepTheirBitsWhenTheBatchOutgrowsL2) {
  NK_REQUIRE_GPU();
  int device = 0, l2 = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device), cudaSuccess);
  for (int64_t n : {256, 768, 1024, 5120, 8192}) {
    const int64_t row_bytes = n * 2;
    const int64_t rows = l2 / row_bytes + 37;  // x just past the L2 cache
    DeviceBuffer x(rows * row_bytes), w(row_bytes), y(rows * n), scales(rows * 4);
    const uint64_t seed = nktest::fresh_seed();
    fill_random(x, seed);
    fill_random(w, seed + 1);
    for (nktest::QType q : {nktest::QType::kE4M3, nktest::QType::kE5M2, nktest::QType::kInt8}) {
      normkit::LaunchPlan ran;
      auto quant = [&](int64_t first, int64_t count) {
        nktest::QuantCall c;
        c.launched = &ran;
        c.q_type = q;
        c.x = x.data() + first * row_bytes;
        c.y = y.data() + first * n;
        c.weight = w.data();
        c.row_scales = reinterpret_cast<float*>(scales.data()) + first;
        c.rows = count;
        c.cols = n;
        return c;
      };
      normkit::LaunchPlan plan;
      ASSERT_EQ(nktest::plan_quant(quant(0, rows), &plan), normkit::Status::kSuccess);
      ASSERT_TRUE(plan.may_pair) << "the plan no longer pairs these rows: choose rows it pairs";
      auto outputs = [&](int64_t first, int64_t count, int64_t probe) {
        EXPECT_EQ(cudaMemset(y.data(), 0xFF, y.size()), cudaSuccess);
        EXPECT_EQ(cudaMemset(scales.data(), 0xFF, scales.size()), cudaSuccess);
        EXPECT_EQ(nktest::launch_quant(quant(first, count)), normkit::Status::kSuccess);
        EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        std::vector<unsigned char> out(n + 4);
        EXPECT_EQ(cudaMemcpy(out.data(), y.data() + probe * n, n, cudaMemcpyDeviceToHost), cudaSuccess);
        EXPECT_EQ(cudaMemcpy(out.data() + n, scales.data() + probe * 4, 4, cudaMemcpyDeviceToHost), cudaSuccess);
        return out;
      };
      for (int64_t probe : {int64_t{0}, rows / 2, rows - 1}) {
        const auto alone = outputs(probe, 1, probe);
        EXPECT_FALSE(ran.paired);
        EXPECT_EQ(alone, outputs(0, rows, probe))
            << nktest::qtype_name(q) << " N=" << n << ": row " << probe << " alone and in a batch of " << rows;
        EXPECT_TRUE(ran.paired) << "a batch past the L2 cache ran unpaired";
      }
      // Every row of the batch, paired (automatic) and not.
      auto whole_batch = [&](normkit::LanePairing pairing) {
        nktest::QuantCall c = quant(0, rows);
        c.pairing = pairing;
        EXPECT_EQ(cudaMemset(y.data(), 0xFF, y.size()), cudaSuccess);
        EXPECT_EQ(cudaMemset(scales.data(), 0xFF, scales.size()), cudaSuccess);
        EXPECT_EQ(nktest::launch_quant(c), normkit::Status::kSuccess);
        EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        std::vector<unsigned char> out(y.size() + scales.size());
        EXPECT_EQ(cudaMemcpy(out.data(), y.data(), y.size(), cudaMemcpyDeviceToHost), cudaSuccess);
        EXPECT_EQ(cudaMemcpy(out.data() + y.size(), scales.data(), scales.size(), cudaMemcpyDeviceToHost),
                  cudaSuccess);
        return out;
      };
      const auto automatic = whole_batch(normkit::LanePairing::kAuto);
      EXPECT_TRUE(ran.paired);
      const auto unpaired = whole_batch(normkit::LanePairing::kOff);
      EXPECT_FALSE(ran.paired);
      EXPECT_TRUE(automatic == unpaired) << nktest::qtype_name(q) << " N=" << n << ": paired and 4-slot batches differ";
    }
  }
}

// The launcher runs row_per_block's roomy form (compiled for one CTA of up
// to 512 threads per SM: the same code with more registers) for batches of
// at most one CTA per SM, and for fused-add rows at 8 slots always
// (launch/launcher.cuh, run_roomy): a row must keep its bits across that
// line. bf16 N = 4096 and 8192 (4 slots a thread), 5120 (5 slots for the
// per-row-quantized rows), 12288 (384 threads; per-row-quantized LayerNorm
// rows of a batch past the SM count run the tight form there, change 181) and 32768
// (8 slots in 512 threads), plain, fused and quantized: the first rows in a
// batch of 8 and in a batch of more rows than SMs, and which form ran.
TEST(BatchInvariance, RowsKeepTheirBitsAcrossTheRoomyForm) {
  NK_REQUIRE_GPU();
  int device = 0, sms = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  const int64_t few = 8, many = sms + 37;
  for (int64_t n : {4096, 5120, 8192, 12288, 32768}) {
    const int64_t bytes = many * n * 2;
    DeviceBuffer x(bytes), r(bytes), h(bytes), y(bytes), w(n * 2), b(n * 2), scales(many * 4);
    const uint64_t seed = nktest::fresh_seed();
    fill_random(x, seed);
    fill_random(r, seed + 1);
    fill_random(w, seed + 2);
    fill_random(b, seed + 3);
    // The first `few` rows' y (and h) after a launch over `rows` rows; `ran`
    // receives the plan that ran.
    auto first_rows = [&](auto&& launch, int64_t rows, int64_t y_row_bytes, bool with_h) {
      EXPECT_EQ(cudaMemset(y.data(), 0xFF, y.size()), cudaSuccess);
      EXPECT_EQ(cudaMemset(h.data(), 0xFF, h.size()), cudaSuccess);
      EXPECT_EQ(launch(rows), normkit::Status::kSuccess);
      EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      std::vector<unsigned char> out(few * y_row_bytes + (with_h ? few * n * 2 : 0));
      EXPECT_EQ(cudaMemcpy(out.data(), y.data(), few * y_row_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
      if (with_h) {
        EXPECT_EQ(cudaMemcpy(out.data() + few * y_row_bytes, h.data(), few * n * 2, cudaMemcpyDeviceToHost),
                  cudaSuccess);
      }
      return out;
    };
    for (Op op : {Op::kLayerNorm, Op::kRmsNorm}) {
      const std::string name = std::string(op == Op::kLayerNorm ? "LayerNorm" : "RMSNorm") + " N=" + std::to_string(n);
      // Runs `launch` on few rows and on many, compares the first rows and
      // checks which form ran: roomy for the few (aligned) rows wherever
      // row_per_block runs CTAs of up to 512 threads, and for the many only
      // for fused-add rows at 8 slots. (16-bit LayerNorm at 32768 runs 1024
      // threads of 4 slots since change 104: no roomy form there, which the
      // check confirms.)
      // The many rows of per-row-quantized LayerNorm (`keeps_max`) at 4
      // slots in CTAs of 352-384 threads (12288) run the tight form
      // (change 181; the batch is within L2, so unpaired).
      auto check = [&](auto&& launch, normkit::LaunchPlan& ran, int64_t y_row_bytes, bool fused, bool keeps_max,
                       const char* what) {
        const auto alone = first_rows(launch, few, y_row_bytes, fused);
        const bool registers = ran.shape == normkit::Shape::kRowPerBlock && ran.threads <= 512;
        EXPECT_EQ(ran.roomy, registers) << what << " " << name << ": a batch of " << few;
        EXPECT_FALSE(ran.tight) << what << " " << name << ": a batch of " << few;
        EXPECT_EQ(alone, first_rows(launch, many, y_row_bytes, fused))
            << what << " " << name << ": the first rows in batches of " << few << " and " << many;
        EXPECT_EQ(ran.roomy, registers && fused && ran.vecs == 8) << what << " " << name << ": a batch of " << many;
        EXPECT_EQ(ran.tight, keeps_max && registers && ran.vecs == 4 && ran.threads > 320)
            << what << " " << name << ": a batch of " << many;
      };
      normkit::LaunchPlan ran;
      // The fields the three calls share (all bf16: NormCall sets its types below).
      auto shared = [&](auto& c, int64_t rows) {
        c.op = op;
        c.x = x.data();
        c.y = y.data();
        c.weight = w.data();
        if (op == Op::kLayerNorm) c.bias = b.data();
        c.rows = rows;
        c.cols = n;
        c.launched = &ran;
      };
      check(
          [&](int64_t rows) {
            nktest::NormCall c;
            shared(c, rows);
            c.x_type = c.y_type = c.w_type = DType::kBF16;
            return nktest::launch(c);
          },
          ran, n * 2, false, false, "plain");
      check(
          [&](int64_t rows) {
            nktest::AddNormCall c;
            shared(c, rows);
            c.residual = r.data();
            c.residual_out = h.data();
            return nktest::launch_add_norm(c);
          },
          ran, n * 2, true, false, "add+norm");
      check(
          [&](int64_t rows) {
            nktest::QuantCall c;
            shared(c, rows);
            c.row_scales = reinterpret_cast<float*>(scales.data());
            return nktest::launch_quant(c);
          },
          ran, n, false, op == Op::kLayerNorm, "fp8 dynamic");
    }
  }
}

// fp32 RMSNorm rows past 128 KiB run row_cluster_registers relayed (change
// 72): a CTA parks its part of one row in shared memory and loads its part of
// the next while the first reduces, so a cluster's first row and the rows it
// relays take different code paths. Row `probe` of a batch of kRelayRows
// starting at 0 is at least a cluster's third row (at most 66 clusters of 2 on
// the H200); alone it is a cluster's only row: the bits must not differ.
TEST(BatchInvariance, RelayedFp32RowsKeepTheirBits) {
  NK_REQUIRE_GPU();
  constexpr int64_t kRelayRows = 150, probe = 140;
  const uint64_t seed = nktest::fresh_seed();
  for (int64_t n : {int64_t{65536}, int64_t{131072}}) {
    if (left_to_plain_run(n)) continue;
    const int64_t row_bytes = n * 4;
    DeviceBuffer x(kRelayRows * row_bytes), y(kRelayRows * row_bytes), w(row_bytes);
    std::vector<float> h(kRelayRows * n);
    nktest::Rng rng(seed + n);
    for (auto& v : h) v = static_cast<float>(0.5 + 2.0 * rng.uniform());  // [0.5, 2.5): a non-zero mean
    ASSERT_EQ(cudaMemcpy(x.data(), h.data(), x.size(), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(w.data(), h.data() + n, w.size(), cudaMemcpyHostToDevice), cudaSuccess);
    normkit::LaunchPlan ran;
    auto plain = [&](int64_t first, int64_t rows) {
      nktest::NormCall c;
      c.op = Op::kRmsNorm;
      c.x_type = c.y_type = c.w_type = DType::kF32;
      c.x = x.data() + first * row_bytes;
      c.y = y.data() + first * row_bytes;
      c.weight = w.data();
      c.rows = rows;
      c.cols = n;
      c.launched = &ran;
      return nktest::launch(c);
    };
    const auto alone = output_row(plain, y, row_bytes, probe, 1, probe);
    // The test is about the relay: the plan must be the relayed one.
    ASSERT_EQ(ran.shape, normkit::Shape::kRowInClusterRegisters) << n;
    ASSERT_GT(ran.smem_bytes, 0u) << n;
    for (auto [first, rows] : {std::pair<int64_t, int64_t>{0, kRelayRows}, {100, 45}, {probe - 1, 3}, {0, probe + 1}}) {
      EXPECT_EQ(output_row(plain, y, row_bytes, first, rows, probe), alone)
          << "fp32 RMSNorm N=" << n << ": row " << probe << " in a batch of " << rows << " starting at " << first;
    }
  }
}

// Plain 16-bit RMSNorm rows and fp32 LayerNorm rows in row_cluster_registers'
// CTAs of 1024 threads are prefetched (kernel/row_prefetch.cuh): a CTA reads
// the first slots of each row from a ring the copy engine filled during its
// previous row (its first row's before the loop), each lap of the ring
// flipping the mbarriers' parity (16-bit ones in clusters of 8 run through
// the ring instead, kernel/row_ring.cuh; those of 4 did from change 107 to
// change 140). A batch of 150 rows (on the H200: RMSNorm
// 16-bit 131072 in 66 clusters of 2, 2-3 rows a cluster; 262144 in 30 of 4,
// 5 rows; LayerNorm fp32 65536 in 66 of 2, 262144 in 16 of 8, 9-10 rows)
// must give, row for row, the bits of the same rows one element off
// alignment (the checked plain loop, no ring); and row `probe` those of the
// row alone (a cluster's only row) and of shorter batches. The plan that ran
// must say which loop ran.
TEST(BatchInvariance, PrefetchedRowsKeepTheirBits) {
  NK_REQUIRE_GPU();
  constexpr int64_t batch = 150, probe = batch - 3;
  const size_t prefetch_ring = normkit::kernel::prefetch_smem_bytes(normkit::kernel::kPrefetchTeam);
  const size_t ring = normkit::kernel::ring_smem_bytes(normkit::kernel::kRingTeam);
  struct Case {
    Op op;
    DType t;
    int64_t n;
    int cluster;
  };
  const Case cases[] = {{Op::kRmsNorm, DType::kBF16, 131072, 2}, {Op::kRmsNorm, DType::kF16, 131072, 2},
                        {Op::kRmsNorm, DType::kBF16, 262144, 4}, {Op::kRmsNorm, DType::kF16, 262144, 4},
                        {Op::kLayerNorm, DType::kF32, 65536, 2}, {Op::kLayerNorm, DType::kF32, 262144, 8}};
  for (const Case& k : cases) {
    if (left_to_plain_run(k.n)) continue;
    const int64_t n = k.n, row_bytes = n * nktest::dtype_size(k.t);
    const std::string what = std::string(k.op == Op::kRmsNorm ? "RMSNorm " : "LayerNorm ") +
                             nktest::dtype_name(k.t) + " N = " + std::to_string(n);
    const uint64_t seed = nktest::fresh_seed();
    const size_t bytes = batch * row_bytes;
    DeviceBuffer x(bytes), y(bytes), w(row_bytes), b(row_bytes), xm(bytes + 16), ym(bytes + 16);
    // 16-bit words of bf16 in [0.125, 32640]: fp16 in [1.5, 7], fp32 in
    // [0.125, 32640] (the high word of each pair).
    fill_random(x, seed);
    fill_random(w, seed + 1);
    fill_random(b, seed + 2);
    ASSERT_EQ(cudaMemcpy(xm.data() + 4, x.data(), bytes, cudaMemcpyDeviceToDevice), cudaSuccess);
    normkit::LaunchPlan ran;
    auto norm = [&](unsigned char* xs, unsigned char* ys, int64_t first, int64_t rows) {
      nktest::NormCall c;
      c.op = k.op;
      c.x_type = c.y_type = c.w_type = k.t;
      c.x = xs + first * row_bytes;
      c.y = ys + first * row_bytes;
      c.weight = w.data();
      if (k.op == Op::kLayerNorm) c.bias = b.data();
      c.rows = rows;
      c.cols = n;
      c.launched = &ran;
      return nktest::launch(c);
    };
    auto plain = [&](int64_t first, int64_t rows) { return norm(x.data(), y.data(), first, rows); };
    const auto alone = output_row(plain, y, row_bytes, probe, 1, probe);
    ASSERT_EQ(ran.shape, normkit::Shape::kRowInClusterRegisters) << what;
    EXPECT_EQ(ran.cluster, k.cluster) << what;
    const bool ringed = k.t != DType::kF32 && k.cluster >= 8;
    EXPECT_EQ(ran.smem_bytes, ringed ? ring : prefetch_ring) << what << (ringed ? ": the ring" : ": the prefetching loop");
    for (auto [first, rows] : {std::pair<int64_t, int64_t>{probe - 1, 3}, {1, batch - 1}, {0, batch}}) {
      EXPECT_EQ(output_row(plain, y, row_bytes, first, rows, probe), alone)
          << what << ": row " << probe << " in a batch of " << rows << " starting at " << first;
    }
    // y now holds the whole batch (the last launch: rows 0 .. batch - 1).
    // Misaligned by 4 bytes: one element of fp32, two of the 16-bit types.
    std::vector<unsigned char> aligned(bytes), misaligned(bytes);
    ASSERT_EQ(cudaMemcpy(aligned.data(), y.data(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemset(ym.data(), 0xFF, ym.size()), cudaSuccess);
    ASSERT_EQ(norm(xm.data() + 4, ym.data() + 4, 0, batch), normkit::Status::kSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(ran.smem_bytes, 0u) << what << ": misaligned rows run the checked loop";
    ASSERT_EQ(cudaMemcpy(misaligned.data(), ym.data() + 4, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    int64_t differing_rows = 0, first_differing = -1;
    for (int64_t r = 0; r < batch; ++r) {
      if (std::memcmp(aligned.data() + r * row_bytes, misaligned.data() + r * row_bytes, row_bytes) != 0) {
        if (differing_rows++ == 0) first_differing = r;
      }
    }
    EXPECT_EQ(differing_rows, 0) << what << ": prefetched rows differ from the checked loop's, first row "
                                 << first_differing;
  }
}

// Rows quantized with a static scale run through a ring: the prefetching
// loop's in clusters of 2 (change 143; 99 to 107 too) and the ring in
// clusters of 4 (change 107): row
// `probe` of a batch (a cluster's second or later row, read from the ring)
// must keep the bits it has alone, and the whole batch those of the same
// rows one element off alignment (the checked plain loop, no ring); bf16
// RMSNorm to fp8 and int8 in clusters of 2 and 4.
TEST(BatchInvariance, RingedStaticQuantRowsKeepTheirBits) {
  NK_REQUIRE_GPU();
  const uint64_t seed = nktest::fresh_seed();
  const size_t ring = normkit::kernel::ring_smem_bytes(normkit::kernel::kRingTeam);
  const size_t prefetch_ring = normkit::kernel::prefetch_smem_bytes(normkit::kernel::kPrefetchTeam);
  const std::pair<int64_t, int64_t> lengths[] = {{131072, 150}, {262144, 80}};  // N, rows
  for (const auto& length : lengths) {
    const int64_t n = length.first, batch = length.second;
    if (left_to_plain_run(n)) continue;
    const int64_t probe = batch - 3;
    DeviceBuffer x(batch * n * 2), xm(batch * n * 2 + 16), y(batch * n), w(n * 2);
    fill_random(x, seed + n);
    fill_random(w, seed + n + 1);
    ASSERT_EQ(cudaMemcpy(xm.data() + 2, x.data(), x.size(), cudaMemcpyDeviceToDevice), cudaSuccess);
    for (nktest::QType q : {nktest::QType::kE4M3, nktest::QType::kE5M2, nktest::QType::kInt8}) {
      const std::string what = std::string(nktest::qtype_name(q)) + " static N=" + std::to_string(n);
      normkit::LaunchPlan ran;
      auto quant_from = [&](unsigned char* xs, int64_t first, int64_t rows) {
        nktest::QuantCall c;
        c.q_type = q;
        c.x = xs + first * n * 2;
        c.y = y.data() + first * n;
        c.weight = w.data();
        c.static_scale = 0.05f;
        c.rows = rows;
        c.cols = n;
        c.launched = &ran;
        return nktest::launch_quant(c);
      };
      auto quant = [&](int64_t first, int64_t rows) { return quant_from(x.data(), first, rows); };
      const auto alone = output_row(quant, y, n, probe, 1, probe);
      ASSERT_EQ(ran.shape, normkit::Shape::kRowInClusterRegisters) << what;
      if (n == 131072) {
        EXPECT_EQ(ran.smem_bytes, prefetch_ring) << what << ": the prefetching loop (clusters of 2)";
      } else {
        EXPECT_EQ(ran.smem_bytes, ring) << what << ": the ring (clusters of 4)";
      }
      for (auto [first, rows] : {std::pair<int64_t, int64_t>{probe - 1, 3}, {1, batch - 1}, {0, batch}}) {
        EXPECT_EQ(output_row(quant, y, n, first, rows, probe), alone)
            << what << ": row " << probe << " in a batch of " << rows << " starting at " << first;
      }
      // y holds the whole batch (the last launch); now from x one element off.
      std::vector<unsigned char> aligned(batch * n), misaligned(batch * n);
      ASSERT_EQ(cudaMemcpy(aligned.data(), y.data(), aligned.size(), cudaMemcpyDeviceToHost), cudaSuccess);
      ASSERT_EQ(cudaMemset(y.data(), 0xFF, y.size()), cudaSuccess);
      ASSERT_EQ(quant_from(xm.data() + 2, 0, batch), normkit::Status::kSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ(ran.smem_bytes, 0u) << what << ": misaligned rows run the checked loop";
      ASSERT_EQ(cudaMemcpy(misaligned.data(), y.data(), misaligned.size(), cudaMemcpyDeviceToHost), cudaSuccess);
      EXPECT_TRUE(aligned == misaligned) << what << ": prefetched rows differ from the checked loop's";
    }
  }
}

// Per-row fp8 and int8 rows in row_cluster_registers are rolled (change 78):
// a cluster's first row is loaded before its loop, every later one by the
// previous row's output walk. Row `probe` of the whole batch is a cluster's
// second or third row (132, 66 and 33 clusters on the H200 at these
// lengths); alone, or first in a short batch, it is a cluster's only or first
// row: the bits of y and of the row scale must not differ. Also the row
// scales as a whole, which must match the row scale of the row alone.
TEST(BatchInvariance, RolledQuantizedRowsKeepTheirBits) {
  NK_REQUIRE_GPU();
  const uint64_t seed = nktest::fresh_seed();
  const std::pair<int64_t, int64_t> lengths[] = {{65536, 300}, {131072, 150}, {262144, 80}};  // N, rows
  for (const auto& length : lengths) {
    const int64_t n = length.first, batch = length.second;  // (lambdas capture no structured bindings in C++17)
    if (left_to_plain_run(n)) continue;
    const int64_t probe = batch - 3;
    DeviceBuffer x(batch * n * 2), y(batch * n), w(n * 2), scales(batch * 4);
    fill_random(x, seed + n);
    fill_random(w, seed + n + 1);
    for (nktest::QType q : {nktest::QType::kE4M3, nktest::QType::kE5M2, nktest::QType::kInt8}) {
      normkit::LaunchPlan ran;
      auto quant = [&](int64_t first, int64_t rows) {
        nktest::QuantCall c;
        c.q_type = q;
        c.x = x.data() + first * n * 2;
        c.y = y.data() + first * n;
        c.weight = w.data();
        c.row_scales = reinterpret_cast<float*>(scales.data()) + first;
        c.rows = rows;
        c.cols = n;
        c.launched = &ran;
        EXPECT_EQ(cudaMemset(scales.data(), 0xFF, scales.size()), cudaSuccess);  // poisoned: each launch writes it
        return nktest::launch_quant(c);
      };
      auto scale_of = [&](int64_t row) {
        float s = 0;
        EXPECT_EQ(cudaMemcpy(&s, scales.data() + row * 4, 4, cudaMemcpyDeviceToHost), cudaSuccess);
        return s;
      };
      const auto alone = output_row(quant, y, n, probe, 1, probe);
      const float alone_scale = scale_of(probe);
      ASSERT_EQ(ran.shape, normkit::Shape::kRowInClusterRegisters) << n;
      for (auto [first, rows] : {std::pair<int64_t, int64_t>{0, batch}, {probe - 1, 3}, {1, batch - 1}}) {
        EXPECT_EQ(output_row(quant, y, n, first, rows, probe), alone)
            << nktest::qtype_name(q) << " N=" << n << ": row " << probe << " in a batch of " << rows
            << " starting at " << first;
        EXPECT_EQ(scale_of(probe), alone_scale) << nktest::qtype_name(q) << " N=" << n << " scale, batch of " << rows;
      }
    }
  }
}

TEST(BatchInvariance, RepeatedRunsAreBitwiseEqual) {
  NK_REQUIRE_GPU();
  for (int64_t n : kLengths) {
    if (left_to_plain_run(n)) continue;
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
