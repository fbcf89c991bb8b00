// normkit/kernel/row_per_block_tight.cuh: the CTA sizes of row_per_block's
// tight form, in a header of their own, since the launcher, row_per_block
// (its launch bounds) and the held-y walk of rows_per_warp.cuh
// (detail::kHeldParamsOnce) all ask them.
#pragma once

#include "../config.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace kernel {

/// row_per_block's *tight* form: 4-slot WHOLE rows in CTAs of
/// kRowPerBlockTightMinThreads to kRowPerBlockTightThreads threads (11-12
/// warps), compiled for three such CTAs an SM (launch bounds: at most 56
/// registers a thread). At 64 registers an SM holds 32 warps, two CTAs of
/// 11-12; at 56 it holds 36, three. Smaller CTAs gain no CTA that pays for
/// the spill 56 registers cost (28 bytes stored, 44 loaded a thread, per-row
/// fp8): measured on an H100 (docs/performance.md, experiment 180, share of
/// the copy), per-row fp8 bf16 N = 12288 (384 threads) 88.4% -> 95.2%, but
/// 8192 (256 threads, 4 CTAs either way) -3.7, 4096 (8 -> 9 CTAs) -1.7.
inline constexpr int kRowPerBlockTightThreads = 384;
inline constexpr int kRowPerBlockTightMinThreads = 321;

}  // namespace kernel
NORMKIT_NAMESPACE_END
