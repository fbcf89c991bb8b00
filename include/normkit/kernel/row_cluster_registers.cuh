// normkit/kernel/row_cluster_registers.cuh: kernel shape 6 (row_in_cluster's
// counterpart in registers: kRowInClusterRegisters). A
// cluster of C CTAs (sm_90) holds one row at a time, each CTA its own part of
// the columns in registers, VECS slots per thread (the register shapes' row
// code, normalize_register_part), combined by ClusterAllReduce. First for
// outputs that need the row on chip (per-row quantization) past what one
// CTA's registers hold: the row is read once and never staged through shared
// memory, and a CTA's work per row is one load, the reductions and one store
// (docs/performance.md, change 37); since change 52 also for other rows
// where it measured faster than staging (plan.cuh, registers_beat_staging).
//
// The grid is as many clusters as are resident, striding over the rows:
// launching a cluster per row measured 7-20 points slower (each cluster then
// pays its construction's cluster barrier and is placed as a unit).
//
// Plain rows (kRelaysRows) are relayed: each CTA parks its part in shared
// memory once the statistics' walk has read it, and loads its part of the
// next row while this one reduces and is written (row_relay.cuh). Rows
// quantized with per-row scales in CTAs of 1024 threads (kRingsRows) flow
// through a ring of chunks in shared memory, filled by the copy engine
// (row_ring.cuh); in CTAs of 512 they roll (kRollsRows). Plain 16-bit
// RMSNorm and fp32 LayerNorm rows in CTAs of 1024 threads read their first
// slots from a small ring the copy engine filled during the previous row
// (kPrefetchesRows, row_prefetch.cuh), but for the 16-bit rows the plan
// runs through the ring instead (static scales in any cluster, converted
// rows in clusters of 8: changes 107 and 140). 16-bit add + LayerNorm rows
// whose parts of 8 slots fill a cluster of 2 hold them split, half in
// shared memory (kSplitsParts, row_split_part.cuh: change 115). 16-bit
// LayerNorm rows with per-row scales (the maximum a walk of its own; their
// weight and bias come from L2, so they neither roll nor ring) run the plain
// loop at 4 slots a thread, which holds y between the maximum's walk and
// the output's (normalize_held_part's kHoldsY; plan.cuh,
// per_row_four_slot_parts: change 172).
//
// With a caller's counter (LaunchOptions::row_counter), the plain loop's
// WHOLE form, split parts (WHOLE and checked), the prefetching loop, the
// ring and rolled rows take their rows from it (row_schedule.cuh:
// clusters that finish rows first take more of them), rolled rows only in
// calls of kRollCounterMinRounds rows or more per resident cluster; the
// checked plain loop and relayed rows keep the fixed stride (measured,
// change 130: the checked loop lost 4 points with it at add + RMSNorm;
// relayed rows not measured), and so do per-row-quantized LayerNorm rows
// in CTAs of 1024 threads (RowHandout::kFixedStride, kFixedStrideInFullCtas:
// change 177).
#pragma once

#include <cstdint>
#include <type_traits>

#include "../block/block_reduce.cuh"
#include "../block/cluster_reduce.cuh"
#include "../config.cuh"
#include "../epilogue/hooks.cuh"
#include "row_prefetch.cuh"
#include "row_relay.cuh"
#include "row_ring.cuh"
#include "row_schedule.cuh"
#include "row_split_part.cuh"
#include "start_stagger.cuh"
#include "rows_per_warp.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace kernel {

/// CTAs of up to 1024 threads (one per SM, 64 registers a thread, as two of
/// 512 would be): a row then splits over half the CTAs, and each reduction
/// waits for fewer of them (fp8 with per-row scales, bf16 N = 131072: 68% ->
/// 79% of the copy, clusters of 2 instead of 4; docs/performance.md, change
/// 50).
inline constexpr int kClusterRegistersMaxThreads = 1024;

