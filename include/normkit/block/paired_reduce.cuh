// normkit/block/paired_reduce.cuh: the all-reduces of teams whose threads
// each stand in for two threads of a team twice as large (the paired
// register forms, kernel/row_per_block.cuh and kernel/rows_per_warp.cuh),
// giving the bits the larger team's reducer gives.
//
// PairedBlockAllReduce, for a CTA, matches BlockAllReduce<kWarpShuffle>:
// Thread t holds the values of the larger CTA's threads t and t + blockDim.x
// as Parts<T, 2>: lane l of warp u holds lane l of the larger CTA's warps u
// and u + warps. Each part goes through that warp's butterfly in turn, lane
// 0 writes the two warp partials where the larger CTA's warps would, and the
// last stage is BlockAllReduce's own (detail::reduce_warp_partials).
#pragma once

#include <type_traits>

#include "../config.cuh"
#include "../stats/row_stats.cuh"
#include "block_reduce.cuh"
#include "reduce_ops.cuh"
#include "warp_reduce.cuh"

NORMKIT_NAMESPACE_BEGIN

/// All-reduce over a CTA of blockDim.x threads (a multiple of 32, at most
/// MAX_THREADS / 2), each holding two threads' values of a CTA of 2 *
/// blockDim.x threads. Every thread must call it. Plain values (one per
/// thread) may be reduced only with operators whose result has no order
/// (Max, NonNegativeMax).
template <int MAX_THREADS = 1024>
class PairedBlockAllReduce {
  static_assert(MAX_THREADS % 64 == 0 && MAX_THREADS >= 64 && MAX_THREADS <= 1024,
                "normkit::PairedBlockAllReduce: MAX_THREADS (the larger CTA) must be a multiple of 64 in [64, 1024]");
  static constexpr int kWarps = MAX_THREADS / 32;  ///< the larger CTA's
  static constexpr int kMaxValueBytes = 16;

 public:
  struct TempStorage {
    alignas(16) unsigned char partials[2][kWarps][kMaxValueBytes];
  };

  NORMKIT_DEVICE explicit PairedBlockAllReduce(TempStorage& storage) : storage_(storage), phase_(0) {}

  template <class T, class Op>
  NORMKIT_DEVICE T all_reduce(const Parts<T, 2>& v, Op op) {
    static_assert(sizeof(T) <= kMaxValueBytes, "normkit::PairedBlockAllReduce: values are limited to 16 bytes");
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int warps = blockDim.x / 32;
    T* partials = reinterpret_cast<T*>(storage_.partials[phase_]);
    const T w0 = WarpAllReduce<32>::all_reduce(v.part[0], op);
    if (lane == 0) partials[warp] = w0;
    const T w1 = WarpAllReduce<32>::all_reduce(v.part[1], op);
    if (lane == 0) partials[warp + warps] = w1;
    const T r = detail::reduce_warp_partials(partials, 2 * warps, op);
    phase_ ^= 1;
    return r;
  }

  /// A value without parts: only for operators without order (see above:
  /// Max and NonNegativeMax), for which a thread's two parts may both hold
  /// its value.
  template <class T, class Op, std::enable_if_t<std::is_base_of_v<Max, Op>, int> = 0>
  NORMKIT_DEVICE T all_reduce(T v, Op op) {
    return all_reduce<T, Op>(Parts<T, 2>{{v, v}}, op);
  }

 private:
  TempStorage& storage_;
  int phase_;
};

/// The GroupReducer of a group of `team` lanes (a power of two, at most 16)
/// each holding lanes j and j + team of a group of 2 * team lanes as
/// Parts<T, 2>: that group's butterfly begins by combining exactly those two
/// (offset team), op(part 0, part 1) here; its other steps are this
/// group's. The same bits as GroupReducer{2 * team}.
struct PairedGroupReducer {
  int team;
  /// A warp holds several rows (see reduction_branch).
  static constexpr bool kWarpHoldsSeveralRows = true;
  template <class T, class Op>
  NORMKIT_DEVICE T all_reduce(const Parts<T, 2>& v, Op op) const {
    return WarpAllReduce<32>::all_reduce(op(v.part[0], v.part[1]), op, team);
  }
  /// A value without parts: only for operators without order (Max and NonNegativeMax).
  template <class T, class Op, std::enable_if_t<std::is_base_of_v<Max, Op>, int> = 0>
  NORMKIT_DEVICE T all_reduce(T v, Op op) const {
    return WarpAllReduce<32>::all_reduce(v, op, team);
  }
};

NORMKIT_NAMESPACE_END
