// normkit/kernel/row_chunked.cuh: kernel shapes 3 to 5, for rows too long for
// registers. A cluster of C CTAs (C = 1 off sm_90) works on one row at a time;
// CTA rank r owns the chunk of columns [r * chunk, (r + 1) * chunk).
//
// STAGED (shapes 3 and 4): the chunk is read once into shared memory (as the
// input's Storage type, which holds it exactly), statistics and output are
// computed from there. Each thread only ever touches its own slots of shared
// memory, so staging needs no barrier.
// Not STAGED (shape 5, streaming): the chunk is read from memory on every walk:
// the statistics policy's walks (TwoPass 2, Welford and MeanSquare 1), then one
// more to normalize. No limit on N but memory.
//
// Partials are combined across the cluster through distributed shared memory
// (ClusterAllReduce), in a fixed order, so results do not depend on timing.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../block/async_copy.cuh"
#include "../block/block_reduce.cuh"
#include "../block/cluster_reduce.cuh"
#include "../block/reduce_ops.cuh"
#include "../block/row_loader.cuh"
#include "../config.cuh"
#include "../io/input.cuh"
#include "../stats/row_stats.cuh"
#include "row_output.cuh"
#include "row_views.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace kernel {

/// Per form (staged or streaming): threads per CTA, CTAs per SM the registers
/// are sized for, and slots per thread in flight per batch of loads. Both
/// forms measured best with the same values (docs/performance.md, changes 12
/// and 15); a form that should differ gets a specialization.
template <bool STAGED>
struct ChunkedTuning {
  static constexpr int kThreads = 512;
  static constexpr int kMinBlocks = 2;
  static constexpr int kUnroll = 4;
};

