// normkit/layer_norm.cuh: LayerNorm forward, PyTorch semantics.
//
//   normkit::LayerNormArgs<bf16> a;  // x, y, weight, bias, mean, rstd, rows, cols, ...
//   normkit::Status s = normkit::layer_norm_forward(a, stream);
//
// Statistics over the last dimension, biased variance, fp32 compute whatever
// the dtypes, mean and rstd stored as fp32 [rows] when given. x, y in {float,
// half, bfloat16} (y may differ from x), weight and bias in {float, type of x}.
#pragma once

#include <cuda_runtime.h>

#include "config.cuh"
#include "epilogue/affine.cuh"
#include "launch/front_end.cuh"
#include "norm_args.cuh"
#include "stats/two_pass.cuh"
#include "stats/welford.cuh"
#include "status.cuh"

NORMKIT_NAMESPACE_BEGIN

/// LayerNorm with a chosen statistics policy (stats::TwoPass, the default and
/// the most accurate, or stats::Welford) and epilogue.
template <class IO, class Stats = stats::TwoPass, class Epilogue = epilogue::Affine<typename IO::w_type>>
using LayerNorm = Normalization<IO, Stats, Epilogue>;

namespace detail {
template <class X, class Y, class W, class Stats>
using LayerNormProblem = Problem<X, Stats, epilogue::Affine<W>, input::Plain<X>, output::Convert<Y>>;

template <class X, class Y, class W, class Stats>
typename LayerNormProblem<X, Y, W, Stats>::Params layer_norm_params(const LayerNormArgs<X, Y, W>& a) {
  static_assert(check_io_types<X, Y, W>());
  return params_from_args<LayerNormProblem<X, Y, W, Stats>>(a);
}
}  // namespace detail

/// Validates `args` and launches LayerNorm forward on `stream`.
template <class Stats = stats::TwoPass, class X, class Y, class W>
Status layer_norm_forward(const LayerNormArgs<X, Y, W>& args, cudaStream_t stream = nullptr,
                          const LaunchOptions& options = {}) {
  return detail::validate_and_run<detail::LayerNormProblem<X, Y, W, Stats>>(
      detail::layer_norm_params<X, Y, W, Stats>(args), options, stream);
}

/// The kernel shape layer_norm_forward would use for `args` on the current device.
template <class Stats = stats::TwoPass, class X, class Y, class W>
Status layer_norm_plan(const LayerNormArgs<X, Y, W>& args, LaunchPlan* plan, const LaunchOptions& options = {}) {
  return detail::validate_and_plan<detail::LayerNormProblem<X, Y, W, Stats>>(
      detail::layer_norm_params<X, Y, W, Stats>(args), options, plan);
}

NORMKIT_NAMESPACE_END
