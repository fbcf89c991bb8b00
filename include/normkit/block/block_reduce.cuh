// normkit/block/block_reduce.cuh: all-reduce across the threads of a CTA.
//
// kWarpShuffle: shuffle within each warp, one partial per warp in shared
// memory, one barrier, then every warp reduces the partials itself (so no
// second barrier is needed to broadcast). Two buffers alternate between calls,
// so back-to-back reductions need no barrier in between: call k + 2 writes a
// buffer only after every thread passed call k + 1's barrier, hence after it
// finished reading call k.
// kCub: cub::BlockReduce (warp reductions) behind the same face, with the
// result broadcast through shared memory.
#pragma once

#include <cub/block/block_reduce.cuh>

#include "../config.cuh"
#include "reduce_ops.cuh"
#include "warp_reduce.cuh"

NORMKIT_NAMESPACE_BEGIN

namespace detail {

/// The warp-shuffle all-reduce's last stage, shared with the reducers that
/// must give its bits (PairedBlockAllReduce): once lane 0 of each warp has
/// written its partial, a barrier, then every warp reduces partials 0 ..
/// count - 1 itself (lane i takes partial i, the identity past count), so
/// every thread gets the same result and no second barrier is needed.
template <class T, class Op>
NORMKIT_DEVICE T reduce_warp_partials(const T* partials, int count, Op op) {
  __syncthreads();
  const int lane = threadIdx.x % 32;
  const T w = lane < count ? partials[lane] : Op::template identity<T>();
  return WarpAllReduce<32>::all_reduce(w, op);
}

}  // namespace detail

enum class BlockReduceAlgorithm { kWarpShuffle, kCub };

/// All-reduce over a CTA of blockDim.x threads (a multiple of 32, at most
/// MAX_THREADS); every thread must call it and every thread gets the result.
/// Reduced values may be up to 16 bytes (float, SumPair, WelfordState, ...).
template <int MAX_THREADS = 1024, BlockReduceAlgorithm ALGO = BlockReduceAlgorithm::kWarpShuffle>
class BlockAllReduce {
  static_assert(MAX_THREADS % 32 == 0 && MAX_THREADS >= 32 && MAX_THREADS <= 1024,
                "normkit::BlockAllReduce: MAX_THREADS must be a multiple of 32 in [32, 1024]");
  static constexpr int kWarps = MAX_THREADS / 32;
  static constexpr int kMaxValueBytes = 16;
  // Largest cub temp storage over the value sizes we allow, with room to spare.
  static constexpr int kCubBytes = 2 * kWarps * kMaxValueBytes + 64;

 public:
  struct TempStorage {
    union {
      alignas(16) unsigned char partials[2][kWarps][kMaxValueBytes];
      alignas(16) unsigned char cub[kCubBytes];
    };
    alignas(16) unsigned char broadcast[kMaxValueBytes];
  };

  NORMKIT_DEVICE explicit BlockAllReduce(TempStorage& storage) : storage_(storage), phase_(0) {}

  template <class T, class Op>
  NORMKIT_DEVICE T all_reduce(T v, Op op) {
    static_assert(sizeof(T) <= kMaxValueBytes, "normkit::BlockAllReduce: values are limited to 16 bytes");
    if constexpr (ALGO == BlockReduceAlgorithm::kWarpShuffle) {
      const int warp = threadIdx.x / 32;
      const int lane = threadIdx.x % 32;
      const int warps = blockDim.x / 32;
      v = WarpAllReduce<32>::all_reduce(v, op);
      T* partials = reinterpret_cast<T*>(storage_.partials[phase_]);
      if (lane == 0) partials[warp] = v;
      const T r = detail::reduce_warp_partials(partials, warps, op);
      phase_ ^= 1;
      return r;
    } else {
      using Cub = cub::BlockReduce<T, MAX_THREADS, cub::BLOCK_REDUCE_WARP_REDUCTIONS>;
      static_assert(sizeof(typename Cub::TempStorage) <= kCubBytes,
                    "normkit::BlockAllReduce: cub temp storage larger than reserved");
      auto& temp = *reinterpret_cast<typename Cub::TempStorage*>(storage_.cub);
      const int valid = blockDim.x;
      T r = valid == MAX_THREADS ? Cub(temp).Reduce(v, op) : Cub(temp).Reduce(v, op, valid);
      if (threadIdx.x == 0) *reinterpret_cast<T*>(storage_.broadcast) = r;
      __syncthreads();
      r = *reinterpret_cast<const T*>(storage_.broadcast);
      // cub's next call reuses its storage: every thread must be past the read above
      // before thread 0 writes the broadcast slot again; cub's own barrier orders it.
      return r;
    }
  }

 private:
  TempStorage& storage_;
  int phase_;
};

/// A block reducer whose CTA runs alone on its SM (1024 threads): while it
/// waits at a reduction's barrier no other CTA's loads run there, so a
/// statistics policy may trade walks over the row for reductions, as it
/// does across a cluster (detail::costly_reductions_v; stats/two_pass.cuh).
/// The same reductions as Inner's.
template <class Inner>
class AloneOnSm : public Inner {
 public:
  static constexpr bool kCostlyReductions = true;
  using Inner::Inner;
};

NORMKIT_NAMESPACE_END
