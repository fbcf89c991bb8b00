// bench/src/fill.hpp: random device data, made on the device (a 512 MiB input
// is ready in well under a millisecond; no host buffer, no transfer).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "dtype.hpp"

namespace nkbench {

/// Writes `count` values uniform in [lo, hi) to `dst`, a pure function of
/// (seed, index): the same seed gives the same data on every run and device.
void fill_uniform(void* dst, DType dtype, int64_t count, float lo, float hi, uint64_t seed, cudaStream_t stream);

}  // namespace nkbench
