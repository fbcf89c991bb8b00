// bench/src/norm_ops.cuh: the Bench structs (see make_op_spec) for normkit's
// LayerNorm and RMSNorm forward, x, y, weight and bias all of type T, with the
// per-row statistics written. Only the translation units under ops/ include
// this file, so each kernel instantiation is compiled once.
#pragma once

#include <normkit/layer_norm.cuh>
#include <normkit/rms_norm.cuh>

#include <cstdint>

#include "op_registry.hpp"

namespace nkbench {

// x is uniform in [-1, 3): mean 1, not 0, so LayerNorm's centering has work
// to do and a kernel that skipped or botched it could not look right.
inline constexpr float kInputLo = -1.0f;
inline constexpr float kInputHi = 3.0f;

/// Sets what every forward's arguments hold alike: x (uniform in [kInputLo,
/// kInputHi)), y, rows and cols.
template <class T, class Args>
void set_rows(OpMemory& mem, int64_t rows, int64_t cols, Args& a) {
  a.x = mem.input<T>(rows * cols, kInputLo, kInputHi);
  a.y = mem.alloc<T>(rows * cols);
  a.rows = rows;
  a.cols = cols;
}

/// forward and plan of a problem through the policy-type front end
/// (normkit::RmsNorm, normkit::LayerNorm), as a caller with its own epilogue runs it.
template <class Op>
struct PolicyCalls {
  using Args = typename Op::Args;
  static normkit::Status forward(const Args& a, cudaStream_t s, const normkit::LaunchOptions& o) {
    return Op::forward(a, s, o);
  }
  static normkit::Status plan(const Args& a, normkit::LaunchPlan* p, const normkit::LaunchOptions& o) {
    return Op::plan(a, p, o);
  }
};

template <class T>
struct LayerNormBench {
  static constexpr const char* kName = "layer_norm";
  using X = T;
  using Args = normkit::LayerNormArgs<T>;

  /// x read and y written once, weight and bias read once, mean and rstd (fp32) written.
  static int64_t bytes_moved(int64_t rows, int64_t cols) {
    return 2 * rows * cols * int64_t(sizeof(T)) + 2 * cols * int64_t(sizeof(T)) + 2 * rows * int64_t(sizeof(float));
  }
  static Args make_args(OpMemory& mem, int64_t rows, int64_t cols) {
    Args a;
    set_rows<T>(mem, rows, cols, a);
    a.weight = mem.random<T>(cols, 0.5f, 1.5f);
    a.bias = mem.random<T>(cols, -0.5f, 0.5f);
    a.mean = mem.alloc<float>(rows);
    a.rstd = mem.alloc<float>(rows);
    return a;
  }
  static normkit::Status forward(const Args& a, cudaStream_t s, const normkit::LaunchOptions& o) {
    return normkit::layer_norm_forward(a, s, o);
  }
  static normkit::Status plan(const Args& a, normkit::LaunchPlan* p, const normkit::LaunchOptions& o) {
    return normkit::layer_norm_plan(a, p, o);
  }
};

template <class T>
struct RmsNormBench {
  static constexpr const char* kName = "rms_norm";
  using X = T;
  using Args = normkit::RmsNormArgs<T>;

  /// x read and y written once, weight read once, rstd (fp32) written.
  static int64_t bytes_moved(int64_t rows, int64_t cols) {
    return 2 * rows * cols * int64_t(sizeof(T)) + cols * int64_t(sizeof(T)) + rows * int64_t(sizeof(float));
  }
  static Args make_args(OpMemory& mem, int64_t rows, int64_t cols) {
    Args a;
    set_rows<T>(mem, rows, cols, a);
    a.weight = mem.random<T>(cols, 0.5f, 1.5f);
    a.rstd = mem.alloc<float>(rows);
    return a;
  }
  static normkit::Status forward(const Args& a, cudaStream_t s, const normkit::LaunchOptions& o) {
    return normkit::rms_norm_forward(a, s, o);
  }
  static normkit::Status plan(const Args& a, normkit::LaunchPlan* p, const normkit::LaunchOptions& o) {
    return normkit::rms_norm_plan(a, p, o);
  }
};

/// RMSNorm with Gemma's (1 + w) scale (TransformerEngine's zero-centred
/// gamma: epilogue::Scale with WEIGHT_OFFSET), through the policy-type front
/// end (normkit::RmsNorm) a caller with its own epilogue uses; x, y and the
/// weight T, rstd written.
template <class T>
using GemmaRmsNorm = normkit::RmsNorm<normkit::io<T>, normkit::epilogue::Scale<T, /*WEIGHT_OFFSET=*/true>>;

template <class T>
struct GemmaRmsNormBench : PolicyCalls<GemmaRmsNorm<T>> {
  static constexpr const char* kName = "rms_norm_gemma";
  using X = T;
  using Args = typename PolicyCalls<GemmaRmsNorm<T>>::Args;

  /// As RmsNormBench: x read and y written once, weight read once, rstd written.
  static int64_t bytes_moved(int64_t rows, int64_t cols) { return RmsNormBench<T>::bytes_moved(rows, cols); }
  static Args make_args(OpMemory& mem, int64_t rows, int64_t cols) {
    Args a;
    set_rows<T>(mem, rows, cols, a);
    a.epilogue.weight = mem.random<T>(cols, -0.5f, 0.5f);  // zero-centred: scales 0.5-1.5
    a.rstd = mem.alloc<float>(rows);
    a.eps = 1e-6f;
    return a;
  }
};

/// LayerNorm with the zero-centred weight, scale (1 + w) (TransformerEngine's
/// zero_centered_gamma: epilogue::Affine with WEIGHT_OFFSET), through the
/// policy-type front end (normkit::LayerNorm); x, y, weight and bias T, mean
/// and rstd written.
template <class T>
using GemmaLayerNorm =
    normkit::LayerNorm<normkit::io<T>, normkit::stats::TwoPass, normkit::epilogue::Affine<T, /*WEIGHT_OFFSET=*/true>>;

template <class T>
struct GemmaLayerNormBench : PolicyCalls<GemmaLayerNorm<T>> {
  static constexpr const char* kName = "layer_norm_gemma";
  using X = T;
  using Args = typename PolicyCalls<GemmaLayerNorm<T>>::Args;

  /// As LayerNormBench: x read and y written once, weight and bias read once, mean and rstd written.
  static int64_t bytes_moved(int64_t rows, int64_t cols) { return LayerNormBench<T>::bytes_moved(rows, cols); }
  static Args make_args(OpMemory& mem, int64_t rows, int64_t cols) {
    Args a;
    set_rows<T>(mem, rows, cols, a);
    a.epilogue.weight = mem.random<T>(cols, -0.5f, 0.5f);  // zero-centred: scales 0.5-1.5
    a.epilogue.bias = mem.random<T>(cols, -0.5f, 0.5f);
    a.mean = mem.alloc<float>(rows);
    a.rstd = mem.alloc<float>(rows);
    return a;
  }
};

}  // namespace nkbench
