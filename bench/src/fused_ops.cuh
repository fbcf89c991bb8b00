// bench/src/fused_ops.cuh: the Bench structs (see make_op_spec) for normkit's
// fused entry points, as inference engines call them: residual add + RMSNorm
// (out of place and vLLM-style in place), residual add + LayerNorm, and
// RMSNorm (fp8 e4m3, e5m2 or int8) and LayerNorm (fp8 e4m3; the structs take
// any of the three) with a quantized output and dynamic per-row or static
// per-tensor scales. No mean or rstd is written (bytes_moved counts
// what is).
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

/// The buffers every residual-add op sets (all T): x, the residual, residual_out and y
/// (in place: the residual and x themselves, as vLLM's fused_add_rms_norm), the weight.
template <class T, class Args>
void fill_add_args(OpMemory& mem, int64_t rows, int64_t cols, bool in_place, Args* a) {
  T* x = mem.input<T>(rows * cols, kInputLo, kInputHi);
  T* residual = mem.input<T>(rows * cols, kResidualLo, kResidualHi);
  a->x = x;
  a->residual = residual;
  a->residual_out = in_place ? residual : mem.alloc<T>(rows * cols);
  a->y = in_place ? x : mem.alloc<T>(rows * cols);
  a->weight = mem.random<T>(cols, 0.5f, 1.5f);
  a->rows = rows;
  a->cols = cols;
}

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
    fill_add_args<T>(mem, rows, cols, InPlace, &a);
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

/// h = x + residual -> residual_out, y = LayerNorm(h) * weight + bias; x, residual, y,
/// weight and bias all T, out of place (TransformerEngine's and Apex's fused form).
template <class T>
struct AddLayerNormBench {
  static constexpr const char* kName = "add_layer_norm";
  using X = T;
  using Args = normkit::AddLayerNormArgs<T, T, T, T>;

  /// x and residual read, residual_out and y written (4 passes), weight and bias read once.
  static int64_t bytes_moved(int64_t rows, int64_t cols) {
    return 4 * rows * cols * int64_t(sizeof(T)) + 2 * cols * int64_t(sizeof(T));
  }
  static Args make_args(OpMemory& mem, int64_t rows, int64_t cols) {
    Args a;
    fill_add_args<T>(mem, rows, cols, false, &a);
    a.bias = mem.random<T>(cols, -0.5f, 0.5f);
    return a;
  }
  static std::vector<int64_t> small_batch_cols() { return fused_small_batch_cols(); }
  static normkit::Status forward(const Args& a, cudaStream_t s, const normkit::LaunchOptions& o) {
    return normkit::add_layer_norm_forward(a, s, o);
  }
  static normkit::Status plan(const Args& a, normkit::LaunchPlan* p, const normkit::LaunchOptions& o) {
    return normkit::add_layer_norm_plan(a, p, o);
  }
};

/// Which norm a quantizing op runs.
enum class QuantNorm { kRms, kLayer };

/// The op's name: the norm, the output type, and "_static" for a static scale
/// (rms_norm_fp8, rms_norm_fp8_e5m2_static, layer_norm_fp8, ...).
template <QuantNorm NORM, class Q, bool STATIC>
constexpr const char* quant_op_name() {
  constexpr int type = std::is_same_v<Q, normkit::float8_e4m3> ? 0 : std::is_same_v<Q, normkit::float8_e5m2> ? 1 : 2;
  constexpr const char* kNames[2][3][2] = {
      {{"rms_norm_fp8", "rms_norm_fp8_static"},
       {"rms_norm_fp8_e5m2", "rms_norm_fp8_e5m2_static"},
       {"rms_norm_int8", "rms_norm_int8_static"}},
      {{"layer_norm_fp8", "layer_norm_fp8_static"},
       {"layer_norm_fp8_e5m2", "layer_norm_fp8_e5m2_static"},
       {"layer_norm_int8", "layer_norm_int8_static"}}};
  return kNames[NORM == QuantNorm::kRms ? 0 : 1][type][STATIC ? 1 : 0];
}

