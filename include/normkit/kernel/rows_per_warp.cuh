// normkit/kernel/rows_per_warp.cuh: kernel shape 1, for short rows. A group of
// `group` lanes (4, 8, 16 or 32, chosen at run time) holds one row in
// registers, VECS slots per lane; a CTA of kThreads threads works on
// kThreads / group rows at a time and strides over the rows (the launcher
// starts up to 16 or 64 times the CTAs that fit at once). Reductions are shuffles
// within the group only: no shared memory, no barrier.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../block/paired_reduce.cuh"
#include "../block/reduce_ops.cuh"
#include "../block/warp_reduce.cuh"
#include "../config.cuh"
#include "../io/input.cuh"
#include "../stats/row_stats.cuh"
#include "row_output.cuh"
#include "row_per_block_tight.cuh"
#include "row_views.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace detail {

/// Whether the held-y walk of rows reduced by Reducer tests the epilogue's
/// parameters once a row (transform_held_slots' ONCE): rows reduced within
/// a warp or a CTA, but not in row_per_block's tight form, whose spill it
/// doubled (28 -> 56 bytes, ptxas), nor across a cluster or in a CTA alone
/// on its SM (costly reducers; the cluster kernel's spill 8 -> 28 bytes).
/// Per-row fp8 / int8 bf16 on an H100, four passes: 5120 +1.7, 8192 +1.1 /
/// +1.3, 16384 +1.7 / +2.6, 768 +0.7 / +0.8 points of the copy, the
/// 12288 (tight) and 32768-65536 rows level (docs/performance.md, change 183).
template <class Reducer>
inline constexpr bool kHeldParamsOnce =
    !costly_reductions_v<Reducer> && !std::is_same_v<Reducer, BlockAllReduce<kernel::kRowPerBlockTightThreads>>;

/// The epilogue's parameters for a thread's VECS slots loaded ahead of the
/// output walk (normalize_held_part's PREFETCH): kOn where the kernel asks for
/// it (PREFETCH), the form is WHOLE and unpaired, and the epilogue offers it
/// (HasPrefetch; whole_slots vouched at launch for the alignment
/// prefetch_whole assumes). Pre is NoPrefetch (empty) otherwise.
template <class Problem, int VECS, bool WHOLE, int PARTS, bool PREFETCH>
struct HeldPrefetch {
  using Epi = typename Problem::Epilogue;
  static constexpr int kVec = Problem::kVec;
  static constexpr bool kOn =
      PREFETCH && WHOLE && PARTS == 1 && HasPrefetch<Epi, kVec>::value && HasWholeSlots<Epi, kVec>::value;
  using Pre = typename PrefetchOf<Epi, kVec, kOn>::type;

  static NORMKIT_DEVICE void load(const typename Problem::Params& p, int64_t col_base, int lane, int team,
                                  Pre (&pre)[VECS]) {
    if constexpr (kOn) {
#pragma unroll
      for (int k = 0; k < VECS; ++k) {
        pre[k] = Epi::template prefetch_whole<kVec>(
            p.epilogue, col_base + RowLoader<typename Problem::Storage, kVec>::column(k, lane, team));
      }
    }
  }
};

