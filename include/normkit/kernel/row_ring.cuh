// normkit/kernel/row_ring.cuh: row_cluster_registers' loop for rows quantized
// with per-row scales, and for 16-bit RMSNorm rows that need no row maximum
// where the plan gives it them (kRingsRows). Each CTA's part of its rows flows through
// a ring of chunks in shared memory instead of the registers: chunk q of a
// row is slots 2q and 2q + 1 of every thread (32 bytes x TEAM, one contiguous
// run of x), copied by the copy engine (cp.async.bulk, completing on the
// chunk's "full" mbarrier) as soon as the output walk has freed the chunk it
// replaces (its "empty" mbarrier, one arrival a warp). The ring holds more
// than a row's part, so the next row's first chunks are in flight while this
// row's statistics are walked and reduced and while it is written: the SM's
// loads no longer stop at each row's reduction, which waits for the slowest
// CTA of the cluster. The registers the row held hold the weight's slots
// instead, loaded once (the held form of the epilogue's hooks): a CTA's part
// is the same columns for every row it runs, and the weight needs no L1,
// which the ring takes. Measured against the rolled loop (docs/performance.md,
// changes 92 and 93): per-row fp8 bf16 N = 131072 and 262144 about 2 points
// faster (run 226: 93.7% and 91.2% of the copy), int8 2-3. These rows are
// then close to bound by issue (ncu: 0.70 instructions a cycle a scheduler
// with chunks of one slot, whose waits, arrivals and ring arithmetic cost 11%
// more instructions than the rolled loop; chunks of two halved them, +1 to
// +1.7 points). 16-bit rows whose output needs no maximum (RMSNorm
// converted, Gemma's (1 + w), static fp8 and int8) take the same ring where
// the plan gives it them (change 107: bf16 N = 262144 in clusters of 4,
// static int8 81% -> 90%, fp8 85.6% -> 91%, Gemma 85% -> 88.5%, RMSNorm
// 85.7% -> 87.9%; static ones at 131072 in clusters of 2 +2 to +5 points,
// where converted rows lost 1.2-1.4 to the prefetching loop). Since the row
// counter and the staggered start, converted rows of 262144 run faster in
// the prefetching loop again (change 140: 92.9% -> 97.9%), so the plan
// gives them the ring only in clusters of 8, and static ones of 131072
// (clusters of 2, change 143: +2 to +2.4) only in clusters of 4 or more
// (rings_over_prefetch).
//
// The bits are those of the register loop: the same values (apply_prefetched
// gives apply_whole's), the statistics' walk over the same slots in the same
// order (with the maximum folded in, or without it), the same reducer.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../block/async_copy.cuh"
#include "../block/row_loader.cuh"
#include "../config.cuh"
#include "../epilogue/hooks.cuh"
#include "../stats/row_stats.cuh"
#include "row_output.cuh"
#include "row_schedule.cuh"
#include "row_views.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace kernel {

/// The CTA size that runs rows through a ring: 1024 threads, one CTA an SM.
/// Rolled rows in CTAs of 512 (two an SM: bf16 N = 65536 in clusters of 2)
/// measured 4 points slower ringed (change 92) and keep the rolled loop.
inline constexpr int kRingTeam = 1024;

/// Slots of every thread in a chunk of the ring (32 bytes a thread, 32 KiB
/// at 1024 threads): two rather than one halves the mbarrier waits,
/// arrivals, copies and ring arithmetic a row (change 93: +1 to +1.7 points).
inline constexpr int kRingChunkSlots = 2;
/// Chunks in the ring: 14 slots of every thread (224 KiB at 1024 threads), as
/// many as fit in sm_90's 227 KiB of shared memory with the kernel's reducer
/// and the ring's mbarriers; 1.75 rows' parts of 8 slots.
inline constexpr int kRingChunks = 14 / kRingChunkSlots;

/// Dynamic shared memory of a ring of a CTA of `threads` threads (its chunks
/// and two mbarriers a chunk).
NORMKIT_HOST_DEVICE constexpr size_t ring_smem_bytes(int threads) {
  return size_t{16} * threads * kRingChunks * kRingChunkSlots + size_t{16} * kRingChunks;
}

