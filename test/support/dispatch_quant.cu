// Instantiations of the quantizing launchers used by the tests: every output
// format and both scalings for bf16 x; e4m3 for half and float x.
#include <normkit/quantize.cuh>

#include "dispatch_extra.h"

namespace nktest {

const char* qtype_name(QType q) {
  switch (q) {
    case QType::kE4M3: return "e4m3";
    case QType::kE5M2: return "e5m2";
    case QType::kInt8: return "int8";
  }
  return "?";
}

namespace {

/// Launches c, or with plan != nullptr only plans it.
template <class X, class Q>
normkit::Status run(const QuantCall& c, normkit::LaunchPlan* plan) {
  normkit::LaunchOptions opt;
  opt.shape = c.shape;
  opt.pairing = c.pairing;
  opt.launched = c.launched;
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

}  // namespace

namespace {
normkit::Status dispatch(const QuantCall& c, normkit::LaunchPlan* plan) {
  if (c.x_type == DType::kBF16) {
    switch (c.q_type) {
      case QType::kE4M3: return run<normkit::bfloat16, normkit::float8_e4m3>(c, plan);
      case QType::kE5M2: return run<normkit::bfloat16, normkit::float8_e5m2>(c, plan);
      case QType::kInt8: return run<normkit::bfloat16, int8_t>(c, plan);
    }
  }
  if (c.q_type == QType::kE4M3) {  // both norms (run instantiates both)
    if (c.x_type == DType::kF16) return run<normkit::half, normkit::float8_e4m3>(c, plan);
    if (c.x_type == DType::kF32) return run<float, normkit::float8_e4m3>(c, plan);
  }
  // fp32 x to int8: four values a slot, one packed word (the rolled rows' and
  // the int8 rounding's narrowest slot).
  if (c.q_type == QType::kInt8 && c.x_type == DType::kF32) return run<float, int8_t>(c, plan);
  return normkit::Status::kErrorUnsupportedType;
}
}  // namespace

normkit::Status launch_quant(const QuantCall& c) { return dispatch(c, nullptr); }

normkit::Status plan_quant(const QuantCall& c, normkit::LaunchPlan* plan) { return dispatch(c, plan); }

}  // namespace nktest
