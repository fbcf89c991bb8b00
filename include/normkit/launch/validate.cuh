// normkit/launch/validate.cuh: argument checks shared by every launcher. Pure
// host code: bad input is rejected before any CUDA call or memory access.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "../config.cuh"
#include "../status.cuh"
#include "../types.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace detail {

/// The bytes a strided [rows, cols] tensor touches.
struct Region {
  const void* ptr = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t stride = 0;  ///< elements
  int64_t elem_bytes = 0;

  uintptr_t begin() const { return reinterpret_cast<uintptr_t>(ptr); }
  uintptr_t end() const {
    return begin() + static_cast<uintptr_t>(((rows - 1) * stride + cols) * elem_bytes);
  }
  int64_t stride_bytes() const { return stride * elem_bytes; }
  int64_t row_bytes() const { return cols * elem_bytes; }
};

/// The regions every call's Params name: x and y ([rows, cols] at their
/// strides), mean and rstd (fp32 [rows]; null where not asked for).
struct CallRegions {
  Region x, y, mean, rstd;
};

/// `p`'s CallRegions (its strides resolved).
template <class Params>
CallRegions call_regions(const Params& p) {
  return {Region{p.x, p.rows, p.cols, p.x_stride, static_cast<int64_t>(sizeof(*p.x))},
          Region{p.y, p.rows, p.cols, p.y_stride, static_cast<int64_t>(sizeof(*p.y))},
          Region{p.mean, p.rows, 1, 1, 4}, Region{p.rstd, p.rows, 1, 1, 4}};
}

/// True if the two regions share a byte. Exact when both have the same byte
/// stride, or one of them is a single row (interleaved rows of one buffer are
/// recognized as disjoint); otherwise any overlap of their spans counts.
inline bool regions_overlap(const Region& a, const Region& b) {
  if (a.ptr == nullptr || b.ptr == nullptr || a.rows <= 0 || b.rows <= 0) return false;
  if (a.end() <= b.begin() || b.end() <= a.begin()) return false;
  int64_t s = a.stride_bytes();
  if (a.rows == 1) s = b.stride_bytes();
  if (b.rows > 1 && a.rows > 1 && s != b.stride_bytes()) return true;
  if (s <= 0) return true;
  // Row i of a is [i s, i s + La), row j of b is [d + j s, d + j s + Lb), relative to a.
  // They meet iff k s + d lies in (-Lb, La) for some k = j - i in (-rows_a, rows_b).
  const int64_t d = static_cast<int64_t>(b.begin() - a.begin());
  const int64_t la = a.row_bytes(), lb = b.row_bytes();
  const int64_t num = -lb - d;
  const int64_t first = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;  // floor(num / s) + 1
  for (int64_t k = first; k * s + d < la; ++k) {
    if (k - first > 64) return true;  // rows far longer than the stride: be conservative
    if (k > -a.rows && k < b.rows) return true;
  }
  return false;
}

/// Exactly the same elements: in-place operation.
inline bool same_region(const Region& a, const Region& b) {
  return a.ptr == b.ptr && a.stride_bytes() == b.stride_bytes() && a.elem_bytes == b.elem_bytes;
}

inline int64_t resolve_stride(int64_t stride, int64_t cols) { return stride == kContiguous ? cols : stride; }

/// Checks that do not depend on the tensors' element types.
inline Status check_shape(int64_t rows, int64_t cols, float eps) {
  if (rows < 0 || cols <= 0) return Status::kErrorInvalidShape;
  if (!std::isfinite(eps) || eps < 0.f) return Status::kErrorInvalidEpsilon;
  return Status::kSuccess;
}

inline Status check_stride(int64_t stride, int64_t cols) {
  return (stride == kContiguous || stride >= cols) ? Status::kSuccess : Status::kErrorInvalidStride;
}

/// An output may be identical to an input (in place) but may not otherwise
/// share a byte with any input or other output.
inline Status check_output(const Region& out, const Region* inputs, int n_inputs, bool may_alias_inputs) {
  for (int i = 0; i < n_inputs; ++i) {
    if (may_alias_inputs && same_region(out, inputs[i])) continue;
    if (regions_overlap(out, inputs[i])) return Status::kErrorOverlap;
  }
  return Status::kSuccess;
}

