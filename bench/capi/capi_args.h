// bench/capi/capi_args.h: normkit argument structs filled from the C ABI's
// untyped pointers (normkit_capi.cu, normkit_capi_variants.cu).
#pragma once

#include <normkit/launch/launcher.cuh>

#include <cstdint>

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

}  // namespace nkcapi
