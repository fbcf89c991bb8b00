// normkit/launch/device.cuh: what launchers ask of the CUDA runtime, asked once
// and cached: the device's capabilities, and per kernel its attributes and
// occupancy. No call here allocates or synchronizes, so launches stay legal
// inside CUDA graph capture.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <mutex>
#include <vector>

#include "../config.cuh"
#include "../status.cuh"
#include "plan.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace detail {

inline Status status_from_cuda(cudaError_t e, Status otherwise) {
  switch (e) {
    case cudaSuccess: return Status::kSuccess;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice: return Status::kErrorNoDevice;
    case cudaErrorInvalidDeviceFunction:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion: return Status::kErrorUnsupportedArchitecture;
    default: return otherwise;
  }
}

/// The current device and its capabilities; queried once per device.
inline Status current_device_caps(int* device, DeviceCaps* caps) {
  constexpr int kMaxDevices = 64;
  static std::mutex mutex;
  static DeviceCaps cache[kMaxDevices];
  static bool known[kMaxDevices] = {};
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return Status::kErrorNoDevice;
  }
  std::lock_guard<std::mutex> lock(mutex);
  if (dev < 0 || dev >= kMaxDevices) return Status::kErrorNoDevice;
  if (!known[dev]) {
    DeviceCaps c;
    int cluster = 0;
    int l2 = 0;
    if (cudaDeviceGetAttribute(&c.cc_major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&c.cc_minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&c.sm_count, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&c.max_smem_per_block_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) !=
            cudaSuccess ||
        cudaDeviceGetAttribute(&cluster, cudaDevAttrClusterLaunch, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev) != cudaSuccess) {
      (void)cudaGetLastError();
      return Status::kErrorCuda;
    }
    c.cluster_launch = cluster != 0;
    c.l2_bytes = l2;
    // Clocks and bus width only size the clusters' staggered start
    // (kernel/start_stagger.cuh): a device that does not report them runs
    // without it.
    int sm_khz = 0, mem_khz = 0, bus_bits = 0;
    if (cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev) == cudaSuccess) {
      c.sm_clock_khz = sm_khz;
      // Double data rate: two transfers of the bus's width a memory clock.
      c.dram_bytes_per_ns = 2.0 * mem_khz * 1e-6 * (bus_bits / 8.0);
    } else {
      (void)cudaGetLastError();
    }
    cache[dev] = c;
    known[dev] = true;
  }
  *device = dev;
  *caps = cache[dev];
  if (caps->cc_major < 7) return Status::kErrorUnsupportedArchitecture;
  return Status::kSuccess;
}

/// Per kernel function: prepares it for dynamic shared memory and returns how
/// many CTAs of `threads` with `smem` bytes fit on one multiprocessor, or, for
/// cluster > 1, how many clusters of that size the whole device runs at once
/// (fewer than CTAs / cluster: a cluster must fit in one GPC). Cached per
/// (device, threads, smem, cluster); the first call per kernel also finds out
/// whether the binary holds code for this device.
inline Status kernel_occupancy(const void* func, int device, int threads, size_t smem, int cluster, int* resident) {
  struct Entry {
    const void* func;
    int device;
    int threads;
    size_t smem;
    int cluster;
    int resident;
  };
  static std::mutex mutex;
  static std::vector<Entry> cache;
  std::lock_guard<std::mutex> lock(mutex);
  for (const Entry& e : cache) {
    if (e.func == func && e.device == device && e.threads == threads && e.smem == smem && e.cluster == cluster) {
      *resident = e.resident;
      return Status::kSuccess;
    }
  }
  cudaFuncAttributes attr;
  cudaError_t err = cudaFuncGetAttributes(&attr, func);
  if (err == cudaSuccess && smem > 0) {
    // Opt in to the largest dynamic size this kernel can have on this device, so
    // that a later, larger launch of the same kernel never finds a smaller limit.
    int optin = 0;
    err = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    const int limit = optin - static_cast<int>(attr.sharedSizeBytes);
    if (err == cudaSuccess && attr.maxDynamicSharedSizeBytes < limit) {
      err = cudaFuncSetAttribute(func, cudaFuncAttributeMaxDynamicSharedMemorySize, limit);
    }
  }
  int n = 0;
  if (err == cudaSuccess && cluster <= 1) {
    err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, func, threads, smem);
  } else if (err == cudaSuccess) {
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr_cluster;
    attr_cluster.id = cudaLaunchAttributeClusterDimension;
    attr_cluster.val.clusterDim.x = static_cast<unsigned>(cluster);
    attr_cluster.val.clusterDim.y = 1;
    attr_cluster.val.clusterDim.z = 1;
    cfg.gridDim = dim3(static_cast<unsigned>(cluster), 1, 1);
    cfg.blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
    cfg.dynamicSmemBytes = smem;
    cfg.attrs = &attr_cluster;
    cfg.numAttrs = 1;
    err = cudaOccupancyMaxActiveClusters(&n, func, &cfg);
  }
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return status_from_cuda(err, Status::kErrorCuda);
  }
  if (n < 1) return Status::kErrorUnsupportedShape;
  cache.push_back(Entry{func, device, threads, smem, cluster, n});
  *resident = n;
  return Status::kSuccess;
}

}  // namespace detail
NORMKIT_NAMESPACE_END
