/* bench/capi/normkit_capi.h: a C ABI over normkit's LayerNorm and RMSNorm
 * forward, residual add + RMSNorm, residual add + LayerNorm, RMSNorm and LayerNorm quantized to fp8
 * or int8, and RMSNorm and LayerNorm with Gemma's zero-centred weight, for callers outside C++
 * (bench/compare_pytorch.py loads it with ctypes). x, y (unless quantized),
 * weight, bias and the residual buffers share one dtype; mean and rstd are fp32
 * [rows]; rows are contiguous. Pointers are device pointers; `stream` is a
 * cudaStream_t (NULL: the legacy default stream). Every function returns a
 * normkit::Status value (0 = success); none synchronizes. */
#ifndef NORMKIT_CAPI_H
#define NORMKIT_CAPI_H

#include <stdint.h>

#if defined(NORMKIT_CAPI_BUILDING)
#define NORMKIT_CAPI_EXPORT __attribute__((visibility("default")))
#else
#define NORMKIT_CAPI_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* dtype codes */
enum { NORMKIT_CAPI_FP32 = 0, NORMKIT_CAPI_FP16 = 1, NORMKIT_CAPI_BF16 = 2 };

/* y = (x - mean) * rstd * weight + bias over each row of [rows, cols].
 * weight, bias, mean and rstd may be NULL (weight 1, bias 0, statistics not stored). */
NORMKIT_CAPI_EXPORT int normkit_layer_norm_fwd(int dtype, const void* x, void* y, const void* weight,
                                               const void* bias, float* mean, float* rstd, int64_t rows,
                                               int64_t cols, float eps, void* stream);

/* y = x * rstd * weight, rstd = 1 / sqrt(mean(x^2) + eps). weight and rstd may be NULL. */
NORMKIT_CAPI_EXPORT int normkit_rms_norm_fwd(int dtype, const void* x, void* y, const void* weight, float* rstd,
                                             int64_t rows, int64_t cols, float eps, void* stream);

/* residual_out = x + residual (added in fp32, rounded to the dtype), then
 * y = residual_out * rstd * weight with rstd = 1 / sqrt(mean(residual_out^2) + eps),
 * the statistics taken of the rounded residual_out. residual_out may equal
 * residual and y may equal x (in place, as vLLM's fused_add_rms_norm); no other
 * overlap is allowed. weight and rstd may be NULL. */
NORMKIT_CAPI_EXPORT int normkit_add_rms_norm_fwd(int dtype, const void* x, const void* residual, void* residual_out,
                                                 void* y, const void* w, float* rstd, int64_t rows, int64_t cols,
                                                 float eps, void* stream);

/* residual_out = x + residual as above, then y = (residual_out - mean) * rstd *
 * weight + bias, the statistics (mean, biased variance) taken of the rounded
 * residual_out (bf16 only: other dtypes return kErrorUnsupportedType). weight,
 * bias, mean and rstd may be NULL. */
NORMKIT_CAPI_EXPORT int normkit_add_layer_norm_fwd(int dtype, const void* x, const void* residual,
                                                   void* residual_out, void* y, const void* w, const void* b,
                                                   float* mean, float* rstd, int64_t rows, int64_t cols, float eps,
                                                   void* stream);

/* RMSNorm quantized to fp8 e4m3 with dynamic per-row scales (bf16 x and
 * weight only: other dtypes return kErrorUnsupportedType): y_fp8 holds
 * q(y / row_scales[r]) for y = x * rstd * weight, row_scales[r] =
 * max(max|y_r| / 448, 1 / (448 * 512)) (fp32 [rows]). weight may be NULL.
 * normkit_rms_norm_quant_fwd with NORMKIT_CAPI_E4M3 and no static scale. */
NORMKIT_CAPI_EXPORT int normkit_rms_norm_fp8_fwd(int dtype, const void* x, void* y_fp8, const void* weight,
                                                 float* row_scales, int64_t rows, int64_t cols, float eps,
                                                 void* stream);

/* quantized output codes */
enum { NORMKIT_CAPI_E4M3 = 0, NORMKIT_CAPI_E5M2 = 1, NORMKIT_CAPI_INT8 = 2 };

/* RMSNorm quantized to `qtype` (bf16 x and weight only), y = x * rstd * weight,
 * with one of two scalings: a static scale (static_scale != 0, row_scales
 * NULL: y_q = q(y * (1 / static_scale)), the reciprocal taken on the host;
 * the scale must be positive and finite) or per-row scales (static_scale 0,
 * row_scales non-NULL: scale = max(max|y_r| / Qmax, 1 / (Qmax * 512)) written
 * to row_scales[r], y_q = q(y * (1 / scale))); Qmax is 448 (e4m3), 57344
 * (e5m2) or 127 (int8). q rounds to nearest even and saturates (int8 to
 * [-128, 127]), but for int8 with per-row scales, whose values the scale keeps
 * in range, which does not saturate (a NaN y gives -1; docs/variants.md).
 * Neither scaling, both, or a static scale that is negative, NaN or infinite:
 * kErrorInvalidScale, nothing written. weight may be NULL. */
