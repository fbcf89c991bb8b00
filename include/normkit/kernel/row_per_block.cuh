// normkit/kernel/row_per_block.cuh: kernel shape 2. One CTA (blockDim.x
// threads, chosen at run time, up to the kernel's TEAM: 512, 1024 at 8
// slots, and at 4 for 16-bit LayerNorm rows of 32-64 KiB) holds one row in
// registers, VECS slots per thread (1, 2
// or 4; 5 for per-row-quantized rows that 4 slots would give an odd number
// of warps; 8 for the wide rows of plan.cuh's wide_slots_fit: the same 64
// registers hold them without spilling in the WHOLE form). At 5 and 8 slots
// the CTA's slots hold the row exactly in both forms (the plan makes them
// so; a launch on another row writes nothing), so the checked form, run
// only for rows not slot-aligned, narrows accesses but checks no bounds (it
// still spills some: change 53). The launcher starts one CTA per row; the
// loop strides over rows only past gridDim's limit. Statistics use the block
// all-reduce (shuffles, then one barrier per reduction). WHOLE: see
// normalize_register_part. And its paired form at 4 or 5 slots (below): the
// same bits in half the threads, for batches whose x comes from DRAM.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../block/block_reduce.cuh"
#include "../block/paired_reduce.cuh"
#include "../config.cuh"
#include "../epilogue/hooks.cuh"
#include "../epilogue/param_slot.cuh"
#include "row_per_block_tight.cuh"
#include "rows_per_warp.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace kernel {

inline constexpr int kRowPerBlockMaxThreads = 512;
/// 8-slot rows take CTAs of up to 1024 threads (x rows up to 128 KiB in 16
/// bits): one such CTA per SM has the registers of two of 512 (64 a thread
/// either way), and a row of 64-128 KiB then runs in one CTA instead of a
/// cluster (docs/performance.md, change 50).
inline constexpr int kRowPerBlockWideMaxThreads = 1024;

/// The most threads a row_per_block CTA of `vecs` slots a thread may have,
/// by default: 512, 1024 at 8 slots. Rows whose problems may not take 8
/// slots a thread (16-bit LayerNorm: plan.cuh, allows_wide_slots) take 4
/// slots in CTAs of up to kRowPerBlockWideMaxThreads instead (x rows of
/// 32-64 KiB; plan.cuh, allows_wide_four_slot_team and
/// wide_four_slot_team_fits), a kernel of its own (TEAM below).
NORMKIT_HOST_DEVICE constexpr int row_per_block_max_threads(int vecs) {
  return vecs == 8 ? kRowPerBlockWideMaxThreads : kRowPerBlockMaxThreads;
}

// kRowPerBlockTightThreads and kRowPerBlockTightMinThreads, the tight form's
// CTA sizes: kernel/row_per_block_tight.cuh.

/// Whether Problem's 4-slot WHOLE rows in CTAs of
/// kRowPerBlockTightMinThreads-kRowPerBlockTightThreads threads run the tight
/// form (above; only then is it instantiated): plain inputs whose outputs
/// need the row maximum and whose statistics make two reductions a row
/// (per-row-quantized LayerNorm, whose 4-slot kernel takes 64 registers at
/// two CTAs an SM). The rest fit 56 registers there already, so the form
/// would change nothing but compile time: per-row RMSNorm's 4-slot kernel
/// takes 54, static scales' 47-56 (ptxas, sm_90, bf16), and plain and
/// static-fp8 LayerNorm at 12288 measured level with it (within 0.2).
/// Fused adds hold more and were not measured.
template <class Problem>
inline constexpr bool kTightFourSlotRows = Problem::Output::kNeedsRowAbsMax && Problem::Input::kIsPlainCopy &&
                                           stats::row_reductions_v<typename Problem::Stats> == 2;

/// Whether Problem's 8-slot rows in CTAs of up to kRowPerBlockMaxThreads
/// threads always run the ROOMY form (below), whatever the batch: for inputs
/// that are not a plain copy of x (the fused add, which stores h as it
/// loads: x, the residual and h are live at once, and at 64 registers their
/// loads were serialized). Measured (docs/performance.md, change 65): add +
/// RMSNorm bf16 N = 32768 95.9% -> 98.0% of the copy, in place 95.3% ->
/// 96.8%; plain and per-row-quantized rows lost 5-28 points at one CTA per SM
/// (run 143), so they keep two.
template <class Problem>
inline constexpr bool kRoomyWideRows = !Problem::Input::kIsPlainCopy;

/// ROOMY: compiled for one CTA of up to kRowPerBlockMaxThreads per SM (up to
/// 128 registers a thread) rather than two (64): more of a thread's loads in
/// flight, fewer CTAs resident. The launcher runs it where residency does
/// not count (a batch of at most one CTA per SM: small batches, where a row's
/// latency is the time) and for kRoomyWideRows (docs/performance.md, change
/// 65). The same arithmetic in the same order, so the same bits; below 8
/// slots it also loads the epilogue's parameters with the row, where the
/// epilogue offers that (HasPrefetch: change 66; the hooks give apply_whole's
/// values).
/// TEAM: the most threads the CTA may have (its launch bounds and its
/// reducer's size); CTAs of 1024 threads run one an SM, CTAs of
/// kRowPerBlockTightThreads (the tight form) three.
template <class Problem, int VECS, bool WHOLE, BlockReduceAlgorithm ALGO = BlockReduceAlgorithm::kWarpShuffle,
          bool ROOMY = false, int TEAM = row_per_block_max_threads(VECS)>
