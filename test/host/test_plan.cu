// Host tests of the kernel-shape choice: a pure function of N, element sizes
// and the device (never of M), checked against an H200-like and an
// A100-like device.
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include <normkit/add_norm.cuh>
#include <normkit/kernel/row_cluster_registers.cuh>
#include <normkit/kernel/start_stagger.cuh>
#include <normkit/launch/plan.cuh>
#include <normkit/quantize.cuh>
#include <normkit/rms_norm.cuh>

namespace {

using normkit::choose_plan;
using normkit::DeviceCaps;
using normkit::LaunchPlan;
using normkit::RowFormat;
using normkit::Shape;
using normkit::Status;

DeviceCaps h200() {
  DeviceCaps d;
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.max_smem_per_block_optin = 232448;
  d.cluster_launch = true;
  return d;
}

DeviceCaps a100() {
  DeviceCaps d;
  d.cc_major = 8;
  d.cc_minor = 0;
  d.sm_count = 108;
  d.max_smem_per_block_optin = 166912;
  d.cluster_launch = false;
  return d;
}

RowFormat bf16_row(int64_t n) { return RowFormat{n, 8, 2, false}; }
RowFormat f32_row(int64_t n) { return RowFormat{n, 4, 4, false}; }
/// A format whose rows row_cluster_registers relays (kernel::kRelaysRows: plain RMSNorm).
RowFormat relayed_row(RowFormat f) {
  f.relays_rows = true;
  return f;
}

LaunchPlan plan_of(const RowFormat& f, const DeviceCaps& d, Shape s = Shape::kAuto) {
  LaunchPlan p;
  EXPECT_EQ(choose_plan(f, d, s, &p), Status::kSuccess) << "N=" << f.cols << " shape=" << normkit::shape_name(s);
  return p;
}

TEST(Plan, ShortRowsShareAWarp) {
  for (int64_t n : {1, 2, 3, 5, 31, 32, 64}) {
    const LaunchPlan p = plan_of(bf16_row(n), h200());
    EXPECT_EQ(p.shape, Shape::kRowsPerWarp) << n;
    EXPECT_EQ(p.group, 4) << n;  // 4 lanes x up to 2 slots x 8 elements hold 64
    EXPECT_GE(p.group * p.vecs * 8, n);
  }
  EXPECT_EQ(plan_of(bf16_row(1), h200()).vecs, 1);
  EXPECT_EQ(plan_of(bf16_row(64), h200()).vecs, 2);
  EXPECT_EQ(plan_of(bf16_row(65), h200()).group, 8);
  EXPECT_EQ(plan_of(bf16_row(129), h200()).group, 16);
  EXPECT_EQ(plan_of(bf16_row(256), h200()).group, 16);
  EXPECT_EQ(plan_of(bf16_row(256), h200()).vecs, 2);
  EXPECT_EQ(plan_of(bf16_row(512), h200()).group, 32);
  EXPECT_EQ(plan_of(f32_row(256), h200()).group, 32);
  // CTAs of 64 threads (change 74): two warps, so a CTA that waits on its
  // slowest row holds an SM's slot for little; a group never spans CTAs.
  for (int64_t n : {1, 64, 256, 768, 1024}) {
    const LaunchPlan p = plan_of(bf16_row(n), h200(), Shape::kRowsPerWarp);
    EXPECT_EQ(p.threads, 64) << n;
    EXPECT_EQ(p.threads % p.group, 0) << n;
  }
}

TEST(Plan, ShortRowsTakeTwoSlotsPerThreadLongerRowsFour) {
  // Up to 2 KiB of x: 2 slots (32 bytes) per thread.
  const LaunchPlan a = plan_of(bf16_row(1024), h200());
  EXPECT_EQ(a.shape, Shape::kRowPerBlock);
  EXPECT_EQ(a.vecs, 2);
  EXPECT_EQ(a.threads, 64);
  // Rows that would leave a 2-slot CTA's last slots empty keep a warp of up
  // to 4 slots per lane (768: 3, exactly; see ThreeSlots... below), as do
  // rows scaled by their maximum.
  const LaunchPlan b = plan_of(bf16_row(768), h200());
  EXPECT_EQ(b.shape, Shape::kRowsPerWarp);
  EXPECT_EQ(b.group, 32);
  EXPECT_EQ(b.vecs, 3);
  EXPECT_EQ(plan_of(bf16_row(513), h200()).vecs, 4);
  RowFormat q = bf16_row(256);
  q.needs_on_chip = true;
  EXPECT_EQ(plan_of(q, h200()).vecs, 4);
  EXPECT_EQ(plan_of(q, h200()).group, 8);
  EXPECT_EQ(plan_of(f32_row(512), h200()).vecs, 2);
  EXPECT_EQ(plan_of(f32_row(512), h200()).threads, 64);
  // Longer: 4 slots (64 bytes), as few threads as that allows.
  EXPECT_EQ(plan_of(bf16_row(1025), h200()).vecs, 4);
  EXPECT_EQ(plan_of(bf16_row(1025), h200()).threads, 64);
  EXPECT_EQ(plan_of(f32_row(513), h200()).shape, Shape::kRowPerBlock);
  EXPECT_EQ(plan_of(f32_row(513), h200()).threads, 64);
  EXPECT_EQ(plan_of(bf16_row(4096), h200()).threads, 128);
  EXPECT_EQ(plan_of(bf16_row(4096), h200()).vecs, 4);
  // Forcing the shape auto picks changes nothing; a forced rows_per_warp
  // still holds rows up to 32 lanes x 4 slots.
  EXPECT_EQ(plan_of(bf16_row(256), h200(), Shape::kRowsPerWarp).group, 16);
  EXPECT_EQ(plan_of(bf16_row(1024), h200(), Shape::kRowPerBlock).threads, 64);
  const LaunchPlan w = plan_of(bf16_row(1024), h200(), Shape::kRowsPerWarp);
  EXPECT_EQ(w.group, 32);
  EXPECT_EQ(w.vecs, 4);
}

TEST(Plan, StatisticsWithTwoReductionsKeepFourSlotsOnShortRows) {
  RowFormat f = bf16_row(1024);
  f.row_reductions = 2;  // TwoPass (LayerNorm)
  const LaunchPlan a = plan_of(f, h200());
  EXPECT_EQ(a.shape, Shape::kRowsPerWarp);  // one warp of 32 lanes x 4 slots: shuffles only
  EXPECT_EQ(a.group, 32);
  EXPECT_EQ(a.vecs, 4);
  f.cols = 256;
  EXPECT_EQ(plan_of(f, h200()).group, 8);
  EXPECT_EQ(plan_of(f, h200()).vecs, 4);
  // One reduction (RMSNorm): 2 slots, as ShortRowsTakeTwoSlotsPerThreadLongerRowsFour checks.
  f.row_reductions = 1;
  EXPECT_EQ(plan_of(f, h200()).vecs, 2);
  // Longer rows take 4 slots either way.
  f.cols = 4096;
  f.row_reductions = 2;
  EXPECT_EQ(plan_of(f, h200()).threads, 128);
}

TEST(Plan, ThreeSlotsPerLaneWhereTheyHoldTheRowExactlyAndFourWouldNot) {
  // 16-bit N = 768: 96 slots, 32 lanes x 3 (4 would leave 32 empty).
  const LaunchPlan a = plan_of(bf16_row(768), h200());
  EXPECT_EQ(a.shape, Shape::kRowsPerWarp);
  EXPECT_EQ(a.group, 32);
  EXPECT_EQ(a.vecs, 3);
  // Rows of 4 slots per lane: N = 384 with two reductions (LayerNorm) or a
  // per-row maximum, 48 slots = 16 lanes x 3; fp32 N = 384 (96 slots) as well.
  RowFormat f = bf16_row(384);
  f.row_reductions = 2;
  EXPECT_EQ(plan_of(f, h200()).group, 16);
  EXPECT_EQ(plan_of(f, h200()).vecs, 3);
  f = bf16_row(384);
  f.needs_on_chip = true;
  EXPECT_EQ(plan_of(f, h200()).vecs, 3);
  f = f32_row(384);
  f.row_reductions = 2;
  EXPECT_EQ(plan_of(f, h200()).group, 32);
  EXPECT_EQ(plan_of(f, h200()).vecs, 3);
  // Not where 2 slots were chosen (RMSNorm 16-bit N = 384: 32 lanes x 2, a
  // quarter empty, as measured in change 10), nor with a partial slot
  // (N = 767), nor where 3 would not fill a power-of-two group (N = 640).
  EXPECT_EQ(plan_of(bf16_row(384), h200()).vecs, 2);
  EXPECT_EQ(plan_of(bf16_row(767), h200()).vecs, 4);
  RowFormat g = bf16_row(640);
  g.row_reductions = 2;
  EXPECT_EQ(plan_of(g, h200()).vecs, 4);
  // A forced rows_per_warp takes the same rule.
  EXPECT_EQ(plan_of(bf16_row(768), h200(), Shape::kRowsPerWarp).vecs, 3);
}

TEST(Plan, RowPerBlockTakesHalfTheSlotsWhereWholeWarpsThenHoldTheRow) {
  // fp32 N = 768: 192 slots, 4 per thread would leave 16 of 64 threads empty.
  const LaunchPlan a = plan_of(f32_row(768), h200());
  EXPECT_EQ(a.shape, Shape::kRowPerBlock);
  EXPECT_EQ(a.vecs, 2);
  EXPECT_EQ(a.threads, 96);
  EXPECT_EQ(plan_of(bf16_row(1536), h200()).vecs, 2);
  EXPECT_EQ(plan_of(bf16_row(1536), h200()).threads, 96);
  EXPECT_EQ(plan_of(bf16_row(2560), h200()).threads, 160);
  // Already exact at 4 slots: unchanged.
  EXPECT_EQ(plan_of(bf16_row(5120), h200()).vecs, 4);
  EXPECT_EQ(plan_of(bf16_row(5120), h200()).threads, 160);
  // No exact fit at 2 or 4 slots (1280 = 160 slots), or a partial slot (4099):
  // 4 slots, threads rounded up to whole warps.
  EXPECT_EQ(plan_of(bf16_row(1280), h200()).vecs, 4);
  EXPECT_EQ(plan_of(bf16_row(1280), h200()).threads, 64);
  EXPECT_EQ(plan_of(bf16_row(4099), h200()).vecs, 4);
  EXPECT_EQ(plan_of(bf16_row(4099), h200()).threads, 160);
  // A forced row_per_block takes the same rule.
  EXPECT_EQ(plan_of(f32_row(768), h200(), Shape::kRowPerBlock).threads, 96);
}

TEST(Plan, RegisterRowsThenSharedMemoryThenClusterThenStreaming) {
  EXPECT_EQ(plan_of(bf16_row(1025), h200()).shape, Shape::kRowPerBlock);
  EXPECT_EQ(plan_of(bf16_row(16384), h200()).shape, Shape::kRowPerBlock);
  EXPECT_EQ(plan_of(f32_row(8192), h200()).shape, Shape::kRowPerBlock);
  EXPECT_EQ(plan_of(f32_row(8193), h200()).shape, Shape::kRowInSmem);
  EXPECT_EQ(plan_of(bf16_row(16385), h200()).shape, Shape::kRowInSmem);
  EXPECT_EQ(plan_of(bf16_row(32768), h200()).shape, Shape::kRowPerBlock);  // 8 slots: WideRows... below
  EXPECT_EQ(plan_of(bf16_row(32776), h200()).shape, Shape::kRowInSmem);
  EXPECT_EQ(plan_of(bf16_row(65536), h200()).shape, Shape::kRowPerBlock);  // 1024 threads x 8 slots
  EXPECT_EQ(plan_of(bf16_row(65544), h200()).cluster, 2);                  // a partial slot: staged
  // Rows up to 512 KiB stay on chip; longer ones stream (RowsStayOnChipUpTo512KiB)
  // unless they split across a cluster's registers (RowsKeptOnChipSplit...).
  EXPECT_EQ(plan_of(f32_row(131072), h200()).shape, Shape::kRowInCluster);
  EXPECT_EQ(plan_of(f32_row(131073), h200()).shape, Shape::kStreaming);
  EXPECT_EQ(plan_of(bf16_row(262145), h200()).shape, Shape::kStreaming);
  const LaunchPlan c = plan_of(bf16_row(131080), h200());
  EXPECT_EQ(c.shape, Shape::kRowInCluster);
  EXPECT_GE(c.cluster, 2);
  EXPECT_LE(c.cluster, 8);
  EXPECT_LE(c.smem_bytes, 232448u);
  EXPECT_EQ(c.chunk * c.cluster >= 131080, true);
  EXPECT_EQ(plan_of(bf16_row(1 << 20), h200()).shape, Shape::kStreaming);
  EXPECT_EQ(plan_of(f32_row(1 << 20), h200()).shape, Shape::kStreaming);
  // Without clusters: shared memory as far as it goes, then streaming with one CTA per row.
  EXPECT_EQ(plan_of(bf16_row(16385), a100()).shape, Shape::kRowInSmem);
  EXPECT_EQ(plan_of(bf16_row(65544), a100()).shape, Shape::kRowInSmem);
  const LaunchPlan s = plan_of(bf16_row(262144), a100());
  EXPECT_EQ(s.shape, Shape::kStreaming);
  EXPECT_EQ(s.cluster, 1);
}

// Clusters of 3, 5, 6 or 7 CTAs measured slower than the next power of two
// (docs/performance.md, change 31), so a row that needs 3 CTAs gets 4.
TEST(Plan, ClustersArePowersOfTwo) {
  // (131080 and 65540: no split into whole warps, so staged, not in registers.)
  const LaunchPlan c = plan_of(bf16_row(131080), h200());  // 256 KiB: would fit 3 CTAs of 96 KiB
  EXPECT_EQ(c.shape, Shape::kRowInCluster);
  EXPECT_EQ(c.cluster, 4);
  EXPECT_EQ(c.chunk, 32776);
  EXPECT_EQ(plan_of(f32_row(65540), h200()).cluster, 4);
  // 512 KiB on chip (16-bit LayerNorm, per-row scales; 262136 columns do not
  // split into whole warps, so staged, not in registers): 6 CTAs would do
  RowFormat quant = bf16_row(262136);
  quant.needs_on_chip = true;
  quant.row_reductions = 2;
  EXPECT_EQ(plan_of(quant, h200()).shape, Shape::kRowInCluster);
  EXPECT_EQ(plan_of(quant, h200()).cluster, 8);
  EXPECT_EQ(plan_of(bf16_row(40000), h200(), Shape::kStreaming).cluster, 4);  // 3 CTAs' worth of slots
  EXPECT_EQ(plan_of(bf16_row(200000), h200(), Shape::kRowInCluster).cluster, 8);  // 5 CTAs of 96 KiB
  for (int64_t n = 1; n <= (1 << 22); n = n * 5 / 4 + 1) {
    for (const Shape s : {Shape::kAuto, Shape::kRowInCluster, Shape::kStreaming}) {
      LaunchPlan p;
      if (choose_plan(bf16_row(n), h200(), s, &p) != Status::kSuccess) continue;
      EXPECT_EQ(p.cluster & (p.cluster - 1), 0) << "N=" << n << " cluster " << p.cluster;
    }
  }
}

// Rows are staged on chip, across a cluster of up to 8 CTAs, up to 512 KiB
// (changes 33 and 38: faster than streaming's two reads); longer ones stream
// unless they split across a cluster's registers (change 52).
TEST(Plan, RowsStayOnChipUpTo512KiB) {
  const LaunchPlan p = plan_of(bf16_row(262144), h200());
  EXPECT_EQ(p.shape, Shape::kRowInCluster);
  EXPECT_EQ(p.cluster, 8);
  EXPECT_LE(p.smem_bytes, 232448u);
  EXPECT_EQ(plan_of(bf16_row(131073), h200()).shape, Shape::kRowInCluster);  // past 256 KiB
  EXPECT_EQ(plan_of(bf16_row(262145), h200()).shape, Shape::kStreaming);
  RowFormat two_pass = f32_row(131072);  // fp32 LayerNorm: 512 KiB
  two_pass.row_reductions = 2;
  EXPECT_EQ(plan_of(two_pass, h200()).shape, Shape::kRowInCluster);
}

RowFormat quant_row(RowFormat f) {
  f.needs_on_chip = true;
  f.quantized = true;
  return f;
}

/// Rows quantized with a static scale: quantized, but not kept on chip.
RowFormat static_row(RowFormat f) {
  f.quantized = true;
  return f;
}

RowFormat two_pass_row(RowFormat f) {
  f.row_reductions = 2;
  return f;
}

// The plans whose CTAs row_per_block's tight form takes (change 181:
// 4-slot rows in CTAs of kRowPerBlockTightMinThreads-kRowPerBlockTightThreads
// threads, three an SM) for per-row-quantized rows: bf16 10272-12288 and
// fp32 6144, not 10240 (320 threads). CTAs are whole warps, so 10272 takes
// 352 threads whose slots overhang the row: the checked form, which the
// tight form is not. The launcher chooses the form (by the problem, the
// alignment and the batch: kernel::kTightFourSlotRows, WHOLE rows, not the
// roomy or paired form), never the plan.
TEST(Plan, PerRowQuantizedRowsInTightFormCtas) {
  constexpr int kMin = normkit::kernel::kRowPerBlockTightMinThreads;
  constexpr int kMax = normkit::kernel::kRowPerBlockTightThreads;
  static_assert(kMax == 384 && kMin == 321, "56 registers fit a third CTA only of 11-12 warps");
  // LayerNorm's rows: two reductions a row.
  auto ln = [](RowFormat f) { return two_pass_row(quant_row(f)); };
  const std::tuple<RowFormat, int, bool> cases[] = {
      {ln(bf16_row(10240)), 320, false}, {ln(bf16_row(10272)), 352, true}, {ln(bf16_row(11264)), 352, true},
      {ln(bf16_row(12288)), 384, true},  {ln(f32_row(6144)), 384, true},   {ln(f32_row(4096)), 256, false}};
  for (const auto& [f, threads, in_range] : cases) {
    const LaunchPlan p = plan_of(f, h200());
    EXPECT_EQ(p.shape, Shape::kRowPerBlock) << f.cols;
    EXPECT_EQ(p.vecs, 4) << f.cols;
    EXPECT_EQ(p.threads, threads) << f.cols;
    EXPECT_EQ(p.threads >= kMin && p.threads <= kMax, in_range) << f.cols;
    EXPECT_FALSE(p.tight) << f.cols;  // the launcher's choice
  }
  using bf16 = normkit::bfloat16;
  using e4m3 = normkit::float8_e4m3;
  using normkit::kernel::kTightFourSlotRows;
  EXPECT_TRUE((kTightFourSlotRows<
               normkit::detail::LayerQuantProblem<bf16, e4m3, bf16, normkit::output::QuantDynamicRow<e4m3>>>));
  EXPECT_TRUE((kTightFourSlotRows<
               normkit::detail::LayerQuantProblem<float, e4m3, float, normkit::output::QuantDynamicRow<e4m3>>>));
  // Per-row RMSNorm (one reduction), static scales and plain rows fit 56
  // registers at two CTAs already (level in experiment 180).
  EXPECT_FALSE((kTightFourSlotRows<
                normkit::detail::RmsQuantProblem<bf16, e4m3, bf16, normkit::output::QuantDynamicRow<e4m3>>>));
  EXPECT_FALSE(
      (kTightFourSlotRows<normkit::detail::LayerQuantProblem<bf16, e4m3, bf16, normkit::output::QuantStatic<e4m3>>>));
  EXPECT_FALSE((kTightFourSlotRows<normkit::detail::RmsNormProblem<bf16, bf16, bf16>>));
  EXPECT_FALSE((kTightFourSlotRows<normkit::detail::AddRmsNormProblem<bf16, bf16, bf16, bf16>>));
}

// 8 slots per thread in one CTA of whole warps that hold the row exactly,
// for x rows past 32 KiB (which 4 slots cannot hold) up to 128 KiB (CTAs
// of up to 1024 threads at 8 slots, 512 otherwise); never
// 16-bit rows with two reductions. Shorter rows keep 4 slots, also rows kept
// on chip (faster at 8 with x in DRAM, slower with x in L2: change 40).
TEST(Plan, WideRowsTakeEightSlotsPerThread) {
  const std::pair<int64_t, int> wide[] = {{24576, 384}, {28672, 448}, {32768, 512}, {40960, 640}, {65536, 1024}};
  for (const auto& [n, threads] : wide) {
    for (const RowFormat& f : {bf16_row(n), quant_row(bf16_row(n))}) {
      // Rows kept on chip past 64 KiB of x: the same slots in a cluster of
      // 2 CTAs of half the threads (change 76).
      const bool split = f.needs_on_chip && n * 2 > 65536;
      const LaunchPlan p = plan_of(f, h200());
      EXPECT_EQ(p.shape, split ? Shape::kRowInClusterRegisters : Shape::kRowPerBlock) << n;
      EXPECT_EQ(p.vecs, 8) << n;
      EXPECT_EQ(p.threads, split ? threads / 2 : threads) << n;
      // Forcing the shape auto picks (or that split rows would take in one CTA) holds them at 8 slots.
      EXPECT_EQ(plan_of(f, h200(), Shape::kRowPerBlock).vecs, 8) << n;
      EXPECT_EQ(plan_of(f, h200(), Shape::kRowPerBlock).threads, threads) << n;
    }
  }
  for (int64_t n : {4096, 8192, 12288, 16384}) {  // up to 32 KiB: 4 slots
    EXPECT_EQ(plan_of(quant_row(bf16_row(n)), h200()).vecs, 4) << n;
    EXPECT_EQ(plan_of(bf16_row(n), h200()).vecs, 4) << n;
  }
  EXPECT_EQ(plan_of(quant_row(bf16_row(17408)), h200()).shape, Shape::kRowInSmem);  // 272 threads x 8
  EXPECT_EQ(plan_of(bf16_row(32776), h200()).shape, Shape::kRowInSmem);              // a partial slot
  EXPECT_EQ(plan_of(f32_row(8192), h200()).vecs, 4);                                 // fp32: 32 KiB
  EXPECT_EQ(plan_of(f32_row(12288), h200()).vecs, 8);
  EXPECT_EQ(plan_of(f32_row(12288), h200()).threads, 384);
  EXPECT_EQ(plan_of(two_pass_row(f32_row(16384)), h200()).vecs, 8);  // fp32 LayerNorm
  EXPECT_EQ(plan_of(bf16_row(32768), a100()).vecs, 8);                // no cluster needed
  EXPECT_EQ(plan_of(f32_row(32768), h200()).threads, 1024);           // fp32: 128 KiB
  EXPECT_EQ(plan_of(bf16_row(65536), a100()).threads, 1024);
  EXPECT_EQ(plan_of(bf16_row(65536 + 8 * 32 * 8), h200()).shape, Shape::kRowInCluster);  // 1056 threads
  // 16-bit rows with two reductions (LayerNorm) spill at 8 slots: past 32
  // KiB they take 4 slots in CTAs of up to 1024 threads (change 104), up to
  // 64 KiB; longer rows are staged.
  LaunchPlan p = plan_of(two_pass_row(bf16_row(32768)), h200());
  EXPECT_EQ(p.shape, Shape::kRowPerBlock);
  EXPECT_EQ(p.vecs, 4);
  EXPECT_EQ(p.threads, 1024);
  EXPECT_FALSE(p.may_pair);
  EXPECT_EQ(plan_of(two_pass_row(bf16_row(24576)), h200()).threads, 768);
  EXPECT_EQ(plan_of(two_pass_row(bf16_row(16384)), h200()).threads, 512);  // 32 KiB: as before
  p = plan_of(two_pass_row(bf16_row(20000)), h200());  // 2500 slots: the checked form, 640 threads
  EXPECT_EQ(p.shape, Shape::kRowPerBlock);
  EXPECT_EQ(p.vecs, 4);
  EXPECT_EQ(p.threads, 640);
  EXPECT_EQ(plan_of(two_pass_row(bf16_row(16385)), h200()).threads, 544);  // one partial slot past 32 KiB
  EXPECT_EQ(plan_of(two_pass_row(bf16_row(32776)), h200()).shape, Shape::kRowInSmem);  // past 64 KiB
  EXPECT_EQ(plan_of(two_pass_row(bf16_row(40000)), h200()).shape, Shape::kRowInSmem);
  // Also where the output quantizes, per row or with a static scale (change
  // 157), but not fp32 LayerNorm (8 slots), nor rows whose slots hold 32 bytes.
  // (Per-row rows of exactly 32768 split over a cluster of 2 since change 185:
  // 32760 here; Plan.LayerNormRowsQuantizedAcrossClusterRegisters.)
  for (const RowFormat& f : {quant_row(two_pass_row(bf16_row(32760))), static_row(two_pass_row(bf16_row(32768)))}) {
    p = plan_of(f, h200());
    EXPECT_EQ(p.shape, Shape::kRowPerBlock);
    EXPECT_EQ(p.vecs, 4);
    EXPECT_EQ(p.threads, 1024);
  }
  EXPECT_EQ(plan_of(quant_row(two_pass_row(bf16_row(32776))), h200()).shape, Shape::kRowInSmem);  // past 64 KiB
  EXPECT_EQ(plan_of(two_pass_row(f32_row(16384)), h200()).threads, 512);
  EXPECT_TRUE(normkit::detail::allows_wide_four_slot_team(2, 2, 8));
  EXPECT_FALSE(normkit::detail::allows_wide_four_slot_team(1, 2, 8));
  EXPECT_FALSE(normkit::detail::allows_wide_four_slot_team(2, 4, 4));
  EXPECT_FALSE(normkit::detail::allows_wide_four_slot_team(1, 4, 8));
  // Forced, 4 slots in 1024 threads for them, and for no other problem.
  EXPECT_EQ(choose_plan(two_pass_row(bf16_row(32768)), h200(), Shape::kRowPerBlock, &p), Status::kSuccess);
  EXPECT_EQ(p.threads, 1024);
  EXPECT_EQ(choose_plan(two_pass_row(bf16_row(32776)), h200(), Shape::kRowPerBlock, &p),
            Status::kErrorUnsupportedShape);
  EXPECT_EQ(choose_plan(RowFormat{20000, 8, 4, false}, h200(), Shape::kRowPerBlock, &p),
            Status::kErrorUnsupportedShape);  // bf16 x, fp32 residual: 640 threads of 4 slots refused
  EXPECT_FALSE(normkit::detail::allows_wide_slots(2, 2, 8));
  EXPECT_TRUE(normkit::detail::allows_wide_slots(2, 4, 4));
  EXPECT_TRUE(normkit::detail::allows_wide_slots(1, 2, 8));
  // Nor rows whose slots hold more than 16 bytes (bf16 x with an fp32
  // residual: 8 elements a slot, held as fp32), which would spill.
  EXPECT_FALSE(normkit::detail::allows_wide_slots(1, 4, 8));
  const RowFormat wide_residual{32768, 8, 4, false};
  EXPECT_EQ(plan_of(wide_residual, h200()).shape, Shape::kRowInCluster);
  EXPECT_EQ(plan_of(quant_row(RowFormat{65536, 8, 4, false}), h200()).shape, Shape::kRowInCluster);
  // rows_per_warp never takes more than 4 slots a lane, even for a row that
  // would prefer 8 (none does today: wide rows are longer than a warp holds).
  LaunchPlan w;
  EXPECT_TRUE(normkit::detail::plan_rows_per_warp(bf16_row(1024), 8, &w));
  EXPECT_EQ(w.vecs, 4);
  EXPECT_EQ(w.group, 32);
  EXPECT_FALSE(normkit::detail::plan_rows_per_warp(bf16_row(1032), 8, &w));
}

RowFormat folding(RowFormat f) {
  f.folds_each_part = true;
  return f;
}

// The paired row_per_block form (4-slot rows in half the threads, the same
// bits; the launcher takes it for batches past the L2 cache): quantized
// rows (per-row or static scales) of 4-32 KiB at 4 slots a thread in an even number of whole
// warps, with statistics that fold by part, not 16-bit rows with two
// reductions. A pure function of N and the types.
TEST(Plan, QuantizedFourSlotRowsMayPair) {
  for (int64_t n : {2048, 4096, 8192, 12288, 16384}) {
    const LaunchPlan p = plan_of(folding(quant_row(bf16_row(n))), h200());
    EXPECT_EQ(p.shape, Shape::kRowPerBlock) << n;
    EXPECT_EQ(p.vecs, 4) << n;
    EXPECT_TRUE(p.may_pair) << n;
    EXPECT_FALSE(p.paired) << n;  // the launcher chooses (by M and alignment), not the plan
    EXPECT_FALSE(p.roomy) << n;   // likewise the roomy form (by M and the problem)
    EXPECT_FALSE(p.tight) << n;   // and the tight form
    EXPECT_TRUE(plan_of(folding(quant_row(bf16_row(n))), h200(), Shape::kRowPerBlock).may_pair) << n;
    EXPECT_TRUE(plan_of(folding(quant_row(bf16_row(n))), a100()).may_pair) << n;
    EXPECT_FALSE(plan_of(quant_row(bf16_row(n)), h200()).may_pair) << n;        // statistics that do not fold by part
    EXPECT_FALSE(plan_of(folding(bf16_row(n)), h200()).may_pair) << n;          // not quantized
    // Static scales pair too (change 100), with the plan of plain rows otherwise.
    const LaunchPlan s = plan_of(folding(static_row(bf16_row(n))), h200());
    EXPECT_TRUE(s.may_pair) << n;
    EXPECT_EQ(s.shape, Shape::kRowPerBlock) << n;
    EXPECT_EQ(s.vecs, 4) << n;
    EXPECT_FALSE(plan_of(folding(two_pass_row(quant_row(bf16_row(n)))), h200()).may_pair) << n;  // 16-bit LayerNorm
  }
  for (int64_t n : {1024, 2048, 4096, 8192}) {  // fp32: 4-32 KiB, both statistics
    EXPECT_TRUE(plan_of(folding(quant_row(f32_row(n))), h200()).may_pair) << n;
    EXPECT_TRUE(plan_of(folding(two_pass_row(quant_row(f32_row(n)))), h200()).may_pair) << n;
  }
  // 5 slots where whole warps at 4 would be an odd number or none (bf16 N =
  // 2560, 5120: 80 and 160 threads; fp32 2560), so that the row pairs; rows
  // that do not pair keep their plan.
  for (const RowFormat& f : {bf16_row(2560), bf16_row(5120), f32_row(2560)}) {
    for (const RowFormat& q : {folding(quant_row(f)), folding(two_pass_row(quant_row(f)))}) {
      if (q.row_reductions == 2 && f.vec == 8) continue;  // 16-bit LayerNorm does not pair
      const LaunchPlan p = plan_of(q, h200());
      EXPECT_EQ(p.shape, Shape::kRowPerBlock) << f.cols;
      EXPECT_EQ(p.vecs, 5) << f.cols;
      EXPECT_EQ(p.threads, f.cols / f.vec / 5) << f.cols;
      EXPECT_TRUE(p.may_pair) << f.cols;
    }
    EXPECT_NE(plan_of(quant_row(f), h200()).vecs, 5) << f.cols;  // statistics that do not fold by part
    EXPECT_NE(plan_of(folding(f), h200()).vecs, 5) << f.cols;    // not quantized
    EXPECT_EQ(plan_of(folding(static_row(f)), h200()).vecs, 5) << f.cols;
  }
  EXPECT_NE(plan_of(folding(two_pass_row(quant_row(bf16_row(5120)))), h200()).vecs, 5);  // 16-bit LayerNorm
  // rows_per_warp: groups spanning at least 64 columns (bf16: 8-32 lanes;
  // fp32: 16-32) at 4 slots, or 3 (16-bit N = 192, 384, 768), that hold the
  // row exactly.
  for (const RowFormat& f : {bf16_row(256), bf16_row(512), bf16_row(1024), f32_row(256), f32_row(512),
                             bf16_row(192), bf16_row(384), bf16_row(768), f32_row(384)}) {
    const LaunchPlan p = plan_of(folding(quant_row(f)), h200());
    EXPECT_EQ(p.shape, Shape::kRowsPerWarp) << f.cols;
    EXPECT_GE(p.group * f.vec, 64) << f.cols;
    EXPECT_EQ(p.vecs, f.cols % 192 == 0 ? 3 : 4) << f.cols;
    EXPECT_TRUE(p.may_pair) << f.cols;
    EXPECT_FALSE(plan_of(folding(f), h200()).may_pair) << f.cols;
  }
  // Not: groups spanning fewer columns (bf16 N = 128: 4 lanes; 96: 4 x 3;
  // fp32 N = 128: 8 lanes), rows the team does not hold exactly,
  // row_per_block rows below 4 KiB (64 threads would be one warp of 8
  // slots), rows that no even number of warps holds at 4 or 5 slots (N =
  // 3584: 448 slots, not a multiple of 5 and not of 128; 2 slots x 224
  // threads), 8-slot rows, rows on other shapes.
  for (int64_t n : {96, 128, 1000, 1536, 3584, 4099, 8200, 24576, 32768, 65536}) {
    EXPECT_FALSE(plan_of(folding(quant_row(bf16_row(n))), h200()).may_pair) << n;
  }
  EXPECT_FALSE(plan_of(folding(quant_row(f32_row(128))), h200()).may_pair);
  EXPECT_FALSE(plan_of(folding(quant_row(f32_row(16384))), h200()).may_pair);  // 8 slots already
}

// Rows kept on chip past one CTA's registers: split across the smallest
// cluster whose parts fill whole warps at 8 slots (CTAs of up to 1024
// threads); staged where none does.
TEST(Plan, RowsKeptOnChipSplitAcrossAClusterInRegisters) {
  const std::pair<int64_t, int> lengths[] = {{131072, 2}, {262144, 4}, {524288, 8}};
  for (const auto& [n, cluster] : lengths) {
    const LaunchPlan p = plan_of(quant_row(bf16_row(n)), h200());
    EXPECT_EQ(p.shape, Shape::kRowInClusterRegisters) << n;
    EXPECT_EQ(p.cluster, cluster) << n;
    EXPECT_EQ(p.threads, 1024) << n;
    EXPECT_EQ(p.vecs, 8) << n;
    EXPECT_EQ(p.chunk, n / cluster) << n;
    EXPECT_EQ(p.smem_bytes, 0u) << n;
  }
  const LaunchPlan odd = plan_of(quant_row(bf16_row(81920)), h200());  // 160 KiB: 2 x 640 threads
  EXPECT_EQ(odd.shape, Shape::kRowInClusterRegisters);
  EXPECT_EQ(odd.cluster, 2);
  EXPECT_EQ(odd.threads, 640);
  EXPECT_EQ(plan_of(quant_row(f32_row(65536)), h200()).cluster, 2);
  // Rows of 64 KiB of x or less stay in one CTA (row_per_block, up to 512
  // threads, two per SM); longer ones, which one CTA would hold only at 1024
  // threads, split over a cluster of 2 CTAs of half the threads (change 76),
  // but in one CTA where the device has no clusters.
  EXPECT_EQ(plan_of(quant_row(bf16_row(32768)), h200()).shape, Shape::kRowPerBlock);
  EXPECT_EQ(plan_of(quant_row(f32_row(16384)), h200()).shape, Shape::kRowPerBlock);
  for (const RowFormat& f : {quant_row(bf16_row(65536)), quant_row(f32_row(32768))}) {
    const LaunchPlan q = plan_of(f, h200());
    EXPECT_EQ(q.shape, Shape::kRowInClusterRegisters) << f.cols;
    EXPECT_EQ(q.cluster, 2) << f.cols;
    EXPECT_EQ(q.threads, 512) << f.cols;
    EXPECT_EQ(plan_of(f, a100()).shape, Shape::kRowPerBlock) << f.cols;
    EXPECT_EQ(plan_of(f, a100()).threads, 1024) << f.cols;
  }
  // Not split where the halves would not fill whole warps (bf16 34816: 544
  // threads in one CTA, 272 in each of 2).
  EXPECT_EQ(plan_of(quant_row(bf16_row(34816)), h200()).shape, Shape::kRowPerBlock);
  EXPECT_EQ(plan_of(quant_row(bf16_row(34816)), h200()).threads, 544);
  // No split into whole warps (131080 = 16385 slots), or more than 8 x 1024
  // threads x 8 slots (786432: 8 x 1536): staged, as before.
  EXPECT_EQ(plan_of(quant_row(bf16_row(131080)), h200()).shape, Shape::kRowInCluster);
  EXPECT_EQ(plan_of(quant_row(bf16_row(786432)), h200()).shape, Shape::kRowInCluster);
  // Only with clusters; 16-bit LayerNorm that needs the row on chip at 4
  // slots in CTAs of 512 threads (change 172; Plan.LayerNormRowsQuantizedAcrossClusterRegisters).
  EXPECT_EQ(plan_of(quant_row(bf16_row(81920)), a100()).shape, Shape::kRowInSmem);
  EXPECT_EQ(plan_of(quant_row(two_pass_row(bf16_row(65536))), h200()).shape, Shape::kRowInClusterRegisters);
  EXPECT_EQ(plan_of(quant_row(two_pass_row(bf16_row(65536))), h200()).threads, 512);
  // Rows that need not stay on chip: in clusters of 2, and past what is
  // staged (512 KiB), never in clusters of 4 below that
  // (registers_beat_staging).
  const std::pair<RowFormat, int> plain[] = {{bf16_row(131072), 2}, {f32_row(65536), 2}, {f32_row(262144), 8},
                                             {bf16_row(524288), 8}};
  for (const auto& [f, cluster] : plain) {
    const LaunchPlan r = plan_of(f, h200());
    EXPECT_EQ(r.shape, Shape::kRowInClusterRegisters) << f.cols;
    EXPECT_EQ(r.cluster, cluster) << f.cols;
    EXPECT_EQ(r.threads, 1024) << f.cols;
  }
  EXPECT_EQ(plan_of(bf16_row(262144), h200()).shape, Shape::kRowInCluster);  // 4 CTAs: staged
  // Fused-add rows with one reduction (add + RMSNorm) take a cluster's
  // registers in clusters of 4 too (change 76); with two (add + LayerNorm
  // fp32) they stay staged.
  RowFormat fused = bf16_row(262144);
  fused.plain_input = false;
  const LaunchPlan fr = plan_of(fused, h200());
  EXPECT_EQ(fr.shape, Shape::kRowInClusterRegisters);
  EXPECT_EQ(fr.cluster, 4);
  EXPECT_EQ(fr.threads, 1024);
  RowFormat fused_two = two_pass_row(f32_row(131072));
  fused_two.plain_input = false;
  EXPECT_EQ(plan_of(fused_two, h200()).shape, Shape::kRowInCluster);
  EXPECT_EQ(plan_of(f32_row(131072), h200()).shape, Shape::kRowInCluster);
  // 16-bit rows with two reductions (LayerNorm): a cluster's registers past
  // 128 KiB of x in clusters of 2 (change 101), staged otherwise; fused-add
  // ones below.
  const LaunchPlan ln = plan_of(two_pass_row(bf16_row(131072)), h200());
  EXPECT_EQ(ln.shape, Shape::kRowInClusterRegisters);
  EXPECT_EQ(ln.cluster, 2);
  EXPECT_EQ(ln.threads, 1024);
  EXPECT_EQ(ln.vecs, 8);
  EXPECT_EQ(plan_of(two_pass_row(bf16_row(262144)), h200()).shape, Shape::kRowInCluster);
  EXPECT_EQ(plan_of(two_pass_row(bf16_row(65536)), h200()).shape, Shape::kRowInCluster);
  EXPECT_EQ(plan_of(two_pass_row(bf16_row(524288)), h200()).shape, Shape::kStreaming);
  // Fused-add ones (add + LayerNorm) in 4-slot parts of 1024 threads, in
  // any cluster (change 105): 65536 in 2 CTAs, 131072 in 4, 262144 in 8;
  // 524288 would need 16 and streams. (A format whose parts may not split,
  // splits_parts false; the launchers' AddResidual rows split at 131072,
  // below.)
  RowFormat fused_ln = two_pass_row(bf16_row(262144));
  fused_ln.plain_input = false;
  for (const auto& [n, cluster] : {std::pair<int64_t, int>{65536, 2}, {131072, 4}, {262144, 8}}) {
    fused_ln.cols = n;
    const LaunchPlan fl = plan_of(fused_ln, h200());
    EXPECT_EQ(fl.shape, Shape::kRowInClusterRegisters) << n;
    EXPECT_EQ(fl.cluster, cluster) << n;
    EXPECT_EQ(fl.threads, 1024) << n;
    EXPECT_EQ(fl.vecs, 4) << n;
    EXPECT_EQ(fl.chunk, n / cluster) << n;
  }
  fused_ln.cols = 524288;
  EXPECT_EQ(plan_of(fused_ln, h200()).shape, Shape::kStreaming);
  {
    // Problems whose parts may split (kernel::kSplitsParts: a launcher's
    // AddResidual rows) hold 8 slots, half in shared memory, where that
    // fills a cluster of 2 CTAs of 1024 threads (changes 113, 115): 131072;
    // 65536 keeps 4-slot parts in 2 CTAs, 262144 in 8 (split parts would
    // take 4, measured slower); a device without the shared memory, 4.
    RowFormat split = fused_ln;
    split.splits_parts = true;
    for (const auto& [n, cluster, vecs] :
         {std::tuple<int64_t, int, int>{65536, 2, 4}, {131072, 2, 8}, {262144, 8, 4}}) {
      split.cols = n;
      const LaunchPlan sp = plan_of(split, h200());
      EXPECT_EQ(sp.shape, Shape::kRowInClusterRegisters) << n;
      EXPECT_EQ(sp.cluster, cluster) << n;
      EXPECT_EQ(sp.threads, 1024) << n;
      EXPECT_EQ(sp.vecs, vecs) << n;
      EXPECT_EQ(sp.chunk, n / cluster) << n;
      EXPECT_EQ(sp.smem_bytes, vecs == 8 ? normkit::kernel::split_part_smem_bytes(1024) : 0) << n;
    }
    split.cols = 131072;
    DeviceCaps small = h200();
    small.max_smem_per_block_optin = 100 * 1024;
    const LaunchPlan no_room = plan_of(split, small);
    EXPECT_EQ(no_room.cluster, 4);
    EXPECT_EQ(no_room.vecs, 4);
    EXPECT_EQ(no_room.smem_bytes, 0u);
    LaunchPlan forced_split;
    ASSERT_EQ(choose_plan(split, h200(), Shape::kRowInClusterRegisters, &forced_split), Status::kSuccess);
    EXPECT_EQ(forced_split.vecs, 8);
    EXPECT_EQ(forced_split.cluster, 2);
  }
  fused_ln.cols = 65536 + 8 * 32;  // not whole warps of 4 slots in 2 CTAs: staged
  EXPECT_EQ(plan_of(fused_ln, h200()).shape, Shape::kRowInCluster);
  fused_ln.cols = 34816;  // 2 CTAs of 544 threads: unmeasured, so staged; forced, the cluster's registers
  EXPECT_EQ(plan_of(fused_ln, h200()).shape, Shape::kRowInSmem);
  LaunchPlan f4;
  ASSERT_EQ(choose_plan(fused_ln, h200(), Shape::kRowInClusterRegisters, &f4), Status::kSuccess);
  EXPECT_EQ(f4.cluster, 2);
  EXPECT_EQ(f4.threads, 544);
  EXPECT_EQ(f4.vecs, 4);
  fused_ln.cols = 524288;  // forced: 4-slot parts hold at most 8 x 1024 x 32 columns
  EXPECT_EQ(choose_plan(fused_ln, h200(), Shape::kRowInClusterRegisters, &f4), Status::kErrorUnsupportedShape);
  // The predicates' arguments: (row_reductions, storage_bytes, vec,
  // quantized, needs_on_chip, plain_input); per_row_four_slot_parts takes
  // them without quantized.
  EXPECT_TRUE(normkit::detail::four_slot_cluster_parts(2, 2, 8, false, false, false));
  EXPECT_FALSE(normkit::detail::four_slot_cluster_parts(2, 2, 8, false, false, true));   // plain LayerNorm: 8 slots
  EXPECT_FALSE(normkit::detail::four_slot_cluster_parts(2, 2, 8, true, false, false));   // quantized
  EXPECT_FALSE(normkit::detail::four_slot_cluster_parts(1, 2, 8, false, false, false));  // add + RMSNorm: 8 slots
  EXPECT_FALSE(normkit::detail::four_slot_cluster_parts(2, 4, 4, false, false, false));  // fp32
  EXPECT_TRUE(normkit::detail::four_slot_cluster_parts(2, 2, 8, true, true, true));      // per-row scales (change 172)
  // Rows with per-row scales at 4 slots (change 172): 16-bit LayerNorm of
  // plain x only.
  EXPECT_TRUE(normkit::detail::per_row_four_slot_parts(2, 2, 8, true, true));
  EXPECT_FALSE(normkit::detail::per_row_four_slot_parts(2, 2, 8, false, true));  // converted or static scale
  EXPECT_FALSE(normkit::detail::per_row_four_slot_parts(2, 2, 8, true, false));  // a fused add
  EXPECT_FALSE(normkit::detail::per_row_four_slot_parts(1, 2, 8, true, true));   // RMSNorm: 8 slots, fused maximum
  EXPECT_FALSE(normkit::detail::per_row_four_slot_parts(2, 4, 4, true, true));   // fp32 LayerNorm: 8 slots
  fused_ln.cols = 32768;  // one CTA of 1024 threads x 4 slots (change 104)
  EXPECT_EQ(plan_of(fused_ln, h200()).shape, Shape::kRowPerBlock);
  EXPECT_EQ(plan_of(fused_ln, h200()).threads, 1024);
  // Forced, they take the cluster's registers wherever those hold the row.
  LaunchPlan forced;
  ASSERT_EQ(choose_plan(two_pass_row(bf16_row(65536)), h200(), Shape::kRowInClusterRegisters, &forced),
            Status::kSuccess);
  EXPECT_EQ(forced.cluster, 2);
  EXPECT_EQ(forced.threads, 512);
  EXPECT_TRUE(normkit::detail::allows_cluster_register_slots(2, 2, 8, false, false, false));
  EXPECT_TRUE(normkit::detail::allows_cluster_register_slots(2, 2, 8, true, false, true));    // a static scale (change 163)
  EXPECT_TRUE(normkit::detail::allows_cluster_register_slots(2, 2, 8, true, true, true));     // per-row scales (change 172)
  EXPECT_FALSE(normkit::detail::allows_cluster_register_slots(2, 2, 8, true, true, false));   // fused adds, scaled
  EXPECT_FALSE(normkit::detail::allows_cluster_register_slots(2, 2, 8, true, false, false));  // fused adds, static scale
  EXPECT_TRUE(normkit::detail::allows_cluster_register_slots(quant_row(two_pass_row(bf16_row(65536)))));
  EXPECT_TRUE(normkit::detail::four_slot_cluster_parts(quant_row(two_pass_row(bf16_row(65536)))));
  EXPECT_FALSE(normkit::detail::four_slot_cluster_parts(static_row(two_pass_row(bf16_row(65536)))));
  EXPECT_FALSE(normkit::detail::allows_cluster_register_slots(2, 2, 4, false, false, false));  // 8-byte slots: fp32 x, 16-bit residual
  EXPECT_TRUE(normkit::detail::allows_cluster_register_slots(1, 2, 8, true, true, true));
  EXPECT_FALSE(normkit::detail::allows_cluster_register_slots(1, 4, 8, false, false, false));
  EXPECT_TRUE(normkit::detail::static_scale_plain(static_row(two_pass_row(bf16_row(65536)))));
  EXPECT_FALSE(normkit::detail::static_scale_plain(quant_row(two_pass_row(bf16_row(65536)))));
  RowFormat static_fused = static_row(two_pass_row(bf16_row(65536)));
  static_fused.plain_input = false;
  EXPECT_FALSE(normkit::detail::static_scale_plain(static_fused));
  EXPECT_FALSE(normkit::detail::static_scale_plain(two_pass_row(bf16_row(65536))));
  // 16-bit LayerNorm rows with a static scale past 64 KiB of x take them
  // unforced, at 8 slots, in the measured parts (clusters of 2 and 4 CTAs of
  // 512 or 1024 threads; change 163); up to 64 KiB one CTA of 1024 threads
  // holds them at 4 slots (change 157). With per-row scales they stay
  // staged, and forced they are refused.
  const auto static_ln = [](int64_t n) { return static_row(two_pass_row(bf16_row(n))); };
  const LaunchPlan wide = plan_of(static_ln(32768), h200());
  EXPECT_EQ(wide.shape, Shape::kRowPerBlock);
  EXPECT_EQ(wide.threads, 1024);
  const struct {
    int64_t cols;
    int cluster, threads;
  } held[] = {{65536, 2, 512}, {131072, 2, 1024}, {262144, 4, 1024}};
  for (const auto& h : held) {
    const LaunchPlan lp = plan_of(static_ln(h.cols), h200());
    EXPECT_EQ(lp.shape, Shape::kRowInClusterRegisters) << h.cols;
    EXPECT_EQ(lp.cluster, h.cluster) << h.cols;
    EXPECT_EQ(lp.threads, h.threads) << h.cols;
    EXPECT_EQ(lp.vecs, 8) << h.cols;
    EXPECT_EQ(lp.smem_bytes, 0u) << h.cols;  // the plain loop: no ring, no relay
  }
  EXPECT_EQ(plan_of(static_ln(65536), a100()).shape, Shape::kRowInSmem);  // no clusters
  EXPECT_EQ(plan_of(static_ln(524288), h200()).shape, Shape::kStreaming);  // clusters of 8: unmeasured
  EXPECT_EQ(plan_of(static_ln(36864), h200()).shape, Shape::kRowInSmem);     // 2 CTAs of 288: unmeasured
  EXPECT_EQ(plan_of(static_ln(98304), h200()).shape, Shape::kRowInCluster);  // 2 CTAs of 768: unmeasured
  // Relayed fp32 rows take a cluster's registers in clusters of 4 as well
  // (change 72); relayed 16-bit rows there stay staged, and clusters of 2
  // and rows past 512 KiB are the same relayed or not.
  const LaunchPlan relayed = plan_of(relayed_row(f32_row(131072)), h200());
  EXPECT_EQ(relayed.shape, Shape::kRowInClusterRegisters);
  EXPECT_EQ(relayed.cluster, 4);
  EXPECT_EQ(relayed.threads, 1024);
  EXPECT_EQ(plan_of(relayed_row(bf16_row(262144)), h200()).shape, Shape::kRowInCluster);
  for (const auto& [f, cluster] : plain) {
    const LaunchPlan r = plan_of(relayed_row(f), h200());
    EXPECT_EQ(r.shape, Shape::kRowInClusterRegisters) << f.cols;
    EXPECT_EQ(r.cluster, cluster) << f.cols;
  }
  // The relay's shared memory is the plan's (16 bytes a slot), none otherwise;
  // where it does not fit, a larger cluster of smaller CTAs.
  EXPECT_EQ(plan_of(relayed_row(f32_row(65536)), h200()).smem_bytes, 16u * 1024 * 8);
  EXPECT_EQ(plan_of(f32_row(65536), h200()).smem_bytes, 0u);
  DeviceCaps small = h200();
  small.max_smem_per_block_optin = 99 * 1024;
  const LaunchPlan smaller = plan_of(relayed_row(f32_row(65536)), small);
  EXPECT_EQ(smaller.shape, Shape::kRowInClusterRegisters);
  EXPECT_EQ(smaller.cluster, 4);
  EXPECT_EQ(smaller.threads, 512);
  EXPECT_EQ(smaller.smem_bytes, 16u * 512 * 8);
  LaunchPlan p;
  EXPECT_EQ(choose_plan(bf16_row(65536), h200(), Shape::kRowInClusterRegisters, &p), Status::kSuccess);
  EXPECT_EQ(p.cluster, 2);
  EXPECT_EQ(p.threads, 512);
  // 16-bit LayerNorm: at 8 slots where the output needs no row maximum
  // (change 101), at 4 where it does (change 172).
  EXPECT_EQ(choose_plan(two_pass_row(bf16_row(65536)), h200(), Shape::kRowInClusterRegisters, &p), Status::kSuccess);
  EXPECT_EQ(p.vecs, 8);
  EXPECT_EQ(choose_plan(quant_row(bf16_row(65536)), a100(), Shape::kRowInClusterRegisters, &p),
            Status::kErrorUnsupportedShape);
  EXPECT_EQ(choose_plan(quant_row(two_pass_row(bf16_row(65536))), h200(), Shape::kRowInClusterRegisters, &p),
            Status::kSuccess);
  EXPECT_EQ(p.vecs, 4);
  // Forced on a short row: two CTAs of one warp.
  EXPECT_EQ(choose_plan(quant_row(bf16_row(4096)), h200(), Shape::kRowInClusterRegisters, &p), Status::kSuccess);
  EXPECT_EQ(p.cluster, 2);
  EXPECT_EQ(p.threads, 32);
  EXPECT_EQ(normkit::shape_name(Shape::kRowInClusterRegisters), std::string("row_in_cluster_registers"));
}

// The H200 as if it could opt into only `optin` bytes of shared memory a CTA.
DeviceCaps h200_with_optin(int optin) {
  DeviceCaps d = h200();
  d.max_smem_per_block_optin = optin;
  return d;
}

// A cluster-register plan of 1024-thread CTAs without a ring (ringed or
// prefetched rows on a device without the shared memory for it).
void expect_ringless(const LaunchPlan& p) {
  EXPECT_EQ(p.shape, Shape::kRowInClusterRegisters);
  EXPECT_EQ(p.threads, 1024);
  EXPECT_EQ(p.smem_bytes, 0u);
}

// 16-bit LayerNorm rows with per-row scales past 32 KiB of x: 4 slots a
// thread across a cluster's registers, y held (change 172), in CTAs of 512
// threads where a cluster of at most 8 holds the row so, else 1024; other
// part sizes stay staged (unmeasured), though a forced request takes them.
TEST(Plan, LayerNormRowsQuantizedAcrossClusterRegisters) {
  const auto per_row_ln = [](RowFormat f) { return quant_row(two_pass_row(f)); };
  const struct {
    int64_t cols;
    int cluster, threads;
  } held[] = {{32768, 2, 512}, {65536, 4, 512}, {131072, 8, 512}, {262144, 8, 1024}};
  for (const auto& h : held) {
    {
      const RowFormat f = per_row_ln(bf16_row(h.cols));  // fp16 rows plan alike
      const LaunchPlan lp = plan_of(f, h200());
      EXPECT_EQ(lp.shape, Shape::kRowInClusterRegisters) << h.cols;
      EXPECT_EQ(lp.cluster, h.cluster) << h.cols;
      EXPECT_EQ(lp.threads, h.threads) << h.cols;
      EXPECT_EQ(lp.vecs, 4) << h.cols;
      EXPECT_EQ(lp.chunk, h.cols / h.cluster) << h.cols;
      EXPECT_EQ(lp.smem_bytes, 0u) << h.cols;  // the plain loop: no ring, no relay
      LaunchPlan forced;
      ASSERT_EQ(choose_plan(f, h200(), Shape::kRowInClusterRegisters, &forced), Status::kSuccess) << h.cols;
      EXPECT_EQ(forced.cluster, h.cluster) << h.cols;
      EXPECT_EQ(forced.threads, h.threads) << h.cols;
    }
  }
  // Past 32 KiB of x in pairs of CTAs (kOneCtaPerRowLayerNormRowBytes: 32768 above); lengths
  // whose halves are not whole 512-thread parts, and 32 KiB and less, in one CTA (row_per_block).
  for (int64_t n : {16384, 24576, 32760}) {
    EXPECT_EQ(plan_of(per_row_ln(bf16_row(n)), h200()).shape, Shape::kRowPerBlock) << n;
  }
  // Static scales, and devices without clusters, keep one CTA of 1024 threads at 32768.
  EXPECT_EQ(plan_of(static_row(two_pass_row(bf16_row(32768))), h200()).shape, Shape::kRowPerBlock);
  EXPECT_EQ(plan_of(per_row_ln(bf16_row(32768)), a100()).shape, Shape::kRowPerBlock);
  // Parts of other sizes (81920: 4 CTAs of 640 threads) stay staged; forced, they take them.
  EXPECT_EQ(plan_of(per_row_ln(bf16_row(81920)), h200()).shape, Shape::kRowInCluster);
  LaunchPlan odd;
  ASSERT_EQ(choose_plan(per_row_ln(bf16_row(81920)), h200(), Shape::kRowInClusterRegisters, &odd), Status::kSuccess);
  EXPECT_EQ(odd.cluster, 4);
  EXPECT_EQ(odd.threads, 640);
  EXPECT_EQ(odd.vecs, 4);
  // No split into whole warps (65832), more than 8 x 1024 x 4 slots
  // (524288), no clusters (A100), a fused add, or a static scale: not these parts.
  EXPECT_EQ(plan_of(per_row_ln(bf16_row(65832)), h200()).shape, Shape::kRowInCluster);
  EXPECT_NE(plan_of(per_row_ln(bf16_row(524288)), h200()).shape, Shape::kRowInClusterRegisters);
  LaunchPlan past;  // forced too (Quant.BadScalesAndShapesAreRejected launches it): never at 8 slots
  EXPECT_EQ(choose_plan(per_row_ln(bf16_row(524288)), h200(), Shape::kRowInClusterRegisters, &past),
            Status::kErrorUnsupportedShape);
  EXPECT_EQ(plan_of(per_row_ln(bf16_row(65536)), a100()).shape, Shape::kRowInSmem);
  RowFormat fused = per_row_ln(bf16_row(65536));
  fused.plain_input = false;
  EXPECT_EQ(plan_of(fused, h200()).shape, Shape::kRowInCluster);
  EXPECT_EQ(plan_of(static_row(two_pass_row(bf16_row(65536))), h200()).vecs, 8);  // change 163
}

// Rows run through a ring in shared memory (kernel::kRingsRows: per-row
// quantization in CTAs of 1024 threads, kernel/row_ring.cuh): the plan gives
// them the ring's shared memory, only at kRingTeam threads and where the
// device has that much to opt into; the launcher runs the ring only with it.
TEST(Plan, RingedRowsTakeTheirRingWhereItFits) {
  auto ringed = [](RowFormat f) {
    f = quant_row(f);
    f.rings_rows = true;
    return f;
  };
  const size_t ring = normkit::kernel::ring_smem_bytes(1024);
  EXPECT_EQ(ring, 16u * 1024 * 14 + 16u * 7);  // 7 chunks of 2 slots, two mbarriers each
  EXPECT_LE(ring + normkit::detail::kChunkedStaticSmem, 232448u) << "the ring must fit sm_90's 227 KiB with the reducer";
  const std::pair<RowFormat, int> at_1024[] = {{bf16_row(131072), 2}, {bf16_row(262144), 4}, {f32_row(65536), 2}};
  for (const auto& [f, cluster] : at_1024) {
    const LaunchPlan p = plan_of(ringed(f), h200());
    EXPECT_EQ(p.shape, Shape::kRowInClusterRegisters) << f.cols;
    EXPECT_EQ(p.cluster, cluster) << f.cols;
    EXPECT_EQ(p.threads, 1024) << f.cols;
    EXPECT_EQ(p.smem_bytes, ring) << f.cols;
    EXPECT_EQ(plan_of(quant_row(f), h200()).smem_bytes, 0u) << f.cols << ": not ringed, no ring";
  }
  // bf16 65536: two CTAs of 512 threads an SM (the rolled loop), no ring.
  const LaunchPlan half = plan_of(ringed(bf16_row(65536)), h200());
  EXPECT_EQ(half.threads, 512);
  EXPECT_EQ(half.smem_bytes, 0u);
  // A device with less shared memory: the same plan without the ring.
  expect_ringless(plan_of(ringed(bf16_row(131072)), h200_with_optin(99 * 1024)));
}

// Rows prefetched through a ring (kernel::kPrefetchesRows: plain 16-bit
// RMSNorm and fp32 LayerNorm rows in CTAs of 1024 threads,
// kernel/row_prefetch.cuh): the plan
// gives them the ring's shared memory (the first kPrefetchSlots slots of
// every thread and an mbarrier a slot) at kPrefetchTeam threads in any
// cluster where the device has it, and then prefers the cluster's registers
// to staging in clusters of 4 as well (changes 96-97); CTAs of 512 threads
// and rows that do not prefetch run without.
TEST(Plan, PrefetchedRowsTakeTheirRingWhereItFits) {
  auto prefetched = [](RowFormat f) {
    f.prefetches_rows = true;
    return f;
  };
  using normkit::kernel::prefetch_smem_bytes;
  EXPECT_EQ(normkit::kernel::kPrefetchSlots, 2);
  EXPECT_EQ(prefetch_smem_bytes(1024), 16u * 1024 * 2 + 8u * 2);
  const LaunchPlan p = plan_of(prefetched(bf16_row(131072)), h200());
  EXPECT_EQ(p.shape, Shape::kRowInClusterRegisters);
  EXPECT_EQ(p.cluster, 2);
  EXPECT_EQ(p.threads, 1024);
  EXPECT_EQ(p.smem_bytes, prefetch_smem_bytes(1024));
  EXPECT_EQ(plan_of(bf16_row(131072), h200()).smem_bytes, 0u) << "not prefetched, no ring";
  // Clusters of 4 CTAs of 1024 threads: the ring too, and the automatic plan
  // takes them over staging (which rows that do not prefetch keep).
  const LaunchPlan four = plan_of(prefetched(bf16_row(262144)), h200());
  EXPECT_EQ(four.shape, Shape::kRowInClusterRegisters);
  EXPECT_EQ(four.cluster, 4);
  EXPECT_EQ(four.threads, 1024);
  EXPECT_EQ(four.smem_bytes, prefetch_smem_bytes(1024));
  EXPECT_EQ(plan_of(bf16_row(262144), h200()).shape, Shape::kRowInCluster) << "not prefetched: staged";
  // Any cluster (change 97): fp32 LayerNorm rows (two reductions) in
  // clusters of 2, 4 and 8, the registers preferred to staging at 131072;
  // 16-bit rows in clusters of 8 (past 512 KiB) too.
  const std::pair<RowFormat, int> any[] = {{two_pass_row(f32_row(65536)), 2},
                                           {two_pass_row(f32_row(131072)), 4},
                                           {two_pass_row(f32_row(262144)), 8},
                                           {bf16_row(524288), 8}};
  for (const auto& [f, cluster] : any) {
    const LaunchPlan r = plan_of(prefetched(f), h200());
    EXPECT_EQ(r.shape, Shape::kRowInClusterRegisters) << f.cols;
    EXPECT_EQ(r.cluster, cluster) << f.cols;
    EXPECT_EQ(r.threads, 1024) << f.cols;
    EXPECT_EQ(r.smem_bytes, prefetch_smem_bytes(1024)) << f.cols;
  }
  EXPECT_EQ(plan_of(two_pass_row(f32_row(131072)), h200()).shape, Shape::kRowInCluster) << "not prefetched: staged";
  // bf16 65536 forced: two CTAs of 512 threads an SM, no ring.
  LaunchPlan half;
  EXPECT_EQ(choose_plan(prefetched(bf16_row(65536)), h200(), Shape::kRowInClusterRegisters, &half), Status::kSuccess);
  EXPECT_EQ(half.threads, 512);
  EXPECT_EQ(half.smem_bytes, 0u);
  // A device with too little shared memory to opt into: the same plan without the ring.
  const DeviceCaps small = h200_with_optin(16 * 1024);
  expect_ringless(plan_of(prefetched(bf16_row(131072)), small));
  // There, without the ring, clusters of 4 are not preferred to the chunked shapes.
  EXPECT_NE(plan_of(prefetched(bf16_row(262144)), small).shape, Shape::kRowInClusterRegisters);
}

// Rows both the ring (kernel::kRingsRows) and the prefetching loop
// (kernel::kPrefetchesRows) admit (16-bit RMSNorm rows whose output needs
// no maximum: converted, or quantized with a static scale) take the one
// measured faster (rings_over_prefetch, changes 107, 140 and 143):
// quantized ones the prefetching loop in clusters of 2 and the ring in
// clusters of 4 or more, converted ones the prefetching loop in clusters
// of 2 and 4 and the ring in clusters of 8; on a device without
// the shared memory for the ring, the prefetching loop's smaller one.
TEST(Plan, RowsBothRingsAdmitTakeTheMeasuredOne) {
  auto both = [](RowFormat f) {
    f.rings_rows = true;
    f.prefetches_rows = true;
    return f;
  };
  const size_t ring = normkit::kernel::ring_smem_bytes(1024);
  const size_t prefetch = normkit::kernel::prefetch_smem_bytes(1024);
  struct Case {
    RowFormat f;
    int cluster;
    size_t smem;
  };
  const Case cases[] = {{both(bf16_row(131072)), 2, prefetch},
                        {both(bf16_row(262144)), 4, prefetch},
                        {both(bf16_row(524288)), 8, ring},
                        {both(static_row(bf16_row(131072))), 2, prefetch},
                        {both(static_row(bf16_row(262144))), 4, ring}};
  for (const Case& k : cases) {
    const LaunchPlan p = plan_of(k.f, h200());
    EXPECT_EQ(p.shape, Shape::kRowInClusterRegisters) << k.f.cols;
    EXPECT_EQ(p.cluster, k.cluster) << k.f.cols;
    EXPECT_EQ(p.threads, 1024) << k.f.cols;
    EXPECT_EQ(p.smem_bytes, k.smem) << k.f.cols << (k.f.quantized ? " static" : " converted");
    // With 99 KiB to opt into (the ring's 224 KiB does not fit), the prefetching loop's ring.
    const LaunchPlan small = plan_of(k.f, h200_with_optin(99 * 1024));
    EXPECT_EQ(small.shape, Shape::kRowInClusterRegisters) << k.f.cols;
    EXPECT_EQ(small.smem_bytes, prefetch) << k.f.cols;
  }
  EXPECT_FALSE(normkit::detail::rings_over_prefetch(static_row(bf16_row(131072)), 2));
  EXPECT_FALSE(normkit::detail::rings_over_prefetch(bf16_row(131072), 2));
  EXPECT_FALSE(normkit::detail::rings_over_prefetch(bf16_row(262144), 4));
  EXPECT_TRUE(normkit::detail::rings_over_prefetch(static_row(bf16_row(262144)), 4));
  EXPECT_TRUE(normkit::detail::rings_over_prefetch(bf16_row(524288), 8));
  EXPECT_TRUE(normkit::detail::rings_over_prefetch(static_row(bf16_row(524288)), 8));
}

TEST(Plan, ForcedShapesAreCheckedAgainstTheirCapacity) {
  LaunchPlan p;
  EXPECT_EQ(choose_plan(bf16_row(1025), h200(), Shape::kRowsPerWarp, &p), Status::kErrorUnsupportedShape);
  EXPECT_EQ(choose_plan(bf16_row(16384), h200(), Shape::kRowPerBlock, &p), Status::kSuccess);
  EXPECT_EQ(choose_plan(bf16_row(16385), h200(), Shape::kRowPerBlock, &p), Status::kErrorUnsupportedShape);
  EXPECT_EQ(choose_plan(bf16_row(1 << 20), h200(), Shape::kRowInSmem, &p), Status::kErrorUnsupportedShape);
  EXPECT_EQ(choose_plan(bf16_row(100), a100(), Shape::kRowInCluster, &p), Status::kErrorUnsupportedShape);
  EXPECT_EQ(choose_plan(bf16_row(100), h200(), Shape::kRowInCluster, &p), Status::kSuccess);
  EXPECT_EQ(p.cluster, 2);
  for (int64_t n : {1, 5, 1000, 100003, 1048576}) {
    EXPECT_EQ(choose_plan(bf16_row(n), h200(), Shape::kStreaming, &p), Status::kSuccess) << n;
  }
}

TEST(Plan, RowsThatMustStayOnChipNeverStream) {
  RowFormat f = bf16_row(1 << 19);  // 1 MiB: fits across a cluster of 8
  f.needs_on_chip = true;
  LaunchPlan p;
  EXPECT_EQ(choose_plan(f, h200(), Shape::kAuto, &p), Status::kSuccess);
  EXPECT_EQ(p.shape, Shape::kRowInClusterRegisters);
  EXPECT_EQ(choose_plan(f, h200(), Shape::kStreaming, &p), Status::kErrorUnsupportedShape);
  f.row_reductions = 2;  // 16-bit LayerNorm: staged
  EXPECT_EQ(choose_plan(f, h200(), Shape::kAuto, &p), Status::kSuccess);
  EXPECT_EQ(p.shape, Shape::kRowInCluster);
  EXPECT_EQ(choose_plan(f, h200(), Shape::kStreaming, &p), Status::kErrorUnsupportedShape);
  f.cols = 1 << 24;  // 32 MiB: more than a cluster's shared memory
  EXPECT_EQ(choose_plan(f, h200(), Shape::kAuto, &p), Status::kErrorUnsupportedShape);
}

TEST(Plan, EveryLengthGetsAShapeThatHoldsIt) {
  std::vector<int64_t> lengths;
  for (int64_t n = 1; n <= (1 << 22); n = n * 3 / 2 + 1) lengths.push_back(n);
  // and powers of two, whose rows split into whole parts (split parts at 131072)
  for (int64_t n = 1024; n <= (1 << 22); n *= 2) lengths.push_back(n);
  for (int64_t n : lengths) {
    RowFormat fused_two_pass = two_pass_row(bf16_row(n));
    fused_two_pass.plain_input = false;
    RowFormat split_parts = fused_two_pass;
    split_parts.splits_parts = true;
    for (const RowFormat& f :
         {bf16_row(n), f32_row(n), quant_row(bf16_row(n)), two_pass_row(bf16_row(n)), fused_two_pass, split_parts}) {
      LaunchPlan p;
      if (choose_plan(f, h200(), Shape::kAuto, &p) != Status::kSuccess) {
        EXPECT_TRUE(f.needs_on_chip) << n;  // only rows kept on chip run out of room (past 8 CTAs' shared memory)
        EXPECT_GT(n, 500000) << n;
        continue;
      }
      switch (p.shape) {
        case Shape::kRowsPerWarp: EXPECT_GE(int64_t{p.group} * p.vecs * f.vec, n); break;
        case Shape::kRowPerBlock:
          EXPECT_GE(int64_t{p.threads} * p.vecs * f.vec, n);
          EXPECT_LE(p.threads, normkit::detail::row_per_block_threads_limit(f, p.vecs)) << n;  // the launch bounds
          EXPECT_LE(p.threads, normkit::kernel::kRowPerBlockWideMaxThreads) << n;
          break;
        case Shape::kRowInClusterRegisters:
          EXPECT_EQ(int64_t{p.threads} * p.vecs * f.vec * p.cluster, n);  // whole parts, nothing to spare
          if (f.splits_parts && p.smem_bytes > 0) {  // split parts: 8 slots, half in shared memory, clusters of 2
            EXPECT_EQ(p.vecs, 8) << n;
            EXPECT_EQ(p.threads, 1024) << n;
            EXPECT_LE(p.cluster, 2) << n;
            EXPECT_EQ(p.smem_bytes, normkit::kernel::split_part_smem_bytes(1024)) << n;
          } else {
            EXPECT_EQ(p.vecs, f.plain_input || f.row_reductions < 2 ? 8 : 4) << n;
          }
          EXPECT_EQ(p.chunk * p.cluster, n);
          EXPECT_LE(p.threads, normkit::kernel::kClusterRegistersMaxThreads) << n;
          break;
        default:
          EXPECT_GE(p.chunk * p.cluster, n);
          EXPECT_EQ(p.chunk % f.vec, 0);
      }
    }
  }
}

}  // namespace