/// Whether row_cluster_registers' output walk loads the next row's part into
/// the registers it frees (normalize_held_part's ROLL): for rows that need
/// their maximum (per-row quantization) and whose weight the kernel keeps in
/// L1 (an epilogue that takes the hint: Scale, so RMSNorm; fp8 bf16 N =
/// 262144 75.7% -> 88.6-89.4% of the copy, int8 131072 80.6% -> 90.3-90.9%;
/// docs/performance.md, change 78). Rows whose parameters come from L2
/// measured slower with it (plain RMSNorm bf16 131072 -5, LayerNorm fp32
/// 65536 -13.5: the output walk's parameter loads queue behind the next
/// row's), so per-row-quantized LayerNorm (Affine: weight and bias from L2;
/// its rolled kernel also spilled 100 bytes) keeps the plain loop. Since
/// change 92 those rows in CTAs of kRingTeam threads run through a ring in
/// shared memory instead, where kRingsRows admits them and the plan gave the
/// ring (row_ring.cuh); the rolled loop runs the rest (512-thread CTAs).
template <class Problem>
inline constexpr bool kRollsRows =
    Problem::Input::kIsPlainCopy && Problem::Output::kNeedsRowAbsMax &&
    !std::is_same_v<detail::ParamsKeptInL1<Problem, true>, Problem>;

/// The loop row_cluster_registers runs in the shared memory the plan gave
/// its CTAs for one (launched as that much dynamic shared memory): none, the
/// ring (kRingsRows, row_ring.cuh), the prefetching loop
/// (kPrefetchesRows, row_prefetch.cuh) or split parts (kSplitsParts,
/// row_split_part.cuh). Rows both the ring and the prefetching loop admit
/// take the one the plan chose (plan.cuh, cluster_ring_smem_bytes).
enum class SmemLoop { kNone, kRing, kPrefetch, kSplitPart };

/// How row_cluster_registers' plain WHOLE loop hands out rows (its HANDOUT):
/// from the caller's row counter, where one is given (kCounter), or by the
/// fixed stride with the counter compiled out (kFixedStride). The other
/// loops hand out rows one way each (kTakesCounter).
enum class RowHandout { kCounter, kFixedStride };

/// The rows whose plain WHOLE loop the launcher runs at the fixed stride
/// (RowHandout::kFixedStride) in CTAs of 1024 threads: rows that need their
/// maximum but neither roll nor relay, per-row-quantized 16-bit LayerNorm
/// (bf16 N = 262144 in clusters of 8: change 177). There the counter's
/// state cost the kernel an 8-byte spill (a store and two loads a row a
/// thread, through L2); without it, no spill, and on an H100 per-row fp8
/// 262144 60.1% -> 64.5% of the copy, int8 59.1% -> 62.9%, where the counter
/// alone gained nothing (experiment 176). In CTAs of 512 threads (65536,
/// 131072: clusters of 4 and 8) the same rows keep the counter: without it
/// they lost 4-5 points even with the spill gone.
template <class Problem>
inline constexpr bool kFixedStrideInFullCtas =
    Problem::Output::kNeedsRowAbsMax && !kRollsRows<Problem> && !kRelaysRows<Problem>;

/// Whether row_cluster_registers<Problem, VECS, WHOLE, TEAM, LOOP, HANDOUT>
/// takes its rows from the caller's row counter (where one is given): the
/// loops of shared memory (split parts WHOLE or checked, the prefetching
/// loop, the ring), rolled rows, and the plain loop's WHOLE form unless its
/// HANDOUT is the fixed stride. The checked plain loop and relayed rows keep
/// the fixed stride (measured, change 130: the checked loop lost 4 points
/// with the counter at add + RMSNorm; relayed rows not measured). Such
/// loops also wait out their cluster's phase of the staggered start
/// (start_stagger.cuh): a cluster started late takes fewer rows, where at
/// the fixed stride it would finish late. The kernel compiles the draw and
/// the wait in only where this holds (where the wait went unused it cost
/// the checked loops, which spill, 0.5-1.3 points; device run 305), and the
/// launcher computes the wait's step only for the instantiation it
/// launches, from this same trait.
template <class Problem, bool WHOLE, SmemLoop LOOP, RowHandout HANDOUT = RowHandout::kCounter>
inline constexpr bool kTakesCounter =
    HANDOUT == RowHandout::kCounter && (LOOP != SmemLoop::kNone || (WHOLE && !kRelaysRows<Problem>));

