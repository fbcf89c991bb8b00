// normkit/io/input.cuh: how a kernel obtains the row it normalizes.
//
// An input policy has
//   using Storage = ...;   // element type the row is held in (exactly)
//   struct Params { ... }; // what it needs beyond x
//   static void prepare(Params&);  // host: access widths, before a launch
//   static constexpr bool kIsPlainCopy;  // the row is x's bytes unchanged
//                                        // (kernels may then copy it to shared
//                                        // memory without registers)
//   template <int K, int VEC, class P> static __device__ void load(const P& p,
//       int64_t row, int64_t col_base, int64_t n, int first_slot, int lane,
//       int team, bool first_read, detail::RawSlot<Storage, VEC> (&v)[K]);
// which fills K slots (see RowLoader for the layout) of the row, starting at
// column col_base with n valid columns from there; invalid elements are zero.
// `first_read` is false when a streaming kernel reads the row again.
// Rows are held raw (bf16 stays 2 bytes a value) and converted to fp32 slot by
// slot where used: half the registers of an fp32 copy.
#pragma once

#include <cstdint>

#include "../block/row_loader.cuh"
#include "../block/vector_access.cuh"
#include "../config.cuh"
#include "../types.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace input {

/// The row is x.
template <class X>
struct Plain {
  using Storage = X;
  struct Params {};
  static void prepare(Params&) {}
  static constexpr bool kIsPlainCopy = true;

  template <int K, int VEC, class P>
  static NORMKIT_DEVICE void load(const P& p, int64_t row, int64_t col_base, int64_t n, int first_slot,
                                  int lane, int team, bool /*first_read*/, detail::RawSlot<X, VEC> (&v)[K]) {
    const X* src = p.x + row * p.x_stride + col_base;
    RowLoader<X, VEC>::template load_raw<K>(src, n, first_slot, lane, team, p.x_access, v);
  }
};

/// The row is h = x + residual, computed in fp32 and rounded to R; h is stored
/// to residual_out (which may equal residual: vLLM's in-place form) and the
/// rounded h is what gets normalized, so y equals norm(residual_out) exactly as
/// an unfused pair of calls would give. A streaming kernel's later reads take h
/// back from residual_out.
template <class X, class R>
struct AddResidual {
  using Storage = R;
  static constexpr bool kIsPlainCopy = false;
  struct Params {
    const R* residual = nullptr;
    R* residual_out = nullptr;
    int64_t residual_stride = 0;      ///< row stride of residual, in elements
    int64_t residual_out_stride = 0;  ///< row stride of residual_out, in elements
    int residual_access = 0;          ///< access widths, set by the launcher
    int residual_out_access = 0;
  };

  static void prepare(Params& q) {
    q.residual_access = access_bytes_for(q.residual, q.residual_stride, sizeof(R), 16);
    q.residual_out_access = access_bytes_for(q.residual_out, q.residual_out_stride, sizeof(R), 16);
  }

  template <int K, int VEC, class P>
  static NORMKIT_DEVICE void load(const P& p, int64_t row, int64_t col_base, int64_t n, int first_slot,
                                  int lane, int team, bool first_read, detail::RawSlot<R, VEC> (&v)[K]) {
    const Params& q = p.input;
    R* out = q.residual_out + row * q.residual_out_stride + col_base;
    if (!first_read) {
      RowLoader<R, VEC>::template load_raw<K>(out, n, first_slot, lane, team, q.residual_out_access, v);
      return;
    }
    detail::RawSlot<X, VEC> xs[K];
    const X* xp = p.x + row * p.x_stride + col_base;
    const R* rp = q.residual + row * q.residual_stride + col_base;
    RowLoader<X, VEC>::template load_raw<K>(xp, n, first_slot, lane, team, p.x_access, xs);
    RowLoader<R, VEC>::template load_raw<K>(rp, n, first_slot, lane, team, q.residual_access, v);
#pragma unroll
    for (int k = 0; k < K; ++k) {
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        // Padding stays 0 + 0 = 0.
        v[k].v[i] = detail::from_float<R>(detail::to_float(xs[k].v[i]) + detail::to_float(v[k].v[i]));
      }
    }
    RowLoader<R, VEC>::template store_raw<K>(out, n, first_slot, lane, team, q.residual_out_access, v);
  }
};

}  // namespace input
NORMKIT_NAMESPACE_END