/// A row, or the part of it in columns [col_base, col_base + cols), held in
/// registers by a team of threads: load, statistics (over the whole row: the
/// reducer combines the parts), output. Every thread of the team calls it,
/// also for an inactive row (past the last row), so that the team's
/// reductions see all of its threads. WHOLE: the team's slots hold the part
/// exactly (cols = team * VECS * VEC) and every access may move a whole slot
/// (the launcher checked both): no bounds, no branch on access widths
/// (docs/performance.md, change 17). first_part: this team writes the row's
/// mean, rstd and scale. PARTS > 1: the paired register forms, whose
/// threads each stand in for PARTS threads of a team PARTS times as large,
/// slot k belonging to part k % PARTS (InterleavedParts), reduced by a
/// reducer that combines the parts in the larger team's order. TAP_ROW_MAX:
/// where kFusedRowMax holds, the row maximum is folded into the statistics'
/// walk (a tap on the view) rather than taken in a walk of its own before it;
/// the paired forms need it (change 41), and row_per_block at 8 slots gains
/// from it (change 62); the bits are the same either way (a maximum has no
/// order). Elsewhere the separate walk measured as fast or faster.
///
/// normalize_held_part is the same once the part is in v (the caller loaded
/// it): ROLL (row_cluster_registers' rolled rows, kRollsRows) then loads this thread's
/// slots of row `next` (if next >= 0) into v as the output walk frees them,
/// slot k just after slot k is stored, so that the next row's loads are in
/// flight while this row is written instead of starting after it
/// (docs/performance.md, change 78). The same arithmetic on the same values:
/// the same bits. Only for inputs that are a plain copy of x (a fused add's
/// load stores h, which would wait for its loads in the output walk).
template <class Problem, int VECS, bool WHOLE, class Reducer, int PARTS = 1, bool TAP_ROW_MAX = (PARTS > 1),
          bool PREFETCH = false, bool ROLL = false>
