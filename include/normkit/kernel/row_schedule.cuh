// normkit/kernel/row_schedule.cuh: which rows each cluster of
// row_cluster_registers runs, and in what order.
//
// The resident clusters loop over the rows. A fixed stride (cluster c of K:
// rows c, c + K, c + 2K, ...) gives every cluster the same rows, but the
// clusters do not run at the same speed: the memory system serves some SMs
// faster than others, and within one call the clusters ended up to eight
// rows apart, the call waiting for the slowest (docs/performance.md, changes
// 129-130). With a counter (LaunchOptions::row_counter), each row draws a
// ticket, and the ticket names the cluster's row LEAD rows later: row
// LEAD * K + ticket. Rows then go to the clusters that are ready for them.
//
// Rank 0's thread 0 draws (an atomicAdd issued at the top of the row, whose
// round trip the row's loads hide), and the row's first cluster reduction
// carries the ticket to every thread of the cluster
// (ClusterAllReduce::carry_with_next): no synchronization of its own. Loops
// that start a row's loads before the previous row's first reduction (the
// prefetching loop, the ring, and rolled rows, whose output walk loads the
// next row) look two rows ahead (LEAD = 2): their first two rows are fixed,
// and a row's ticket names the row two after it.
//
// Every row a cluster runs draws one ticket, so each row past the first
// LEAD * K is named by exactly one ticket; a cluster's tickets rise, so once
// one names a row past the batch, so do all its later ones: the cluster runs
// the rows it was already given (LEAD - 1 at most) and stops. A row's
// computation does not depend on which cluster runs it, so the bits are the
// same either way. The call's last cluster to finish sets
// the counter back to zero (retire_row_counter), so the next call on the
// stream finds it as the first did.
#pragma once

#include <cstdint>

#include "../config.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace detail {

template <int LEAD>
class RowSchedule {
  static_assert(LEAD >= 1, "normkit: a row schedule looks at least one row ahead");

 public:
  /// `counter`: LaunchOptions::row_counter, or null for the fixed stride
  /// (also what clusters of one CTA run: their reductions carry no ticket).
  /// `first`: the cluster's index; `clusters`: the resident clusters.
  template <class Reducer>
  NORMKIT_DEVICE RowSchedule(uint32_t* counter, const Reducer& reducer, int64_t first, int64_t clusters)
      : counter_(reducer.size() > 1 ? counter : nullptr), clusters_(clusters) {
#pragma unroll
    for (int k = 0; k <= LEAD; ++k) rows_[k] = first + k * clusters;
  }

  /// The row the cluster runs now (past the batch: the loop is done).
  NORMKIT_DEVICE int64_t row() const { return rows_[0]; }

  /// The row `k` rows after this one (0 <= k <= LEAD; k == LEAD only after
  /// learn(); callers keep k in range: row_ring.cuh asserts its ring holds
  /// at most two rows' parts).
  NORMKIT_DEVICE int64_t ahead(int k) const {
    int64_t r = rows_[0];
#pragma unroll
    for (int j = 1; j <= LEAD; ++j) r = k == j ? rows_[j] : r;
    return r;
  }

  /// Every thread, at the top of each row, before its first reduction.
  template <class Reducer>
  NORMKIT_DEVICE void draw(Reducer& reducer) {
    if (counter_ != nullptr) {
      reducer.carry_with_next(reducer.rank() == 0 && threadIdx.x == 0 ? atomicAdd(counter_, 1u) : 0u);
    }
  }

  /// Every thread, after the row's first reduction: the row LEAD rows ahead.
  template <class Reducer>
  NORMKIT_DEVICE void learn(const Reducer& reducer) {
    rows_[LEAD] = counter_ != nullptr ? LEAD * clusters_ + static_cast<int64_t>(reducer.carried())
                                      : rows_[LEAD - 1] + clusters_;
  }

  /// To the next row (after learn()).
  NORMKIT_DEVICE void advance() {
#pragma unroll
    for (int k = 0; k < LEAD; ++k) rows_[k] = rows_[k + 1];
  }

 private:
  uint32_t* counter_;
  int64_t clusters_;
  int64_t rows_[LEAD + 1];  ///< this row and the LEAD after it
};

/// Once per CTA, after its rows: the call's last cluster to finish sets the
/// counter and its count of finished clusters (the word after it) back to
/// zero. Every cluster counts itself once its draws are done, so the reset
/// follows every draw of the call.
template <class Reducer>
NORMKIT_DEVICE void retire_row_counter(uint32_t* counter, const Reducer& reducer, int64_t clusters) {
  if (counter == nullptr || reducer.size() < 2 || reducer.rank() != 0 || threadIdx.x != 0) return;
  __threadfence();  // this cluster's draws before its count
  if (atomicAdd(counter + 1, 1u) == static_cast<uint32_t>(clusters - 1)) {
    __threadfence();  // every cluster's count (and so its draws) before the reset
    atomicExch(counter, 0u);
    atomicExch(counter + 1, 0u);
  }
}

}  // namespace detail
NORMKIT_NAMESPACE_END
