// The quantizing launchers' remaining (x, output) pairs the library supports:
// half x to e5m2 and int8, float x to e5m2 (a translation unit of their own,
// so that they compile beside dispatch_quant.cu's).
#include "dispatch_quant_run.h"

namespace nktest {
namespace quant_detail {

normkit::Status dispatch_more(const QuantCall& c, normkit::LaunchPlan* plan) {
  if (c.x_type == DType::kF16 && c.q_type == QType::kE5M2) return run<normkit::half, normkit::float8_e5m2>(c, plan);
  if (c.x_type == DType::kF16 && c.q_type == QType::kInt8) return run<normkit::half, int8_t>(c, plan);
  if (c.x_type == DType::kF32 && c.q_type == QType::kE5M2) return run<float, normkit::float8_e5m2>(c, plan);
  return normkit::Status::kErrorUnsupportedType;
}

}  // namespace quant_detail
}  // namespace nktest
