// Instantiations of the fused residual-add launchers used by the tests.
#include <normkit/add_norm.cuh>

#include "dispatch_extra.h"

namespace nktest {
namespace {

template <class T, class W>
normkit::Status run(const AddNormCall& c) {
  normkit::LaunchOptions opt;
  opt.shape = c.shape;
  opt.launched = c.launched;
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
    return normkit::add_rms_norm_forward(a, c.stream, opt);
  }
  normkit::AddLayerNormArgs<T, T, T, W> a;
  fill(a);
  a.bias = static_cast<const W*>(c.bias);
  a.mean = c.mean;
  return normkit::add_layer_norm_forward(a, c.stream, opt);
}

}  // namespace

normkit::Status launch_add_norm(const AddNormCall& c) {
  switch (c.x_type) {
    case DType::kF32: return c.w_type == DType::kF32 ? run<float, float>(c) : normkit::Status::kErrorUnsupportedType;
    case DType::kF16: return c.w_type == DType::kF16 ? run<normkit::half, normkit::half>(c)
                                                      : normkit::Status::kErrorUnsupportedType;
    case DType::kBF16:
      return c.w_type == DType::kBF16 ? run<normkit::bfloat16, normkit::bfloat16>(c)
                                      : run<normkit::bfloat16, float>(c);
  }
  return normkit::Status::kErrorUnsupportedType;
}

}  // namespace nktest