// The clusters' staggered start (kernel/start_stagger.cuh): a phase is a
// sixteenth of a round (one row of every resident cluster at 85% of the
// nominal DRAM rate), in SM cycles. 30 clusters of 1 MiB rows at 4915.2
// B/ns and 1.98 GHz: 30 MiB / 4177.92 B/ns = 7529.4 ns = 14908 cycles, a
// sixteenth 931.
TEST(StartStagger, APhaseIsASixteenthOfARoundInSmCycles) {
  using normkit::detail::start_stagger_cycles;
  EXPECT_EQ(start_stagger_cycles(1024, 30, 1048576.0, 4915.2, 1980000), 931u);
  EXPECT_EQ(start_stagger_cycles(1024, 30, 2 * 1048576.0, 4915.2, 1980000), 1863u);  // twice the bytes
  EXPECT_EQ(start_stagger_cycles(1024, 15, 2 * 1048576.0, 4915.2, 1980000), 931u);   // half the clusters
  EXPECT_EQ(start_stagger_cycles(1024, 30, 1048576.0, 4915.2, 990000), 465u);        // half the clock
  // A row past any real one is capped at 2^30 cycles.
  EXPECT_EQ(start_stagger_cycles(1 << 20, 1 << 16, 1e15, 4915.2, 1980000), 1u << 30);
}

