// Instantiations of the quantizing launchers used by the tests: every output
// format and both scalings for bf16 x; e4m3 for half and float x, int8 for
// float x (the other pairs: dispatch_quant_more.cu).
#include "dispatch_quant_run.h"

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
using quant_detail::run;

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
  return quant_detail::dispatch_more(c, plan);
}
}  // namespace

normkit::Status launch_quant(const QuantCall& c) { return dispatch(c, nullptr); }

normkit::Status plan_quant(const QuantCall& c, normkit::LaunchPlan* plan) { return dispatch(c, plan); }

}  // namespace nktest