/// Whether row_cluster_registers may run these rows through a ring: rows
/// that are x's bytes (the copy engine moves them as they are), statistics
/// that walk the row once before their one reduction (RMSNorm's
/// MeanSquare), an output that needs the row maximum (per-row quantization,
/// which the register loop rolls: kRollsRows; folded into that walk,
/// kFusedRowMax) or rows of 16-bit x whose output needs none (converted, or
/// quantized with a static scale: change 107; 4-byte ones relay or are
/// prefetched), an epilogue whose parameters may be held for every row
/// (HasHeld) in 16 bytes a slot (an fp32 weight of a 16-bit row takes 32:
/// 64 registers, and the ring kernel spilled 180 bytes) and scales
/// homogeneously, rows in 16-byte slots. Rows that need no maximum are
/// prefetched as well (kPrefetchesRows); the plan picks the ring for them
/// where it measured faster (plan.cuh, cluster_ring_smem_bytes).
template <class Problem>
inline constexpr bool kRingsRows =
    Problem::Input::kIsPlainCopy &&
    (Problem::Output::kNeedsRowAbsMax || sizeof(typename Problem::Storage) == 2) &&
    stats::walks_before_reducing_v<typename Problem::Stats> &&
    detail::epilogue_homogeneous_v<typename Problem::Epilogue> &&
    detail::HeldSlotBytes<typename Problem::Epilogue, Problem::kVec>::value == 16 &&
    detail::HasWholeSlots<typename Problem::Epilogue, Problem::kVec>::value &&
    sizeof(detail::RawSlot<typename Problem::Storage, Problem::kVec>) == 16;

}  // namespace kernel

namespace detail {

/// Where a row's chunks lie in the ring: its first chunk in ring slot
/// `first` of lap `lap` (the ring's R slots are reused once a lap; a slot's
/// mbarriers complete one phase a lap, so lap & 1 is the parity to await).
template <int R>
struct RingPlace {
  uint32_t first = 0;
  uint32_t lap = 0;
  /// Ring slot and lap of the row's chunk k (k < R).
  NORMKIT_DEVICE uint32_t slot(int k) const { return first + k >= R ? first + k - R : first + k; }
  NORMKIT_DEVICE uint32_t parity(int k) const { return (first + k >= R ? lap + 1 : lap) & 1u; }
  /// The place of the row `chunks` chunks later.
  NORMKIT_DEVICE RingPlace advanced(int chunks) const {
    return first + chunks >= R ? RingPlace{first + chunks - R, lap + 1} : RingPlace{first + chunks, lap};
  }
};

/// A thread's VECS slots of one row in the ring, seen by a statistics
/// policy; each slot is read once its chunk has landed.
template <class S, int VECS, int VEC, int TEAM>
struct RingView {
  static constexpr int kVec = VEC;
  static constexpr bool kResident = true;
  static constexpr bool kWhole = true;
  static constexpr int R = kernel::kRingChunks;
  const RawSlot<S, VEC>* mine;  ///< this thread's slot s of ring chunk j at mine[(j * G + s) * TEAM]
  uint64_t* full;               ///< full[j]: ring chunk j has landed
  RingPlace<R> place;
  float shift = 0.f;

  static constexpr int G = kernel::kRingChunkSlots;
  template <class F>
  NORMKIT_DEVICE void for_each_indexed_slot(F&& f) const {
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      const uint32_t j = place.slot(k / G);
      if (k % G == 0) mbarrier_wait_parity(full + j, place.parity(k / G));
      float v[VEC];
      slot_to_float(mine[(j * G + k % G) * TEAM], v);
      f(v, VEC, k);
    }
  }
  template <class F>
  NORMKIT_DEVICE void for_each_slot(F&& f) const {
    for_each_indexed_slot([&](const float (&v)[VEC], int valid, int) { f(v, valid); });
  }
};

/// A copy of a held weight slot the compiler cannot see through
/// (hide_slot_words): the slots are loop-invariant, and without it ptxas
/// converted all of them to fp32 once, before the rows, and spilled the 64
/// floats.
template <class T>
NORMKIT_DEVICE T opaque_copy(const T& held) {
  T copy = held;
  hide_slot_words(copy);
  return copy;
}

