// bench/capi/normkit_capi.cu: the C ABI of normkit_capi.h for the plain norms
// and the fused residual adds. Nine instantiations (three ops, three dtypes),
// chosen at run time by the dtype code, and residual add + LayerNorm for bf16.
// RMSNorm quantized and both norms with Gemma's weight live in
// normkit_capi_variants.cu, LayerNorm quantized in normkit_capi_layer_quant.cu:
// translation units of their own, so that they compile side by side.
#include "normkit_capi.h"

#include "capi_args.h"

#include <cuda_runtime.h>

#include <normkit/add_norm.cuh>
#include <normkit/layer_norm.cuh>
#include <normkit/rms_norm.cuh>

namespace {

using normkit::Status;

/// Calls f with a value of the element type named by `dtype`.
template <class F>
Status with_dtype(int dtype, F&& f) {
  switch (dtype) {
    case NORMKIT_CAPI_FP32: return f(float{});
    case NORMKIT_CAPI_FP16: return f(normkit::half{});
    case NORMKIT_CAPI_BF16: return f(normkit::bfloat16{});
    default: return Status::kErrorUnsupportedType;
  }
}

template <class T>
normkit::LayerNormArgs<T> layer_norm_args(const void* x, void* y, const void* weight, const void* bias, float* mean,
                                          float* rstd, int64_t rows, int64_t cols, float eps) {
  auto a = nkcapi::row_args<normkit::LayerNormArgs<T>>(x, y, rows, cols, eps);
  a.weight = static_cast<const T*>(weight);
  a.bias = static_cast<const T*>(bias);
  a.mean = mean;
  a.rstd = rstd;
  return a;
}

template <class T>
normkit::RmsNormArgs<T> rms_norm_args(const void* x, void* y, const void* weight, float* rstd, int64_t rows,
                                      int64_t cols, float eps) {
  auto a = nkcapi::row_args<normkit::RmsNormArgs<T>>(x, y, rows, cols, eps);
  a.weight = static_cast<const T*>(weight);
  a.rstd = rstd;
  return a;
}

template <class T>
normkit::AddRmsNormArgs<T, T, T, T> add_rms_norm_args(const void* x, const void* residual, void* residual_out, void* y,
                                                      const void* weight, float* rstd, int64_t rows, int64_t cols,
                                                      float eps) {
  auto a = nkcapi::row_args<normkit::AddRmsNormArgs<T, T, T, T>>(x, y, rows, cols, eps);
  a.residual = static_cast<const T*>(residual);
  a.residual_out = static_cast<T*>(residual_out);
  a.weight = static_cast<const T*>(weight);
  a.rstd = rstd;
  return a;
}

using AddLayerNormBf16Args = normkit::AddLayerNormArgs<normkit::bfloat16>;

AddLayerNormBf16Args add_layer_norm_args(const void* x, const void* residual, void* residual_out, void* y,
                                         const void* weight, const void* bias, float* mean, float* rstd,
                                         int64_t rows, int64_t cols, float eps) {
  using T = normkit::bfloat16;
  auto a = nkcapi::row_args<AddLayerNormBf16Args>(x, y, rows, cols, eps);
  a.residual = static_cast<const T*>(residual);
  a.residual_out = static_cast<T*>(residual_out);
  a.weight = static_cast<const T*>(weight);
  a.bias = static_cast<const T*>(bias);
  a.mean = mean;
  a.rstd = rstd;
  return a;
}

/// Planning needs no buffers when M = 0, a valid call; the shape depends on N only.
template <class Plan>
int shape_of(int dtype, Plan&& plan, const char** shape_name) {
  if (shape_name == nullptr) return static_cast<int>(Status::kErrorNullPointer);
  normkit::LaunchPlan p;
  const Status s = with_dtype(dtype, [&](auto tag) { return plan(tag, &p); });
  if (s == Status::kSuccess) *shape_name = normkit::shape_name(p.shape);
  return static_cast<int>(s);
}

}  // namespace

