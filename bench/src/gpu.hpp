// bench/src/gpu.hpp: the device the benchmarks run on, their stream, and the
// L2 flush that runs before every timed sample of a memory-bound launch.
#pragma once

#include <cuda_runtime.h>

#include <string>

namespace nkbench {

struct Gpu {
  int device = 0;
  cudaDeviceProp prop{};
  cudaStream_t stream = nullptr;  ///< the benchmarks' own non-blocking stream
};

/// False, with the reason in `why`, when no CUDA device can be used. Call it
/// before anything else here: gpu() assumes a device.
bool gpu_available(std::string* why);

/// The current device; the first call creates the stream and the flush buffer.
const Gpu& gpu();

/// Enqueues a read of a buffer twice the size of the L2 cache, so the next
/// launch finds none of its data there. A read rather than a memset: a memset
/// leaves the L2 full of dirty lines that the timed kernel then pays to write
/// back (on an H200 that cost 1 GiB copies and norms about 1% of their TB/s).
void flush_l2(cudaStream_t stream);

}  // namespace nkbench
