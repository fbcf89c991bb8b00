// normkit/block/cluster_reduce.cuh: all-reduce across the CTAs of a thread-block
// cluster (sm_90+), for rows split across several multiprocessors.
//
// Each CTA reduces its own part with a BlockAllReduce; thread 0 then pushes
// the CTA's partial into every CTA's shared memory (its own included) with
// st.async, which signals the receiving CTA's mbarrier; every thread waits on
// its CTA's mbarrier and folds all ranks' partials in rank order, so every
// thread of every CTA gets the same bits. No cluster barrier per reduction:
// `cluster.sync()` compiles to a GPU-wide memory barrier in every thread and
// an invalidation of all of L1 (docs/performance.md, change 35), which a row
// paid on each reduction. Partials and mbarriers alternate between two
// phases: a CTA cannot run two reductions ahead of another (each needs every
// CTA's partial of the one before), and a CTA sends its next partial only
// after the block reduction's barrier, so after all its threads have read the
// phase before. With a cluster of one CTA this is exactly the block reduction.
//
// A reduction can also carry one 32-bit word from rank 0's thread 0 to every
// thread of the cluster (carry_with_next, carried), in the last word of rank
// 0's slot, which values of at most 12 bytes leave free: the row schedule's
// tickets ride with a row's first reduction (kernel/row_schedule.cuh), at no
// cost in synchronization.
#pragma once

#include <cooperative_groups.h>

#include <cstdint>
#include <cstring>

#include "../config.cuh"
#include "async_copy.cuh"
#include "block_reduce.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace detail {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/// The address of the same shared-memory location in cluster rank `rank`'s CTA.
NORMKIT_DEVICE uint32_t cluster_peer_address(uint32_t local, unsigned rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
  return remote;
}
#endif

}  // namespace detail

template <class BlockReducer>
class ClusterAllReduce {
 public:
  /// Its reductions synchronize CTAs (statistics policies may trade walks
  /// for them: detail::costly_reductions_v).
  static constexpr bool kCostlyReductions = true;
  /// Largest cluster the exchange has slots for (the launcher uses at most 8).
  static constexpr int kMaxRanks = 16;
  static constexpr int kSlotBytes = 16;

  struct TempStorage {
    typename BlockReducer::TempStorage block;
    alignas(8) uint64_t arrived[2];  ///< per phase: completes when every rank's partial is here
    alignas(16) unsigned char partials[2][kMaxRanks][kSlotBytes];
  };

  /// Every thread of the CTA constructs it (with a cluster of several CTAs,
  /// it synchronizes the cluster once, so that no partial reaches a CTA
  /// before its mbarriers exist).
  NORMKIT_DEVICE explicit ClusterAllReduce(TempStorage& storage)
      : storage_(storage), block_(storage.block), calls_(0) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    size_ = cooperative_groups::this_cluster().num_blocks();
    rank_ = cooperative_groups::this_cluster().block_rank();
    if (size_ > 1) {
      if (threadIdx.x == 0) {
        for (int p = 0; p < 2; ++p) detail::mbarrier_init(&storage_.arrived[p], 1);
        detail::fence_mbarrier_init();
      }
      cooperative_groups::this_cluster().sync();
    }
#else
    size_ = 1;
    rank_ = 0;
#endif
  }

  NORMKIT_DEVICE unsigned size() const { return size_; }
  NORMKIT_DEVICE unsigned rank() const { return rank_; }

  /// Every thread of the CTA: the next reduction carries `word` (the value
  /// of rank 0's thread 0; the others' are ignored) to every thread of the
  /// cluster, which carried() returns after it. Clusters of one CTA carry
  /// nothing (there is no exchange): callers keep their own value then.
  NORMKIT_DEVICE void carry_with_next(uint32_t word) {
    carrying_ = true;
    word_ = word;
  }
  NORMKIT_DEVICE uint32_t carried() const { return word_; }

  template <class T, class Op>
  NORMKIT_DEVICE T all_reduce(T v, Op op) {
    static_assert(sizeof(T) <= kSlotBytes - 4,
                  "normkit::ClusterAllReduce: values are limited to 12 bytes (the slot's last word carries "
                  "carry_with_next's word)");
    v = block_.all_reduce(v, op);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (size_ > 1) {
      // Reductions alternate between the two phases; phase p's mbarrier
      // completes once per use, so its k-th use awaits parity k & 1.
      const unsigned phase = calls_ & 1u;
      const uint32_t parity = (calls_ >> 1) & 1u;
      ++calls_;
      const uint32_t arrived = detail::smem_address(&storage_.arrived[phase]);
      if (threadIdx.x == 0) {
        uint32_t words[kSlotBytes / 4] = {0, 0, 0, 0};
        memcpy(words, &v, sizeof(T));
        if (carrying_) words[kSlotBytes / 4 - 1] = word_;
        const uint32_t slot = detail::smem_address(storage_.partials[phase][rank_]);
        // This CTA expects one slot from every rank, then sends its own.
        detail::mbarrier_arrive_expect_tx(&storage_.arrived[phase], static_cast<uint32_t>(size_ * kSlotBytes));
#pragma unroll 1
        for (unsigned r = 0; r < size_; ++r) {
          asm volatile(
              "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];" ::"r"(
                  detail::cluster_peer_address(slot, r)),
              "r"(words[0]), "r"(words[1]), "r"(words[2]), "r"(words[3]), "r"(detail::cluster_peer_address(arrived, r))
              : "memory");
        }
      }
      // The loop here rather than in the asm (detail::mbarrier_wait_parity):
      // every cluster kernel was measured with this form, and the ring, which
      // needed the other, waits once a slot rather than once a row.
      uint32_t done = 0;
      do {
        asm volatile(
            "{\n .reg .pred ready;\n mbarrier.try_wait.parity.shared::cta.b64 ready, [%1], %2;\n"
            " selp.u32 %0, 1, 0, ready;\n}" : "=r"(done) : "r"(arrived), "r"(parity) : "memory");
      } while (!done);
      if (carrying_) {
        memcpy(&word_, storage_.partials[phase][0] + kSlotBytes - 4, 4);
        carrying_ = false;
      }
      T acc;
      memcpy(&acc, storage_.partials[phase][0], sizeof(T));
#pragma unroll 1
      for (unsigned r = 1; r < size_; ++r) {
        T other;
        memcpy(&other, storage_.partials[phase][r], sizeof(T));
        acc = op(acc, other);
      }
      return acc;
    }
#endif
    return v;
  }

  /// Call once before the CTA exits: no CTA may leave while another can still
  /// send to it or read from it.
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
  unsigned calls_;  ///< reductions so far: the phase and the parity the next one awaits
  bool carrying_ = false;  ///< the next reduction carries word_ (carry_with_next)
  uint32_t word_ = 0;      ///< the word to carry, then the word carried
};

NORMKIT_NAMESPACE_END
