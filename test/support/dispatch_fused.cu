// Instantiations of the fused residual-add launchers used by the tests.
#include <normkit/add_norm.cuh>

#include "dispatch_extra.h"

namespace nktest {
namespace {

/// Launches c, or with plan != nullptr only plans it.
template <class T, class W>
normkit::Status run(const AddNormCall& c, normkit::LaunchPlan* plan) {
  normkit::LaunchOptions opt;
  opt.shape = c.shape;
  opt.launched = c.launched;
  opt.row_counter = c.row_counter;
  // The fields both argument structs share; LayerNorm's bias and mean after.
  auto fill = [&](auto& a) {
    fill_shared_args<T, T, W>(a, c);
    a.residual = static_cast<const T*>(c.residual);
    a.residual_out = static_cast<T*>(c.residual_out);
    a.rstd = c.rstd;
    a.residual_row_stride = c.residual_stride;
    a.residual_out_row_stride = c.residual_out_stride;
  };
  if (c.op == Op::kRmsNorm) {
    normkit::AddRmsNormArgs<T, T, T, W> a;
    fill(a);
    return plan ? normkit::add_rms_norm_plan(a, plan, opt) : normkit::add_rms_norm_forward(a, c.stream, opt);
  }
  normkit::AddLayerNormArgs<T, T, T, W> a;
  fill(a);
  a.bias = static_cast<const W*>(c.bias);
  a.mean = c.mean;
  return plan ? normkit::add_layer_norm_plan(a, plan, opt) : normkit::add_layer_norm_forward(a, c.stream, opt);
}

normkit::Status dispatch(const AddNormCall& c, normkit::LaunchPlan* plan) {
  switch (c.x_type) {
    case DType::kF32:
      return c.w_type == DType::kF32 ? run<float, float>(c, plan) : normkit::Status::kErrorUnsupportedType;
    case DType::kF16: return c.w_type == DType::kF16 ? run<normkit::half, normkit::half>(c, plan)
                                                      : normkit::Status::kErrorUnsupportedType;
    case DType::kBF16:
      return c.w_type == DType::kBF16 ? run<normkit::bfloat16, normkit::bfloat16>(c, plan)
                                      : run<normkit::bfloat16, float>(c, plan);
  }
  return normkit::Status::kErrorUnsupportedType;
}

}  // namespace

normkit::Status launch_add_norm(const AddNormCall& c) { return dispatch(c, nullptr); }
normkit::Status plan_add_norm(const AddNormCall& c, normkit::LaunchPlan* plan) { return dispatch(c, plan); }

}  // namespace nktest
