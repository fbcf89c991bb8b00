// normkit/block/cluster_reduce.cuh: all-reduce across the CTAs of a thread-block
// cluster (sm_90+), for rows split across several multiprocessors.
//
// Each CTA reduces its own part with a BlockAllReduce, thread 0 publishes the
// CTA's partial in shared memory, one cluster barrier, then every thread folds
// all ranks' partials, read through distributed shared memory, in rank order;
// so every thread of every CTA gets the same bits. Partials alternate between
// two slots, as in BlockAllReduce, so consecutive calls need one barrier each.
// With a cluster of one CTA this is exactly the block reduction.
#pragma once

#include <cooperative_groups.h>

#include "../config.cuh"
#include "block_reduce.cuh"

NORMKIT_NAMESPACE_BEGIN

template <class BlockReducer>
class ClusterAllReduce {
 public:
  /// Its reductions synchronize CTAs (statistics policies may trade walks for them).
  static constexpr bool kSpansCtas = true;

  struct TempStorage {
    typename BlockReducer::TempStorage block;
    alignas(16) unsigned char partials[2][16];
  };

  NORMKIT_DEVICE explicit ClusterAllReduce(TempStorage& storage)
      : storage_(storage), block_(storage.block), phase_(0) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    size_ = cooperative_groups::this_cluster().num_blocks();
    rank_ = cooperative_groups::this_cluster().block_rank();
#else
    size_ = 1;
    rank_ = 0;
#endif
  }

  NORMKIT_DEVICE unsigned size() const { return size_; }
  NORMKIT_DEVICE unsigned rank() const { return rank_; }

  template <class T, class Op>
  NORMKIT_DEVICE T all_reduce(T v, Op op) {
    v = block_.all_reduce(v, op);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (size_ > 1) {
      auto cluster = cooperative_groups::this_cluster();
      T* mine = reinterpret_cast<T*>(storage_.partials[phase_]);
      if (threadIdx.x == 0) *mine = v;
      cluster.sync();
      T acc = *cluster.map_shared_rank(mine, 0);
      for (unsigned r = 1; r < size_; ++r) acc = op(acc, *cluster.map_shared_rank(mine, r));
      phase_ ^= 1;
      return acc;
    }
#endif
    return v;
  }

  /// Call once before the CTA exits: no CTA may leave while another can still
  /// read its shared memory.
  NORMKIT_DEVICE void finish() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (size_ > 1) cooperative_groups::this_cluster().sync();
#endif
  }

 private:
  TempStorage& storage_;
  BlockReducer block_;
  unsigned size_;
  unsigned rank_;
  int phase_;
};

NORMKIT_NAMESPACE_END
