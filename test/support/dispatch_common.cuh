// Shared body of the generated dispatch_<x>_<y>.cu files: instantiates both
// weight types for one (x, y) pair.
#pragma once

#include <normkit/layer_norm.cuh>
#include <normkit/rms_norm.cuh>
#include <normkit/types.cuh>

#include "dispatch.h"

namespace nktest {

template <class X, class Y, class W>
normkit::Status launch_typed(const NormCall& c, normkit::LaunchPlan* plan_only) {
  normkit::LaunchOptions opt;
  opt.shape = c.shape;
  opt.launched = c.launched;
  opt.row_counter = c.row_counter;
  if (c.op == Op::kLayerNorm) {
    normkit::LayerNormArgs<X, Y, W> a;
    fill_shared_args<X, Y, W>(a, c);
    a.bias = static_cast<const W*>(c.bias);
    a.mean = c.mean;
    a.rstd = c.rstd;
    if (c.stats == StatsKind::kWelford) {
      if constexpr (std::is_same_v<X, Y> && std::is_same_v<W, X>) {
        return plan_only ? normkit::layer_norm_plan<normkit::stats::Welford>(a, plan_only, opt)
                         : normkit::layer_norm_forward<normkit::stats::Welford>(a, c.stream, opt);
      } else if constexpr (std::is_same_v<X, normkit::bfloat16> && std::is_same_v<W, float> &&
                           std::is_same_v<Y, normkit::bfloat16>) {
        return plan_only ? normkit::layer_norm_plan<normkit::stats::Welford>(a, plan_only, opt)
                         : normkit::layer_norm_forward<normkit::stats::Welford>(a, c.stream, opt);
      } else {
        return normkit::Status::kErrorUnsupportedType;  // not instantiated for the tests
      }
    }
    return plan_only ? normkit::layer_norm_plan(a, plan_only, opt) : normkit::layer_norm_forward(a, c.stream, opt);
  }
  normkit::RmsNormArgs<X, Y, W> r;
  fill_shared_args<X, Y, W>(r, c);
  r.rstd = c.rstd;
  return plan_only ? normkit::rms_norm_plan(r, plan_only, opt) : normkit::rms_norm_forward(r, c.stream, opt);
}

template <class X, class Y>
normkit::Status launch_w(const NormCall& c, normkit::LaunchPlan* plan_only) {
  if (c.w_type == DType::kF32) return launch_typed<X, Y, float>(c, plan_only);
  if constexpr (!std::is_same_v<X, float>) {
    if ((c.w_type == DType::kF16 && std::is_same_v<X, normkit::half>) ||
        (c.w_type == DType::kBF16 && std::is_same_v<X, normkit::bfloat16>)) {
      return launch_typed<X, Y, X>(c, plan_only);
    }
  }
  return normkit::Status::kErrorUnsupportedType;
}

}  // namespace nktest