/// RowMaxTap (BARE) with the weight's slots in registers: folds max
/// |epilogue(x)| of slot s into *m.
template <class Problem, class Pre>
struct HeldWeightRowMaxTap {
  const typename Problem::Params& p;
  const Pre* pre;
  float* m;
  template <int VEC, class Whole>
  NORMKIT_DEVICE void operator()(const float (&x)[VEC], int, int s, Whole) const {
    *m = fold_slot_absmax<Problem, true, Pre, false>(*m, p, 0, 0, VEC, RowStats::unit(), x, opaque_copy(pre[s]));
  }
};

/// Rows first, first + stride, ... of p (or as p.row_counter hands them out:
/// row_schedule.cuh), this CTA's part (columns col_base
/// .. col_base + TEAM * VECS * kVec, all valid, every access slot-aligned:
/// row_cluster_registers' WHOLE form) through a ring in `smem`
/// (ring_smem_bytes(TEAM)). first_part: this CTA writes the rows' statistics
/// and scales. Every thread of the cluster runs the same rows.
template <class Problem, int VECS, int TEAM, class Reducer>
NORMKIT_DEVICE void ring_rows(const typename Problem::Params& p, int64_t first, int64_t stride, int64_t col_base,
                              bool first_part, Reducer& reducer, unsigned char* smem) {
  static_assert(kernel::kRingsRows<Problem>, "normkit: ring_rows runs only the problems kRingsRows admits");
  constexpr int VEC = Problem::kVec;
  constexpr int R = kernel::kRingChunks;
  static_assert(TEAM == kernel::kRingTeam, "normkit: ring_smem_bytes sizes the ring for kRingTeam threads");
  static_assert(TEAM % 32 == 0, "normkit: a ring's CTA is whole warps (one arrival a warp frees a chunk)");
  constexpr int G = kernel::kRingChunkSlots;
  constexpr int CPR = VECS / G;  // chunks a row
  static_assert(VECS % G == 0, "normkit: a row's part is whole chunks");
  static_assert(R > CPR, "normkit: a ring must hold more than one row's part (kernel::kRingChunks)");
  static_assert(R <= 2 * CPR,
                "normkit: a ring of more than two rows' parts would copy chunks of a row further ahead than its "
                "RowSchedule<2> knows (raise the schedule's LEAD, or shrink kernel::kRingChunks)");
  constexpr uint32_t kChunkBytes = 16u * TEAM * G;
  using S = typename Problem::Storage;
  using Slot = RawSlot<S, VEC>;
  // The row code every kernel shares, with the epilogue's held form as its
  // prefetched parameters (HeldEpilogue).
  using Work = WithHeldParams<Problem>;
  using Epi = typename Work::Epilogue;
  using Pre = typename Epi::template Prefetched<VEC>;
  using View = RingView<S, VECS, VEC, TEAM>;
  const int lane = threadIdx.x;
  Slot* ring = reinterpret_cast<Slot*>(smem);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + size_t{kChunkBytes} * R);
  uint64_t* empty = full + R;
  if (first >= p.rows) return;  // the launcher starts no more clusters than rows; a guard all the same
  // The CTA's rows: thread 0 copies chunks of the next two rows during a
  // row's output walk, after its reduction, so two rows ahead
  // (row_schedule.cuh); from the caller's counter in every cluster the ring
  // runs in. On an H100 the counter gained per-row and static fp8 bf16 N =
  // 262144 (clusters of 4) +2.9 and +2.1 points (change 130), and 131072
  // (clusters of 2, where it was level, and -2.3 to -2.6 at M = 512, until
  // the clusters started staggered) +3.5 and +2.9 (changes 135 and 137).
  // Chunks are numbered in the CTA's sequence (at most 2^32: a CTA runs
  // fewer than 2^29 rows of at least 2^15 bytes): chunk c is chunk c % CPR
  // of the CTA's (c / CPR)-th row.
  RowSchedule<2> rows(p.row_counter, reducer, first, stride);
  uint32_t seq = 0;  // the current row's place in the CTA's sequence
  if (lane == 0) {
    for (int j = 0; j < R; ++j) {
      mbarrier_init(full + j, 1);
      mbarrier_init(empty + j, TEAM / 32);
    }
    fence_mbarrier_init();
  }
  __syncthreads();
  // Thread 0 copies chunk c into ring slot c % R, once chunk c - R has been
  // freed there (its (c / R - 1)-th release), in sequence order.
  auto issue = [&](uint32_t c) {
    const int64_t row = rows.ahead(static_cast<int>(c / CPR - seq));
    if (row >= p.rows) return;
    const uint32_t j = c % R;
    if (c >= R) {
      mbarrier_wait_parity(empty + j, (c / R - 1) & 1u);
      fence_proxy_async_shared();  // the warps' reads of the chunk before the copy engine's writes
    }
    const S* src = p.x + row * p.x_stride + col_base + static_cast<int64_t>(c % CPR) * G * TEAM * VEC;
    mbarrier_arrive_expect_tx(full + j, kChunkBytes);
    bulk_copy_to_shared(ring + j * G * TEAM, src, kChunkBytes, full + j);
  };
  if (lane == 0) {
    for (uint32_t c = 0; c < R; ++c) issue(c);
  }
  // The weight's slots of this CTA's columns, for every row.
  Pre pre[VECS];
