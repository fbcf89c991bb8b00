// normkit/io/input.cuh: how a kernel obtains the row it normalizes.
//
// An input policy has
//   using Storage = ...;   // element type the row is held in (exactly)
//   struct Params { ... }; // what it needs beyond x
//   static void prepare(Params&);  // host: access widths, before a launch
//   static constexpr bool kIsPlainCopy;  // the row is x's bytes unchanged
//                                        // (kernels may then copy it to shared
//                                        // memory without registers)
//   template <int K, int VEC, bool WHOLE, class P> static __device__ void load(
//       const P& p, int64_t row, int64_t col_base, int64_t n, int first_slot,
//       int lane, int team, bool first_read,
//       detail::RawSlot<Storage, VEC> (&v)[K]);
// which fills K slots (see RowLoader for the layout) of the row, starting at
// column col_base with n valid columns from there; invalid elements are zero.
// `first_read` is false when a streaming kernel reads the row again. WHOLE:
// the K slots lie within the n columns and whole_slots(p) held at launch, so
// every access may move a whole slot without checks (RowLoader's WHOLE).
//   template <int VEC, class P> static bool whole_slots(const P& p);
// host: whether every row access the policy makes is aligned to a whole slot
// (access widths set). Both are optional: a policy without them never takes
// the WHOLE form (detail::input_whole_slots, detail::load_input). A policy
// that stores as it loads (AddResidual) may take a fourth argument, SHIFT
// (load<K, VEC, false, true>): its stores, misaligned, go out as shifted
// aligned words (RowLoader::store_shifted) in the kernels of
// detail::WithShiftedStores. And
//   template <int VEC, class P> static __device__ float pilot(const P& p,
//       int64_t row);
// a cheap estimate of the row's mean that every thread of the row computes
// identically, from memory no thread writes before the row's first
// reduction (TwoPass shifts by it; see stats/two_pass.cuh).
// Rows are held raw (bf16 stays 2 bytes a value) and converted to fp32 slot by
// slot where used: half the registers of an fp32 copy.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

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

  template <int VEC, class P>
  static bool whole_slots(const P& p) {
    return p.x_access >= detail::slot_bytes<X, VEC>();
  }

  template <int K, int VEC, bool WHOLE = false, class P>
  static NORMKIT_DEVICE void load(const P& p, int64_t row, int64_t col_base, int64_t n, int first_slot,
                                  int lane, int team, bool /*first_read*/, detail::RawSlot<X, VEC> (&v)[K]) {
    const X* src = p.x + row * p.x_stride + col_base;
    RowLoader<X, VEC>::template load_raw<K, WHOLE>(src, n, first_slot, lane, team, p.x_access, v);
  }

  /// The mean of the row's first 16 bytes (the same address for every thread,
  /// so one transaction per warp, from L1 after the first). Rows shorter than
  /// that or not 16-byte aligned take the first min(N, VEC) elements one by one.
  template <int VEC, class P>
  static NORMKIT_DEVICE float pilot(const P& p, int64_t row) {
    const X* src = p.x + row * p.x_stride;
    if (p.x_access >= 16 && p.cols >= VEC) {
      detail::RawSlot<X, VEC> first;
      float v[VEC];
      detail::load_slot_raw<16, X, VEC>(src, first);
      detail::slot_to_float(first, v);
      float sum = 0.f;
#pragma unroll
      for (int i = 0; i < VEC; ++i) sum += v[i];
      return sum * (1.0f / VEC);
    }
    const int k = p.cols < VEC ? static_cast<int>(p.cols) : VEC;
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < VEC; ++i) sum += i < k ? detail::to_float(src[i]) : 0.f;
    return sum / static_cast<float>(k);
  }
};

