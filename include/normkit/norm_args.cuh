// normkit/norm_args.cuh: the argument structs of the public launchers.
#pragma once

#include <cstdint>

#include "config.cuh"
#include "types.cuh"

NORMKIT_NAMESPACE_BEGIN

/// Element types of a call: x, y and the weight/bias storage type W.
template <class X, class Y = X, class W = X>
struct io {
  using x_type = X;
  using y_type = Y;
  using w_type = W;
};

/// Arguments of a normalization over the last dimension of a [rows, cols] view.
/// Row strides are in elements; kContiguous means cols. `epilogue` holds the
/// epilogue policy's parameters (for the default epilogues: weight and bias).
template <class X, class Y, class EpilogueParams>
struct NormArgs {
  const X* x = nullptr;
  Y* y = nullptr;  ///< may equal x (in place) when strides and element sizes match
  EpilogueParams epilogue{};
  float* mean = nullptr;  ///< fp32 [rows]; null skips it
  float* rstd = nullptr;  ///< fp32 [rows]; null skips it
  int64_t rows = 0;       ///< M: 0 is a valid no-op
  int64_t cols = 0;       ///< N: the normalized length, >= 1
  int64_t x_row_stride = kContiguous;
  int64_t y_row_stride = kContiguous;
  float eps = 1e-5f;  ///< set 1e-6 for PyTorch's RMSNorm default when using this struct directly
};

/// LayerNorm: y = (x - mean) * rstd * weight + bias, statistics over each row,
/// biased variance, computed in fp32. weight and bias are optional (null: 1, 0).
template <class X, class Y = X, class W = X>
struct LayerNormArgs {
  const X* x = nullptr;
  Y* y = nullptr;
  const W* weight = nullptr;
  const W* bias = nullptr;
  float* mean = nullptr;
  float* rstd = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t x_row_stride = kContiguous;
  int64_t y_row_stride = kContiguous;
  float eps = 1e-5f;
};

/// RMSNorm: y = x * rstd * weight, rstd = 1 / sqrt(mean(x^2) + eps). weight optional.
template <class X, class Y = X, class W = X>
struct RmsNormArgs {
  const X* x = nullptr;
  Y* y = nullptr;
  const W* weight = nullptr;
  float* rstd = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t x_row_stride = kContiguous;
  int64_t y_row_stride = kContiguous;
  float eps = 1e-6f;
};

NORMKIT_NAMESPACE_END
