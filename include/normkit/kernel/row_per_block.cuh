// normkit/kernel/row_per_block.cuh: kernel shape 2. One CTA (blockDim.x
// threads, chosen at run time, up to kRowPerBlockMaxThreads) holds one row in
// registers, VECS slots per thread (1, 2 or 4; 8 for the wide rows of
// plan.cuh's wide_slots_fit: the same 64 registers hold them without
// spilling in the WHOLE form; the checked 8-slot form, run only for rows
// not slot-aligned, spills). The launcher starts one CTA per row; the
// loop strides over rows only past gridDim's limit. Statistics use the block
// all-reduce (shuffles, then one barrier per reduction). WHOLE: see
// normalize_register_row.
#pragma once

#include <cstdint>

#include "../block/block_reduce.cuh"
#include "../config.cuh"
#include "rows_per_warp.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace kernel {

inline constexpr int kRowPerBlockMaxThreads = 512;

template <class Problem, int VECS, bool WHOLE, BlockReduceAlgorithm ALGO = BlockReduceAlgorithm::kWarpShuffle>
__global__ void __launch_bounds__(kRowPerBlockMaxThreads, 2)
    row_per_block(const __grid_constant__ typename Problem::Params p) {
  using Reducer = BlockAllReduce<kRowPerBlockMaxThreads, ALGO>;
  __shared__ typename Reducer::TempStorage temp;
  Reducer reducer(temp);
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    detail::normalize_register_row<Problem, VECS, WHOLE>(p, row, true, threadIdx.x, blockDim.x, reducer);
  }
}

}  // namespace kernel
NORMKIT_NAMESPACE_END