TEST(StartStagger, NoneForShortCallsOneClusterOrUnreportedClocks) {
  using normkit::detail::start_stagger_cycles;
  constexpr int64_t kMin = normkit::kernel::kStartStaggerMinRounds;
  EXPECT_GT(start_stagger_cycles(kMin * 30, 30, 1048576.0, 4915.2, 1980000), 0u);
  EXPECT_EQ(start_stagger_cycles(kMin * 30 - 1, 30, 1048576.0, 4915.2, 1980000), 0u);  // under the rounds
  EXPECT_EQ(start_stagger_cycles(1, 1, 1048576.0, 4915.2, 1980000), 0u);
  EXPECT_EQ(start_stagger_cycles(1024, 1, 1048576.0, 4915.2, 1980000), 0u);  // one cluster: no one to stagger
  EXPECT_EQ(start_stagger_cycles(1024, 30, 1048576.0, 0.0, 1980000), 0u);    // no memory clock reported
  EXPECT_EQ(start_stagger_cycles(1024, 30, 1048576.0, 4915.2, 0), 0u);       // no SM clock reported
  EXPECT_EQ(start_stagger_cycles(1024, 30, 0.0, 4915.2, 1980000), 0u);
}

// Which row_cluster_registers loops take the caller's counter, and so wait
// for the staggered start (kernel::kTakesCounter: the kernel compiles the
// draw and the wait by it, and the launcher computes the step by it for the
// instantiation it launches): the plain loop's WHOLE form, rolled rows
// (since change 141), split parts WHOLE or checked, the prefetching loop,
// the ring; never the checked plain loop or relayed rows, which keep the
// fixed stride, where a late cluster would finish late, nor the plain loop
// launched at RowHandout::kFixedStride (per-row LayerNorm in CTAs of 1024
// threads, kernel::kFixedStrideInFullCtas: change 177). And which take it
// only from kCounterMinRounds rows per resident cluster: rolled rows
// (change 141), from kRollCounterMinRounds.
TEST(StartStagger, OnlyLoopsThatTakeTheCounterWait) {
  using normkit::kernel::kTakesCounter;
  using normkit::kernel::RowHandout;
  using normkit::kernel::SmemLoop;
  using bf16 = normkit::bfloat16;
  using Rms = normkit::detail::RmsNormProblem<bf16, bf16, bf16>;
  using RmsF32 = normkit::detail::RmsNormProblem<float, float, float>;
  using AddRms = normkit::detail::AddRmsNormProblem<bf16, bf16, bf16, bf16>;
  using AddLn = normkit::detail::AddLayerNormProblem<bf16, bf16, bf16, bf16, normkit::stats::TwoPass>;
  using Fp8Row = normkit::detail::RmsQuantProblem<bf16, normkit::float8_e4m3, bf16,
                                                  normkit::output::QuantDynamicRow<normkit::float8_e4m3>>;
  // What the cases below stand for: fp32 RMSNorm rows relay, per-row fp8 ones roll.
  static_assert(normkit::kernel::kRelaysRows<RmsF32> && !normkit::kernel::kRelaysRows<Rms>);
  static_assert(normkit::kernel::kRollsRows<Fp8Row> && !normkit::kernel::kRollsRows<Rms>);
  EXPECT_TRUE((kTakesCounter<Rms, true, SmemLoop::kNone>));     // the plain loop, WHOLE
  EXPECT_FALSE((kTakesCounter<Rms, false, SmemLoop::kNone>));   // the checked loop
  EXPECT_TRUE((kTakesCounter<AddRms, true, SmemLoop::kNone>));
  EXPECT_FALSE((kTakesCounter<AddRms, false, SmemLoop::kNone>));
  EXPECT_FALSE((kTakesCounter<RmsF32, true, SmemLoop::kNone>));  // relayed
  EXPECT_TRUE((kTakesCounter<Fp8Row, true, SmemLoop::kNone>));   // rolled (TEAM 512 or 1024) or plain (TEAM 0)
  EXPECT_FALSE((kTakesCounter<Fp8Row, false, SmemLoop::kNone>));
  EXPECT_TRUE((kTakesCounter<Fp8Row, true, SmemLoop::kRing>));  // the ring, any cluster
  EXPECT_TRUE((kTakesCounter<Rms, true, SmemLoop::kRing>));
  EXPECT_TRUE((kTakesCounter<Rms, true, SmemLoop::kPrefetch>));
  EXPECT_TRUE((kTakesCounter<AddLn, true, SmemLoop::kSplitPart>));
  EXPECT_TRUE((kTakesCounter<AddLn, false, SmemLoop::kSplitPart>));  // split parts take the counter checked too
  using LnFp8Row = normkit::detail::LayerQuantProblem<bf16, normkit::float8_e4m3, bf16,
                                                      normkit::output::QuantDynamicRow<normkit::float8_e4m3>>;
  static_assert(!normkit::kernel::kRollsRows<LnFp8Row> && !normkit::kernel::kRelaysRows<LnFp8Row>);
  constexpr RowHandout kFixed = RowHandout::kFixedStride;
  EXPECT_FALSE((kTakesCounter<LnFp8Row, true, SmemLoop::kNone, kFixed>));  // per-row LayerNorm, CTAs of 1024
  EXPECT_TRUE((kTakesCounter<LnFp8Row, true, SmemLoop::kNone>));           // CTAs of 512: the counter
  EXPECT_FALSE((kTakesCounter<Rms, true, SmemLoop::kNone, kFixed>));       // the handout alone decides
  // The rows the launcher hands out at the fixed stride in CTAs of 1024.
  using normkit::kernel::kFixedStrideInFullCtas;
  EXPECT_TRUE(kFixedStrideInFullCtas<LnFp8Row>);
  EXPECT_FALSE(kFixedStrideInFullCtas<Fp8Row>);  // rolled
  EXPECT_FALSE(kFixedStrideInFullCtas<RmsF32>);  // relayed
  EXPECT_FALSE(kFixedStrideInFullCtas<AddLn>);   // no maximum: fused adds keep the counter
  EXPECT_FALSE(kFixedStrideInFullCtas<Rms>);
  // The launcher launches that handout for exactly these rows (where it
  // holds 4-slot parts).
  EXPECT_TRUE(normkit::detail::Launcher<LnFp8Row>::kFixedStrideFullTeam);
  EXPECT_FALSE(normkit::detail::Launcher<AddLn>::kFixedStrideFullTeam);
  EXPECT_FALSE(normkit::detail::Launcher<Fp8Row>::kFixedStrideFullTeam);
  using normkit::kernel::kCounterMinRounds;
  constexpr int kRing = normkit::kernel::kRingTeam;
  constexpr int kPrefetch = normkit::kernel::kPrefetchTeam;
  constexpr int kSplit = normkit::kernel::kSplitPartTeam;
  constexpr int64_t kRolled = normkit::kernel::kRollCounterMinRounds;
  static_assert(kRolled > normkit::kernel::kStartStaggerMinRounds, "rolled rows lost with the counter at 4 rounds");
  EXPECT_EQ((kCounterMinRounds<Fp8Row, true, 512, SmemLoop::kNone>), kRolled);  // rolled
  EXPECT_EQ((kCounterMinRounds<Fp8Row, true, 1024, SmemLoop::kNone>), kRolled);
  EXPECT_EQ((kCounterMinRounds<Fp8Row, true, 0, SmemLoop::kNone>), 0);  // the plain loop
  EXPECT_EQ((kCounterMinRounds<Fp8Row, true, kRing, SmemLoop::kRing>), 0);
  EXPECT_EQ((kCounterMinRounds<Rms, true, 0, SmemLoop::kNone>), 0);
  EXPECT_EQ((kCounterMinRounds<Rms, true, kPrefetch, SmemLoop::kPrefetch>), 0);
  EXPECT_EQ((kCounterMinRounds<AddLn, true, kSplit, SmemLoop::kSplitPart>), 0);
}