NORMKIT_CAPI_EXPORT int normkit_rms_norm_quant_fwd(int dtype, int qtype, const void* x, void* y_q,
                                                   const void* weight, float static_scale, float* row_scales,
                                                   int64_t rows, int64_t cols, float eps, void* stream);

/* LayerNorm quantized to `qtype` (bf16 x, weight and bias only), y = (x -
 * mean) * rstd * weight + bias, with the scalings and rounding of
 * normkit_rms_norm_quant_fwd. weight (then 1) and bias (then 0) may be NULL;
 * no mean or rstd is written. */
NORMKIT_CAPI_EXPORT int normkit_layer_norm_quant_fwd(int dtype, int qtype, const void* x, void* y_q,
                                                     const void* weight, const void* bias, float static_scale,
                                                     float* row_scales, int64_t rows, int64_t cols, float eps,
                                                     void* stream);

/* Gemma's RMSNorm (TransformerEngine's zero-centred gamma): y = x * rstd *
 * (1 + weight), in fp32, rounded once (bf16 only). weight (then a scale of 1)
 * and rstd may be NULL. */
NORMKIT_CAPI_EXPORT int normkit_rms_norm_gemma_fwd(int dtype, const void* x, void* y, const void* weight,
                                                   float* rstd, int64_t rows, int64_t cols, float eps,
                                                   void* stream);

/* LayerNorm with the zero-centred weight (TransformerEngine's
 * zero_centered_gamma): y = (x - mean) * rstd * (1 + weight) + bias, in fp32,
 * rounded once (bf16 only). weight (then a scale of 1), bias (then 0), mean
 * and rstd may be NULL. */
NORMKIT_CAPI_EXPORT int normkit_layer_norm_gemma_fwd(int dtype, const void* x, void* y, const void* weight,
                                                     const void* bias, float* mean, float* rstd, int64_t rows,
                                                     int64_t cols, float eps, void* stream);

/* The kernel shape ("rows_per_warp", "row_per_block", "row_in_smem",
 * "row_in_cluster", "streaming"; "row_in_cluster_registers" only for per-row
 * quantized outputs) the forward call would use for rows of
 * `cols` on the current device; the shape never depends on the number of
 * rows. Stores a static string in *shape_name on success. */
NORMKIT_CAPI_EXPORT int normkit_layer_norm_shape(int dtype, int64_t cols, const char** shape_name);
NORMKIT_CAPI_EXPORT int normkit_rms_norm_shape(int dtype, int64_t cols, const char** shape_name);
NORMKIT_CAPI_EXPORT int normkit_add_rms_norm_shape(int dtype, int64_t cols, const char** shape_name);
NORMKIT_CAPI_EXPORT int normkit_add_layer_norm_shape(int dtype, int64_t cols, const char** shape_name);
NORMKIT_CAPI_EXPORT int normkit_rms_norm_fp8_shape(int dtype, int64_t cols, const char** shape_name);
NORMKIT_CAPI_EXPORT int normkit_rms_norm_gemma_shape(int dtype, int64_t cols, const char** shape_name);
NORMKIT_CAPI_EXPORT int normkit_layer_norm_gemma_shape(int dtype, int64_t cols, const char** shape_name);
/* per_row: nonzero for per-row scales, 0 for a static scale */
NORMKIT_CAPI_EXPORT int normkit_rms_norm_quant_shape(int dtype, int qtype, int per_row, int64_t cols,
                                                     const char** shape_name);
NORMKIT_CAPI_EXPORT int normkit_layer_norm_quant_shape(int dtype, int qtype, int per_row, int64_t cols,
                                                       const char** shape_name);

/* The row counter every later forward passes (normkit::LaunchOptions::row_counter:
 * two 32-bit words of device memory, zero, used by one stream only; each call
 * leaves them zero), or NULL for none. Not 4-byte aligned: the status
 * kErrorInvalidWorkspace, and the counter in use stays. */
NORMKIT_CAPI_EXPORT int normkit_set_row_counter(void* counter);

/* A short English description of a status value. */
NORMKIT_CAPI_EXPORT const char* normkit_status_string(int status);

#ifdef __cplusplus
}
#endif

#endif /* NORMKIT_CAPI_H */
