// normkit/launch/front_end.cuh: the policy-class front end shared by
// LayerNorm and RMSNorm: validate, then launch a Problem.
#pragma once

#include <cuda_runtime.h>

#include <type_traits>
#include <utility>

#include "../config.cuh"
#include "../io/input.cuh"
#include "../io/output.cuh"
#include "../kernel/problem.cuh"
#include "../norm_args.cuh"
#include "../status.cuh"
#include "../types.cuh"
#include "launcher.cuh"
#include "validate.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace detail {

template <class X, class Y, class W>
constexpr bool check_io_types() {
  static_assert(is_io_type_v<X>, "normkit: x must be float, half or bfloat16");
  static_assert(is_io_type_v<Y>, "normkit: y must be float, half or bfloat16 (quantized outputs use normkit/quantize.cuh)");
  static_assert(std::is_same_v<W, float> || std::is_same_v<W, X>,
                "normkit: weight/bias must be float or the type of x; change W");
  return true;
}

/// Validates plain-norm params and launches them.
template <class Problem>
Status validate_and_run(typename Problem::Params p, const LaunchOptions& opts, cudaStream_t stream) {
  Status s;
  switch (check_plain_params(p, &s)) {
    case Verdict::kError: return s;
    case Verdict::kNothingToDo: return Status::kSuccess;
    case Verdict::kLaunch: break;
  }
  return Launcher<Problem>::run(p, opts, stream);
}

template <class Problem>
Status validate_and_plan(typename Problem::Params p, const LaunchOptions& opts, LaunchPlan* plan) {
  Status s;
  if (check_plain_params(p, &s) == Verdict::kError) return s;
  return Launcher<Problem>::plan(p, opts, plan);
}

// Which optional fields an argument struct has (LayerNorm has mean and bias,
// RMSNorm neither; the policy front end carries the epilogue's params whole).
#define NORMKIT_DETAIL_HAS_MEMBER(name)                                                     \
  template <class A, class = void>                                                         \
  struct has_##name : std::false_type {};                                                  \
  template <class A>                                                                       \
  struct has_##name<A, std::void_t<decltype(std::declval<const A&>().name)>> : std::true_type {};
NORMKIT_DETAIL_HAS_MEMBER(mean)
NORMKIT_DETAIL_HAS_MEMBER(weight)
NORMKIT_DETAIL_HAS_MEMBER(bias)
NORMKIT_DETAIL_HAS_MEMBER(epilogue)
#undef NORMKIT_DETAIL_HAS_MEMBER

/// Problem::Params from any of the public argument structs: the fields every
/// struct has, then mean, weight, bias or epilogue params where present.
template <class Problem, class Args>
typename Problem::Params params_from_args(const Args& a) {
  typename Problem::Params p;
  p.x = a.x;
  p.y = a.y;
  p.rstd = a.rstd;
  p.rows = a.rows;
  p.cols = a.cols;
  p.x_stride = a.x_row_stride;
  p.y_stride = a.y_row_stride;
  p.eps = a.eps;
  if constexpr (has_mean<Args>::value) p.mean = a.mean;
  if constexpr (has_epilogue<Args>::value) p.epilogue = a.epilogue;
  if constexpr (has_weight<Args>::value) p.epilogue.weight = a.weight;
  if constexpr (has_bias<Args>::value) p.epilogue.bias = a.bias;
  return p;
}

}  // namespace detail

/// A normalization assembled from policies, for callers who pick their own
/// statistics policy or epilogue:
///   using Norm = normkit::Normalization<normkit::io<bf16, bf16, float>,
///                                       normkit::stats::Welford,
///                                       normkit::epilogue::Affine<float>>;
///   Norm::Args args; ... ; normkit::Status s = Norm::forward(args, stream);
template <class IO, class Stats, class Epilogue>
struct Normalization {
  using X = typename IO::x_type;
  using Y = typename IO::y_type;
  static_assert(detail::check_io_types<X, Y, X>());
  using Problem = normkit::Problem<X, Stats, Epilogue, input::Plain<X>, output::Convert<Y>>;
  using Args = NormArgs<X, Y, typename Epilogue::Params>;

  /// Checks the arguments without touching memory or the device.
  static Status can_implement(const Args& args) {
    auto p = detail::params_from_args<Problem>(args);
    Status s;
    detail::check_plain_params(p, &s);
    return s;
  }
  /// The kernel shape and sizes this call would use on the current device.
  static Status plan(const Args& args, LaunchPlan* plan, const LaunchOptions& opts = {}) {
    return detail::validate_and_plan<Problem>(detail::params_from_args<Problem>(args), opts, plan);
  }
  /// Validates and launches on `stream`. Never synchronizes.
  static Status forward(const Args& args, cudaStream_t stream = nullptr, const LaunchOptions& opts = {}) {
    return detail::validate_and_run<Problem>(detail::params_from_args<Problem>(args), opts, stream);
  }
};

NORMKIT_NAMESPACE_END
