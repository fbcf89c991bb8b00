// normkit/epilogue/param_slot.cuh: reading a per-column parameter vector
// (weight, bias) for one slot, as fp32 whatever its storage type.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../block/vector_access.cuh"
#include "../config.cuh"
#include "../types.cuh"

NORMKIT_NAMESPACE_BEGIN

/// How a kernel asks an epilogue to cache its per-column parameters (weight,
/// bias) in the WHOLE form (the optional apply_whole<VEC, CACHING> hook;
/// epilogue/affine.cuh). kKeepInL1: loads with L1 priority evict_last (where
/// a slot of the parameter is one 16-byte access), for kernels whose long
/// rows (row_per_block at 8 slots) would evict the parameters from L1 before
/// the SM's next row reads them (docs/performance.md, change 62). Same values
/// either way.
enum class ParamCaching { kDefault, kKeepInL1 };

/// Loads p[col0 .. col0 + VEC) into fp32 (elements at or past `valid` read as
/// `fill`); a null p reads as `fill` everywhere. One vector access when the
/// address is aligned for it, element by element otherwise. These vectors are
/// shared by all rows, so they come from L1/L2, not from DRAM.
template <class W, int VEC>
NORMKIT_DEVICE void load_param_slot(const W* p, int64_t col0, int valid, float fill, float (&out)[VEC]) {
  if (p == nullptr) {
#pragma unroll
    for (int i = 0; i < VEC; ++i) out[i] = fill;
    return;
  }
  constexpr int kAlign = detail::slot_bytes<W, VEC>();
  const W* src = p + col0;
  if (valid >= VEC && (reinterpret_cast<uintptr_t>(src) % kAlign) == 0) {
    detail::RawSlot<W, VEC> raw;
    detail::load_slot_raw<16, W, VEC>(src, raw);
    detail::slot_to_float(raw, out);
  } else {
#pragma unroll
    for (int i = 0; i < VEC; ++i) out[i] = i < valid ? detail::to_float(src[i]) : fill;
  }
}

/// load_param_slot for a slot known to be whole and aligned (the launcher
/// checked param_aligned for p): one vector access, no checks but for null.
/// READ_ONLY: through the read-only path; CACHING: see ParamCaching
/// (detail::load_slot_raw).
template <class W, int VEC, bool READ_ONLY = false, ParamCaching CACHING = ParamCaching::kDefault>
NORMKIT_DEVICE void load_whole_param_slot(const W* p, int64_t col0, float fill, float (&out)[VEC]) {
  if (p == nullptr) {
#pragma unroll
    for (int i = 0; i < VEC; ++i) out[i] = fill;
    return;
  }
  detail::RawSlot<W, VEC> raw;
  detail::load_slot_raw<16, W, VEC, READ_ONLY, CACHING == ParamCaching::kKeepInL1>(p + col0, raw);
  detail::slot_to_float(raw, out);
}

namespace detail {
/// A slot of the value a null parameter stands for, in W (1, or 0 where
/// ZERO), in device memory: up to 32 bytes (a slot of 8 fp32), 16-byte
/// aligned. For kernels that read a null parameter's slots from here rather
/// than branch on null per slot (Scale's apply_whole under
/// ParamCaching::kKeepInL1). Not const, so that no compiler folds it away.
template <class W, bool ZERO>
NORMKIT_DEVICE const W* fill_param_slot() {
  constexpr uint32_t kOne = std::is_same_v<W, float> ? 0x3f800000u : std::is_same_v<W, half> ? 0x3c003c00u : 0x3f803f80u;
  constexpr uint32_t kWord = ZERO ? 0u : kOne;
  static uint4 slot[2] = {{kWord, kWord, kWord, kWord}, {kWord, kWord, kWord, kWord}};
  return reinterpret_cast<const W*>(slot);
}
}  // namespace detail

/// Host: whether every slot of VEC columns of p starts aligned for one access
/// (a null p counts as aligned).
template <class W, int VEC>
inline bool param_aligned(const W* p) {
  return reinterpret_cast<uintptr_t>(p) % detail::slot_bytes<W, VEC>() == 0;
}

NORMKIT_NAMESPACE_END
