// Host-side helpers shared by the tests: device detection, device buffers,
// random inputs with non-zero means, the float64 reference and the case runner
// that poisons outputs, launches, and checks every element.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dispatch.h"

namespace nktest {

/// True when a CUDA device can be used. Any failure (no driver, "driver
/// version is insufficient", no device) means no.
bool gpu_available();

/// Skips the current test, reported as skipped (never passed), without a GPU.
#define NK_REQUIRE_GPU()                                               \
  do {                                                                 \
    if (!::nktest::gpu_available()) GTEST_SKIP() << "no CUDA device"; \
  } while (0)

#define NK_CUDA_OK(expr)                                                              \
  do {                                                                                \
    cudaError_t nk_err_ = (expr);                                                     \
    ASSERT_EQ(nk_err_, cudaSuccess) << #expr << ": " << cudaGetErrorString(nk_err_); \
  } while (0)

/// Owns device memory; aborts the test process on allocation failure (a test
/// environment problem, not a library result).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  unsigned char* data() const { return ptr_; }
  size_t size() const { return bytes_; }

 private:
  unsigned char* ptr_ = nullptr;
  size_t bytes_ = 0;
};

/// Runs fn(begin, end) over [0, n) split across hardware threads.
void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

/// NKTEST_QUICK=1 (set by .ci/gpu.sh under compute-sanitizer, whose
/// instrumentation makes kernels 10-100x slower): the same tests, with fewer
/// rows per case.
bool quick_mode();

/// NKTEST_RACECHECK=1 (set by .ci/gpu.sh under compute-sanitizer's
/// racecheck, which is slower again): tests whose shared-memory hazards do
/// not depend on a case's layout, element type or batch keep one of each.
bool racecheck_mode();

/// A fresh seed per call (from std::random_device), unless NKTEST_SEED is set.
uint64_t fresh_seed();

/// Fast deterministic generator (splitmix64 / xoshiro-like) for test data.
struct Rng {
  uint64_t state;
  explicit Rng(uint64_t seed) : state(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return (next() >> 11) * (1.0 / 9007199254740992.0); }  // [0, 1)
  double normal();
};

/// Stores double values as `t` (round to nearest even) into raw bytes, and back.
void store_as(DType t, double v, void* dst);
double load_as(DType t, const void* src);

/// Per-dtype tolerance of an output element: |y - ref| <= atol + rtol * |ref|.
struct Tolerance {
  double atol;
  double rtol;
};
Tolerance output_tolerance(DType y);

/// Float64 reference for one row.
struct RowReference {
  double mean = 0, rstd = 0;
};
RowReference reference_row(Op op, const double* x, int64_t n, double eps);

/// Whether a kernel's fp32 mean and rstd of a row are within the bounds every
/// test holds them to (run_case, the fused adds' check), `scale` times wider.
bool mean_within(const RowReference& ref, double got, double scale = 1.0);
bool rstd_within(const RowReference& ref, double got, double scale = 1.0);

/// One GPU test case: shapes, strides, alignment, dtypes and options.
struct CaseSpec {
  Op op = Op::kLayerNorm;
  DType x = DType::kF32, y = DType::kF32, w = DType::kF32;
  StatsKind stats = StatsKind::kTwoPass;
  normkit::Shape shape = normkit::Shape::kAuto;
  int64_t rows = 1, cols = 1;
  int64_t x_stride = -1, y_stride = -1;  ///< -1: contiguous (passed as kContiguous)
  int x_misalign = 0, y_misalign = 0;    ///< elements added to a 256-byte aligned base
  bool in_place = false;
  bool weight = true, bias = true, stats_out = true;
  float eps = 1e-5f;
  double mean_lo = -3, mean_hi = 3;  ///< each row's mean drawn uniformly from here
  double std_lo = 0.5, std_hi = 2;   ///< each row's standard deviation likewise
  int64_t nan_row = -1;              ///< a row with one NaN in x: its outputs are NaN, the rest unaffected
  int64_t sample_rows = 0;           ///< > 0: compare only this many spread rows (huge tensors); all rows checked written
  double tolerance_scale = 1.0;
  double y_abs_tolerance = -1;       ///< >= 0: use this absolute bound on y instead of the dtype tolerance
  bool row_counter = false;          ///< pass a zeroed LaunchOptions::row_counter; check it is zero after
  uint64_t seed = 0;                 ///< 0: fresh
};

struct CaseResult {
  normkit::Status status = normkit::Status::kSuccess;
  double max_y_error = 0;     ///< max |y - ref| over compared elements
  double max_y_excess = 0;    ///< max (|y - ref| / bound); > 1 fails
  int64_t bad_y = 0;          ///< elements outside tolerance (incl. NaN / unwritten)
  int64_t bad_stats = 0;      ///< mean/rstd outside tolerance
  int64_t clobbered = 0;      ///< bytes outside the outputs that changed (gaps, guards)
  std::string first_failure;  ///< description of the first failure
  normkit::LaunchPlan plan;  ///< the plan that ran (LaunchOptions::launched), else the planned one
  uint64_t seed = 0;
  bool ok() const { return status == normkit::Status::kSuccess && bad_y == 0 && bad_stats == 0 && clobbered == 0; }
};

std::string describe(const CaseSpec& s);
CaseResult run_case(const CaseSpec& s);

/// `bytes` bytes of device memory from p, copied to the host (zeros, and a
/// test failure, if the copy fails). Inline, as expect_case_ok below.
inline std::vector<unsigned char> download(const void* p, size_t bytes) {
  std::vector<unsigned char> h(bytes);
  EXPECT_EQ(cudaMemcpy(h.data(), p, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

/// gtest assertion helper: runs the case and reports everything on failure.
/// Inline, so the gtest state it reports to is the test executable's own.
inline void expect_case_ok(const CaseSpec& s) {
  const CaseResult r = run_case(s);
  EXPECT_TRUE(r.ok()) << describe(s) << "\n  seed=" << r.seed << " status=" << normkit::status_string(r.status)
                      << " plan=" << normkit::shape_name(r.plan.shape) << " bad_y=" << r.bad_y
                      << " bad_stats=" << r.bad_stats << " clobbered=" << r.clobbered
                      << " max|err|=" << r.max_y_error << "\n  first failure: " << r.first_failure;
}

}  // namespace nktest
