// bench/src/dtype.hpp: the element types the benchmarks sweep, as runtime values.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <type_traits>

namespace nkbench {

enum class DType { kF32, kF16, kBF16 };

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "fp32";
    case DType::kF16: return "fp16";
    case DType::kBF16: return "bf16";
  }
  return "unknown";
}

inline size_t dtype_size(DType t) { return t == DType::kF32 ? 4 : 2; }

template <class T>
constexpr DType dtype_of() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>,
                "nkbench: benchmarks cover float, half and bfloat16");
  if constexpr (std::is_same_v<T, float>) return DType::kF32;
  else if constexpr (std::is_same_v<T, __half>) return DType::kF16;
  else return DType::kBF16;
}

}  // namespace nkbench
