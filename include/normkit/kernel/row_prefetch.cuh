// normkit/kernel/row_prefetch.cuh: row_cluster_registers' loop for 16-bit
// RMSNorm rows and fp32 LayerNorm rows of plain x, with outputs that need
// no row maximum (converted, or quantized with a static scale:
// kPrefetchesRows), slot-aligned, in CTAs of 1024 threads: each
// CTA holds its
// part of a row in registers, as the kernel's plain loop does, but reads the
// first kPrefetchSlots slots of it from a small ring in shared memory that
// the copy engine (`cp.async.bulk`) filled during the CTA's previous row.
// Once every warp has read the ring (a CTA barrier just before this row's
// first reduction), thread 0 starts the copies of the next row's first
// slots: so some of the SM's loads are in
// flight while the row reduces (which waits for the slowest CTA of the
// cluster) and is written, and, unlike loading the next row into registers
// (docs/performance.md, change 64) or relaying it (change 72, 16-bit rows
// bimodal), the copies do not queue in the warps' own loads ahead of the
// output walk's weight loads. The rest of the row loads as before.
//
// The ring is small on purpose (docs/performance.md, change 94): it
// shrinks L1, which holds the weight every row reads again (a part of 128
// KiB at bf16 N = 131072). RMSNorm bf16 and fp16 N = 131072 in clusters of
// 2: 87.6-89.2% of the copy -> 90.3-92.5% with 2 slots (1 slot the same;
// 3 level, 4 bimodal, all 8 10 points slower). Fused-add rows (whose weight
// is kept in L1 by hint) lost with any ring (-0.1 to -20 points), also
// with their weight moved into shared memory (change 95), so they keep the
// plain loop. In clusters of 4 (bf16 N = 262144) the same ring took the
// cluster's registers from 79.4% of the copy to 86.1%, past staging's
// 82.9% (change 96), and fp32 LayerNorm rows (which do not relay) from
// 88.3% to 89.2% at N = 65536 (clusters of 2), 76.4% (bimodal) to 82.4% at
// 131072 (4; staged 76.5%) and 68.1% to 73.1% at 262144 (8) (change 97), so
// the plan runs them there in any cluster. Converted 16-bit rows of 262144
// (clusters of 4) ran through the ring of row_ring.cuh from change 107, and
// back here since change 140: with the row counter and the staggered start
// this loop reads 97.9% of the copy there against the ring's 92.9% (H100).
//
// The bits are those of the plain loop: the same values in the same
// registers, then the same normalize_held_part.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "../block/async_copy.cuh"
#include "../config.cuh"
#include "../io/input.cuh"
#include "../stats/row_stats.cuh"
#include "reduction_hook.cuh"
#include "row_schedule.cuh"
#include "rows_per_warp.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace kernel {

/// The CTA size whose rows are prefetched (one CTA an SM, as the ring's).
inline constexpr int kPrefetchTeam = 1024;

/// Slots of every thread the ring holds: the first ones of the row's part
/// (change 94: 2 slots, 32 KiB at 1024 threads, measured best; see above).
inline constexpr int kPrefetchSlots = 2;

/// Dynamic shared memory of a prefetching CTA of `threads` threads: its ring
/// (16 bytes a slot) and one "full" mbarrier a slot.
NORMKIT_HOST_DEVICE constexpr size_t prefetch_smem_bytes(int threads) {
  return size_t{16} * threads * kPrefetchSlots + size_t{8} * kPrefetchSlots;
}

/// Whether row_cluster_registers prefetches this problem's rows: rows that
/// are x's bytes as they are (the copy engine moves them; a fused add lost
/// with any ring, above), whose output needs no row maximum (per-row-quantized
/// rows ring or roll: kRingsRows, kRollsRows; rows quantized with a static
/// scale are prefetched as plain rows are: docs/performance.md, change 99),
/// in 16-byte slots;
/// of a 16-bit type where the statistics read them only before their first
/// reduction (RMSNorm's MeanSquare: changes 94 and 96; 16-bit LayerNorm
/// was not measured with it), of a 4-byte type where they do not (4-byte
/// rows read only before reducing relay instead, kRelaysRows: LayerNorm
/// fp32, change 97). Which statistics run does not matter to the loop: the
/// whole part is in registers before the first walk.
template <class Problem>
inline constexpr bool kPrefetchesRows =
    Problem::Input::kIsPlainCopy && std::is_same_v<typename Problem::X, typename Problem::Storage> &&
    !Problem::Output::kNeedsRowAbsMax &&
    sizeof(detail::RawSlot<typename Problem::Storage, Problem::kVec>) == 16 &&
    (sizeof(typename Problem::Storage) == 2 ? stats::walks_before_reducing_v<typename Problem::Stats>
                                             : !stats::walks_before_reducing_v<typename Problem::Stats>);

}  // namespace kernel

