// The quantizing launchers' type-erased call for one (x, output) type pair,
// shared by the translation units that instantiate them (dispatch_quant.cu,
// dispatch_quant_more.cu), so that each pair compiles once and the pairs
// compile in parallel.
#pragma once

#include <normkit/quantize.cuh>

#include "dispatch_extra.h"

namespace nktest {
namespace quant_detail {

/// Launches c, or with plan != nullptr only plans it.
template <class X, class Q>
inline normkit::Status run(const QuantCall& c, normkit::LaunchPlan* plan) {
  normkit::LaunchOptions opt;
  opt.shape = c.shape;
  opt.pairing = c.pairing;
  opt.launched = c.launched;
  opt.row_counter = c.row_counter;
  // The fields both argument structs share; LayerNorm's bias after.
  auto fill = [&](auto& a) {
    fill_shared_args<X, Q, X>(a, c);
    a.static_scale = c.static_scale;
    a.row_scales = c.row_scales;
  };
  if (c.op == Op::kRmsNorm) {
    normkit::RmsNormQuantArgs<X, Q, X> a;
    fill(a);
    return plan ? normkit::rms_norm_quant_plan(a, plan, opt) : normkit::rms_norm_quant_forward(a, c.stream, opt);
  }
  normkit::LayerNormQuantArgs<X, Q, X> a;
  fill(a);
  a.bias = static_cast<const X*>(c.bias);
  return plan ? normkit::layer_norm_quant_plan(a, plan, opt) : normkit::layer_norm_quant_forward(a, c.stream, opt);
}

/// The pairs dispatch_quant_more.cu instantiates: half x to e5m2 and int8,
/// float x to e5m2; kErrorUnsupportedType for any other.
normkit::Status dispatch_more(const QuantCall& c, normkit::LaunchPlan* plan);

}  // namespace quant_detail
}  // namespace nktest