/// Whether row_cluster_registers<Problem, VECS, WHOLE, TEAM, LOOP> runs the
/// rolled loop (kRollsRows): WHOLE rows at a CTA size known at compile time,
/// in no loop of shared memory and not relayed. The kernel dispatches on it
/// and kCounterMinRounds below asks it, so the two cannot disagree.
template <class Problem, bool WHOLE, int TEAM, SmemLoop LOOP>
inline constexpr bool kRunsRolled =
    LOOP == SmemLoop::kNone && WHOLE && TEAM > 0 && kRollsRows<Problem> && !kRelaysRows<Problem>;

/// Rolled rows (kRunsRolled) take the caller's row counter
/// only in calls of at least this many rows per resident cluster; below it
/// the launcher runs them at the fixed stride (LaunchOptions::row_counter
/// dropped for the call, so no stagger either). Measured (docs/performance.md,
/// change 141; per-row fp8 and int8 bf16 N = 65536, 132 clusters of 2 on an
/// H100, counter against fixed stride): 2-4 rounds -1.5 to -2.6 points (the
/// fixed stride gives those few rows out evenly, and a ticket costs), 5.3
/// rounds level, 7.8 rounds +2.5, 31 rounds +3.2 and +3.5.
inline constexpr int64_t kRollCounterMinRounds = 6;

/// The fewest rows per resident cluster at which
/// row_cluster_registers<Problem, VECS, WHOLE, TEAM, LOOP> takes the caller's
/// row counter (launch/launcher.cuh drops it for smaller calls): for rolled
/// rows kRollCounterMinRounds; 0 (any call) for the other loops that take it.
template <class Problem, bool WHOLE, int TEAM, SmemLoop LOOP>
inline constexpr int64_t kCounterMinRounds = kRunsRolled<Problem, WHOLE, TEAM, LOOP> ? kRollCounterMinRounds : 0;

/// `part`: the columns each CTA holds (rank r: [r * part, (r + 1) * part)),
/// blockDim.x * VECS * kVec of them, all valid (the launcher plans only rows
/// that split so; the checked form relies on it, as it checks no bounds).
/// WHOLE: every access is slot-aligned as well.
/// TEAM: the CTA's threads, for rolled rows (kRollsRows) in CTAs of 512 or
/// 1024 threads (the launcher's choice), so that every slot's address is one
/// base plus an immediate offset: at blockDim.x the addresses of the next
/// row's slots cost 14% more instructions a row (per-row fp8, SASS), with it
/// 3% fewer than the plain loop. 0: blockDim.x, and the plain loop.
/// LOOP: kRing, the ring's loop (kRingsRows, WHOLE, TEAM == kRingTeam),
/// launched with ring_smem_bytes of dynamic shared memory (row_ring.cuh);
/// kPrefetch, the prefetching loop (kPrefetchesRows, WHOLE, TEAM ==
/// kPrefetchTeam), with prefetch_smem_bytes (row_prefetch.cuh);
/// kSplitPart, split parts (kSplitsParts, VECS == kSplitPartVecs, TEAM ==
/// kSplitPartTeam, WHOLE or checked), with split_part_smem_bytes
/// (row_split_part.cuh).
/// HANDOUT: kFixedStride for the plain WHOLE loop (TEAM 0, LOOP kNone, rows
/// that neither roll nor relay) at the fixed stride with the counter
/// compiled out (kFixedStrideInFullCtas); kCounter for every other
/// instantiation (kTakesCounter says which loops then take it).
template <class Problem, int VECS, bool WHOLE, int TEAM = 0, SmemLoop LOOP = SmemLoop::kNone,
          RowHandout HANDOUT = RowHandout::kCounter>
