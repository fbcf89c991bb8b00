// bench/src/copy.hpp: the copy ceiling. A normalization reads x once and
// writes y once, so the fastest way to move the same bytes, a device-to-device
// copy, bounds it: copy_share = op TB/s / ceiling TB/s.
#pragma once

#include <cstdint>

#include "timing.hpp"

namespace nkbench {

enum class CopyKind {
  kMemcpy,  ///< cudaMemcpyAsync device to device
  kVector,  ///< a grid-stride kernel copying 16-byte vectors (uint4)
};

inline const char* copy_kind_name(CopyKind k) { return k == CopyKind::kMemcpy ? "memcpy" : "vector"; }

/// The bytes a copy sized for `bytes_moved` really moves (read + written):
/// half is copied, rounded up to whole 16-byte vectors.
int64_t copy_moved_bytes(int64_t bytes_moved);

/// Times a copy moving copy_moved_bytes(bytes_moved) bytes by `method`.
Timing time_copy(CopyKind kind, int64_t bytes_moved, Method method);

/// The faster of the two copy kinds in TB/s (1e12 bytes/s), for a call moving
/// `bytes_moved` timed by `method`. Measured once per (bytes, method).
double copy_ceiling_tbps(int64_t bytes_moved, Method method);

}  // namespace nkbench