NORMKIT_DEVICE void normalize_held_part(
    const typename Problem::Params& p, int64_t row, bool active, int64_t col_base, int64_t cols, bool first_part,
    int lane, int team, Reducer& reducer, RawSlot<typename Problem::Storage, Problem::kVec> (&v)[VECS],
    int64_t next = -1,
    const typename HeldPrefetch<Problem, VECS, WHOLE, PARTS, PREFETCH>::Pre* early = nullptr) {
  static_assert(!ROLL || Problem::Input::kIsPlainCopy,
                "normkit: rolling loads (ROLL) are for inputs that are a plain copy of x");
  constexpr int VEC = Problem::kVec;
  using S = typename Problem::Storage;
  using Slots = normkit::RegisterView<S, VECS, VEC, WHOLE>;
  using View = std::conditional_t<PARTS == 1, Slots, InterleavedParts<Slots, PARTS>>;
  const int64_t r = active ? row : 0;
  const int64_t n = active ? cols : 0;
  // The 8-slot kernels (row_per_block, row_cluster_registers) with the row
  // maximum on the statistics' walk (kWideTap): the row's loads are all
  // issued before the walk's weight loads (a warp barrier, which compiles to
  // a NOP: without it ptxas put weight loads between the row's), the tap
  // skips the unit normalization, and the output walk converts x anew
  // (hide_slot_words) rather than keeping the walk's conversions live: 12%
  // fewer instructions a row for per-row fp8 (docs/performance.md, change 67).
  constexpr bool kWideTap = TAP_ROW_MAX && PARTS == 1 && kFusedRowMax<Problem, View, Reducer>;
  if constexpr (kWideTap) __syncwarp();
  // PREFETCH: the epilogue's parameters loaded with the row, before the
  // statistics, where the epilogue offers it (HeldPrefetch), rather than in
  // the output walk after them (small batches: change 66); by the caller
  // before the row's loads where it passes them as `early`
  // (normalize_register_part: change 89).
  using Prefetch = HeldPrefetch<Problem, VECS, WHOLE, PARTS, PREFETCH>;
  using Pre = typename Prefetch::Pre;
  Pre pre[VECS];  // NoPrefetch: empty, unused (the epilogue loads its parameters)
  if constexpr (Prefetch::kOn) {
    if (early != nullptr) {
#pragma unroll
      for (int k = 0; k < VECS; ++k) pre[k] = early[k];
    } else {
      Prefetch::load(p, col_base, lane, team, pre);
    }
  }
  const Slots slots{v, n, lane, team, row_pilot<Problem, View, Reducer>(p, r)};
  const View view{slots};
  float amax = 0.f;
  RowStats st;
  // Rows whose maximum cannot ride on the statistics (kFusedRowMax false:
  // LayerNorm's bias) find it in a walk of their own after them, which
  // transforms every slot; kHoldsY keeps those values (fp32) for the output
  // walk, which then only scales and packs them, instead of transforming each
  // slot again and (unless prefetched: HeldPrefetch) reading the epilogue's
  // parameters a second time: the same values, so the same bits, and 5-7
  // points of the copy at 4 slots (docs/performance.md, changes 160-161).
  // Up to 4 slots a thread, unpaired: the held y doubles what a slot takes
  // in registers; the WHOLE 4-slot kernels of row_per_block fit it in 64
  // without a spill (row_cluster_registers' spill 8 bytes with the
  // cluster's reducer and row counter in CTAs of 512, none at the fixed
  // stride in CTAs of 1024 since change 177, 24 checked: change 172), and 5 and 8 slots and the
  // paired forms were not tried with it.
  constexpr bool kHoldsY = Problem::Output::kNeedsRowAbsMax &&
                           !kFusedRowMax<Problem, View, Reducer> && PARTS == 1 && !ROLL && VECS <= 4;
  float y[kHoldsY ? VECS : 1][VEC];
  static_assert(PARTS == 1 || TAP_ROW_MAX,
                "normkit: the paired register forms fold the row maximum into the statistics' walk (TAP_ROW_MAX): "
                "in a walk of its own they spilled (change 41)");
  if constexpr (TAP_ROW_MAX && kFusedRowMax<Problem, View, Reducer>) {
    // The fused row maximum folded into the statistics' walk (as staged rows
    // do), not a walk of its own before it: with the parts' two sums, the
    // separate walk compiled to 64 registers and 116 bytes of spills and ran
    // at 67% of the copy; folded, 64 registers, no spill (change 41). In
    // row_per_block at 8 slots it issues about 4% fewer instructions, and
    // those rows are bound by issue while they are not loading (ncu, change
    // 62: int8 per-row N = 32768 93.5% -> 96.5%).
    float m = 0.f;
    using Tap = RowMaxTap<Problem, WHOLE, kWideTap>;
    const InterleavedParts<Slots, PARTS, Tap> tapped{slots, Tap{p, r, col_base, lane, team, &m}};
    st = stats_with_row_max<Problem>(p, tapped, reducer, m, &amax);
  } else if constexpr (kHoldsY) {
    st = Problem::Stats::compute(view, reducer, p.cols, p.eps);
    const float m = transform_held_slots<Problem, VECS, WHOLE, Pre, kHeldParamsOnce<Reducer>>(p, r, col_base, n, 0,
                                                                                             lane, team, st, v, y,
                                                                                             pre);
    amax = reducer.all_reduce(m, NonNegativeMax{});
  } else {
    st = row_stats_and_absmax<Problem>(
        p, view, reducer,
        [&](const RowStats& s) {
          return absmax_slots<Problem, VECS, WHOLE>(p, r, col_base, n, 0, lane, team, s, v, pre);
        },
        &amax);
  }
  const bool leader = active && first_part && lane == 0;
  if (leader) store_row_stats(p, r, st);
  const float factor = output_factor<Problem, View, Reducer>(p, r, amax, leader, st);
  constexpr bool kFolds = kFoldsRowFactor<Problem, View, Reducer>;
  if constexpr (kWideTap) {
#pragma unroll
    for (int k = 0; k < VECS; ++k) hide_slot_words(v[k]);
  }
  if constexpr (kHoldsY) {
    static_assert(!kFolds, "normkit: held y is scaled by an unfolded row factor");
    if (active) store_held_slots<Problem, VECS, WHOLE>(p, r, col_base, n, 0, lane, team, factor, y);
  } else if constexpr (ROLL) {
    // A predicated load per slot (next is the same for the whole cluster).
    auto refill = [&](int k) {
      if (next >= 0) {
        RawSlot<S, VEC> one[1];
        load_input<typename Problem::Input, 1, VEC, WHOLE>(p, next, col_base, n, k, lane, team, true, one);
        v[k] = one[0];
      }
    };
    if (active) store_slots<Problem, VECS, WHOLE, kFolds>(p, r, col_base, n, 0, lane, team, st, factor, v, pre, refill);
  } else {
    if (active) store_slots<Problem, VECS, WHOLE, kFolds>(p, r, col_base, n, 0, lane, team, st, factor, v, pre);
  }
}

