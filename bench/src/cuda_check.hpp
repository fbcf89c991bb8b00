// bench/src/cuda_check.hpp: turning CUDA and normkit failures into one
// exception type, and owning device memory. A benchmark body catches
// BenchError and reports it with SkipWithError, so a failed call can never
// leave a number behind.
#pragma once

#include <cuda_runtime.h>
#include <normkit/status.cuh>

#include <memory>
#include <stdexcept>
#include <string>

namespace nkbench {

struct BenchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw BenchError(std::string(what) + ": " + cudaGetErrorString(e));
}

inline void check(normkit::Status s, const char* what) {
  if (s != normkit::Status::kSuccess) throw BenchError(std::string(what) + ": " + normkit::status_string(s));
}

struct CudaFree {
  void operator()(void* p) const noexcept { cudaFree(p); }
};

/// One cudaMalloc'd block, freed when it goes out of scope.
using DeviceBuffer = std::unique_ptr<void, CudaFree>;

inline DeviceBuffer device_alloc(size_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes == 0 ? 1 : bytes), "cudaMalloc");
  return DeviceBuffer(p);
}

}  // namespace nkbench
