// normkit/kernel/row_split_part.cuh: row_cluster_registers' loop for fused-add
// rows with two reductions (16-bit add + LayerNorm: kSplitsParts, planned
// where four_slot_cluster_parts holds) whose CTA
// holds a part of kSplitPartVecs slots a thread, half in registers and half
// in shared memory. Such rows spill at 8 slots in registers (LayerNorm's two
// parameters and shift: ptxas, 44 bytes; docs/performance.md, change 101),
// so they otherwise hold 4-slot parts, in clusters twice as large: bf16
// N = 131072 in clusters of 4 rather than 2. At the same work a CTA each
// doubling of the cluster cost about 4 points (65536, 131072, 262144 in
// clusters of 2, 4, 8: 93%, 89%, 84% of the copy), and clusters of 4 leave
// 12 SMs idle; split 8-slot parts in clusters of 2 read 88.7% -> 90.9% at
// 131072 (change 113), but 84.6% -> 81.5% at 262144 in clusters of 4 (so
// the plan splits parts in clusters of 2 only: PlanTuning::
// kSplitPartMaxCluster), and in CTAs of 512 threads, two an SM, 6-17 points
// slower (change 114).
//
// Each thread's back half (slots H .. 2H - 1) of x and of the residual goes
// to shared memory first, without registers: in the WHOLE form by
// `cp.async` (16 bytes each), in the checked form (rows not slot-aligned)
// through the input's own checked load, H slots at once while the registers
// are still free; the front half (slots 0 .. H - 1) then loads into
// registers as the register loop's does, h formed and stored. The WHOLE
// form forms the back half's h from shared memory and stores it (the checked
// load stored it already); h replaces x there. The statistics then walk
// slots 0 .. 2H - 1 in order (SplitPartView) and the output walk stores them
// in order, so both forms give the same bits. Only the thread's own slots
// of shared memory are touched, so no barrier is needed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../block/async_copy.cuh"
#include "../block/row_loader.cuh"
#include "../config.cuh"
#include "../io/input.cuh"
#include "../stats/row_stats.cuh"
#include "row_output.cuh"
#include "row_views.cuh"
#include "row_schedule.cuh"
#include "rows_per_warp.cuh"
#include "shifted_stores.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace kernel {

/// The CTA size of split parts: 1024 threads, one CTA an SM.
inline constexpr int kSplitPartTeam = 1024;
/// Slots of every thread in a split part, half of them in shared memory.
inline constexpr int kSplitPartVecs = 8;

/// Dynamic shared memory of a CTA of `threads` threads holding split parts:
/// the back half of every thread's slots of x (then h) and of the residual.
NORMKIT_HOST_DEVICE constexpr size_t split_part_smem_bytes(int threads) {
  return size_t{16} * threads * (kSplitPartVecs / 2) * 2;
}

/// Whether row_cluster_registers may hold these rows in split parts: the
/// fused add (input::AddResidual, whose residual the WHOLE form copies and
/// adds itself; its x slots as wide as its storage's, so that x's back half
/// fits a slot of shared memory), an output that needs no row maximum,
/// 16-byte slots. The plan splits parts only for rows held at 4 slots a
/// thread otherwise (four_slot_cluster_parts: two reductions, 16-bit rows),
/// and the launcher instantiates the loop only there.
template <class Problem>
inline constexpr bool kSplitsParts =
    detail::IsAddResidual<typename Problem::Input>::value && !Problem::Output::kNeedsRowAbsMax &&
    sizeof(typename Problem::X) == sizeof(typename Problem::Storage) &&
    sizeof(detail::RawSlot<typename Problem::Storage, Problem::kVec>) == 16;

}  // namespace kernel

namespace detail {

/// A thread's K slots of a split part, seen by a statistics policy: slots
/// 0 .. H - 1 in registers, H .. K - 1 in shared memory (slot H + k at
/// parked[k * team]). Every slot is wholly valid (the parts are whole).
template <class S, int K, int H, int VEC>
struct SplitPartView {
  static constexpr int kVec = VEC;
  static constexpr bool kResident = true;
  static constexpr bool kWhole = true;
  const RawSlot<S, VEC> (&held)[H];
  const RawSlot<S, VEC>* parked;
  int team;
  float shift = 0.f;  ///< as RegisterView's

  template <class F>
  NORMKIT_DEVICE void for_each_indexed_slot(F&& f) const {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      float v[VEC];
      slot_to_float(k < H ? held[k] : parked[(k - H) * team], v);
      f(v, VEC, k);
    }
  }
  template <class F>
  NORMKIT_DEVICE void for_each_slot(F&& f) const {
    for_each_indexed_slot([&](const float (&v)[VEC], int valid, int) { f(v, valid); });
  }
};