/// normalize_held_part with this thread's share of the part loaded first.
template <class Problem, int VECS, bool WHOLE, class Reducer, int PARTS = 1, bool TAP_ROW_MAX = (PARTS > 1),
          bool PREFETCH = false>
NORMKIT_DEVICE void normalize_register_part(const typename Problem::Params& p, int64_t row, bool active,
                                            int64_t col_base, int64_t cols, bool first_part, int lane, int team,
                                            Reducer& reducer) {
  constexpr int VEC = Problem::kVec;
  using S = typename Problem::Storage;
  const int64_t r = active ? row : 0;
  const int64_t n = active ? cols : 0;
  // For outputs that need the row maximum (per-row quantization), whose
  // statistics walk reads the epilogue's parameters, prefetched parameters
  // (PREFETCH) are loaded here, before the row, and a warp barrier (a NOP
  // in SASS) keeps them there: loaded after the row's loads, ptxas sank
  // each slot's parameter load to just before its first use, so that walk
  // paid one L2 round trip of the weight per slot after x had arrived
  // (small batches of per-row fp8 and int8 13-16% faster with this). Rows
  // that read the parameters only after their reductions measured 1-7%
  // slower with it, and keep them after the row's loads, where ptxas issues
  // them after the sum of squares, behind the block reduction
  // (docs/performance.md, changes 88 and 89).
  using Prefetch = HeldPrefetch<Problem, VECS, WHOLE, PARTS, PREFETCH>;
  constexpr bool kEarly = Prefetch::kOn && Problem::Output::kNeedsRowAbsMax;
  typename Prefetch::Pre pre[VECS];
  if constexpr (kEarly) {
    Prefetch::load(p, col_base, lane, team, pre);
    __syncwarp();
  }
  RawSlot<S, VEC> v[VECS];
  if (WHOLE && !active) {
    // Whole loads ignore n, and an input may store as it loads (AddResidual
    // writes h): an inactive row loads nothing and reduces zeros.
#pragma unroll
    for (int k = 0; k < VECS; ++k) v[k] = RawSlot<S, VEC>{};
  } else {
    load_input<typename Problem::Input, VECS, VEC, WHOLE, kShiftsStores<Problem>>(p, r, col_base, n, 0, lane, team, true,
                                                                                v);
  }
  normalize_held_part<Problem, VECS, WHOLE, Reducer, PARTS, TAP_ROW_MAX, PREFETCH>(
      p, row, active, col_base, cols, first_part, lane, team, reducer, v, -1, kEarly ? pre : nullptr);
}

/// What the checked (not WHOLE) forms of the register kernels whose slots
/// always hold the part exactly (row_per_block at 5 and 8 slots,
/// row_in_cluster_registers) pass as the part's column count: every slot is
/// valid there in any case, and with a bound no slot reaches the compiler
/// drops the partial-slot code, so those forms keep only the narrower
/// accesses of rows that are not slot-aligned (ptxas: add + RMSNorm's
/// checked 8-slot form spilled 4092 bytes, 540 with it; docs/performance.md,
/// change 53). Statistics still divide by p.cols.
inline constexpr int64_t kEverySlotValid = int64_t{1} << 40;

