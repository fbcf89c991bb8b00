// normkit/quantize.cuh: RMSNorm and LayerNorm whose output is quantized to
// fp8 (e4m3, e5m2) or int8 (see io/quantize.cuh for the formulas).
//
// Scaling, chosen by which argument is set (exactly one):
//   static_scale > 0:  y_q = q(y / static_scale), one scale for the tensor (a
//                      host value, checked before the launch);
//   row_scales != nullptr: each row's scale = max|y| / max(Q) is written to
//                      row_scales[row] (fp32 [rows]) and y_q = q(y / scale).
// Per-row scales need the whole row on chip: rows longer than a cluster's
// shared memory get kErrorUnsupportedShape rather than a second read of x.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <type_traits>

#include "config.cuh"
#include "epilogue/affine.cuh"
#include "io/input.cuh"
#include "io/quantize.cuh"
#include "kernel/problem.cuh"
#include "launch/front_end.cuh"
#include "launch/launcher.cuh"
#include "launch/validate.cuh"
#include "stats/mean_square.cuh"
#include "stats/two_pass.cuh"
#include "status.cuh"
#include "types.cuh"

NORMKIT_NAMESPACE_BEGIN

/// RMSNorm with a quantized output Q (float8_e4m3, float8_e5m2, int8_t).
template <class X, class Q, class W = X>
struct RmsNormQuantArgs {
  const X* x = nullptr;
  Q* y = nullptr;
  const W* weight = nullptr;
  float* rstd = nullptr;
  float static_scale = 0.f;      ///< > 0: static per-tensor scale
  float* row_scales = nullptr;   ///< non-null: dynamic per-row scales, fp32 [rows]
  int64_t rows = 0, cols = 0;
  int64_t x_row_stride = kContiguous, y_row_stride = kContiguous;
  float eps = 1e-6f;
};

/// LayerNorm with a quantized output.
template <class X, class Q, class W = X>
struct LayerNormQuantArgs {
  const X* x = nullptr;
  Q* y = nullptr;
  const W* weight = nullptr;
  const W* bias = nullptr;
  float* mean = nullptr;
  float* rstd = nullptr;
  float static_scale = 0.f;
  float* row_scales = nullptr;
  int64_t rows = 0, cols = 0;
  int64_t x_row_stride = kContiguous, y_row_stride = kContiguous;
  float eps = 1e-5f;
};

namespace detail {

enum class QuantMode { kStatic, kDynamicRow };

/// Which scaling the arguments ask for, or an error status.
template <class Args>
Status quant_mode(const Args& a, QuantMode* mode) {
  const bool has_static = a.static_scale != 0.f;
  const bool has_dynamic = a.row_scales != nullptr;
  if (has_static == has_dynamic) return Status::kErrorInvalidScale;  // none, or both
  if (has_static && !(std::isfinite(a.static_scale) && a.static_scale > 0.f)) return Status::kErrorInvalidScale;
  *mode = has_static ? QuantMode::kStatic : QuantMode::kDynamicRow;
  return Status::kSuccess;
}

template <class Problem, class Args>
Status run_quant(typename Problem::Params p, const Args& a, const LaunchOptions& opts, cudaStream_t stream,
                 LaunchPlan* plan_only) {
  Status s;
  const Verdict v = check_plain_params(p, &s);
  if (v == Verdict::kError) return s;
  if constexpr (Problem::Output::kNeedsRowAbsMax) {
    p.output.row_scales = a.row_scales;
    const Region scales{a.row_scales, p.rows, 1, 1, 4};
    const CallRegions c = call_regions(p);
    const Region others[] = {c.x, c.y, c.mean, c.rstd};
    s = check_output(scales, others, 4, false);
    if (s != Status::kSuccess) return s;
  } else {
    p.output.inv_scale = 1.0f / a.static_scale;
  }
  if (plan_only) return Launcher<Problem>::plan(p, opts, plan_only);
  if (v == Verdict::kNothingToDo) return Status::kSuccess;
  return Launcher<Problem>::run(p, opts, stream);
}

template <class X, class Q, class W>
constexpr bool check_quant_types() {
  static_assert(is_io_type_v<X>, "normkit: x must be float, half or bfloat16");
  static_assert(is_quantized_type_v<Q>, "normkit: a quantized output must be float8_e4m3, float8_e5m2 or int8_t");
  static_assert(std::is_same_v<W, float> || std::is_same_v<W, X>, "normkit: weight/bias must be float or the type of x");
  return true;
}

template <class X, class Q, class W, class Output>
using RmsQuantProblem = Problem<X, stats::MeanSquare, epilogue::Scale<W>, input::Plain<X>, Output>;
template <class X, class Q, class W, class Output>
using LayerQuantProblem = Problem<X, stats::TwoPass, epilogue::Affine<W>, input::Plain<X>, Output>;

template <template <class, class, class, class> class ProblemOf, class X, class Q, class W, class Args>
Status dispatch_quant(const Args& a, const LaunchOptions& opts, cudaStream_t stream, LaunchPlan* plan_only) {
  static_assert(check_quant_types<X, Q, W>());
  QuantMode mode;
  const Status s = quant_mode(a, &mode);
  if (s != Status::kSuccess) return s;
  if (mode == QuantMode::kStatic) {
    using P = ProblemOf<X, Q, W, output::QuantStatic<Q>>;
    return run_quant<P>(params_from_args<P>(a), a, opts, stream, plan_only);
  }
  using P = ProblemOf<X, Q, W, output::QuantDynamicRow<Q>>;
  return run_quant<P>(params_from_args<P>(a), a, opts, stream, plan_only);
}

}  // namespace detail

/// Validates and launches RMSNorm with a quantized output.
template <class X, class Q, class W>
Status rms_norm_quant_forward(const RmsNormQuantArgs<X, Q, W>& a, cudaStream_t stream = nullptr,
                              const LaunchOptions& options = {}) {
  return detail::dispatch_quant<detail::RmsQuantProblem, X, Q, W>(a, options, stream, nullptr);
}

/// Validates and launches LayerNorm with a quantized output.
template <class X, class Q, class W>
Status layer_norm_quant_forward(const LayerNormQuantArgs<X, Q, W>& a, cudaStream_t stream = nullptr,
                                const LaunchOptions& options = {}) {
  return detail::dispatch_quant<detail::LayerQuantProblem, X, Q, W>(a, options, stream, nullptr);
}

/// The kernel shape rms_norm_quant_forward would use.
template <class X, class Q, class W>
Status rms_norm_quant_plan(const RmsNormQuantArgs<X, Q, W>& a, LaunchPlan* plan, const LaunchOptions& options = {}) {
  return detail::dispatch_quant<detail::RmsQuantProblem, X, Q, W>(a, options, nullptr, plan);
}

/// The kernel shape layer_norm_quant_forward would use.
template <class X, class Q, class W>
Status layer_norm_quant_plan(const LayerNormQuantArgs<X, Q, W>& a, LaunchPlan* plan,
                             const LaunchOptions& options = {}) {
  return detail::dispatch_quant<detail::LayerQuantProblem, X, Q, W>(a, options, nullptr, plan);
}

NORMKIT_NAMESPACE_END