template <class Problem, bool STAGED>
__global__ void __launch_bounds__(ChunkedTuning<STAGED>::kThreads, ChunkedTuning<STAGED>::kMinBlocks)
    row_chunked(const __grid_constant__ typename Problem::Params p, int64_t chunk) {
  static_assert(STAGED || !Problem::Output::kNeedsRowAbsMax,
                "normkit::kernel::row_chunked: outputs that need the row's maximum (per-row scales) keep the row "
                "on chip: use the staged form (STAGED = true)");
  constexpr int VEC = Problem::kVec;
  constexpr int UNROLL = ChunkedTuning<STAGED>::kUnroll;
  using S = typename Problem::Storage;
  using Reducer = ClusterAllReduce<BlockAllReduce<ChunkedTuning<STAGED>::kThreads>>;
  using View = std::conditional_t<STAGED, detail::StagedView<S, VEC>, detail::StreamView<Problem, UNROLL>>;
  __shared__ typename Reducer::TempStorage temp;
  extern __shared__ __align__(16) unsigned char staged_bytes[];
  S* staged = reinterpret_cast<S*>(staged_bytes);

  Reducer reducer(temp);
  const unsigned csize = reducer.size();
  const int64_t col_base = static_cast<int64_t>(reducer.rank()) * chunk;
  const int64_t left = p.cols - col_base;
  const int64_t n = left <= 0 ? 0 : (left < chunk ? left : chunk);
  const int team = blockDim.x;
  const int lane = threadIdx.x;
  const int slots = static_cast<int>((n + static_cast<int64_t>(team) * VEC - 1) / (static_cast<int64_t>(team) * VEC));
  const bool leader = reducer.rank() == 0 && threadIdx.x == 0;
  const int full = detail::full_slots(n, VEC, lane, team);

  for (int64_t row = blockIdx.x / csize; row < p.rows; row += gridDim.x / csize) {
    // A batch of slots for the passes after staging: from shared memory, or
    // from global memory again (a later read: fused inputs read back h).
    auto fetch = [&](int s0, detail::RawSlot<S, VEC>(&v)[UNROLL]) {
      if constexpr (STAGED) {
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
          const int64_t c = RowLoader<S, VEC>::column(s0 + k, lane, team);
          detail::read_staged_slot<S, VEC>(staged, c, detail::slot_valid(n, c, VEC), v[k]);
        }
      } else {
        Problem::Input::template load<UNROLL, VEC>(p, row, col_base, n, s0, lane, team, false, v);
      }
    };
    // This thread's max|y| over its slots of the chunk for statistics s
    // (outputs scaled by the row's maximum; staged rows only, as asserted
    // above). Whole staged slots without checks where every access is
    // slot-aligned.
    auto local_absmax = [&](const RowStats& s) {
      float m = 0.f;
      int s0 = 0;
      if constexpr (STAGED) {
        if (p.whole_access) {
#pragma unroll 4
          for (; s0 < full; ++s0) {
            const detail::RawSlot<S, VEC> v[1] = {detail::read_whole_staged_slot<S, VEC>(staged, s0, lane, team)};
            m = fmaxf(m, detail::absmax_slots<Problem, 1, true>(p, row, col_base, n, s0, lane, team, s, v));
          }
        }
      }
      for (; s0 < slots; s0 += UNROLL) {
        detail::RawSlot<S, VEC> v[UNROLL];
        fetch(s0, v);
        m = fmaxf(m, detail::absmax_slots<Problem, UNROLL>(p, row, col_base, n, s0, lane, team, s, v));
      }
      return m;
    };
    float amax = 0.f;
    RowStats st;
    if constexpr (STAGED) {
      bool staged_async = false;
      if constexpr (Problem::Input::kIsPlainCopy && detail::has_async_copy()) {
        // Every full slot of this thread in flight at once, straight to shared
        // memory; partial slots (the row's tail) go through registers.
        if (p.x_access >= 16) {
          staged_async = true;
          const S* src = p.x + row * p.x_stride + col_base;
          for (int s = 0; s < full; ++s) {
            const int c = (s * team + lane) * VEC;  // within the staged chunk: 32 bits
            detail::async_copy_16(staged + c, src + c);
          }
          for (int s = full; s < slots; ++s) {
            const int64_t c = RowLoader<S, VEC>::column(s, lane, team);
            const int valid = detail::slot_valid(n, c, VEC);
            if (valid > 0) {
              detail::RawSlot<S, VEC> raw;
#pragma unroll
              for (int i = 0; i < VEC; ++i) raw.v[i] = i < valid ? src[c + i] : detail::from_float<S>(0.f);
              detail::write_staged_slot<S, VEC>(staged, c, valid, raw);
            }
          }
          detail::async_copy_wait_all();
        }
      }
      for (int s0 = 0; !staged_async && s0 < slots; s0 += UNROLL) {
        detail::RawSlot<S, VEC> v[UNROLL];
        Problem::Input::template load<UNROLL, VEC>(p, row, col_base, n, s0, lane, team, true, v);
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) {
          const int64_t c = RowLoader<S, VEC>::column(s0 + k, lane, team);
          detail::write_staged_slot<S, VEC>(staged, c, detail::slot_valid(n, c, VEC), v[k]);
        }
      }
      const View view{staged, n, slots, lane, team, detail::row_pilot<Problem, View, Reducer>(p, row)};
      st = detail::staged_row_stats_and_absmax<Problem>(p, row, col_base, view, reducer, local_absmax, &amax);
    } else {
      const View view{p, row, col_base, n, slots, lane, team, detail::row_pilot<Problem, View, Reducer>(p, row)};
      st = detail::row_stats_and_absmax<Problem>(p, view, reducer, local_absmax, &amax);
    }
    if (leader) detail::store_row_stats(p, row, st);

    const float factor = detail::output_factor<Problem, View, Reducer>(p, row, amax, leader, st);
    constexpr bool kFolds = detail::kFoldsRowFactor<Problem, View, Reducer>;
    int s0 = 0;
    // Whole batches, when every access is slot-aligned: no bounds per slot, no
    // branch on widths or parameter alignment (the WHOLE output). The rest
    // (the tail, and everything in rows not so aligned) goes through the
    // checked path below; one copy of each keeps the registers under 64.
    if (p.whole_access) {
      if constexpr (STAGED) {
        // One slot at a time from shared memory: unrolled, the compiler hoists
        // every slot's weight and bias loads and spills.
#pragma unroll 1
        for (; s0 < full; ++s0) {
          const detail::RawSlot<S, VEC> v[1] = {detail::read_whole_staged_slot<S, VEC>(staged, s0, lane, team)};
          detail::store_slots<Problem, 1, true, kFolds>(p, row, col_base, n, s0, lane, team, st, factor, v);
        }
      } else {
        for (; s0 + UNROLL <= full; s0 += UNROLL) {
          detail::RawSlot<S, VEC> v[UNROLL];
          detail::load_input<typename Problem::Input, UNROLL, VEC, true>(p, row, col_base, n, s0, lane, team, false, v);
          detail::store_slots<Problem, UNROLL, true, kFolds>(p, row, col_base, n, s0, lane, team, st, factor, v);
        }
      }
    }
    for (; s0 < slots; s0 += UNROLL) {
      detail::RawSlot<S, VEC> v[UNROLL];
      fetch(s0, v);
      detail::store_slots<Problem, UNROLL, false, kFolds>(p, row, col_base, n, s0, lane, team, st, factor, v);
    }
  }
  reducer.finish();
}

}  // namespace kernel
NORMKIT_NAMESPACE_END
