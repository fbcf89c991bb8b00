// bench/capi/capi_args.h: normkit argument structs filled from the C ABI's
// untyped pointers, and the helpers its units share (normkit_capi.cu,
// normkit_capi_variants.cu, normkit_capi_layer_quant.cu).
#pragma once

#include <normkit/launch/launcher.cuh>
#include <normkit/types.cuh>

#include <cstdint>

#include "normkit_capi.h"

namespace nkcapi {

/// The row counter every forward passes (normkit_set_row_counter), or null.
/// One for the process: the comparison runs one call at a time on one stream.
inline uint32_t*& row_counter() {
  static uint32_t* counter = nullptr;
  return counter;
}

/// The options every forward passes.
inline normkit::LaunchOptions options() {
  normkit::LaunchOptions o;
  o.row_counter = row_counter();
  return o;
}

/// Args with the fields every normkit argument struct has set: x and y (cast
/// to the struct's own pointer types), rows, cols and eps; the caller sets the rest.
template <class Args>
Args row_args(const void* x, void* y, int64_t rows, int64_t cols, float eps) {
  Args a;
  a.x = static_cast<decltype(a.x)>(x);
  a.y = static_cast<decltype(a.y)>(y);
  a.rows = rows;
  a.cols = cols;
  a.eps = eps;
  return a;
}

/// Calls f with a value of the quantized type named by `qtype` (NORMKIT_CAPI_E4M3, ...).
template <class F>
normkit::Status with_qtype(int qtype, F&& f) {
  switch (qtype) {
    case NORMKIT_CAPI_E4M3: return f(normkit::float8_e4m3{});
    case NORMKIT_CAPI_E5M2: return f(normkit::float8_e5m2{});
    case NORMKIT_CAPI_INT8: return f(int8_t{});
    default: return normkit::Status::kErrorUnsupportedType;
  }
}

/// A bf16 quantized op's forward: `call(tag)` runs it for the quantized type
/// of `tag` (other dtypes: kErrorUnsupportedType, nothing launched).
template <class Call>
int quant_forward(int dtype, int qtype, Call&& call) {
  if (dtype != NORMKIT_CAPI_BF16) return static_cast<int>(normkit::Status::kErrorUnsupportedType);
  return static_cast<int>(with_qtype(qtype, call));
}

/// A shape query's result: the status, and on success the shape's name in *shape_name.
inline int shape_result(normkit::Status s, const normkit::LaunchPlan& p, const char** shape_name) {
  if (s == normkit::Status::kSuccess) *shape_name = normkit::shape_name(p.shape);
  return static_cast<int>(s);
}

/// A bf16 quantized op's shape query: `plan(tag, static_scale, row_scales,
/// &plan_out)` plans rows of the quantized type of `tag`, given a static
/// scale (per_row 0) or a scale pointer (per_row nonzero), which is what
/// selects each scaling; with M = 0 nothing is read or written.
template <class Plan>
int quant_shape(int dtype, int qtype, int per_row, const char** shape_name, Plan&& plan) {
  if (shape_name == nullptr) return static_cast<int>(normkit::Status::kErrorNullPointer);
  if (dtype != NORMKIT_CAPI_BF16) return static_cast<int>(normkit::Status::kErrorUnsupportedType);  // as the forward
  static float scale_placeholder;
  normkit::LaunchPlan p;
  const normkit::Status s = with_qtype(qtype, [&](auto tag) {
    return plan(tag, per_row ? 0.f : 1.f, per_row ? &scale_placeholder : nullptr, &p);
  });
  return shape_result(s, p, shape_name);
}

}  // namespace nkcapi
