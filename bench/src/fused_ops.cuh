// bench/src/fused_ops.cuh: the Bench structs (see make_op_spec) for normkit's
// fused entry points, as inference engines call them: residual add + RMSNorm
// (out of place and vLLM-style in place) and RMSNorm with an fp8 output and
// dynamic per-row scales. No rstd is written (bytes_moved counts what is).
// Only the translation units under ops/ include this file.
#pragma once

#include <normkit/add_norm.cuh>
#include <normkit/quantize.cuh>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "norm_ops.cuh"
#include "op_registry.hpp"

namespace nkbench {

/// The residual stream is uniform in [-1, 1), x as in norm_ops.cuh.
inline constexpr float kResidualLo = -1.0f;
inline constexpr float kResidualHi = 1.0f;

/// The fused ops join the small-batch set at this row length only.
inline std::vector<int64_t> fused_small_batch_cols() { return {8192}; }

/// h = x + residual -> residual_out, y = RMSNorm(h) * weight; x, residual, y and weight all T.
/// InPlace: residual_out == residual and y == x (vLLM's fused_add_rms_norm). Every
/// launch then rewrites its own inputs: the residual grows until x's addition rounds
/// away, y stays normalized; the values stay finite and the traffic is the same.
template <class T, bool InPlace>
struct AddRmsNormBench {
  static constexpr const char* kName = InPlace ? "add_rms_norm_inplace" : "add_rms_norm";
  using X = T;
  using Args = normkit::AddRmsNormArgs<T, T, T, T>;

  /// x and residual read, residual_out and y written (4 passes), weight read once.
  static int64_t bytes_moved(int64_t rows, int64_t cols) {
    return 4 * rows * cols * int64_t(sizeof(T)) + cols * int64_t(sizeof(T));
  }
  static Args make_args(OpMemory& mem, int64_t rows, int64_t cols) {
    Args a;
    T* x = mem.input<T>(rows * cols, kInputLo, kInputHi);
    T* residual = mem.input<T>(rows * cols, kResidualLo, kResidualHi);
    a.x = x;
    a.residual = residual;
    a.residual_out = InPlace ? residual : mem.alloc<T>(rows * cols);
    a.y = InPlace ? x : mem.alloc<T>(rows * cols);
    a.weight = mem.random<T>(cols, 0.5f, 1.5f);
    a.rows = rows;
    a.cols = cols;
    return a;
  }
  static std::vector<int64_t> small_batch_cols() { return fused_small_batch_cols(); }
  static normkit::Status forward(const Args& a, cudaStream_t s, const normkit::LaunchOptions& o) {
    return normkit::add_rms_norm_forward(a, s, o);
  }
  /// The in-place call has no plan function of its own: it plans as the same arguments.
  static normkit::Status plan(const Args& a, normkit::LaunchPlan* p, const normkit::LaunchOptions& o) {
    return normkit::add_rms_norm_plan(a, p, o);
  }
};

template <class Q>
constexpr const char* quant_op_name() {
  if constexpr (std::is_same_v<Q, normkit::float8_e4m3>) return "rms_norm_fp8";
  else if constexpr (std::is_same_v<Q, normkit::float8_e5m2>) return "rms_norm_fp8_e5m2";
  else return "rms_norm_int8";
}

/// y = quantize(RMSNorm(x) * weight / scale) with x and weight T, y Q, and each
/// row's scale = max|y| / max(Q) written to row_scales (fp32 [rows]).
template <class T, class Q>
struct RmsNormQuantBench {
  static constexpr const char* kName = quant_op_name<Q>();
  using X = T;
  using Args = normkit::RmsNormQuantArgs<T, Q, T>;

  /// x read, y (Q) written, one fp32 scale per row written, weight read once.
  static int64_t bytes_moved(int64_t rows, int64_t cols) {
    return rows * cols * int64_t(sizeof(T) + sizeof(Q)) + rows * int64_t(sizeof(float)) +
           cols * int64_t(sizeof(T));
  }
  static Args make_args(OpMemory& mem, int64_t rows, int64_t cols) {
    Args a;
    a.x = mem.input<T>(rows * cols, kInputLo, kInputHi);
    a.y = mem.alloc<Q>(rows * cols);
    a.weight = mem.random<T>(cols, 0.5f, 1.5f);
    a.row_scales = mem.alloc<float>(rows);
    a.rows = rows;
    a.cols = cols;
    return a;
  }
  /// M = 0 as usual, but row_scales must be non-null to select dynamic per-row
  /// scaling (the kernel that needs the row on chip). With M = 0 it is never read.
  static Args plan_args(int64_t cols) {
    static float unused_scale;
    Args a;
    a.row_scales = &unused_scale;
    a.cols = cols;
    return a;
  }
  static std::vector<int64_t> small_batch_cols() { return fused_small_batch_cols(); }
  static normkit::Status forward(const Args& a, cudaStream_t s, const normkit::LaunchOptions& o) {
    return normkit::rms_norm_quant_forward(a, s, o);
  }
  static normkit::Status plan(const Args& a, normkit::LaunchPlan* p, const normkit::LaunchOptions& o) {
    return normkit::rms_norm_quant_plan(a, p, o);
  }
};

}  // namespace nkbench