__global__ void __launch_bounds__(kClusterRegistersMaxThreads, 1)
    row_cluster_registers(const __grid_constant__ typename Problem::Params p, int64_t part) {
  using Reducer = ClusterAllReduce<BlockAllReduce<kClusterRegistersMaxThreads>>;
  __shared__ typename Reducer::TempStorage temp;
  Reducer reducer(temp);
  const unsigned csize = reducer.size();
  const int64_t col_base = static_cast<int64_t>(reducer.rank()) * part;
  // The parts are whole (see above): the checked form needs no bounds, only
  // narrower accesses (detail::kEverySlotValid).
  const int64_t cols = WHOLE ? part : detail::kEverySlotValid;
  static_assert(HANDOUT == RowHandout::kCounter ||
                    (WHOLE && TEAM == 0 && LOOP == SmemLoop::kNone && !kRelaysRows<Problem>),
                "normkit: only the plain WHOLE loop (TEAM 0, SmemLoop::kNone, rows that do not relay) runs at "
                "RowHandout::kFixedStride; launch the others with RowHandout::kCounter");
  // Clusters of a counted call start staggered (start_stagger.cuh), in the
  // loops that take the counter.
  if constexpr (kTakesCounter<Problem, WHOLE, LOOP, HANDOUT>) {
    detail::stagger_start(p.start_stagger_cycles, blockIdx.x / csize);
  }
  // Rows that need their maximum (per-row quantization) take row_per_block's
  // 8-slot treatment: the maximum folded into the statistics' walk, and the
  // WHOLE form's weight kept in L1 (row_per_block.cuh; docs/performance.md,
  // change 67); fused-add rows (an input that is not a plain copy of x) the
  // weight in L1 (change 71: +0.8 to +1.2 points at bf16 N = 131072, level
  // at 262144). Plain rows measured slower with either (changes 62, 64, 68).
  constexpr bool kRowMax = Problem::Output::kNeedsRowAbsMax;
  using Tuned = detail::ParamsKeptInL1<Problem, (kRowMax || !Problem::Input::kIsPlainCopy) && WHOLE>;
  if constexpr (kRelaysRows<Problem>) {
    // blockDim.x * VECS slots (relay_smem_bytes), launched as dynamic shared memory.
    extern __shared__ __align__(16) unsigned char relay_bytes[];
    detail::relay_rows<Problem, VECS, WHOLE>(p, blockIdx.x / csize, gridDim.x / csize, col_base, cols,
                                             reducer.rank() == 0, reducer,
                                             reinterpret_cast<detail::RawSlot<typename Problem::Storage, Problem::kVec>*>(
                                                 relay_bytes));
  } else if constexpr (LOOP == SmemLoop::kSplitPart) {
    static_assert(kSplitsParts<Problem> && VECS == kSplitPartVecs && TEAM == kSplitPartTeam,
                  "normkit: split parts run kSplitsParts problems at kSplitPartVecs slots in CTAs of kSplitPartTeam "
                  "threads");
    // Half of each thread's slots in shared memory (split_part_smem_bytes,
    // launched as dynamic shared memory; row_split_part.cuh).
    extern __shared__ __align__(16) unsigned char split_bytes[];
    detail::split_part_rows<Problem, VECS, WHOLE, TEAM>(p, blockIdx.x / csize, gridDim.x / csize, col_base,
                                                        reducer.rank() == 0, reducer, split_bytes);
  } else if constexpr (LOOP == SmemLoop::kPrefetch) {
    static_assert(kPrefetchesRows<Problem> && WHOLE && TEAM == kPrefetchTeam,
                  "normkit: the prefetching loop runs kPrefetchesRows problems, WHOLE, in CTAs of kPrefetchTeam "
                  "threads");
    // The first slots of the CTA's part of each row come from a ring the
    // copy engine filled during the previous row (prefetch_smem_bytes,
    // launched as dynamic shared memory; row_prefetch.cuh).
    extern __shared__ __align__(16) unsigned char prefetch_bytes[];
    detail::prefetch_rows<Problem, VECS, TEAM>(p, blockIdx.x / csize, gridDim.x / csize, col_base,
                                               reducer.rank() == 0, reducer, prefetch_bytes);
  } else if constexpr (LOOP == SmemLoop::kRing) {
    static_assert(kRingsRows<Problem> && WHOLE && TEAM == kRingTeam,
                  "normkit: the ring runs kRingsRows problems, WHOLE, in CTAs of kRingTeam threads");
    // The CTA's part flows through a ring of chunks in shared memory
    // (ring_smem_bytes(TEAM), launched as dynamic shared memory; row_ring.cuh).
    extern __shared__ __align__(16) unsigned char ring_bytes[];
    detail::ring_rows<Problem, VECS, TEAM>(p, blockIdx.x / csize, gridDim.x / csize, col_base, reducer.rank() == 0,
                                           reducer, ring_bytes);
  } else if constexpr (kRunsRolled<Problem, WHOLE, TEAM, LOOP>) {
    // Each row's output walk loads the next row's part into the registers it
    // frees (normalize_held_part's ROLL), so the next row must be known at
    // the top of this one: with a counter, a row's ticket names the row two
    // after it (LEAD = 2, as the ring's; change 141).
    const int lane = threadIdx.x;
    detail::RowSchedule<2> rows(p.row_counter, reducer, blockIdx.x / csize, gridDim.x / csize);
    detail::RawSlot<typename Problem::Storage, Problem::kVec> v[VECS];
    // (The launcher starts no more clusters than rows; a guard all the same.)
    if (rows.row() < p.rows) {
      detail::load_input<typename Problem::Input, VECS, Problem::kVec, WHOLE>(p, rows.row(), col_base, cols, 0, lane,
                                                                             TEAM, true, v);
    }
    for (; rows.row() < p.rows; rows.advance()) {
      rows.draw(reducer);
      const int64_t next = rows.ahead(1) < p.rows ? rows.ahead(1) : -1;
      detail::normalize_held_part<Tuned, VECS, WHOLE, Reducer, 1, kRowMax, false, true>(
          p, rows.row(), true, col_base, cols, reducer.rank() == 0, lane, TEAM, reducer, v, next);
      rows.learn(reducer);
    }
  } else {
    // WHOLE rows from the caller's counter, if any (see above), but at the
    // fixed stride (RowHandout::kFixedStride) with the counter compiled out.
    constexpr bool kDraws = kTakesCounter<Problem, WHOLE, LOOP, HANDOUT>;
    detail::RowSchedule<1> rows(kDraws ? p.row_counter : nullptr, reducer, blockIdx.x / csize, gridDim.x / csize);
    for (; rows.row() < p.rows; rows.advance()) {
      rows.draw(reducer);
      detail::normalize_register_part<Tuned, VECS, WHOLE, Reducer, 1, kRowMax>(
          p, rows.row(), true, col_base, cols, reducer.rank() == 0, threadIdx.x, blockDim.x, reducer);
      rows.learn(reducer);
    }
  }
  // The loops that never draw (checked, relayed) count themselves out all
  // the same, a count and a reset once per cluster, as they always have;
  // the fixed stride's compiles this out with the rest of the counter.
  if constexpr (HANDOUT == RowHandout::kCounter) {
    detail::retire_row_counter(p.row_counter, reducer, gridDim.x / csize);
  }
  reducer.finish();
}

}  // namespace kernel
NORMKIT_NAMESPACE_END
