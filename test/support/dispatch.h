// Type-erased launchers for the tests: each normkit instantiation the tests
// need is compiled once, in dispatch_*.cu, and every test file calls through
// these functions (so test files compile fast and no kernel is built twice).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include <normkit/launch/plan.cuh>
#include <normkit/status.cuh>

namespace nktest {

enum class DType { kF32, kF16, kBF16 };
enum class StatsKind { kTwoPass, kWelford };
enum class Op { kLayerNorm, kRmsNorm };

const char* dtype_name(DType t);
int dtype_size(DType t);

/// The fields every test call and every public argument struct share: x, y,
/// weight, rows, cols, row strides (kContiguous is -1 on both sides), eps.
/// Each dispatcher sets the rest of its struct.
template <class X, class Y, class W, class Args, class Call>
void fill_shared_args(Args& a, const Call& c) {
  a.x = static_cast<const X*>(c.x);
  a.y = static_cast<Y*>(c.y);
  a.weight = static_cast<const W*>(c.weight);
  a.rows = c.rows;
  a.cols = c.cols;
  a.x_row_stride = c.x_stride;
  a.y_row_stride = c.y_stride;
  a.eps = c.eps;
}

/// One call of layer_norm_forward / rms_norm_forward with run-time dtypes.
struct NormCall {
  Op op = Op::kLayerNorm;
  DType x_type = DType::kF32, y_type = DType::kF32, w_type = DType::kF32;
  StatsKind stats = StatsKind::kTwoPass;
  const void* x = nullptr;
  void* y = nullptr;
  const void* weight = nullptr;
  const void* bias = nullptr;  // LayerNorm only
  float* mean = nullptr;       // LayerNorm only
  float* rstd = nullptr;
  int64_t rows = 0, cols = 0;
  int64_t x_stride = normkit::kContiguous, y_stride = normkit::kContiguous;
  float eps = 1e-5f;
  normkit::Shape shape = normkit::Shape::kAuto;
  normkit::LaunchPlan* launched = nullptr;  ///< LaunchOptions::launched
  uint32_t* row_counter = nullptr;          ///< LaunchOptions::row_counter
  cudaStream_t stream = nullptr;
};

/// Launches the call (kErrorUnsupportedType if the combination was not instantiated).
normkit::Status launch(const NormCall& c);
/// The plan the call would use.
normkit::Status plan(const NormCall& c, normkit::LaunchPlan* p);

// Per-(x, y) dispatchers, one generated translation unit each.
#define NKTEST_DECLARE(x, y) normkit::Status launch_##x##_##y(const NormCall& c, normkit::LaunchPlan* plan_only);
#define NKTEST_FOR_EACH_Y(x) NKTEST_DECLARE(x, f32) NKTEST_DECLARE(x, f16) NKTEST_DECLARE(x, bf16)
NKTEST_FOR_EACH_Y(f32)
NKTEST_FOR_EACH_Y(f16)
NKTEST_FOR_EACH_Y(bf16)
#undef NKTEST_FOR_EACH_Y
#undef NKTEST_DECLARE

}  // namespace nktest
