// normkit/normkit.cuh: everything. Include the narrower headers to keep a
// translation unit's compile time down.
#pragma once

#include "block/block_reduce.cuh"
#include "block/cluster_reduce.cuh"
#include "block/row_loader.cuh"
#include "block/warp_reduce.cuh"
#include "epilogue/affine.cuh"
#include "layer_norm.cuh"
#include "rms_norm.cuh"
#include "stats/mean_square.cuh"
#include "stats/two_pass.cuh"
#include "stats/welford.cuh"
#include "status.cuh"
#include "types.cuh"
