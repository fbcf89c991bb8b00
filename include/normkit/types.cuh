// normkit/types.cuh: element types the kernels read and write, and their
// conversions to and from the fp32 compute type.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <type_traits>

#include "config.cuh"

NORMKIT_NAMESPACE_BEGIN

using bfloat16 = __nv_bfloat16;
using half = __half;
using float8_e4m3 = __nv_fp8_e4m3;
using float8_e5m2 = __nv_fp8_e5m2;

/// A row stride equal to N (rows packed one after another).
inline constexpr int64_t kContiguous = -1;

/// Types that x, y and the residual may have: float, half, bfloat16.
template <class T>
inline constexpr bool is_io_type_v =
    std::is_same_v<T, float> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

/// Quantized output types (see normkit/epilogue/quantize.cuh).
template <class T>
inline constexpr bool is_quantized_type_v = std::is_same_v<T, float8_e4m3> ||
                                            std::is_same_v<T, float8_e5m2> ||
                                            std::is_same_v<T, int8_t>;

/// Largest finite magnitude of a quantized type: the clamp and the dynamic scale use it.
template <class T>
struct QuantLimits;
template <>
struct QuantLimits<float8_e4m3> {
  static constexpr float kMax = 448.0f;
};
template <>
struct QuantLimits<float8_e5m2> {
  static constexpr float kMax = 57344.0f;
};
template <>
struct QuantLimits<int8_t> {
  static constexpr float kMax = 127.0f;
};

namespace detail {

template <class T>
NORMKIT_HOST_DEVICE float to_float(T v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else if constexpr (std::is_same_v<T, half>) {
    return __half2float(v);
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return __bfloat162float(v);
  } else if constexpr (std::is_same_v<T, int8_t>) {
    return static_cast<float>(v);
  } else {
    return static_cast<float>(v);  // fp8 types convert through their own operator float
  }
}

/// Round-to-nearest-even conversion from fp32; fp8 saturates to the finite range,
/// int8 rounds to nearest (ties to even) and saturates.
template <class T>
NORMKIT_HOST_DEVICE T from_float(float v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else if constexpr (std::is_same_v<T, half>) {
    return __float2half_rn(v);
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    return __float2bfloat16_rn(v);
  } else if constexpr (std::is_same_v<T, int8_t>) {
    float r = rintf(v);
    r = r > 127.f ? 127.f : (r < -128.f ? -128.f : r);
    return static_cast<int8_t>(r);
  } else if constexpr (std::is_same_v<T, float8_e4m3>) {
    T out;
    out.__x = __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
    return out;
  } else {
    static_assert(std::is_same_v<T, float8_e5m2>, "normkit: no conversion from float to this type");
    T out;
    out.__x = __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E5M2);
    return out;
  }
}

}  // namespace detail

NORMKIT_NAMESPACE_END
