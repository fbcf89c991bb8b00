// Type-erased launchers for the fused residual-add and quantizing variants
// (instantiated once, in dispatch_fused.cu and dispatch_quant.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include <normkit/launch/plan.cuh>
#include <normkit/status.cuh>

#include "dispatch.h"

namespace nktest {

struct AddNormCall {
  Op op = Op::kRmsNorm;
  DType x_type = DType::kBF16, w_type = DType::kBF16;  // residual and y have x's type
  const void* x = nullptr;
  const void* residual = nullptr;
  void* residual_out = nullptr;
  void* y = nullptr;
  const void* weight = nullptr;
  const void* bias = nullptr;
  float* mean = nullptr;
  float* rstd = nullptr;
  int64_t rows = 0, cols = 0;
  int64_t x_stride = -1, residual_stride = -1, residual_out_stride = -1, y_stride = -1;  // -1: contiguous
  float eps = 1e-6f;
  normkit::Shape shape = normkit::Shape::kAuto;
  normkit::LaunchPlan* launched = nullptr;  ///< LaunchOptions::launched
  uint32_t* row_counter = nullptr;          ///< LaunchOptions::row_counter
  cudaStream_t stream = nullptr;
};
normkit::Status launch_add_norm(const AddNormCall& c);
/// The plan launch_add_norm(c) would run (add_rms_norm_plan, add_layer_norm_plan).
normkit::Status plan_add_norm(const AddNormCall& c, normkit::LaunchPlan* plan);

enum class QType { kE4M3, kE5M2, kInt8 };
const char* qtype_name(QType q);

struct QuantCall {
  Op op = Op::kRmsNorm;
  DType x_type = DType::kBF16;  // weight and bias have x's type
  QType q_type = QType::kE4M3;
  const void* x = nullptr;
  void* y = nullptr;
  const void* weight = nullptr;
  const void* bias = nullptr;
  float static_scale = 0.f;
  float* row_scales = nullptr;
  int64_t rows = 0, cols = 0;
  int64_t x_stride = -1, y_stride = -1;
  float eps = 1e-6f;
  normkit::Shape shape = normkit::Shape::kAuto;
  normkit::LanePairing pairing = normkit::LanePairing::kAuto;
  normkit::LaunchPlan* launched = nullptr;  ///< LaunchOptions::launched
  uint32_t* row_counter = nullptr;          ///< LaunchOptions::row_counter
  cudaStream_t stream = nullptr;
};
/// Every (x, output) pair the library supports is instantiated (dispatch_quant.cu,
/// dispatch_quant_more.cu); kErrorUnsupportedType for any other value.
normkit::Status launch_quant(const QuantCall& c);
/// The plan launch_quant(c) would run (its may_pair: whether the paired form may run).
normkit::Status plan_quant(const QuantCall& c, normkit::LaunchPlan* plan);

}  // namespace nktest
