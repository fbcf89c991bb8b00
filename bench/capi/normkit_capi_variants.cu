// bench/capi/normkit_capi_variants.cu: the C ABI of normkit_capi.h for RMSNorm
// quantized to fp8 (e4m3, e5m2) or int8, with static or per-row scales, and
// for RMSNorm and LayerNorm with the zero-centred weight ((1 + w) scale), bf16
// input only. Each output type instantiates both scalings (the launcher
// chooses at run time), so this unit holds three quantized problems of two
// kernel sets each; it compiles beside normkit_capi.cu (LayerNorm quantized:
// normkit_capi_layer_quant.cu).
#include "normkit_capi.h"

#include "capi_args.h"

#include <cuda_runtime.h>

#include <normkit/layer_norm.cuh>
#include <normkit/quantize.cuh>
#include <normkit/rms_norm.cuh>

namespace {

using normkit::Status;
using Bf16 = normkit::bfloat16;
using GemmaRmsNorm = normkit::RmsNorm<normkit::io<Bf16>, normkit::epilogue::Scale<Bf16, /*WEIGHT_OFFSET=*/true>>;
using GemmaLayerNorm = normkit::LayerNorm<normkit::io<Bf16>, normkit::stats::TwoPass,
                                          normkit::epilogue::Affine<Bf16, /*WEIGHT_OFFSET=*/true>>;

template <class Q>
normkit::RmsNormQuantArgs<Bf16, Q> quant_args(const void* x, void* y, const void* weight, float static_scale,
                                              float* row_scales, int64_t rows, int64_t cols, float eps) {
  auto a = nkcapi::row_args<normkit::RmsNormQuantArgs<Bf16, Q>>(x, y, rows, cols, eps);
  a.weight = static_cast<const Bf16*>(weight);
  a.static_scale = static_scale;
  a.row_scales = row_scales;
  return a;
}

GemmaRmsNorm::Args gemma_args(const void* x, void* y, const void* weight, float* rstd, int64_t rows, int64_t cols,
                              float eps) {
  auto a = nkcapi::row_args<GemmaRmsNorm::Args>(x, y, rows, cols, eps);
  a.epilogue.weight = static_cast<const Bf16*>(weight);
  a.rstd = rstd;
  return a;
}

GemmaLayerNorm::Args gemma_layer_norm_args(const void* x, void* y, const void* weight, const void* bias, float* mean,
                                           float* rstd, int64_t rows, int64_t cols, float eps) {
  auto a = nkcapi::row_args<GemmaLayerNorm::Args>(x, y, rows, cols, eps);
  a.epilogue.weight = static_cast<const Bf16*>(weight);
  a.epilogue.bias = static_cast<const Bf16*>(bias);
  a.mean = mean;
  a.rstd = rstd;
  return a;
}

}  // namespace

extern "C" {

int normkit_rms_norm_quant_fwd(int dtype, int qtype, const void* x, void* y_q, const void* weight,
                               float static_scale, float* row_scales, int64_t rows, int64_t cols, float eps,
                               void* stream) {
  return nkcapi::quant_forward(dtype, qtype, [&](auto tag) {
    using Q = decltype(tag);
    return normkit::rms_norm_quant_forward(quant_args<Q>(x, y_q, weight, static_scale, row_scales, rows, cols, eps),
                                           static_cast<cudaStream_t>(stream), nkcapi::options());
  });
}

int normkit_rms_norm_fp8_fwd(int dtype, const void* x, void* y_fp8, const void* weight, float* row_scales,
                             int64_t rows, int64_t cols, float eps, void* stream) {
  return normkit_rms_norm_quant_fwd(dtype, NORMKIT_CAPI_E4M3, x, y_fp8, weight, 0.f, row_scales, rows, cols, eps,
                                    stream);
}

int normkit_rms_norm_gemma_fwd(int dtype, const void* x, void* y, const void* weight, float* rstd, int64_t rows,
                               int64_t cols, float eps, void* stream) {
  if (dtype != NORMKIT_CAPI_BF16) return static_cast<int>(Status::kErrorUnsupportedType);
  return static_cast<int>(
      GemmaRmsNorm::forward(gemma_args(x, y, weight, rstd, rows, cols, eps), static_cast<cudaStream_t>(stream),
                            nkcapi::options()));
}

int normkit_layer_norm_gemma_fwd(int dtype, const void* x, void* y, const void* weight, const void* bias,
                                  float* mean, float* rstd, int64_t rows, int64_t cols, float eps, void* stream) {
  if (dtype != NORMKIT_CAPI_BF16) return static_cast<int>(Status::kErrorUnsupportedType);
  return static_cast<int>(GemmaLayerNorm::forward(
      gemma_layer_norm_args(x, y, weight, bias, mean, rstd, rows, cols, eps), static_cast<cudaStream_t>(stream),
      nkcapi::options()));
}

int normkit_rms_norm_quant_shape(int dtype, int qtype, int per_row, int64_t cols, const char** shape_name) {
  return nkcapi::quant_shape(dtype, qtype, per_row, shape_name, [&](auto tag, float scale, float* scales, auto* p) {
    using Q = decltype(tag);
    return normkit::rms_norm_quant_plan(quant_args<Q>(nullptr, nullptr, nullptr, scale, scales, 0, cols, 1e-6f), p);
  });
}

int normkit_rms_norm_fp8_shape(int dtype, int64_t cols, const char** shape_name) {
  return normkit_rms_norm_quant_shape(dtype, NORMKIT_CAPI_E4M3, 1, cols, shape_name);
}

int normkit_rms_norm_gemma_shape(int dtype, int64_t cols, const char** shape_name) {
  if (shape_name == nullptr) return static_cast<int>(Status::kErrorNullPointer);
  if (dtype != NORMKIT_CAPI_BF16) return static_cast<int>(Status::kErrorUnsupportedType);
  normkit::LaunchPlan p;
  const Status s = GemmaRmsNorm::plan(gemma_args(nullptr, nullptr, nullptr, nullptr, 0, cols, 1e-6f), &p);
  return nkcapi::shape_result(s, p, shape_name);
}

int normkit_layer_norm_gemma_shape(int dtype, int64_t cols, const char** shape_name) {
  if (shape_name == nullptr) return static_cast<int>(Status::kErrorNullPointer);
  if (dtype != NORMKIT_CAPI_BF16) return static_cast<int>(Status::kErrorUnsupportedType);
  normkit::LaunchPlan p;
  const Status s = GemmaLayerNorm::plan(
      gemma_layer_norm_args(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 0, cols, 1e-5f), &p);
  return nkcapi::shape_result(s, p, shape_name);
}

}  // extern "C"