/// y = quantize(norm(x) * weight (+ bias) / scale) with x, weight (and
/// LayerNorm's bias) T, y Q, and each row's scale = max|y| / max(Q) written
/// to row_scales (fp32 [rows]). NORM: RMSNorm (rms_norm_quant_forward) or
/// LayerNorm (layer_norm_quant_forward); neither writes mean or rstd here.
template <class T, class Q, QuantNorm NORM = QuantNorm::kRms>
struct NormQuantBench {
  static constexpr const char* kName = quant_op_name<NORM, Q, false>();
  static constexpr bool kRms = NORM == QuantNorm::kRms;
  using X = T;
  using Args = std::conditional_t<kRms, normkit::RmsNormQuantArgs<T, Q, T>, normkit::LayerNormQuantArgs<T, Q, T>>;
  /// The per-column vectors read once: weight, and LayerNorm's bias.
  static constexpr int64_t kParamVectors = kRms ? 1 : 2;

  /// x read, y (Q) written, one fp32 scale per row written, weight (and bias) read once.
  static int64_t bytes_moved(int64_t rows, int64_t cols) {
    return rows * cols * int64_t(sizeof(T) + sizeof(Q)) + rows * int64_t(sizeof(float)) +
           kParamVectors * cols * int64_t(sizeof(T));
  }
  /// x, y, the weight (and bias), as both scalings set them (row_scales and
  /// static_scale left unset).
  static Args quant_args(OpMemory& mem, int64_t rows, int64_t cols) {
    Args a;
    a.x = mem.input<T>(rows * cols, kInputLo, kInputHi);
    a.y = mem.alloc<Q>(rows * cols);
    a.weight = mem.random<T>(cols, 0.5f, 1.5f);
    if constexpr (!kRms) a.bias = mem.random<T>(cols, -0.5f, 0.5f);
    a.rows = rows;
    a.cols = cols;
    return a;
  }
  static Args make_args(OpMemory& mem, int64_t rows, int64_t cols) {
    Args a = quant_args(mem, rows, cols);
    a.row_scales = mem.alloc<float>(rows);
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
    if constexpr (kRms) return normkit::rms_norm_quant_forward(a, s, o);
    else return normkit::layer_norm_quant_forward(a, s, o);
  }
  static normkit::Status plan(const Args& a, normkit::LaunchPlan* p, const normkit::LaunchOptions& o) {
    if constexpr (kRms) return normkit::rms_norm_quant_plan(a, p, o);
    else return normkit::layer_norm_quant_plan(a, p, o);
  }
};

/// The static scale: |RMSNorm(x) * weight| stays below about 3 for this x and
/// weight (x_hat at most 3 / rms(x), rms about 1.5; weight below 1.5), and
/// |LayerNorm(x) * weight + bias| below about 3.1 (x_hat at most 2 / 1.15,
/// weight below 1.5, |bias| below 0.5), so y / scale stays inside int8's and
/// e4m3's ranges and values do not clamp.
inline constexpr float kStaticScale = 1.0f / 32.0f;

/// y = quantize(norm(x) * weight (+ bias) / static_scale): one host scale for
/// the tensor (a quantizer calibrated ahead of time), no row scales; x and
/// the parameters T, y Q. Rows need not stay on chip, so every N plans. The
/// calls (forward, plan) and the small-batch set are the per-row op's.
template <class T, class Q, QuantNorm NORM = QuantNorm::kRms>
struct NormQuantStaticBench : NormQuantBench<T, Q, NORM> {
  using Base = NormQuantBench<T, Q, NORM>;
  static constexpr const char* kName = quant_op_name<NORM, Q, true>();
  using Args = typename Base::Args;

  /// x read, y (Q) written, weight (and bias) read once.
  static int64_t bytes_moved(int64_t rows, int64_t cols) {
    return rows * cols * int64_t(sizeof(T) + sizeof(Q)) + Base::kParamVectors * cols * int64_t(sizeof(T));
  }
  static Args make_args(OpMemory& mem, int64_t rows, int64_t cols) {
    Args a = Base::quant_args(mem, rows, cols);
    a.static_scale = kStaticScale;
    return a;
  }
  /// The scale selects the static kernel, so plan() must see it too.
  static Args plan_args(int64_t cols) {
    Args a;
    a.static_scale = kStaticScale;
    a.cols = cols;
    return a;
  }
};

template <class T, class Q>
using RmsNormQuantBench = NormQuantBench<T, Q, QuantNorm::kRms>;
template <class T, class Q>
using RmsNormQuantStaticBench = NormQuantStaticBench<T, Q, QuantNorm::kRms>;
template <class T, class Q>
using LayerNormQuantBench = NormQuantBench<T, Q, QuantNorm::kLayer>;
template <class T, class Q>
using LayerNormQuantStaticBench = NormQuantStaticBench<T, Q, QuantNorm::kLayer>;

}  // namespace nkbench