#pragma unroll
  for (int k = 0; k < VECS; ++k) {
    pre[k] = Epi::template prefetch_whole<VEC>(p.epilogue, col_base + RowLoader<S, VEC>::column(k, lane, TEAM));
  }
  constexpr bool kFolds = kFoldsRowFactor<Work, View, Reducer>;
  static_assert(kRoundsInEpilogue<Work, kFolds> == kRoundsInEpilogue<Problem, kFolds>,
                "normkit: the held form must round where the epilogue's other forms do (apply_held's addend form), "
                "or a row's bits would depend on the kernel shape");
  constexpr bool kRowMax = Problem::Output::kNeedsRowAbsMax;
  static_assert(!kRowMax || kFusedRowMax<Work, View, Reducer>,
                "normkit: ring_rows folds the row maximum into the statistics' walk (kRingsRows)");
  static_assert(!stats_uses_shift_v<typename Problem::Stats, View, Reducer>,
                "normkit: the ring's view has no row pilot (RingView::shift is 0): statistics that shift by it "
                "would see another shift than the other shapes' and give other bits");
  RingPlace<R> place;
  uint32_t c0 = 0;  // the row's first chunk in the CTA's sequence
  for (; rows.row() < p.rows; rows.advance(), ++seq, c0 += CPR, place = place.advanced(CPR)) {
    const int64_t row = rows.row();
    rows.draw(reducer);
    const View view{ring + lane, full, place};
    float amax = 0.f;
    RowStats st;
    if constexpr (kRowMax) {
      float m = 0.f;
      using Tap = HeldWeightRowMaxTap<Work, Pre>;
      const InterleavedParts<View, 1, Tap> tapped{view, Tap{p, pre, &m}};
      st = stats_with_row_max<Work>(p, tapped, reducer, m, &amax);
    } else {  // no maximum (change 107): the statistics alone, as the register loop's
      st = Work::Stats::compute(view, reducer, p.cols, p.eps);
    }
    rows.learn(reducer);  // before the output walk's copies of the row two ahead
    const bool leader = first_part && lane == 0;
    if (leader) store_row_stats(p, row, st);
    const float factor = output_factor<Work, View, Reducer>(p, row, amax, leader, st);
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      const int q = k / G;
      const uint32_t j = place.slot(q);
      const Slot one[1] = {ring[(j * G + k % G) * TEAM + lane]};
      const Pre w = opaque_copy(pre[k]);
      store_slots<Work, 1, true, kFolds>(p, row, col_base, int64_t{TEAM} * VECS * VEC, k, lane, TEAM, st, factor,
                                            one, &w);
      if (k % G == G - 1) {
        __syncwarp();
        if ((lane & 31) == 0) mbarrier_arrive(empty + j);
        // One chunk behind, so that thread 0 seldom waits for the slowest warp.
        if (lane == 0 && q > 0) issue(c0 + q - 1 + R);
      }
    }
    if (lane == 0) issue(c0 + CPR - 1 + R);
  }
}

}  // namespace detail
NORMKIT_NAMESPACE_END