__global__ void __launch_bounds__(ROOMY ? kRowPerBlockMaxThreads : TEAM,
                                  (ROOMY || TEAM > kRowPerBlockMaxThreads) ? 1
                                  : TEAM == kRowPerBlockTightThreads       ? 3
                                                                           : 2)
    row_per_block(const __grid_constant__ typename Problem::Params p) {
  static_assert(TEAM == row_per_block_max_threads(VECS) || (VECS == 4 && TEAM == kRowPerBlockWideMaxThreads && !ROOMY) ||
                    (VECS == 4 && TEAM == kRowPerBlockTightThreads && WHOLE && !ROOMY),
                "normkit: row_per_block's CTAs are row_per_block_max_threads(VECS), 1024 threads of 4 slots, or "
                "the tight form's kRowPerBlockTightThreads of 4 slots (WHOLE, not ROOMY)");
  // A CTA of 1024 threads runs alone on its SM: statistics that may trade
  // walks for reductions do (AloneOnSm; docs/performance.md, change 104).
  using Block = BlockAllReduce<TEAM, ALGO>;
  using Reducer = std::conditional_t<(VECS == 4 && TEAM > kRowPerBlockMaxThreads), AloneOnSm<Block>, Block>;
  __shared__ typename Reducer::TempStorage temp;
  Reducer reducer(temp);
  // At 5 and 8 slots the launcher runs only rows the CTA's slots hold
  // exactly (plan.cuh), in both forms; the checked form then needs no
  // bounds (detail::kEverySlotValid), and a checked launch that breaks this
  // writes nothing. (The WHOLE form keeps its code: with this check in it
  // too, per-row fp8 and int8 measured 0.7-1 point slower, run 113.)
  constexpr bool kUnbounded = (VECS == 5 || VECS == 8) && !WHOLE;
  if (kUnbounded && p.cols != static_cast<int64_t>(blockDim.x) * VECS * Problem::kVec) return;
  const int64_t cols = kUnbounded ? detail::kEverySlotValid : p.cols;
  // At 8 slots (rows of 64-128 KiB of x in one or two CTAs per SM) the
  // weight is kept in L1 for the SM's next row (the rows streaming through
  // L1 evicted it: 0.4% L1 hits at 65536), and the row maximum is folded
  // into the statistics' walk (docs/performance.md, change 62). Only the
  // WHOLE form of an epilogue that takes the hint runs through the adaptor;
  // any other epilogue (one without the hint, or a `final` one) runs as it is.
  constexpr bool kWide = VECS == 8;
  using Tuned = detail::ParamsKeptInL1<Problem, kWide && WHOLE>;
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    detail::normalize_register_part<Tuned, VECS, WHOLE, Reducer, 1, kWide, ROOMY && !kWide>(
        p, row, true, 0, cols, true, threadIdx.x, blockDim.x, reducer);
  }
}

/// The paired form of row_per_block at VECS = 4 or 5 slots: half the
/// threads, 2 * VECS slots each, thread t holding the slots of threads t and
/// t + blockDim.x of the VECS-slot CTA (its 2 * VECS-slot layout interleaves
/// them: InterleavedParts), whose sums it folds apart and reduces in that
/// CTA's order (PairedBlockAllReduce): the same bits as
/// row_per_block<Problem, VECS, true> on 2 * blockDim.x threads, with half the
/// fixed work per element and twice the rows in flight per SM (the launcher
/// runs it where x comes from DRAM: large batches; docs/performance.md,
/// changes 41 and 47). WHOLE only: the VECS-slot CTA holds the row exactly.
/// 10 slots a thread get 80 registers (3 CTAs' worth per SM).
template <class Problem, int VECS>
__global__ void __launch_bounds__(kRowPerBlockMaxThreads / 2, VECS == 4 ? 4 : 3)
    row_per_block_paired(const __grid_constant__ typename Problem::Params p) {
  static_assert(stats_folds_each_part_v<typename Problem::Stats>,
                "normkit: the paired row_per_block form needs statistics that fold through fold_slots "
                "(kFoldsEachPart); the launcher runs such problems unpaired");
  static_assert(VECS == 4 || VECS == 5, "normkit: row_per_block pairs threads of 4 or 5 slots");
  using Reducer = PairedBlockAllReduce<kRowPerBlockMaxThreads>;
  __shared__ typename Reducer::TempStorage temp;
  Reducer reducer(temp);
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    detail::normalize_register_part<Problem, 2 * VECS, true, Reducer, 2>(p, row, true, 0, p.cols, true, threadIdx.x,
                                                                         blockDim.x, reducer);
  }
}

}  // namespace kernel
NORMKIT_NAMESPACE_END