/// The row is h = x + residual, computed in fp32 and rounded to R; h is stored
/// to residual_out (which may equal residual: vLLM's in-place form) and the
/// rounded h is what gets normalized, so y equals norm(residual_out) exactly as
/// an unfused pair of calls would give. A streaming kernel's later reads take h
/// back from residual_out. Where x and the residual are of one 16-bit type,
/// the sums are packed instructions that round the exact sum once, which is
/// the fp32 sum's rounding (detail::add_slots): 3 instructions an element
/// fewer, the same bits.
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
    /// residual and residual_out hold [M, N] at their strides (the row
    /// counter's overlap check, launch/validate.cuh: regions_known).
    static constexpr bool kRegionsKnown = true;
  };

  static void prepare(Params& q) {
    q.residual_access = access_bytes_for(q.residual, q.residual_stride, sizeof(R), 16);
    q.residual_out_access = access_bytes_for(q.residual_out, q.residual_out_stride, sizeof(R), 16);
  }

  template <int VEC, class P>
  static bool whole_slots(const P& p) {
    const Params& q = p.input;
    return p.x_access >= detail::slot_bytes<X, VEC>() && q.residual_access >= detail::slot_bytes<R, VEC>() &&
           q.residual_out_access >= detail::slot_bytes<R, VEC>();
  }

  /// SHIFT: residual_out misaligned, stored as shifted words
  /// (RowLoader::store_shifted; the kernels of detail::WithShiftedStores).
  template <int K, int VEC, bool WHOLE = false, bool SHIFT = false, class P>
  static NORMKIT_DEVICE void load(const P& p, int64_t row, int64_t col_base, int64_t n, int first_slot,
                                  int lane, int team, bool first_read, detail::RawSlot<R, VEC> (&v)[K]) {
    const Params& q = p.input;
    R* out = q.residual_out + row * q.residual_out_stride + col_base;
    if (!first_read) {
      RowLoader<R, VEC>::template load_raw<K, WHOLE>(out, n, first_slot, lane, team, q.residual_out_access, v);
      return;
    }
    detail::RawSlot<X, VEC> xs[K];
    const X* xp = p.x + row * p.x_stride + col_base;
    const R* rp = q.residual + row * q.residual_stride + col_base;
    RowLoader<X, VEC>::template load_raw<K, WHOLE>(xp, n, first_slot, lane, team, p.x_access, xs);
    RowLoader<R, VEC>::template load_raw<K, WHOLE>(rp, n, first_slot, lane, team, q.residual_access, v);
#pragma unroll
    for (int k = 0; k < K; ++k) {
      // Padding stays 0 + 0 = 0. Packed in the WHOLE forms only (the same
      // bits): in the checked forms ptxas spilled more with it
      // (row_cluster_registers' checked fused-add kernel: 1512 bytes against
      // 808), so they compile as before.
      v[k] = detail::add_slots<WHOLE>(xs[k], v[k]);
      if constexpr (SHIFT && !WHOLE) {
        // Slot by slot: all K slots' shifted stores at once spilled (4218
        // bytes in the 8-slot kernel).
        const detail::RawSlot<R, VEC> one[1] = {v[k]};
        RowLoader<R, VEC>::template store_raw<1, false, true>(out, n, first_slot + k, lane, team,
                                                              q.residual_out_access, one);
      }
    }
    if constexpr (!SHIFT || WHOLE) {
      RowLoader<R, VEC>::template store_raw<K, WHOLE>(out, n, first_slot, lane, team, q.residual_out_access, v);
    }
  }

  /// Zero: h's first elements are not safe to read (in place, residual_out is
  /// residual, and the thread owning them may already have stored h there),
  /// and x alone says little about h. Residual streams are centred, so zero
  /// is usually a good shift; a row far from it takes TwoPass's second pass.
  template <int VEC, class P>
  static NORMKIT_DEVICE float pilot(const P&, int64_t) {
    return 0.f;
  }
};

}  // namespace input

namespace detail {

/// Whether In is a fused add (AddResidual): its residual_out is an output.
template <class In>
struct IsAddResidual : std::false_type {};
template <class X, class R>
struct IsAddResidual<input::AddResidual<X, R>> : std::true_type {};

// Input policies written before the WHOLE form (no whole_slots, no WHOLE
// argument to load) keep working: they never take it.
template <class In, int VEC, class P, class = void>
struct HasInputWholeSlots : std::false_type {};
template <class In, int VEC, class P>
struct HasInputWholeSlots<In, VEC, P, std::void_t<decltype(In::template whole_slots<VEC>(std::declval<const P&>()))>>
    : std::true_type {};

template <class In, int K, int VEC, class P, class = void>
struct HasInputWholeLoad : std::false_type {};
template <class In, int K, int VEC, class P>
struct HasInputWholeLoad<In, K, VEC, P,
                         std::void_t<decltype(In::template load<K, VEC, true>(
                             std::declval<const P&>(), int64_t{}, int64_t{}, int64_t{}, 0, 0, 0, true,
                             std::declval<RawSlot<typename In::Storage, VEC> (&)[K]>()))>> : std::true_type {};

/// Host: the input policy's whole_slots, or false for a policy without one.
template <class In, int VEC, class P>
inline bool input_whole_slots(const P& p) {
  if constexpr (HasInputWholeSlots<In, VEC, P>::value) {
    return In::template whole_slots<VEC>(p);
  } else {
    return false;
  }
}

template <class In, int K, int VEC, class P, class = void>
struct HasInputShiftedLoad : std::false_type {};
template <class In, int K, int VEC, class P>
struct HasInputShiftedLoad<In, K, VEC, P,
                           std::void_t<decltype(In::template load<K, VEC, false, true>(
                               std::declval<const P&>(), int64_t{}, int64_t{}, int64_t{}, 0, 0, 0, true,
                               std::declval<RawSlot<typename In::Storage, VEC> (&)[K]>()))>> : std::true_type {};

/// In::load with WHOLE where the policy takes it (a policy without it is never
/// asked for WHOLE at run time: input_whole_slots is false for it).
/// SHIFT: the kernel was instantiated for misaligned outputs
/// (WithShiftedStores): a policy that stores as it loads and takes a SHIFT
/// argument (AddResidual) stores them as shifted words.
template <class In, int K, int VEC, bool WHOLE, bool SHIFT = false, class P>
NORMKIT_DEVICE void load_input(const P& p, int64_t row, int64_t col_base, int64_t n, int first_slot, int lane,
                               int team, bool first_read, RawSlot<typename In::Storage, VEC> (&v)[K]) {
  if constexpr (SHIFT && !WHOLE && HasInputShiftedLoad<In, K, VEC, P>::value) {
    In::template load<K, VEC, false, true>(p, row, col_base, n, first_slot, lane, team, first_read, v);
  } else if constexpr (HasInputWholeLoad<In, K, VEC, P>::value) {
    In::template load<K, VEC, WHOLE>(p, row, col_base, n, first_slot, lane, team, first_read, v);
  } else {
    In::template load<K, VEC>(p, row, col_base, n, first_slot, lane, team, first_read, v);
  }
}

}  // namespace detail
NORMKIT_NAMESPACE_END
