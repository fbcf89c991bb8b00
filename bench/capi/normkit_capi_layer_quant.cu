// bench/capi/normkit_capi_layer_quant.cu: the C ABI of normkit_capi.h for
// LayerNorm quantized to fp8 (e4m3, e5m2) or int8, with static or per-row
// scales, bf16 input only. A unit of its own, so that its three quantized
// problems (two kernel sets each) compile beside the RMSNorm ones.
#include "normkit_capi.h"

#include "capi_args.h"

#include <cuda_runtime.h>

#include <normkit/quantize.cuh>

namespace {

using Bf16 = normkit::bfloat16;

template <class Q>
normkit::LayerNormQuantArgs<Bf16, Q> layer_quant_args(const void* x, void* y, const void* weight, const void* bias,
                                                      float static_scale, float* row_scales, int64_t rows,
                                                      int64_t cols, float eps) {
  auto a = nkcapi::row_args<normkit::LayerNormQuantArgs<Bf16, Q>>(x, y, rows, cols, eps);
  a.weight = static_cast<const Bf16*>(weight);
  a.bias = static_cast<const Bf16*>(bias);
  a.static_scale = static_scale;
  a.row_scales = row_scales;
  return a;
}

}  // namespace

extern "C" {

int normkit_layer_norm_quant_fwd(int dtype, int qtype, const void* x, void* y_q, const void* weight,
                                 const void* bias, float static_scale, float* row_scales, int64_t rows, int64_t cols,
                                 float eps, void* stream) {
  return nkcapi::quant_forward(dtype, qtype, [&](auto tag) {
    using Q = decltype(tag);
    return normkit::layer_norm_quant_forward(
        layer_quant_args<Q>(x, y_q, weight, bias, static_scale, row_scales, rows, cols, eps),
        static_cast<cudaStream_t>(stream), nkcapi::options());
  });
}

int normkit_layer_norm_quant_shape(int dtype, int qtype, int per_row, int64_t cols, const char** shape_name) {
  return nkcapi::quant_shape(dtype, qtype, per_row, shape_name, [&](auto tag, float scale, float* scales, auto* p) {
    using Q = decltype(tag);
    return normkit::layer_norm_quant_plan(
        layer_quant_args<Q>(nullptr, nullptr, nullptr, nullptr, scale, scales, 0, cols, 1e-5f), p);
  });
}

}  // extern "C"