namespace detail {

/// Rows first, first + stride, ... of p (or as p.row_counter hands them out:
/// row_schedule.cuh), this CTA's part (columns col_base
/// .. col_base + TEAM * VECS * kVec, all valid, every access slot-aligned:
/// row_cluster_registers' WHOLE form), the first kPrefetchSlots slots of
/// each read from a ring in `smem` (kernel::prefetch_smem_bytes(TEAM)) that
/// the copy engine filled during the previous row. first_part: this CTA
/// writes the rows' statistics. Every thread of the cluster runs the same
/// rows.
template <class Problem, int VECS, int TEAM, class Reducer>
NORMKIT_DEVICE void prefetch_rows(const typename Problem::Params& p, int64_t first, int64_t stride, int64_t col_base,
                                  bool first_part, Reducer& reducer, unsigned char* smem) {
  static_assert(kernel::kPrefetchesRows<Problem>, "normkit: prefetch_rows runs only the problems kPrefetchesRows admits");
  static_assert(TEAM == kernel::kPrefetchTeam, "normkit: prefetch_smem_bytes sizes the ring for kPrefetchTeam threads");
  constexpr int Q = kernel::kPrefetchSlots;
  static_assert(Q >= 1 && Q < VECS, "normkit: the ring holds some of a thread's slots, not all (kPrefetchSlots)");
  using In = typename Problem::Input;
  constexpr int VEC = Problem::kVec;
  constexpr uint32_t kChunkBytes = 16u * TEAM;  // slot q of the whole team: one contiguous run of x
  using Slot = RawSlot<typename Problem::Storage, VEC>;
  const int lane = threadIdx.x;
  const int64_t part = int64_t{TEAM} * VECS * VEC;
  // Slot q of thread t at ring[q * TEAM + t]: a warp's 32 slots are 512
  // consecutive bytes, so no bank conflicts.
  Slot* ring = reinterpret_cast<Slot*>(smem);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + size_t{kChunkBytes} * Q);
  if (first >= p.rows) return;  // the launcher starts no more clusters than rows; a guard all the same
  if (lane == 0) {
    for (int q = 0; q < Q; ++q) mbarrier_init(full + q, 1);
    fence_mbarrier_init();
  }
  __syncthreads();
  // Thread 0: the copies of a row's first Q slots of the team.
  auto issue = [&](int64_t row) {
#pragma unroll
    for (int q = 0; q < Q; ++q) {
      mbarrier_arrive_expect_tx(full + q, kChunkBytes);
      bulk_copy_to_shared(ring + q * TEAM, p.x + row * p.x_stride + col_base + int64_t{q} * TEAM * VEC, kChunkBytes,
                          full + q);
    }
  };
  if (lane == 0) issue(first);
  uint32_t lap = 0;  // the rows this CTA has run: each completes one phase of every mbarrier
  // The next row's copies start before this row's first reduction: two rows
  // ahead (row_schedule.cuh).
  RowSchedule<2> rows(p.row_counter, reducer, first, stride);
  for (; rows.row() < p.rows; rows.advance(), ++lap) {
    const int64_t row = rows.row();
    rows.draw(reducer);
    Slot v[VECS];
    {
      // The slots past the ring, loaded first, so that they are in flight
      // while the ring's are read.
      Slot rest[VECS - Q];
      load_input<In, VECS - Q, VEC, true>(p, row, col_base, part, Q, lane, TEAM, true, rest);
#pragma unroll
      for (int k = Q; k < VECS; ++k) v[k] = rest[k - Q];
    }
#pragma unroll
    for (int q = 0; q < Q; ++q) {
      mbarrier_wait_parity(full + q, lap & 1u);
      v[q] = ring[q * TEAM + lane];
    }
    // Just before the row's first reduction, thread 0 starts the next row's
    // copies once every thread has read the ring: a CTA barrier (every
    // thread runs the hook; the reduction's own barrier follows at once),
    // then a proxy fence, since the copy engine writes through the async
    // proxy. (First written with an "empty" mbarrier, one arrival a warp
    // after a warp barrier, instead of the CTA barrier: correct by the PTX
    // memory model as far as we can tell, but compute-sanitizer's racecheck
    // reported the ring's reads and the next copies as racing, device run
    // 231, as it does not for a handoff that a CTA barrier orders.)
    const int64_t next = rows.ahead(1);
    auto prefetch_next = [&]() {
      __syncthreads();
      if (lane == 0 && next < p.rows) {
        fence_proxy_async_shared();
        issue(next);
      }
    };
    using Hooked = HookBeforeFirstReduction<Reducer, decltype(prefetch_next)>;
    Hooked hooked{reducer, prefetch_next, false};
    normalize_held_part<Problem, VECS, true, Hooked, 1, false>(p, row, true, col_base, part, first_part, lane, TEAM,
                                                               hooked, v);
    rows.learn(reducer);
  }
}

}  // namespace detail
NORMKIT_NAMESPACE_END
