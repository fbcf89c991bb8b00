// normkit/block/async_copy.cuh: copies from global to shared memory that
// bypass registers: 16 bytes a thread (cp.async, sm_80+), so a thread can put
// its whole share of a long row in flight at once, and the copy engine's bulk
// copies completing on mbarriers (sm_90+), with the mbarrier operations
// their users need (the ring: kernel/row_ring.cuh; ClusterAllReduce).
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

// mbarriers in this CTA's shared memory, and bulk copies that complete on
// them (sm_90+; the calls compile to nothing below, where no kernel that
// needs them is planned: the ring runs in clusters).

/// Initializes an mbarrier that completes a phase after `count` arrivals
/// (and, where expected, the transaction bytes). Call fence_mbarrier_init
/// and a CTA barrier before any other thread or the copy engine uses it.
NORMKIT_DEVICE void mbarrier_init(uint64_t* bar, uint32_t count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_address(bar)), "r"(count) : "memory");
#else
  (void)bar;
  (void)count;
#endif
}

/// Makes initialized mbarriers visible to the cluster and the copy engine.
NORMKIT_DEVICE void fence_mbarrier_init() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

/// One arrival (release: this thread's reads of what the barrier guards are done).
NORMKIT_DEVICE void mbarrier_arrive(uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_address(bar)) : "memory");
#else
  (void)bar;
#endif
}

/// One arrival that also expects `bytes` of transactions in this phase.
NORMKIT_DEVICE void mbarrier_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_address(bar)), "r"(bytes)
               : "memory");
#else
  (void)bar;
  (void)bytes;
#endif
}

/// Waits until the phase of parity `parity` has completed (acquire). The
/// retry loop is inside the asm, so the compiler sees one instruction (its
/// own loop around try_wait became a region it spilled registers around).
NORMKIT_DEVICE void mbarrier_wait_parity(uint64_t* bar, uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n .reg .pred ready;\n"
      "retry:\n mbarrier.try_wait.parity.shared::cta.b64 ready, [%0], %1;\n"
      " @!ready bra retry;\n}" ::"r"(smem_address(bar)),
      "r"(parity)
      : "memory");
#else
  (void)bar;
  (void)parity;
#endif
}

/// Orders the shared-memory accesses this thread has seen complete (the
/// reads of a buffer by the CTA's threads, released to it through an
/// mbarrier it waited on) before the copy engine's writes it issues next:
/// those go through the async proxy, which the mbarrier's ordering of the
/// generic proxy does not cover by itself (PTX ISA, proxy fences). Call it
/// between the wait for a buffer's readers and the copy that refills it.
NORMKIT_DEVICE void fence_proxy_async_shared() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

/// The copy engine copies `bytes` (a multiple of 16; both addresses 16-byte
/// aligned) from global memory into this CTA's shared memory and completes
/// them on `bar` (which must expect them: mbarrier_arrive_expect_tx).
NORMKIT_DEVICE void bulk_copy_to_shared(void* smem, const void* gmem, uint32_t bytes, uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
          smem_address(smem)),
      "l"(gmem), "r"(bytes), "r"(smem_address(bar))
      : "memory");
#else
  (void)smem;
  (void)gmem;
  (void)bytes;
  (void)bar;
#endif
}

}  // namespace detail
NORMKIT_NAMESPACE_END
