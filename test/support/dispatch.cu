#include "dispatch.h"

namespace nktest {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
  }
  return "?";
}

int dtype_size(DType t) { return t == DType::kF32 ? 4 : 2; }

#define NKTEST_ROUTE_Y(x)                                         \
  switch (c.y_type) {                                             \
    case DType::kF32: return launch_##x##_f32(c, plan_only);      \
    case DType::kF16: return launch_##x##_f16(c, plan_only);      \
    case DType::kBF16: return launch_##x##_bf16(c, plan_only);    \
  }                                                               \
  break;

static normkit::Status route(const NormCall& c, normkit::LaunchPlan* plan_only) {
  switch (c.x_type) {
    case DType::kF32: NKTEST_ROUTE_Y(f32)
    case DType::kF16: NKTEST_ROUTE_Y(f16)
    case DType::kBF16: NKTEST_ROUTE_Y(bf16)
  }
  return normkit::Status::kErrorUnsupportedType;
}

normkit::Status launch(const NormCall& c) { return route(c, nullptr); }
normkit::Status plan(const NormCall& c, normkit::LaunchPlan* p) { return route(c, p); }

}  // namespace nktest