/// Rows first, first + stride, ... of p (or as p.row_counter hands them out:
/// row_schedule.cuh), this CTA's part (columns col_base
/// .. col_base + TEAM * VECS * kVec, all valid) held split (see above) in
/// `smem` (kernel::split_part_smem_bytes(TEAM)). WHOLE: every access is
/// slot-aligned. first_part: this CTA writes the rows' statistics. Every
/// thread of the cluster runs the same rows.
template <class Problem, int VECS, bool WHOLE, int TEAM, class Reducer>
NORMKIT_DEVICE void split_part_rows(const typename Problem::Params& p, int64_t first, int64_t stride, int64_t col_base,
                                    bool first_part, Reducer& reducer, unsigned char* smem) {
  static_assert(kernel::kSplitsParts<Problem>, "normkit: split_part_rows runs only the problems kSplitsParts admits");
  static_assert(VECS == kernel::kSplitPartVecs && TEAM == kernel::kSplitPartTeam,
                "normkit: split_part_smem_bytes sizes shared memory for kSplitPartVecs slots of kSplitPartTeam threads");
  constexpr int VEC = Problem::kVec;
  constexpr int H = VECS / 2;
  constexpr bool kShift = kShiftsStores<Problem>;
  using S = typename Problem::Storage;
  using Slot = RawSlot<S, VEC>;
  using In = typename Problem::Input;
  using View = SplitPartView<S, VECS, H, VEC>;
  const int lane = threadIdx.x;
  // The parts hold every slot; the checked form needs no bounds, only
  // narrower accesses (kEverySlotValid, as row_cluster_registers' own loop).
  const int64_t cols = WHOLE ? int64_t{TEAM} * VECS * VEC : kEverySlotValid;
  // Slot k of the back half of thread t at parked[k * TEAM + t] (a warp's
  // slots are 512 consecutive bytes: no bank conflicts), x's (then h's)
  // first, the residual's after them.
  Slot* parked = reinterpret_cast<Slot*>(smem) + lane;
  Slot* parked_residual = parked + H * TEAM;
  const auto& q = p.input;
  RowSchedule<1> rows(p.row_counter, reducer, first, stride);  // (row_schedule.cuh)
  for (; rows.row() < p.rows; rows.advance()) {
    const int64_t row = rows.row();
    rows.draw(reducer);
    Slot held[H];
    // (Without cp.async, before sm_80, where no cluster is planned, as the
    // checked form; the same bits.)
    if constexpr (WHOLE && has_async_copy()) {
      const auto* x = p.x + row * p.x_stride + col_base;
      const S* residual = q.residual + row * q.residual_stride + col_base;
#pragma unroll
      for (int k = 0; k < H; ++k) {
        const int64_t c = RowLoader<S, VEC>::column(H + k, lane, TEAM);
        async_copy_16(parked + k * TEAM, x + c);
        async_copy_16(parked_residual + k * TEAM, residual + c);
      }
      load_input<In, H, VEC, true>(p, row, col_base, cols, 0, lane, TEAM, true, held);
      async_copy_wait_all();
      S* residual_out = q.residual_out + row * q.residual_out_stride + col_base;
#pragma unroll
      for (int k = 0; k < H; ++k) {
        const auto x_slot = *reinterpret_cast<const RawSlot<typename Problem::X, VEC>*>(parked + k * TEAM);
        const Slot h[1] = {add_slots<true>(x_slot, parked_residual[k * TEAM])};
        parked[k * TEAM] = h[0];
        RowLoader<S, VEC>::template store_raw<1, true>(residual_out, cols, H + k, lane, TEAM, q.residual_out_access,
                                                       h);
      }
    } else {
      // The back half first, while the registers are free (its loads store
      // its h), then the front half.
      Slot back[H];
      load_input<In, H, VEC, WHOLE, kShift>(p, row, col_base, cols, H, lane, TEAM, true, back);
#pragma unroll
      for (int k = 0; k < H; ++k) parked[k * TEAM] = back[k];
      load_input<In, H, VEC, WHOLE, kShift>(p, row, col_base, cols, 0, lane, TEAM, true, held);
    }
    const View view{held, parked, TEAM, row_pilot<Problem, View, Reducer>(p, row)};
    float amax = 0.f;  // no row maximum (kSplitsParts)
    RowStats st = row_stats_and_absmax<Problem>(
        p, view, reducer, [](const RowStats&) { return 0.f; }, &amax);
    const bool leader = first_part && lane == 0;
    if (leader) store_row_stats(p, row, st);
    const float factor = output_factor<Problem, View, Reducer>(p, row, amax, leader, st);
    constexpr bool kFolds = kFoldsRowFactor<Problem, View, Reducer>;
    store_slots<Problem, H, WHOLE, kFolds>(p, row, col_base, cols, 0, lane, TEAM, st, factor, held);
#pragma unroll
    for (int k = 0; k < H; ++k) {
      const Slot one[1] = {parked[k * TEAM]};
      store_slots<Problem, 1, WHOLE, kFolds>(p, row, col_base, cols, H + k, lane, TEAM, st, factor, one);
    }
    rows.learn(reducer);
  }
}

}  // namespace detail
NORMKIT_NAMESPACE_END
