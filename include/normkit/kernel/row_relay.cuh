// normkit/kernel/row_relay.cuh: row_cluster_registers' loop for plain rows
// (kRelaysRows). Each CTA holds its part of one row in registers, as the
// kernel's other rows do, but once the statistics' walk has read them it
// parks the part in shared memory and loads its part of the next row into
// the same registers; the reductions, the row's statistics and the output
// walk (which reads x back from shared memory) then run while the next row's
// loads are in flight. Without it the SM's loads stop at every row's
// reduction, which waits for the slowest CTA of the cluster, and at its
// output walk (docs/performance.md, change 72: RMSNorm fp32 N = 65536 91.5%
// -> 94-95% of the copy, 131072 85% -> 91%, 262144 82% -> 91%).
//
// The bits are those of the plain loop: the same view of the same registers
// for the statistics, the same slots in the same order for the output.
#pragma once

#include <cstdint>

#include "../config.cuh"
#include "../io/input.cuh"
#include "../stats/row_stats.cuh"
#include "reduction_hook.cuh"
#include "row_output.cuh"
#include "row_views.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace kernel {

/// Whether row_cluster_registers relays this problem's rows: a row that is
/// x's bytes as they are (a fused add's input stores h as it loads, so its
/// next row's loads would wait: 95% -> 57%), statistics that read the row
/// only before reducing (the registers hold the next row after that), an
/// output that needs no row maximum (per-row quantization reads its weight
/// from L1, which the parked row's shared memory would shrink: fp8 N =
/// 131072 88% -> 75%), and rows held as 4-byte elements. 16-bit rows ran
/// bimodal relayed (bf16 N = 131072: calls of 269 to 326 us, the median 274
/// us in one process and 306 us in the benchmark suite's, against 286 us
/// either way without the relay; change 72), so they keep the plain loop.
template <class Problem>
inline constexpr bool kRelaysRows = Problem::Input::kIsPlainCopy && !Problem::Output::kNeedsRowAbsMax &&
                                    stats::walks_before_reducing_v<typename Problem::Stats> &&
                                    sizeof(typename Problem::Storage) == 4;

/// Dynamic shared memory a relaying CTA of `threads` threads at `vecs` slots
/// parks its part in (a slot is 16 bytes).
inline constexpr size_t relay_smem_bytes(int threads, int vecs) { return size_t{16} * threads * vecs; }

}  // namespace kernel

namespace detail {

/// Rows first, first + stride, ... of p, this CTA's part (columns col_base
/// .. col_base + cols, VECS slots a thread, all valid: see
/// row_cluster_registers), relayed through `parked` (blockDim.x * VECS
/// slots of shared memory). first_part: this CTA writes the rows'
/// statistics. Every thread of the cluster runs the same rows.
template <class Problem, int VECS, bool WHOLE, class Reducer>
NORMKIT_DEVICE void relay_rows(const typename Problem::Params& p, int64_t first, int64_t stride, int64_t col_base,
                               int64_t cols, bool first_part, Reducer& reducer,
                               RawSlot<typename Problem::Storage, Problem::kVec>* parked) {
  static_assert(kernel::kRelaysRows<Problem>, "normkit: relay_rows runs only the problems kRelaysRows admits");
  constexpr int VEC = Problem::kVec;
  using Slot = RawSlot<typename Problem::Storage, VEC>;
  static_assert(sizeof(Slot) == 16, "normkit: relay_smem_bytes sizes the parked part at 16 bytes a slot");
  using Slots = normkit::RegisterView<typename Problem::Storage, VECS, VEC, WHOLE>;
  using In = typename Problem::Input;
  const int lane = threadIdx.x;
  const int team = blockDim.x;
  // Slot k of this thread at k * team + lane: a warp's 32 slots are 512
  // consecutive bytes, so no bank conflicts.
  Slot* mine = parked + lane;
  if (first >= p.rows) return;  // the launcher starts no more clusters than rows; a guard all the same
  Slot v[VECS];
  load_input<In, VECS, VEC, WHOLE>(p, first, col_base, cols, 0, lane, team, true, v);
  for (int64_t row = first; row < p.rows; row += stride) {
    const int64_t next = row + stride;
    auto park_and_load_next = [&]() {
#pragma unroll
      for (int k = 0; k < VECS; ++k) mine[k * team] = v[k];
      if (next < p.rows) load_input<In, VECS, VEC, WHOLE>(p, next, col_base, cols, 0, lane, team, true, v);
    };
    using Relay = HookBeforeFirstReduction<Reducer, decltype(park_and_load_next)>;
    Relay relay{reducer, park_and_load_next, false};
    const Slots slots{v, cols, lane, team, row_pilot<Problem, Slots, Relay>(p, row)};
    RowStats st = Problem::Stats::compute(slots, relay, p.cols, p.eps);
    const bool leader = first_part && lane == 0;
    if (leader) store_row_stats(p, row, st);
    const float factor = output_factor<Problem, Slots, Relay>(p, row, 0.f, leader, st);
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
      const Slot one[1] = {mine[k * team]};
      store_slots<Problem, 1, WHOLE, kFoldsRowFactor<Problem, Slots, Relay>>(p, row, col_base, cols, k, lane, team, st,
                                                                           factor, one);
    }
  }
}

}  // namespace detail
NORMKIT_NAMESPACE_END