extern "C" {

int normkit_layer_norm_fwd(int dtype, const void* x, void* y, const void* weight, const void* bias, float* mean,
                           float* rstd, int64_t rows, int64_t cols, float eps, void* stream) {
  return static_cast<int>(with_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    return normkit::layer_norm_forward(layer_norm_args<T>(x, y, weight, bias, mean, rstd, rows, cols, eps),
                                       static_cast<cudaStream_t>(stream), nkcapi::options());
  }));
}

int normkit_rms_norm_fwd(int dtype, const void* x, void* y, const void* weight, float* rstd, int64_t rows,
                         int64_t cols, float eps, void* stream) {
  return static_cast<int>(with_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    return normkit::rms_norm_forward(rms_norm_args<T>(x, y, weight, rstd, rows, cols, eps),
                                     static_cast<cudaStream_t>(stream), nkcapi::options());
  }));
}

int normkit_add_rms_norm_fwd(int dtype, const void* x, const void* residual, void* residual_out, void* y,
                             const void* w, float* rstd, int64_t rows, int64_t cols, float eps, void* stream) {
  return static_cast<int>(with_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    return normkit::add_rms_norm_forward(
        add_rms_norm_args<T>(x, residual, residual_out, y, w, rstd, rows, cols, eps),
        static_cast<cudaStream_t>(stream), nkcapi::options());
  }));
}

int normkit_add_layer_norm_fwd(int dtype, const void* x, const void* residual, void* residual_out, void* y,
                               const void* w, const void* b, float* mean, float* rstd, int64_t rows, int64_t cols,
                               float eps, void* stream) {
  if (dtype != NORMKIT_CAPI_BF16) return static_cast<int>(Status::kErrorUnsupportedType);
  return static_cast<int>(normkit::add_layer_norm_forward(
      add_layer_norm_args(x, residual, residual_out, y, w, b, mean, rstd, rows, cols, eps),
      static_cast<cudaStream_t>(stream), nkcapi::options()));
}

int normkit_layer_norm_shape(int dtype, int64_t cols, const char** shape_name) {
  return shape_of(
      dtype,
      [cols](auto tag, normkit::LaunchPlan* p) {
        using T = decltype(tag);
        return normkit::layer_norm_plan(layer_norm_args<T>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 0,
                                                           cols, 1e-5f),
                                        p);
      },
      shape_name);
}

int normkit_rms_norm_shape(int dtype, int64_t cols, const char** shape_name) {
  return shape_of(
      dtype,
      [cols](auto tag, normkit::LaunchPlan* p) {
        using T = decltype(tag);
        return normkit::rms_norm_plan(rms_norm_args<T>(nullptr, nullptr, nullptr, nullptr, 0, cols, 1e-6f), p);
      },
      shape_name);
}

int normkit_add_rms_norm_shape(int dtype, int64_t cols, const char** shape_name) {
  return shape_of(
      dtype,
      [cols](auto tag, normkit::LaunchPlan* p) {
        using T = decltype(tag);
        return normkit::add_rms_norm_plan(
            add_rms_norm_args<T>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 0, cols, 1e-6f), p);
      },
      shape_name);
}

int normkit_add_layer_norm_shape(int dtype, int64_t cols, const char** shape_name) {
  if (shape_name == nullptr) return static_cast<int>(Status::kErrorNullPointer);
  if (dtype != NORMKIT_CAPI_BF16) return static_cast<int>(Status::kErrorUnsupportedType);  // as the forward
  normkit::LaunchPlan p;
  const Status s = normkit::add_layer_norm_plan(
      add_layer_norm_args(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 0, cols, 1e-5f), &p);
  if (s == Status::kSuccess) *shape_name = normkit::shape_name(p.shape);
  return static_cast<int>(s);
}

int normkit_set_row_counter(void* counter) {
  if (!normkit::detail::row_counter_aligned(static_cast<const uint32_t*>(counter))) {
    return static_cast<int>(Status::kErrorInvalidWorkspace);
  }
  nkcapi::row_counter() = static_cast<uint32_t*>(counter);
  return 0;
}

const char* normkit_status_string(int status) { return normkit::status_string(static_cast<Status>(status)); }

}  // extern "C"