/// Whether a policy's Params declare the extents of their pointers known
/// (`static constexpr bool kRegionsKnown = true`), so that
/// row_counter_overlaps may check them: the library's AddResidual
/// (residual and residual_out, [M, N] at their strides), QuantDynamicRow
/// (row_scales, fp32 [M]), Scale and Affine (weight and bias, one row of
/// N). A caller's policy may declare it if its fields have those names and
/// extents; without it its pointers are not seen (a field named `weight`
/// might hold one scalar: taking it as a row of N would refuse valid calls).
template <class T, class = void>
struct regions_known : std::false_type {};
template <class T>
struct regions_known<T, std::void_t<decltype(T::kRegionsKnown)>> : std::bool_constant<T::kRegionsKnown> {};

/// Whether an epilogue's Params have a bias (Affine) beside the weight.
template <class T, class = void>
struct epilogue_has_bias : std::false_type {};
template <class T>
struct epilogue_has_bias<T, std::void_t<decltype(std::declval<const T&>().bias)>> : std::true_type {};

/// Whether `counter`'s two 32-bit words (LaunchOptions::row_counter) share a
/// byte with memory the call reads or writes, as far as the launcher knows
/// it: x, y, mean, rstd, and the pointers of policies whose Params declare
/// kRegionsKnown (above). `p`: validated Params (strides resolved, rows > 0).
template <class Params>
bool row_counter_overlaps(const Params& p, const uint32_t* counter) {
  if (counter == nullptr) return false;
  const Region words{counter, 1, 2, 2, sizeof(uint32_t)};
  const auto meets = [&](const auto* ptr, int64_t rows, int64_t cols, int64_t stride) {
    return regions_overlap(words, Region{ptr, rows, cols, stride, static_cast<int64_t>(sizeof(*ptr))});
  };
  const CallRegions c = call_regions(p);
  bool hit = regions_overlap(words, c.x) || regions_overlap(words, c.y) || regions_overlap(words, c.mean) ||
             regions_overlap(words, c.rstd);
  using InputParams = decltype(p.input);
  using OutputParams = decltype(p.output);
  using EpilogueParams = decltype(p.epilogue);
  if constexpr (regions_known<InputParams>::value) {
    hit = hit || meets(p.input.residual, p.rows, p.cols, p.input.residual_stride) ||
          meets(p.input.residual_out, p.rows, p.cols, p.input.residual_out_stride);
  }
  if constexpr (regions_known<OutputParams>::value) hit = hit || meets(p.output.row_scales, p.rows, 1, 1);
  if constexpr (regions_known<EpilogueParams>::value) {
    hit = hit || meets(p.epilogue.weight, 1, p.cols, p.cols);  // one row of N
    if constexpr (epilogue_has_bias<EpilogueParams>::value) hit = hit || meets(p.epilogue.bias, 1, p.cols, p.cols);
  }
  return hit;
}

}  // namespace detail
NORMKIT_NAMESPACE_END

NORMKIT_NAMESPACE_BEGIN
namespace detail {

/// Outcome of validating a plain (unfused) problem: an error, nothing to do
/// (M == 0), or go.
enum class Verdict { kError, kNothingToDo, kLaunch };

/// Validates and normalizes a Problem::Params whose strides may still be
/// kContiguous: shape, eps, strides, required pointers, and that y, mean and
/// rstd share no byte with each other or with x (y == x exactly is in place).
template <class Params>
Verdict check_plain_params(Params& p, Status* status) {
  *status = check_shape(p.rows, p.cols, p.eps);
  if (*status == Status::kSuccess) *status = check_stride(p.x_stride, p.cols);
  if (*status == Status::kSuccess) *status = check_stride(p.y_stride, p.cols);
  if (*status != Status::kSuccess) return Verdict::kError;
  p.x_stride = resolve_stride(p.x_stride, p.cols);
  p.y_stride = resolve_stride(p.y_stride, p.cols);
  if (p.rows == 0) return Verdict::kNothingToDo;
  if (p.x == nullptr || p.y == nullptr) {
    *status = Status::kErrorNullPointer;
    return Verdict::kError;
  }
  const auto [x, y, mean, rstd] = call_regions(p);
  const Region y_inputs[] = {x};
  const Region mean_inputs[] = {x, y};
  const Region rstd_inputs[] = {x, y, mean};
  Status s = check_output(y, y_inputs, 1, true);
  if (s == Status::kSuccess) s = check_output(mean, mean_inputs, 2, false);
  if (s == Status::kSuccess) s = check_output(rstd, rstd_inputs, 3, false);
  *status = s;
  return s == Status::kSuccess ? Verdict::kLaunch : Verdict::kError;
}

}  // namespace detail
NORMKIT_NAMESPACE_END