/// rows_per_warp's loop: each group of `team` lanes of the CTA normalizes
/// one row at a time (PARTS: see normalize_register_part), striding over the
/// rows with the grid.
template <class Problem, int VECS, bool WHOLE, int PARTS, class Reducer>
NORMKIT_DEVICE void normalize_rows_in_groups(const typename Problem::Params& p, int team, Reducer& reducer) {
  const int lane = threadIdx.x & (team - 1);
  const int rows_per_cta = blockDim.x / team;
  const int64_t row_in_cta = threadIdx.x / team;
  // The loop bound is the same for the whole CTA, so every lane of every warp
  // takes part in every shuffle.
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * rows_per_cta; base < p.rows;
       base += static_cast<int64_t>(gridDim.x) * rows_per_cta) {
    const int64_t row = base + row_in_cta;
    normalize_register_part<Problem, VECS, WHOLE, Reducer, PARTS>(p, row, row < p.rows, 0, p.cols, true, lane, team,
                                                                  reducer);
  }
}

}  // namespace detail

namespace kernel {

/// CTAs of 64 threads (2 to 16 rows each), up to 32 per SM. A CTA frees its
/// slot on the SM only once its last row is written, and these CTAs work
/// through one round of rows each (the grid covers the batch): at 256
/// threads an SM's slots stood idle behind the slowest of 8 warps. Fused add +
/// RMSNorm bf16 N = 256-768 read 96.7-98.3% of the copy in CTAs of 256,
/// 98.7-99.6% in CTAs of 64 (docs/performance.md, change 74).
inline constexpr int kRowsPerWarpThreads = 64;
/// Launch bounds that keep the register budgets measured with 256-thread CTAs
/// (64 registers a thread; 80 for the 4-slot paired lanes): `threads_per_sm`
/// resident threads, as CTAs of kRowsPerWarpThreads.
constexpr int rows_per_warp_min_ctas(int threads_per_sm) { return threads_per_sm / kRowsPerWarpThreads; }

template <class Problem, int VECS, bool WHOLE>
__global__ void __launch_bounds__(kRowsPerWarpThreads, rows_per_warp_min_ctas(1024))
    rows_per_warp(const __grid_constant__ typename Problem::Params p, int group) {
  GroupReducer reducer{group};
  detail::normalize_rows_in_groups<Problem, VECS, WHOLE, 1>(p, group, reducer);
}

/// The paired form of rows_per_warp at VECS slots a lane (4, or 3 where they
/// hold the row exactly): groups of group / 2 lanes, 2 * VECS slots each,
/// lane j holding the slots of lanes j and j + group / 2 of the VECS-slot
/// group (the 2 * VECS-slot layout interleaves them), reduced by
/// PairedGroupReducer: the same bits as rows_per_warp<Problem, VECS, true>
/// with `group` lanes a row, with twice the rows per warp (the launcher runs
/// it where x comes from DRAM: large batches; docs/performance.md, changes
/// 42 and 46). WHOLE only. Lanes of 8 slots get 80 registers (3 CTAs per
/// SM): at 64 they spilled 24 bytes and measured 4-5 points lower.
template <class Problem, int VECS>
__global__ void __launch_bounds__(kRowsPerWarpThreads, rows_per_warp_min_ctas(VECS == 4 ? 768 : 1024))
    rows_per_warp_paired(const __grid_constant__ typename Problem::Params p, int group) {
  static_assert(stats_folds_each_part_v<typename Problem::Stats>,
                "normkit: the paired rows_per_warp form needs statistics that fold through fold_slots "
                "(kFoldsEachPart); the launcher runs such problems unpaired");
  static_assert(VECS == 3 || VECS == 4, "normkit: rows_per_warp pairs lanes of 3 or 4 slots");
  PairedGroupReducer reducer{group / 2};
  detail::normalize_rows_in_groups<Problem, 2 * VECS, true, 2>(p, group / 2, reducer);
}

}  // namespace kernel
NORMKIT_NAMESPACE_END
