// normkit/status.cuh: the result of every host-side call.
#pragma once

#include "config.cuh"

NORMKIT_NAMESPACE_BEGIN

/// What a launcher returns. Launchers never throw, exit or print: every
/// failure, including a failed CUDA call, becomes one of these values.
enum class Status : int {
  kSuccess = 0,
  kErrorNullPointer,          ///< a required pointer (x, y, an output in use) is null
  kErrorInvalidShape,         ///< N == 0, or M or N negative
  kErrorInvalidStride,        ///< a row stride smaller than N (or not kContiguous)
  kErrorInvalidEpsilon,       ///< eps negative, NaN or infinite
  kErrorInvalidScale,         ///< a quantization scale missing, non-positive or not finite
  kErrorOverlap,              ///< an output partly overlaps an input or another output
  kErrorUnsupportedType,      ///< a dtype combination the chosen path does not handle
  kErrorUnsupportedShape,     ///< a forced kernel shape that cannot hold a row of N
  kErrorUnsupportedArchitecture,  ///< the device is too old, or no kernel image was built for it
  kErrorNoDevice,             ///< no CUDA device could be used
  kErrorCudaLaunch,           ///< the kernel launch itself failed
  kErrorCuda,                 ///< another CUDA runtime call failed
  kErrorInvalidWorkspace,     ///< LaunchOptions::row_counter not 4-byte aligned, or overlapping the call's memory
};

/// A short English description of a status, for logs and error messages.
inline const char* status_string(Status s) noexcept {
  switch (s) {
    case Status::kSuccess: return "success";
    case Status::kErrorNullPointer: return "a required pointer is null";
    case Status::kErrorInvalidShape: return "invalid shape: N must be >= 1 and M >= 0";
    case Status::kErrorInvalidStride: return "invalid row stride: it must be >= N (or kContiguous)";
    case Status::kErrorInvalidEpsilon: return "invalid eps: it must be finite and >= 0";
    case Status::kErrorInvalidScale: return "invalid quantization scale: missing, non-positive or not finite";
    case Status::kErrorOverlap: return "an output partly overlaps an input or another output (only y == x with equal strides is allowed)";
    case Status::kErrorUnsupportedType: return "unsupported dtype combination";
    case Status::kErrorUnsupportedShape: return "the requested kernel shape cannot hold rows of this length";
    case Status::kErrorUnsupportedArchitecture: return "unsupported GPU architecture (compute capability < 7.0, or no kernel image built for this device)";
    case Status::kErrorNoDevice: return "no usable CUDA device";
    case Status::kErrorCudaLaunch: return "kernel launch failed";
    case Status::kErrorCuda: return "a CUDA runtime call failed";
    case Status::kErrorInvalidWorkspace:
      return "invalid row counter: LaunchOptions::row_counter must be 4-byte aligned and share no byte with the "
             "call's inputs or outputs";
  }
  return "unknown status";
}

NORMKIT_NAMESPACE_END
