// LaunchOptions::row_counter: rows split across a cluster handed out by a
// counter (kernel/row_schedule.cuh). A row's computation does not depend on
// which cluster runs it, so every output must be bitwise what the fixed
// stride writes (which the other tests hold to a float64 reference), every
// row must be written (outputs poisoned before each launch), and the call
// must leave its counter at zero, so that the next call on the stream
// starts as this one did. Also end to end against the float64 reference.
#include <gtest/gtest.h>
#include <normkit/kernel/row_cluster_registers.cuh>
#include <normkit/kernel/start_stagger.cuh>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "dispatch.h"
#include "dispatch_extra.h"
#include "test_support.h"

namespace {

using normkit::Status;
using nktest::DeviceBuffer;
using nktest::DType;
using nktest::Op;

using nktest::racecheck_mode;

// Batches: one row and fewer rows than resident clusters (which draw tickets
// that name no row), and more than twice the resident clusters (15-66 at
// these lengths on an H100 or H200), so that every loop, those that look
// two rows ahead included, runs rows its tickets named; under
// compute-sanitizer (quick mode) 137, just past twice 66; under racecheck 37
// only (rows that tickets name in clusters of 4 and 8 at one row ahead).
std::vector<int64_t> batch_sizes() {
  if (racecheck_mode()) return {37};
  return nktest::quick_mode() ? std::vector<int64_t>{1, 137} : std::vector<int64_t>{1, 5, 301};
}

// Layouts (contiguous, in place, strided, misaligned) a test runs: under
// racecheck, whose shared-memory hazards do not depend on the layout, the
// first only (the full set ran past 300 s a shard there, device run 302).
int layouts() { return racecheck_mode() ? 1 : 4; }

void fill_random_bf16(DeviceBuffer& b, uint64_t seed) {
  std::vector<uint16_t> h(b.size() / 2);
  nktest::Rng rng(seed);
  for (auto& v : h) v = static_cast<uint16_t>(0x3E00 + rng.next() % 0x900);  // bf16 in [0.125, 32640]
  ASSERT_EQ(cudaMemcpy(b.data(), h.data(), h.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
}

std::vector<unsigned char> snapshot(const std::vector<DeviceBuffer*>& outs) {
  std::vector<unsigned char> all;
  for (const DeviceBuffer* b : outs) {
    const auto h = nktest::download(b->data(), b->size());
    all.insert(all.end(), h.begin(), h.end());
  }
  return all;
}

// Runs launch(counter) with outputs poisoned: first with no counter, then
// twice with one; the outputs must match bitwise and the counter end at zero.
void expect_same_with_counter(const std::string& what, const std::function<Status(uint32_t*)>& launch,
                              const std::vector<DeviceBuffer*>& outs, const std::vector<DeviceBuffer*>& restore = {},
                              const DeviceBuffer* pristine = nullptr) {
  DeviceBuffer counter(2 * sizeof(uint32_t));
  ASSERT_EQ(cudaMemset(counter.data(), 0, counter.size()), cudaSuccess);
  auto run = [&](uint32_t* c) {
    // In-place calls overwrite their input: put it back first.
    for (DeviceBuffer* b : restore) {
      EXPECT_EQ(cudaMemcpy(b->data(), pristine->data(), b->size(), cudaMemcpyDeviceToDevice), cudaSuccess);
    }
    for (DeviceBuffer* b : outs) {
      bool restored = false;
      for (DeviceBuffer* r : restore) restored = restored || r == b;
      if (!restored) EXPECT_EQ(cudaMemset(b->data(), 0xFF, b->size()), cudaSuccess);
    }
    EXPECT_EQ(launch(c), Status::kSuccess) << what;
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << what;
    return snapshot(outs);
  };
  const auto fixed = run(nullptr);
  for (int rep = 0; rep < (racecheck_mode() ? 1 : 2); ++rep) {
    const auto counted = run(reinterpret_cast<uint32_t*>(counter.data()));
    size_t first_diff = 0;
    while (first_diff < fixed.size() && fixed[first_diff] == counted[first_diff]) ++first_diff;
    EXPECT_EQ(first_diff, fixed.size()) << what << ", launch " << rep << ": first differing byte " << first_diff
                                        << " of " << fixed.size();
    const auto words = nktest::download(counter.data(), counter.size());
    for (unsigned char byte : words) EXPECT_EQ(byte, 0) << what << ": the counter was not left at zero";
  }
}

// launch(c) with `counter` as its LaunchOptions::row_counter.
template <class Call>
std::function<Status(uint32_t*)> counted(const Call& c, Status (*launch)(const Call&)) {
  return [c, launch](uint32_t* counter) {
    Call k = c;
    k.row_counter = counter;
    return launch(k);
  };
}

bool clusters_available() {
  int dev = 0, major = 0;
  return cudaGetDevice(&dev) == cudaSuccess &&
         cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess && major >= 9;
}

// The 2-byte words of `out` still holding launch_with_counter_at_m's poison:
// two 0xFF bytes, a bf16 NaN or two e4m3 NaNs, which no row writes.
int64_t poisoned_words(const std::vector<unsigned char>& out) {
  int64_t words = 0;
  for (size_t i = 0; i + 1 < out.size(); i += 2) words += out[i] == 0xFF && out[i + 1] == 0xFF;
  return words;
}

// launch(counter) with a counter that starts at `m` (a caller's error, on
// purpose: its tickets name only rows past a batch of m rows) over y
// poisoned with 0xFF; then the first `y_bytes` of y (the bytes the call
// writes: past them y stays poisoned whatever the call does) in `out` and
// the counter's two words in `left`. Callers check HasFatalFailure().
void launch_with_counter_at_m(const std::string& what, const std::function<Status(uint32_t*)>& launch, int64_t m,
                              DeviceBuffer& counter, DeviceBuffer& y, size_t y_bytes, std::vector<unsigned char>* out,
                              uint32_t left[2]) {
  const uint32_t start[2] = {static_cast<uint32_t>(m), 0};
  ASSERT_LE(y_bytes, y.size()) << what;
  ASSERT_EQ(cudaMemcpy(counter.data(), start, sizeof start, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(y.data(), 0xFF, y.size()), cudaSuccess);
  ASSERT_EQ(launch(reinterpret_cast<uint32_t*>(counter.data())), Status::kSuccess) << what;
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << what;
  *out = nktest::download(y.data(), y_bytes);
  ASSERT_EQ(cudaMemcpy(left, counter.data(), 2 * sizeof(uint32_t), cudaMemcpyDeviceToHost), cudaSuccess);
}

// The fields a plain and a fused call share: op, parameters and statistics
// (bias and mean for LayerNorm only), shape.
template <class Call>
void set_params(Call& c, Op op, const DeviceBuffer& w, const DeviceBuffer& b, DeviceBuffer& mean,
                DeviceBuffer& rstd, int64_t m, int64_t n) {
  c.op = op;
  c.weight = w.data();
  c.bias = op == Op::kLayerNorm ? b.data() : nullptr;
  c.mean = op == Op::kLayerNorm ? reinterpret_cast<float*>(mean.data()) : nullptr;
  c.rstd = reinterpret_cast<float*>(rstd.data());
  c.rows = m;
  c.cols = n;
}

// A LayerNorm or RMSNorm call of x, y, w, b, mean and rstd at type t,
// `misaligned` elements past the buffers' starts.
nktest::NormCall norm_call(Op op, DType t, const DeviceBuffer& x, DeviceBuffer& y, const DeviceBuffer& w,
                           const DeviceBuffer& b, DeviceBuffer& mean, DeviceBuffer& rstd, int misaligned, int64_t m,
                           int64_t n) {
  const int64_t element = t == DType::kF32 ? 4 : 2;
  nktest::NormCall c;
  set_params(c, op, w, b, mean, rstd, m, n);
  c.x_type = c.y_type = c.w_type = t;
  c.x = x.data() + misaligned * element;
  c.y = y.data() + misaligned * element;
  c.eps = op == Op::kRmsNorm ? 1e-6f : 1e-5f;
  return c;
}

// RMSNorm of bf16 x to fp8 e4m3 y with per-row scales into `scales`, or
// with a static scale if it is null; `misaligned` elements past the starts.
nktest::QuantCall fp8_call(const DeviceBuffer& x, DeviceBuffer& y, const DeviceBuffer& w, DeviceBuffer* scales,
                           int misaligned, int64_t m, int64_t n) {
  nktest::QuantCall c;
  c.op = Op::kRmsNorm;
  c.x_type = DType::kBF16;
  c.q_type = nktest::QType::kE4M3;
  c.x = x.data() + misaligned * 2;
  c.y = y.data() + misaligned;
  c.weight = w.data();
  c.rows = m;
  c.cols = n;
  if (scales != nullptr) {
    c.row_scales = reinterpret_cast<float*>(scales->data());
  } else {
    c.static_scale = 1.f / 32;
  }
  return c;
}

// Where the counter is used, the plan splits the rows across a cluster.
void expect_cluster_plan(const normkit::LaunchPlan& plan, const std::string& what) {
  if (!clusters_available()) return;
  EXPECT_EQ(plan.shape, normkit::Shape::kRowInClusterRegisters) << what;
  EXPECT_GE(plan.cluster, 2) << what;
}

// add + RMSNorm (the register loop), add + LayerNorm (4-slot parts in
// clusters of 2 at 65536 and of 8 at 262144, split parts at 131072): out of
// place, in place, strided and misaligned (the checked register loop keeps
// the fixed stride; split parts' checked form takes the counter too).
TEST(RowCounter, FusedAddsMatchFixedStrideBitwise) {
  NK_REQUIRE_GPU();
  const uint64_t seed = nktest::fresh_seed();
  for (int64_t n : {int64_t{65536}, int64_t{131072}, int64_t{262144}}) {
    for (int64_t m : batch_sizes()) {
      const int64_t stride = n + 64;  // a strided layout; rows stay slot-aligned
      const int64_t elems = m * stride + 8;
      DeviceBuffer x(elems * 2), r(elems * 2), ro(elems * 2), y(elems * 2), w(n * 2), b(n * 2), mean(m * 4),
          rstd(m * 4), pristine(elems * 2);
      fill_random_bf16(x, seed);
      fill_random_bf16(r, seed + 1);
      fill_random_bf16(w, seed + 2);
      fill_random_bf16(b, seed + 3);
      ASSERT_EQ(cudaMemcpy(pristine.data(), r.data(), r.size(), cudaMemcpyDeviceToDevice), cudaSuccess);
      for (Op op : {Op::kRmsNorm, Op::kLayerNorm}) {
        for (int layout = 0; layout < layouts(); ++layout) {  // contiguous, in place, strided, misaligned
          const bool in_place = layout == 1, strided = layout == 2, misaligned = layout == 3;
          const std::string what = std::string(op == Op::kRmsNorm ? "add + RMSNorm" : "add + LayerNorm") +
                                   " N=" + std::to_string(n) + " M=" + std::to_string(m) +
                                   (in_place ? " in place" : strided ? " strided" : misaligned ? " misaligned" : "") +
                                   " seed=" + std::to_string(seed);
          nktest::AddNormCall c;
          set_params(c, op, w, b, mean, rstd, m, n);
          c.x_type = c.w_type = DType::kBF16;
          const int64_t off = misaligned ? 1 : 0;
          c.x = x.data() + off * 2;
          c.residual = r.data() + off * 2;
          c.residual_out = in_place ? r.data() : ro.data() + off * 2;
          c.y = y.data() + off * 2;
          if (strided) c.x_stride = c.residual_stride = c.residual_out_stride = c.y_stride = stride;
          normkit::LaunchPlan plan;
          ASSERT_EQ(nktest::plan_add_norm(c, &plan), Status::kSuccess) << what;
          if (n > 65536 && !misaligned) expect_cluster_plan(plan, what);
          std::vector<DeviceBuffer*> outs = {&y, in_place ? &r : &ro, &rstd};
          if (op == Op::kLayerNorm) outs.push_back(&mean);
          std::vector<DeviceBuffer*> restore;
          if (in_place) restore.push_back(&r);
          expect_same_with_counter(what, counted(c, nktest::launch_add_norm), outs, restore, &pristine);
          if (in_place) {
            ASSERT_EQ(cudaMemcpy(r.data(), pristine.data(), r.size(), cudaMemcpyDeviceToDevice), cudaSuccess);
          }
        }
      }
    }
  }
}

// RMSNorm (the prefetching loop in clusters of 2 at 131072 and of 4 at
// 262144), fp32 LayerNorm, per-row fp8 (the ring in clusters of 2 and 4)
// and static fp8 (the prefetching loop in clusters of 2, change 143, and
// the ring in clusters of 4).
TEST(RowCounter, PlainAndQuantizedMatchFixedStrideBitwise) {
  NK_REQUIRE_GPU();
  const uint64_t seed = nktest::fresh_seed();
  for (int64_t n : {int64_t{131072}, int64_t{262144}}) {
    for (int64_t m : batch_sizes()) {
      DeviceBuffer x(m * n * 4 + 16), y(m * n * 4 + 16), w(n * 4), b(n * 4), mean(m * 4), rstd(m * 4);
      fill_random_bf16(x, seed);
      fill_random_bf16(w, seed + 2);
      fill_random_bf16(b, seed + 3);
      for (int misaligned = 0; misaligned < (layouts() > 1 ? 2 : 1); ++misaligned) {
        const std::string tail = " N=" + std::to_string(n) + " M=" + std::to_string(m) +
                                 (misaligned ? " misaligned" : "") + " seed=" + std::to_string(seed);
        {
          const nktest::NormCall c = norm_call(Op::kRmsNorm, DType::kBF16, x, y, w, b, mean, rstd, misaligned, m, n);
          normkit::LaunchPlan plan;
          ASSERT_EQ(nktest::plan(c, &plan), Status::kSuccess);
          if (!misaligned) expect_cluster_plan(plan, "RMSNorm bf16" + tail);
          expect_same_with_counter("RMSNorm bf16" + tail, counted(c, nktest::launch), {&y, &rstd});
        }
        {
          // fp32 LayerNorm over the same bytes (pairs of bf16 words: finite fp32 values).
          const nktest::NormCall c =
              norm_call(Op::kLayerNorm, DType::kF32, x, y, w, b, mean, rstd, misaligned, m, n / 2);
          expect_same_with_counter("LayerNorm fp32 N/2" + tail, counted(c, nktest::launch), {&y, &mean, &rstd});
        }
        for (bool per_row : {true, false}) {
          const nktest::QuantCall c = fp8_call(x, y, w, per_row ? &rstd : nullptr, misaligned, m, n);
          const std::string what = std::string(per_row ? "per-row fp8" : "static fp8") + tail;
          normkit::LaunchPlan plan;
          ASSERT_EQ(nktest::plan_quant(c, &plan), Status::kSuccess);
          if (!misaligned) expect_cluster_plan(plan, what);
          std::vector<DeviceBuffer*> outs = {&y};
          if (per_row) outs.push_back(&rstd);  // the row scales
          expect_same_with_counter(what, counted(c, nktest::launch_quant), outs);
        }
      }
    }
  }
}

// The rows do come from the counter: one that starts at M instead of zero
// (a caller's error, on purpose) names only rows past the batch, so the rows
// its tickets would have named stay unwritten, while the call still leaves
// it at zero. One case of each loop that takes the counter: the register
// loop (add + RMSNorm 262144), split parts (add + LayerNorm 131072), the
// prefetching loop (RMSNorm 131072) and the ring in clusters of 4 (per-row
// fp8 262144) and of 2 (per-row fp8 131072: change 137). Cluster rows only
// (sm_90).
TEST(RowCounter, RowsComeFromTheCounter) {
  NK_REQUIRE_GPU();
  if (!clusters_available()) GTEST_SKIP() << "no thread-block clusters on this device";
  const int64_t m = nktest::quick_mode() ? 137 : 301;  // past twice the resident clusters (66 at most)
  const uint64_t seed = nktest::fresh_seed();
  DeviceBuffer x(m * 262144 * 2), r(m * 262144 * 2), ro(m * 262144 * 2), y(m * 262144 * 2), w(262144 * 2),
      b(262144 * 2), mean(m * 4), rstd(m * 4), counter(2 * sizeof(uint32_t));
  fill_random_bf16(x, seed);
  fill_random_bf16(r, seed + 1);
  fill_random_bf16(w, seed + 2);
  fill_random_bf16(b, seed + 3);
  // `y_bytes`: the bytes of y the call writes (m rows of N outputs).
  auto check = [&](const std::string& what, const std::function<Status(uint32_t*)>& launch, size_t y_bytes) {
    std::vector<unsigned char> out;
    uint32_t left[2] = {1, 1};
    launch_with_counter_at_m(what, launch, m, counter, y, y_bytes, &out, left);
    if (::testing::Test::HasFatalFailure()) return;
    EXPECT_GT(poisoned_words(out), 0) << what << ": every row was written, so the counter was not consulted";
    EXPECT_EQ(left[0], 0u) << what << ": the counter was not left at zero";
    EXPECT_EQ(left[1], 0u) << what << ": the counter was not left at zero";
  };
  {
    nktest::AddNormCall c;
    set_params(c, Op::kRmsNorm, w, b, mean, rstd, m, 262144);
    c.x_type = c.w_type = DType::kBF16;
    c.x = x.data();
    c.residual = r.data();
    c.residual_out = ro.data();
    c.y = y.data();
    check("add + RMSNorm 262144", counted(c, nktest::launch_add_norm), size_t(m) * 262144 * 2);
    c.op = Op::kLayerNorm;
    c.cols = 131072;
    c.bias = b.data();
    c.mean = reinterpret_cast<float*>(mean.data());
    check("add + LayerNorm 131072", counted(c, nktest::launch_add_norm), size_t(m) * 131072 * 2);
  }
  check("RMSNorm 131072",
        counted(norm_call(Op::kRmsNorm, DType::kBF16, x, y, w, b, mean, rstd, 0, m, 131072), nktest::launch),
        size_t(m) * 131072 * 2);
  check("per-row fp8 262144", counted(fp8_call(x, y, w, &rstd, 0, m, 262144), nktest::launch_quant),
        size_t(m) * 262144);
  check("per-row fp8 131072", counted(fp8_call(x, y, w, &rstd, 0, m, 131072), nktest::launch_quant),
        size_t(m) * 131072);
}

// Per-row-quantized LayerNorm rows across a cluster's registers take the
// counter in CTAs of 512 threads (bf16 131072: clusters of 8) but run at the
// fixed stride in CTAs of 1024 (262144: RowHandout::kFixedStride, change 177,
// whose kernel compiles the counter out). A counter that starts at M: at
// 131072 rows stay unwritten and it ends at zero; at 262144 every row is
// written, the counter is left as it was and nothing is staggered. Both
// with the fixed stride's bits (a counter from zero).
TEST(RowCounter, PerRowLayerNormTakesItOnlyInCtasOf512) {
  NK_REQUIRE_GPU();
  if (!clusters_available()) GTEST_SKIP() << "no thread-block clusters on this device";
  const int64_t m = nktest::quick_mode() ? 137 : 301;  // past twice the resident clusters
  const uint64_t seed = nktest::fresh_seed();
  DeviceBuffer x(m * 262144 * 2), y(m * 262144), w(262144 * 2), b(262144 * 2), scales(m * 4),
      counter(2 * sizeof(uint32_t));
  fill_random_bf16(x, seed);
  fill_random_bf16(w, seed + 1);
  fill_random_bf16(b, seed + 2);
  for (const int64_t n : {int64_t{131072}, int64_t{262144}}) {
    const std::string what = "per-row LayerNorm fp8 " + std::to_string(n);
    nktest::QuantCall c = fp8_call(x, y, w, &scales, 0, m, n);
    c.op = Op::kLayerNorm;
    c.bias = b.data();
    c.eps = 1e-5f;
    normkit::LaunchPlan launched;
    c.launched = &launched;
    const bool fixed_stride = n == 262144;
    std::vector<unsigned char> out;
    uint32_t left[2] = {1, 1};
    launch_with_counter_at_m(what, counted(c, nktest::launch_quant), m, counter, y, size_t(m) * n, &out, left);
    if (::testing::Test::HasFatalFailure()) return;
    EXPECT_EQ(launched.shape, normkit::Shape::kRowInClusterRegisters) << what;
    EXPECT_EQ(launched.threads, fixed_stride ? 1024 : 512) << what;
    if (fixed_stride) {
      EXPECT_EQ(poisoned_words(out), 0) << what << ": rows left unwritten, so the counter was consulted";
      EXPECT_EQ(left[0], static_cast<uint32_t>(m)) << what << ": the counter was touched";
      EXPECT_EQ(left[1], 0u) << what << ": the counter was touched";
      EXPECT_EQ(launched.start_stagger_cycles, 0u) << what << ": staggered without taking the counter";
    } else {
      EXPECT_GT(poisoned_words(out), 0) << what << ": every row was written, so the counter was not consulted";
      EXPECT_EQ(left[0], 0u) << what << ": the counter was not left at zero";
      EXPECT_EQ(left[1], 0u) << what << ": the counter was not left at zero";
    }
    c.launched = nullptr;
    expect_same_with_counter(what, counted(c, nktest::launch_quant), {&y, &scales});
  }
}

// Rolled rows (per-row fp8 bf16 65536: clusters of 2 CTAs of 512 threads)
// take the counter, and the staggered start, only in calls of
// kRollCounterMinRounds rows or more per resident cluster (change 141).
// Above it, a counter that starts at M names no row: each cluster runs only
// the two rows its schedule fixes before its first ticket (LEAD = 2), the
// rest stay unwritten, and the counter ends at zero; the written rows tell
// the resident clusters K. Then a call of 5K rows (more than the 2K fixed
// rows and than kStartStaggerMinRounds' 4 rounds, under the threshold): the
// launcher drops the counter, so every row is written, the counter is left
// as it was, and nothing is staggered. Both with the fixed stride's bits.
// The same under racecheck (5 s there on an H100: rolled rows touch shared
// memory only in their reductions).
TEST(RowCounter, RolledRowsTakeItOnlyWithEnoughRounds) {
  NK_REQUIRE_GPU();
  if (!clusters_available()) GTEST_SKIP() << "no thread-block clusters on this device";
  int dev = 0, sms = 0;
  ASSERT_EQ(cudaGetDevice(&dev), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), cudaSuccess);
  const int64_t n = 65536;
  // At most 2 * sms clusters of 2 are resident (four CTAs of 512 threads an
  // SM), so this is at least kRollCounterMinRounds rounds.
  const int64_t big = normkit::kernel::kRollCounterMinRounds * 2 * sms;
  static_assert(normkit::kernel::kRollCounterMinRounds > 5 && normkit::kernel::kStartStaggerMinRounds < 5,
                "the second call's 5 rounds must be under the threshold and staggered if the counter were taken");
  const uint64_t seed = nktest::fresh_seed();
  DeviceBuffer x(big * n * 2), y(big * n), w(n * 2), scales(big * 4), counter(2 * sizeof(uint32_t));
  fill_random_bf16(x, seed);
  fill_random_bf16(w, seed + 2);
  int64_t clusters = 0;  // learned from the first call
  for (const bool above : {true, false}) {
    const int64_t m = above ? big : 5 * clusters;
    const std::string what = "per-row fp8 65536 M=" + std::to_string(m) + " seed=" + std::to_string(seed);
    nktest::QuantCall c = fp8_call(x, y, w, &scales, 0, m, n);
    normkit::LaunchPlan ran;
    c.launched = &ran;
    const auto launch = counted(c, nktest::launch_quant);
    // The fixed stride's bits, then twice with a (zeroed) counter.
    expect_same_with_counter(what, launch, {&y, &scales});
    ASSERT_EQ(ran.shape, normkit::Shape::kRowInClusterRegisters) << what;
    ASSERT_EQ(ran.cluster, 2) << what;
    ASSERT_EQ(ran.threads, 512) << what << ": these rows roll in CTAs of 512 threads";
    if (above) {
      EXPECT_GT(ran.start_stagger_cycles, 0u) << what << ": rolled rows with a counter start staggered";
    } else {
      EXPECT_EQ(ran.start_stagger_cycles, 0u) << what << ": staggered, so the counter was taken under the threshold";
    }
    // A counter that starts at M.
    std::vector<unsigned char> out;
    uint32_t left[2] = {1, 1};
    launch_with_counter_at_m(what, launch, m, counter, y, size_t(m) * n, &out, left);
    if (HasFatalFailure()) return;
    // A row is written whole or not at all; two 0xFF bytes (two e4m3 NaNs)
    // are what no row writes.
    int64_t written = 0;
    for (int64_t r = 0; r < m; ++r) written += !(out[r * n] == 0xFF && out[r * n + 1] == 0xFF);
    if (above) {
      ASSERT_LT(written, m) << what << ": every row was written, so the counter was not consulted";
      EXPECT_EQ(left[0], 0u) << what << ": the counter was not left at zero";
      EXPECT_EQ(left[1], 0u) << what;
      EXPECT_EQ(written % 2, 0) << what << ": " << written << " rows written, not two a cluster";
      clusters = written / 2;
      ASSERT_GE(clusters, sms / 4) << what;  // a sanity bound: the launch fills the device
      ASSERT_LE(clusters, 2 * sms) << what;
    } else {
      EXPECT_EQ(written, m) << what << ": rows left unwritten, so the counter was taken under the threshold";
      EXPECT_EQ(left[0], static_cast<uint32_t>(m)) << what << ": the counter was touched under the threshold";
      EXPECT_EQ(left[1], 0u) << what;
    }
  }
}

// Calls with a counter and at least kStartStaggerMinRounds rows per resident
// cluster start their clusters staggered (kernel/start_stagger.cuh), by a
// phase of a sixteenth of a round at the device's DRAM rate and SM clock;
// calls with fewer rows, or without a counter, do not; the bits are the
// fixed stride's either way. add + RMSNorm 262144 (the register loop in
// clusters of 4), RMSNorm 262144 (the prefetching loop in clusters of 4) and per-row
// fp8 131072 (the ring in clusters of 2); misaligned add + RMSNorm 262144
// (the checked loop, which keeps the fixed stride) is not staggered.
TEST(RowCounter, StartsStaggeredWithEnoughRows) {
  NK_REQUIRE_GPU();
  if (!clusters_available()) GTEST_SKIP() << "no thread-block clusters on this device";
  int dev = 0, sms = 0, sm_khz = 0, mem_khz = 0, bus_bits = 0;
  ASSERT_EQ(cudaGetDevice(&dev), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, dev), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, dev), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev), cudaSuccess);
  const double dram_bytes_per_ns = 2.0 * mem_khz * 1e-6 * bus_bits / 8;
  // The nominal rate of an sm_90 part (H100 PCIe 2.0 TB/s to H200 4.8): a
  // units slip in the attributes' reading would leave this range.
  EXPECT_GT(dram_bytes_per_ns, 1500.0);
  EXPECT_LT(dram_bytes_per_ns, 8000.0);
  const uint64_t seed = nktest::fresh_seed();
  enum class Kind { kAddRms, kRms, kPerRowFp8, kAddRmsMisaligned };
  struct Case {
    Kind kind;
    std::string what;
    int64_t n;
    double row_bytes;  // DRAM bytes a row moves, as the launcher counts them
  };
  std::vector<Case> cases = {{Kind::kAddRms, "add + RMSNorm 262144", 262144, 262144.0 * 8},
                             {Kind::kRms, "RMSNorm 262144", 262144, 262144.0 * 4},
                             {Kind::kPerRowFp8, "per-row fp8 131072", 131072, 131072.0 * 3},
                             {Kind::kAddRmsMisaligned, "misaligned add + RMSNorm 262144", 262144, 0.0}};
  if (racecheck_mode()) cases.resize(1);
  for (const Case& k : cases) {
    int cluster = 0;
    // Two rows first (under a round: no stagger), which tells the cluster
    // size; then enough rounds even on a device where every SM runs a cluster.
    for (int pass = 0; pass < 2; ++pass) {
      const int64_t most_clusters = pass == 0 ? 0 : sms / cluster;
      const int64_t m = pass == 0 ? 2 : normkit::kernel::kStartStaggerMinRounds * most_clusters + 1;
      DeviceBuffer x(m * k.n * 2 + 16), r(m * k.n * 2 + 16), ro(m * k.n * 2 + 16), y(m * k.n * 2 + 16),
          w(k.n * 2), b(k.n * 2), mean(m * 4), rstd(m * 4);
      fill_random_bf16(x, seed);
      fill_random_bf16(r, seed + 1);
      fill_random_bf16(w, seed + 2);
      normkit::LaunchPlan ran;
      std::function<Status(uint32_t*)> launch;
      std::vector<DeviceBuffer*> outs = {&y, &rstd};
      if (k.kind == Kind::kAddRms || k.kind == Kind::kAddRmsMisaligned) {
        const int64_t off = k.kind == Kind::kAddRmsMisaligned ? 2 : 0;  // one bf16 element past alignment
        nktest::AddNormCall c;
        set_params(c, Op::kRmsNorm, w, b, mean, rstd, m, k.n);
        c.x_type = c.w_type = DType::kBF16;
        c.x = x.data() + off;
        c.residual = r.data() + off;
        c.residual_out = ro.data() + off;
        c.y = y.data() + off;
        c.launched = &ran;
        launch = counted(c, nktest::launch_add_norm);
        outs.push_back(&ro);
      } else if (k.kind == Kind::kRms) {
        nktest::NormCall c = norm_call(Op::kRmsNorm, DType::kBF16, x, y, w, b, mean, rstd, 0, m, k.n);
        c.launched = &ran;
        launch = counted(c, nktest::launch);
      } else {
        nktest::QuantCall c = fp8_call(x, y, w, &rstd, 0, m, k.n);
        c.launched = &ran;
        launch = counted(c, nktest::launch_quant);
      }
      const std::string what = k.what + " M=" + std::to_string(m) + " seed=" + std::to_string(seed);
      // The fixed stride's bits, then twice with a counter (the last launch).
      expect_same_with_counter(what, launch, outs);
      const uint32_t counted_cycles = ran.start_stagger_cycles;
      ASSERT_EQ(ran.shape, normkit::Shape::kRowInClusterRegisters) << what;
      ASSERT_GE(ran.cluster, 2) << what;
      cluster = ran.cluster;
      ASSERT_EQ(launch(nullptr), Status::kSuccess) << what;
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << what;
      EXPECT_EQ(ran.start_stagger_cycles, 0u) << what << ": staggered without a counter";
      if (pass == 0) {
        EXPECT_EQ(counted_cycles, 0u) << what << ": a call of under a round staggered";
        continue;
      }
      if (k.kind == Kind::kAddRmsMisaligned) {
        EXPECT_EQ(counted_cycles, 0u) << what << ": the checked loop (a fixed stride) staggered";
        continue;
      }
      // A phase: a sixteenth of a round of the resident clusters, which are
      // at most most_clusters and, on these devices, more than half of them
      // (a cluster must fit in a GPC).
      const double most = most_clusters * k.row_bytes /
                          (dram_bytes_per_ns * normkit::kernel::kStartStaggerDramShare) * (sm_khz * 1e-6) /
                          normkit::kernel::kStartStaggerPhases;
      std::printf("[ stagger  ] %s: %u cycles a phase (bounds %.0f-%.0f; DRAM %.0f B/ns nominal, SM %d kHz)\n",
                  what.c_str(), counted_cycles, most / 2, most, dram_bytes_per_ns, sm_khz);
      EXPECT_LE(counted_cycles, most + 1) << what;
      EXPECT_GT(counted_cycles, most / 2) << what;
    }
  }
}

// End to end against the float64 reference (run_case zeroes a counter,
// passes it and checks it is zero after), aligned, strided, misaligned and
// in place.
TEST(RowCounter, AgainstFloat64Reference) {
  NK_REQUIRE_GPU();
  const int64_t m = nktest::quick_mode() ? 37 : 141;  // 141: past twice the resident clusters (66 at most)
  for (int64_t n : {int64_t{131072}, int64_t{262144}}) {
    for (Op op : {Op::kRmsNorm, Op::kLayerNorm}) {
      for (DType t : {DType::kBF16, DType::kF32}) {
        if (racecheck_mode() && t == DType::kF32) continue;
        for (int layout = 0; layout < layouts(); ++layout) {
          nktest::CaseSpec s;
          s.op = op;
          s.x = s.y = s.w = t;
          s.rows = m;
          s.cols = n;
          s.eps = op == Op::kRmsNorm ? 1e-6f : 1e-5f;
          s.row_counter = true;
          if (layout == 1) s.x_stride = s.y_stride = n + 64;
          if (layout == 2) s.x_misalign = s.y_misalign = 1;
          if (layout == 3) s.in_place = true;
          nktest::expect_case_ok(s);
        }
      }
    }
  }
}

}  // namespace
