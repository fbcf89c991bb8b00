// Every kernel shape on every row length it can hold, against the float64
// reference, for LayerNorm (both statistics policies) and RMSNorm.
#include <gtest/gtest.h>

#include <vector>

#include "test_support.h"

namespace {

using nktest::CaseSpec;
using nktest::DType;
using nktest::Op;
using nktest::StatsKind;
using normkit::Shape;

const std::vector<int64_t> kLengths = {1,     2,     3,     5,     31,    33,     127,    255,    256,
                                       257,   384,   768,   1000,  1023,  1024,   1025,   4096,   4099,
                                       8192,  12288, 16384, 16385, 24576, 32768, 65536, 100003, 131072, 262144,
                                       1048576};

// Rows per case: {1, 3, 1000} for short rows, fewer as rows grow, so that one
// case stays near a few million elements.
std::vector<int64_t> batch_sizes(int64_t n) {
  if (nktest::quick_mode()) return {1, 3, n <= 16385 ? 64 : 5};
  if (n <= 16385) return {1, 3, 1000};
  if (n <= 262144) return {1, 3, 37};
  return {1, 3, 9};
}

struct ShapeParam {
  Op op;
  DType x, y, w;
  StatsKind stats;
  Shape shape;
};

class Shapes : public ::testing::TestWithParam<ShapeParam> {};

TEST_P(Shapes, EveryLengthTheShapeHolds) {
  NK_REQUIRE_GPU();
  const ShapeParam p = GetParam();
  int ran = 0;
  for (int64_t n : kLengths) {
    CaseSpec s;
    s.op = p.op;
    s.x = p.x;
    s.y = p.y;
    s.w = p.w;
    s.stats = p.stats;
    s.shape = p.shape;
    s.cols = n;
    normkit::LaunchPlan plan;
    nktest::NormCall probe;
    probe.op = p.op;
    probe.x_type = p.x;
    probe.y_type = p.y;
    probe.w_type = p.w;
    probe.stats = p.stats;
    probe.x = probe.y = reinterpret_cast<void*>(0x1000);
    probe.rows = 1;
    probe.cols = n;
    probe.shape = p.shape;
    const normkit::Status st = nktest::plan(probe, &plan);
    if (st == normkit::Status::kErrorUnsupportedShape) continue;  // this shape cannot hold N
    ASSERT_EQ(st, normkit::Status::kSuccess) << normkit::status_string(st);
    for (int64_t m : batch_sizes(n)) {
      s.rows = m;
      nktest::expect_case_ok(s);
      ++ran;
    }
  }
  EXPECT_GT(ran, 0);
}

// Plain fp32 RMSNorm rows in a cluster's registers are relayed
// (kernel/row_relay.cuh): each CTA loads its part of the next row while the
// current one reduces and is written from shared memory. Enough rows that
// every cluster runs several (the resident grid strides over them: 66
// clusters of 2, 30 of 4, 15 of 8 on the H200), so that each row's loads
// are the previous row's relay; aligned (WHOLE) and not. The 16-bit RMSNorm
// rows in clusters of 2 and fp32 LayerNorm rows (2, 4, 8) are prefetched
// instead (kernel/row_prefetch.cuh: the first slots of each
// row from a ring the copy engine filled during the previous row, each lap
// flipping its mbarriers' parity; 16-bit RMSNorm rows in clusters of 4 too
// since change 140, which ran them through the ring of kernel/row_ring.cuh
// from change 107), where aligned
// (strided, in place too); misaligned, they run the checked plain loop. 16-bit LayerNorm rows
// (clusters of 2: change 101) run the plain loop. Two tests, clusters of 2
// and larger ones, so that racecheck's shards of them each finish in time
// (run 267: the ring's rows made the one test run past 300 s).
struct ClusterRowsCase {
  DType t;
  int64_t cols, rows;
  Shape shape;
  int x_misalign;
  int64_t x_stride;
  bool in_place;
  Op op = Op::kRmsNorm;
};

void check_cluster_register_rows(const std::vector<ClusterRowsCase>& cases) {
  for (const ClusterRowsCase& c : cases) {
    CaseSpec s;
    s.op = c.op;
    s.x = s.y = s.w = c.t;
    s.shape = c.shape;
    s.cols = c.cols;
    s.rows = c.rows;
    s.x_misalign = c.x_misalign;
    s.x_stride = c.x_stride;
    s.in_place = c.in_place;
    const nktest::CaseResult r = nktest::run_case(s);
    EXPECT_TRUE(r.ok()) << nktest::describe(s) << "\n  seed=" << r.seed << " " << r.first_failure;
    EXPECT_EQ(r.plan.shape, Shape::kRowInClusterRegisters) << nktest::describe(s);
    const bool prefetched = c.op == Op::kLayerNorm ? c.t == DType::kF32 : c.t != DType::kF32;
    if (prefetched && c.shape == Shape::kAuto) {
      // 16-bit RMSNorm rows in clusters of 8 run through the ring instead
      // (change 107 from clusters of 4; change 140 from 8).
      const bool ringed = c.op == Op::kRmsNorm && r.plan.cluster >= 8;
      const size_t ring = ringed ? normkit::kernel::ring_smem_bytes(normkit::kernel::kRingTeam)
                                 : normkit::kernel::prefetch_smem_bytes(normkit::kernel::kPrefetchTeam);
      EXPECT_EQ(r.plan.smem_bytes, c.x_misalign == 0 ? ring : 0u)
          << nktest::describe(s) << ": aligned rows take their ring, misaligned ones run the checked loop";
    }
  }
}

TEST(Shapes, ClusterRegisterRowsManyPerCluster) {
  NK_REQUIRE_GPU();
  const bool quick = nktest::quick_mode();
  check_cluster_register_rows({
      {DType::kBF16, 131072, quick ? 70 : 200, Shape::kAuto, 0, -1, false},
      {DType::kBF16, 131072, quick ? 70 : 140, Shape::kAuto, 1, -1, false},
      {DType::kBF16, 131072, quick ? 70 : 140, Shape::kAuto, 0, 131072 + 64, false},
      {DType::kBF16, 131072, quick ? 70 : 140, Shape::kAuto, 0, -1, true},
      {DType::kF16, 131072, quick ? 70 : 140, Shape::kAuto, 0, -1, false},
      // fp32 LayerNorm rows (not relayed) are prefetched in any cluster
      // (change 97): 2 CTAs here (4 and 8 below).
      {DType::kF32, 65536, quick ? 70 : 200, Shape::kAuto, 0, -1, false, Op::kLayerNorm},
      // 16-bit LayerNorm rows past 128 KiB in clusters of 2 (change 101):
      // aligned, misaligned (the checked loop), strided in place.
      {DType::kBF16, 131072, quick ? 70 : 140, Shape::kAuto, 0, -1, false, Op::kLayerNorm},
      {DType::kF16, 131072, quick ? 70 : 100, Shape::kAuto, 1, -1, false, Op::kLayerNorm},
      {DType::kBF16, 131072, quick ? 70 : 100, Shape::kAuto, 0, 131072 + 64, true, Op::kLayerNorm},
      {DType::kF32, 65536, quick ? 70 : 200, Shape::kAuto, 0, -1, false},
      {DType::kF32, 65536, quick ? 70 : 140, Shape::kAuto, 0, -1, true},
      {DType::kF32, 65536, quick ? 70 : 140, Shape::kAuto, 0, 65536 + 32, false},
      // CTAs of one or two warps (clusters of 2): thousands resident, so many rows.
      {DType::kBF16, 4096, quick ? 6000 : 20000, Shape::kRowInClusterRegisters, 0, -1, false},
      {DType::kF32, 4096, quick ? 6000 : 20000, Shape::kRowInClusterRegisters, 1, -1, false},
  });
}

// Rows in clusters of 4 and 8, in two tests: as one, it took 263 s under
// racecheck (device run 278), and the test sharded
// with it then ran past its 300 s.
TEST(Shapes, ClusterRegisterRowsManyPerLargerCluster16Bit) {
  NK_REQUIRE_GPU();
  const bool quick = nktest::quick_mode();
  check_cluster_register_rows({
      // Clusters of 4 (changes 96, 140): prefetched where aligned, in place too.
      // Under the sanitizers too, more rows than the 30-33 clusters, so that
      // some clusters' rings turn over (20 rows left every cluster one row;
      // 70 ran racecheck's shard of this test past its stage, run 244).
      {DType::kBF16, 262144, quick ? 40 : 100, Shape::kAuto, 0, -1, false},
      {DType::kF16, 262144, quick ? 40 : 70, Shape::kAuto, 0, -1, true},
      {DType::kBF16, 262144, quick ? 20 : 40, Shape::kAuto, 1, -1, false},
  });
}

TEST(Shapes, ClusterRegisterRowsManyPerLargerClusterFp32) {
  NK_REQUIRE_GPU();
  const bool quick = nktest::quick_mode();
  check_cluster_register_rows({
      // fp32 LayerNorm rows prefetched in clusters of 4 (in place) and 8;
      // misaligned, the checked loop.
      {DType::kF32, 131072, quick ? 40 : 100, Shape::kAuto, 0, -1, true, Op::kLayerNorm},
      {DType::kF32, 262144, quick ? 24 : 50, Shape::kAuto, 0, 262144 + 32, false, Op::kLayerNorm},
      {DType::kF32, 131072, quick ? 40 : 70, Shape::kAuto, 1, -1, false, Op::kLayerNorm},
      // fp32 RMSNorm rows relayed in clusters of 4 and 8.
      {DType::kF32, 131072, quick ? 40 : 100, Shape::kAuto, 3, -1, false},
      {DType::kF32, 262144, quick ? 20 : 40, Shape::kAuto, 0, -1, false},
  });
}

std::vector<ShapeParam> shape_params() {
  std::vector<ShapeParam> v;
  for (Shape sh : {Shape::kAuto, Shape::kRowsPerWarp, Shape::kRowPerBlock, Shape::kRowInSmem, Shape::kRowInCluster,
                   Shape::kStreaming}) {
    v.push_back({Op::kLayerNorm, DType::kBF16, DType::kBF16, DType::kF32, StatsKind::kTwoPass, sh});
    v.push_back({Op::kLayerNorm, DType::kF32, DType::kF32, DType::kF32, StatsKind::kTwoPass, sh});
    v.push_back({Op::kLayerNorm, DType::kBF16, DType::kBF16, DType::kF32, StatsKind::kWelford, sh});
    v.push_back({Op::kLayerNorm, DType::kF16, DType::kF16, DType::kF16, StatsKind::kWelford, sh});
    v.push_back({Op::kRmsNorm, DType::kBF16, DType::kBF16, DType::kBF16, StatsKind::kTwoPass, sh});
    v.push_back({Op::kRmsNorm, DType::kF32, DType::kF32, DType::kF32, StatsKind::kTwoPass, sh});
  }
  // Rows across a cluster's registers: every problem above (16-bit
  // LayerNorm with TwoPass since change 101).
  const Shape regs = Shape::kRowInClusterRegisters;
  v.push_back({Op::kLayerNorm, DType::kBF16, DType::kBF16, DType::kF32, StatsKind::kTwoPass, regs});
  v.push_back({Op::kLayerNorm, DType::kF32, DType::kF32, DType::kF32, StatsKind::kTwoPass, regs});
  v.push_back({Op::kLayerNorm, DType::kBF16, DType::kBF16, DType::kF32, StatsKind::kWelford, regs});
  v.push_back({Op::kLayerNorm, DType::kF16, DType::kF16, DType::kF16, StatsKind::kWelford, regs});
  v.push_back({Op::kRmsNorm, DType::kBF16, DType::kBF16, DType::kBF16, StatsKind::kTwoPass, regs});
  v.push_back({Op::kRmsNorm, DType::kF32, DType::kF32, DType::kF32, StatsKind::kTwoPass, regs});
  return v;
}

std::string param_name(const ::testing::TestParamInfo<ShapeParam>& i) {
  const ShapeParam& p = i.param;
  std::string s = std::string(p.op == Op::kLayerNorm ? "LN" : "RMS") + "_" + nktest::dtype_name(p.x) + "_" +
                  nktest::dtype_name(p.y) + "_w" + nktest::dtype_name(p.w) + "_" +
                  (p.stats == StatsKind::kWelford ? "welford_" : "") + normkit::shape_name(p.shape);
  return s;
}

INSTANTIATE_TEST_SUITE_P(AllShapes, Shapes, ::testing::ValuesIn(shape_params()), param_name);

}  // namespace
