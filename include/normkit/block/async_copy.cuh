// normkit/block/async_copy.cuh: 16-byte copies from global to shared memory
// that bypass registers (cp.async, sm_80+), so a thread can put its whole share
// of a long row in flight at once.
#pragma once

#include <cstdint>

#include "../config.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace detail {

/// The 32-bit shared-state-space address of a generic pointer into this
/// CTA's shared memory, as PTX instructions on shared memory take it.
NORMKIT_DEVICE uint32_t smem_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/// True where cp.async exists in the code being compiled.
NORMKIT_DEVICE constexpr bool has_async_copy() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return true;
#else
  return false;
#endif
}

/// Starts copying 16 bytes (both addresses 16-byte aligned). L2 only (.cg):
/// the data is read once.
NORMKIT_DEVICE void async_copy_16(void* smem, const void* gmem) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_address(smem)), "l"(gmem) : "memory");
#else
  (void)smem;
  (void)gmem;
#endif
}

/// Waits for this thread's outstanding async copies (visible to this thread only).
NORMKIT_DEVICE void async_copy_wait_all() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

}  // namespace detail
NORMKIT_NAMESPACE_END
