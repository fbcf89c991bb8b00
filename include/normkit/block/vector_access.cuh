// normkit/block/vector_access.cuh: moving a slot of VEC consecutive elements
// between global memory and registers with accesses of a chosen width (the
// 16- and 8-byte stores are PTX `st.global`: rows live in global memory).
#pragma once

#include <cstdint>
#include <type_traits>

#include "../config.cuh"
#include "../types.cuh"

NORMKIT_NAMESPACE_BEGIN

namespace detail {

template <int BYTES>
struct Word;
template <>
struct Word<1> {
  using type = uint8_t;
};
template <>
struct Word<2> {
  using type = uint16_t;
};
template <>
struct Word<4> {
  using type = uint32_t;
};
template <>
struct Word<8> {
  using type = uint2;
};
template <>
struct Word<16> {
  using type = uint4;
};

/// Bytes one access moves for a whole slot of VEC elements of T (at most 16).
template <class T, int VEC>
NORMKIT_HOST_DEVICE constexpr int slot_bytes() {
  return VEC * static_cast<int>(sizeof(T)) < 16 ? VEC * static_cast<int>(sizeof(T)) : 16;
}

/// VEC elements of T as raw storage, aligned so that any access width up to
/// the slot's size (at most 16 bytes) can reinterpret it.
template <class T, int VEC>
struct alignas(slot_bytes<T, VEC>()) RawSlot {
  T v[VEC];
};

/// Hides a slot's raw words (a RawSlot, or any register-held value of whole
/// 32-bit words, such as an epilogue's held parameter slot) from the
/// compiler (an empty asm that may have changed them), so that what a later
/// walk derives from them is computed anew rather than kept live from an
/// earlier walk: keeping the conversions of x from the statistics' walk for
/// the output walk spilled the 8-slot kernels (docs/performance.md, change
/// 67), and converting the ring's held weight once before its rows spilled
/// it (change 92). No instruction.
template <class Slot>
NORMKIT_DEVICE void hide_slot_words(Slot& slot) {
  static_assert(sizeof(Slot) % 4 == 0, "normkit: hide_slot_words takes slots of whole 32-bit words");
  uint32_t* w = reinterpret_cast<uint32_t*>(&slot);
#pragma unroll
  for (int i = 0; i < static_cast<int>(sizeof(Slot) / 4); ++i) asm volatile("" : "+r"(w[i]));
}

/// Converts a slot to fp32. 16-bit types go a 32-bit word (two elements) at a
/// time: one instruction per element (bf16: a shift or a mask; half: one
/// conversion each), where element-wise code first extracts each half.
template <class T, int VEC>
NORMKIT_DEVICE void slot_to_float(const RawSlot<T, VEC>& raw, float (&out)[VEC]) {
  if constexpr (std::is_same_v<T, bfloat16> && VEC % 2 == 0) {
    const uint32_t* w = reinterpret_cast<const uint32_t*>(raw.v);
#pragma unroll
    for (int i = 0; i < VEC / 2; ++i) {
      out[2 * i] = __uint_as_float(w[i] << 16);
      out[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
  } else if constexpr (std::is_same_v<T, half> && VEC % 2 == 0) {
    const __half2* h = reinterpret_cast<const __half2*>(raw.v);
#pragma unroll
    for (int i = 0; i < VEC / 2; ++i) {
      const float2 f = __half22float2(h[i]);
      out[2 * i] = f.x;
      out[2 * i + 1] = f.y;
    }
  } else {
#pragma unroll
    for (int i = 0; i < VEC; ++i) out[i] = to_float(raw.v[i]);
  }
}

/// Four fp32 values rounded (nearest even) and saturated to the finite range
/// of an fp8 type T, as from_float does, packed into one 32-bit word (a in the
/// lowest byte). On sm_89+ two conversions of a pair each, joined in
/// registers: through cuda_fp8.h's pair conversion into the byte array, the
/// compiler split each pair into bytes and merged them again, about two more
/// instructions per element (docs/performance.md, change 26).
template <class T>
NORMKIT_DEVICE uint32_t fp8x4_word(float a, float b, float c, float d) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  uint32_t w;
  if constexpr (std::is_same_v<T, float8_e4m3>) {
    asm("{\n.reg .b16 lo, hi;\ncvt.rn.satfinite.e4m3x2.f32 lo, %2, %1;\ncvt.rn.satfinite.e4m3x2.f32 hi, %4, %3;\n"
        "mov.b32 %0, {lo, hi};\n}"
        : "=r"(w)
        : "f"(a), "f"(b), "f"(c), "f"(d));
  } else {
    asm("{\n.reg .b16 lo, hi;\ncvt.rn.satfinite.e5m2x2.f32 lo, %2, %1;\ncvt.rn.satfinite.e5m2x2.f32 hi, %4, %3;\n"
        "mov.b32 %0, {lo, hi};\n}"
        : "=r"(w)
        : "f"(a), "f"(b), "f"(c), "f"(d));
  }
  return w;
#else
  constexpr __nv_fp8_interpretation_t kKind = std::is_same_v<T, float8_e4m3> ? __NV_E4M3 : __NV_E5M2;
  const uint32_t lo = __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, kKind);
  const uint32_t hi = __nv_cvt_float2_to_fp8x2(make_float2(c, d), __NV_SATFINITE, kKind);
  return lo | (hi << 16);
#endif
}

/// Four fp32 values rounded to nearest (ties to even) and saturated to
/// [-128, 127] (NaN: 0), as from_float<int8_t> does, packed into one 32-bit
/// word (a in the lowest byte). On the device one saturating conversion each
/// and three byte permutes: element by element the compiler emitted a round,
/// two clamps, a select and a conversion per value (change 29).
NORMKIT_DEVICE uint32_t int8x4_word(float a, float b, float c, float d) {
#if defined(__CUDA_ARCH__)
  int q[4];
  const float f[4] = {a, b, c, d};
#pragma unroll
  for (int i = 0; i < 4; ++i) asm("cvt.rni.sat.s8.f32 %0, %1;" : "=r"(q[i]) : "f"(f[i]));
  const uint32_t lo = __byte_perm(static_cast<uint32_t>(q[0]), static_cast<uint32_t>(q[1]), 0x0040);
  const uint32_t hi = __byte_perm(static_cast<uint32_t>(q[2]), static_cast<uint32_t>(q[3]), 0x0040);
  return __byte_perm(lo, hi, 0x5410);
#else
  const float f[4] = {a, b, c, d};
  uint32_t w = 0;
  for (int i = 0; i < 4; ++i) w |= static_cast<uint32_t>(static_cast<uint8_t>(from_float<int8_t>(f[i]))) << (8 * i);
  return w;
#endif
}

/// Four values a * factor .. d * factor rounded to nearest (ties to even) as
/// int8, packed into one 32-bit word, for products the caller knows round into
/// [-128, 127] (the per-row scale maps the row's max|y| to 127): each is one
/// fma with 1.5 * 2^23, whose sum keeps the rounded integer in its low
/// mantissa bits, and three byte permutes take the low bytes. No conversion
/// instruction (int8x4_word's cvt runs at a quarter of the fma rate) and no
/// separate multiplication; the product is rounded once, exactly. Outside that
/// range the bytes wrap instead of saturating, and a NaN gives -1 (the low
/// byte of the GPU's arithmetic NaN, 0x7fffffff) instead of int8x4_word's 0.
/// 1.5 * 2^23: a sum with it in [2^23, 2^24) has a unit in the last place of
/// 1, so the rounded integer lands in the sum's low mantissa bits.
inline constexpr float kInt8RoundingBias = 12582912.0f;

/// Four sums v + kInt8RoundingBias, each rounded once by the fma that made it
/// (int8x4_word_scaled_in_range, or an epilogue's fma with that addend:
/// output::QuantDynamicRow's pack_rounded), packed as int8 into one 32-bit
/// word (a in the lowest byte) by three byte permutes of their low bytes.
NORMKIT_DEVICE uint32_t int8x4_word_from_biased(float a, float b, float c, float d) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(__byte_perm(__float_as_uint(a), __float_as_uint(b), 0x0040),
                     __byte_perm(__float_as_uint(c), __float_as_uint(d), 0x0040), 0x5410);
#else
  return int8x4_word(a - kInt8RoundingBias, b - kInt8RoundingBias, c - kInt8RoundingBias, d - kInt8RoundingBias);
#endif
}

NORMKIT_DEVICE uint32_t int8x4_word_scaled_in_range(float factor, float a, float b, float c, float d) {
#if defined(__CUDA_ARCH__)
  return int8x4_word_from_biased(fmaf(a, factor, kInt8RoundingBias), fmaf(b, factor, kInt8RoundingBias),
                                 fmaf(c, factor, kInt8RoundingBias), fmaf(d, factor, kInt8RoundingBias));
#else
  return int8x4_word(a * factor, b * factor, c * factor, d * factor);
#endif
}

/// Rounds fp32 values to a slot of T (nearest even); 16-bit types two at a
/// time, with one packing conversion per pair.
template <class T, int VEC>
NORMKIT_DEVICE RawSlot<T, VEC> float_to_slot(const float (&v)[VEC]) {
  RawSlot<T, VEC> r;
  if constexpr (std::is_same_v<T, bfloat16> && VEC % 2 == 0) {
    __nv_bfloat162* o = reinterpret_cast<__nv_bfloat162*>(r.v);
#pragma unroll
    for (int i = 0; i < VEC / 2; ++i) o[i] = __floats2bfloat162_rn(v[2 * i], v[2 * i + 1]);
  } else if constexpr (std::is_same_v<T, half> && VEC % 2 == 0) {
    __half2* o = reinterpret_cast<__half2*>(r.v);
#pragma unroll
    for (int i = 0; i < VEC / 2; ++i) o[i] = __floats2half2_rn(v[2 * i], v[2 * i + 1]);
  } else if constexpr ((std::is_same_v<T, float8_e4m3> || std::is_same_v<T, float8_e5m2>) && VEC % 4 == 0) {
    uint32_t* o = reinterpret_cast<uint32_t*>(r.v);
#pragma unroll
    for (int i = 0; i < VEC / 4; ++i) o[i] = fp8x4_word<T>(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]);
  } else if constexpr (std::is_same_v<T, int8_t> && VEC % 4 == 0) {
    uint32_t* o = reinterpret_cast<uint32_t*>(r.v);
#pragma unroll
    for (int i = 0; i < VEC / 4; ++i) o[i] = int8x4_word(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]);
  } else if constexpr ((std::is_same_v<T, float8_e4m3> || std::is_same_v<T, float8_e5m2>) && VEC % 2 == 0) {
    constexpr __nv_fp8_interpretation_t kKind = std::is_same_v<T, float8_e4m3> ? __NV_E4M3 : __NV_E5M2;
    __nv_fp8x2_storage_t* o = reinterpret_cast<__nv_fp8x2_storage_t*>(r.v);
#pragma unroll
    for (int i = 0; i < VEC / 2; ++i) o[i] = __nv_cvt_float2_to_fp8x2(make_float2(v[2 * i], v[2 * i + 1]), __NV_SATFINITE, kKind);
  } else {
#pragma unroll
    for (int i = 0; i < VEC; ++i) r.v[i] = from_float<T>(v[i]);
  }
  return r;
}

/// Whether add_slots<PACKED, X, R, VEC> (below) takes its packed path in this
/// compilation: device code, x and r of one 16-bit type, bf16 from sm_80.
/// test_gpu_blocks asserts it, so that its bitwise check of every pair cannot
/// pass by comparing the fp32 path with itself.
template <bool PACKED, class X, class R, int VEC>
NORMKIT_HOST_DEVICE constexpr bool add_slots_packed() {
#if defined(__CUDA_ARCH__)
  return PACKED && std::is_same_v<X, R> && VEC % 2 == 0 &&
         (std::is_same_v<R, half> || (std::is_same_v<R, bfloat16> && __CUDA_ARCH__ >= 800));
#else
  return false;
#endif
}

/// The slot x + r in R, each element's fp32 sum rounded to R (nearest even):
/// what converting both to fp32, adding and rounding gives. Where x and r are
/// of one 16-bit type and PACKED (device code; bf16 from sm_80), two elements
/// an instruction (add.rn.bf16x2, or an fma by 1 before sm_90; add.rn.f16x2)
/// with the same bits: the sum of two values of a 16-bit type is exact in
/// fp32 wherever its rounding to that type could depend on it (exponents at
/// most 15 (bf16) or 12 (half) apart; further apart the smaller value is
/// under a quarter of the larger's unit in the last place, and both ways
/// round to the larger), so rounding the exact sum once is rounding the fp32
/// sum (test_gpu_blocks checks every pair of values of both types). 0.5
/// instructions an element where the fp32 path takes 3.5 (two conversions,
/// an add, half a packing conversion): a fused add's h (input::AddResidual).
template <bool PACKED, class X, class R, int VEC>
NORMKIT_DEVICE RawSlot<R, VEC> add_slots(const RawSlot<X, VEC>& x, const RawSlot<R, VEC>& r) {
  if constexpr (add_slots_packed<PACKED, X, R, VEC>()) {
    using Pair = std::conditional_t<std::is_same_v<R, half>, __half2, __nv_bfloat162>;
    RawSlot<R, VEC> h;
    const Pair* px = reinterpret_cast<const Pair*>(x.v);
    const Pair* pr = reinterpret_cast<const Pair*>(r.v);
    Pair* ph = reinterpret_cast<Pair*>(h.v);
#pragma unroll
    for (int i = 0; i < VEC / 2; ++i) ph[i] = __hadd2_rn(px[i], pr[i]);
    return h;
  } else {
    float a[VEC], b[VEC];
    slot_to_float(x, a);
    slot_to_float(r, b);
#pragma unroll
    for (int i = 0; i < VEC; ++i) a[i] += b[i];
    return float_to_slot<R, VEC>(a);
  }
}

}  // namespace detail

/// VEC consecutive elements of T held raw in registers: the unit RowLoader
/// moves and the row views hold.
template <class T, int VEC>
using Slot = detail::RawSlot<T, VEC>;

/// The widest power-of-two access, at most `max_bytes` and at least the element
/// size, for which `ptr + r * row_stride` is aligned for every row r. Chosen at
/// run time by launchers; never yields a misaligned access.
NORMKIT_HOST_DEVICE int access_bytes_for(const void* ptr, int64_t row_stride_elems, int elem_bytes,
                                         int max_bytes) {
  const uint64_t bits = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(ptr)) |
                        static_cast<uint64_t>(row_stride_elems) * static_cast<uint64_t>(elem_bytes);
  int w = max_bytes;
  while (w > elem_bytes && (bits & static_cast<uint64_t>(w - 1)) != 0) w >>= 1;
  return w < elem_bytes ? elem_bytes : w;
}

namespace detail {

/// Copies one full slot with accesses of W bytes (W divides the slot size or
/// exceeds it, in which case the slot is moved in one access). READ_ONLY: for
/// memory no thread writes while the kernel runs (the weight and bias
/// vectors), through the read-only path (ld.global.nc), which the compiler
/// may issue ahead of the stores that precede it in the code. An output walk
/// loads a slot's weight, then stores the slot; with plain loads each weight
/// load waits behind the previous slot's store, one L2 round trip per slot in
/// turn (ncu of RMSNorm bf16 N = 65536: over half the warps' stall samples
/// there; docs/performance.md, change 61). Not the default for every
/// problem: where registers are tight the hoisted loads cost more than they
/// save (change 57). KEEP_IN_L1: with the L1 eviction priority evict_last,
/// for data every row reads again (the weight) in kernels whose rows stream
/// through L1 and would evict it (row_per_block at 8 slots: ncu found 0.4%
/// L1 hits; change 62); 16-byte accesses only (narrower ones load plainly).
/// Without READ_ONLY the load is volatile with a memory clobber, so that no
/// memory access moves across it: stricter than a plain load, never looser.
template <int W, class T, int VEC, bool READ_ONLY = false, bool KEEP_IN_L1 = false>
NORMKIT_DEVICE void load_slot_raw(const T* src, RawSlot<T, VEC>& dst) {
  constexpr int kBytes = VEC * static_cast<int>(sizeof(T));
  constexpr int kW = W < kBytes ? W : kBytes;
  using Access = typename Word<kW>::type;
  const Access* s = reinterpret_cast<const Access*>(src);
  Access* d = reinterpret_cast<Access*>(dst.v);
#pragma unroll
  for (int i = 0; i < kBytes / kW; ++i) {
    if constexpr (KEEP_IN_L1 && READ_ONLY && kW == 16) {
      asm("ld.global.nc.L1::evict_last.v4.u32 {%0, %1, %2, %3}, [%4];"
          : "=r"(d[i].x), "=r"(d[i].y), "=r"(d[i].z), "=r"(d[i].w)
          : "l"(s + i));
    } else if constexpr (KEEP_IN_L1 && kW == 16) {
      asm volatile("ld.global.L1::evict_last.v4.u32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(d[i].x), "=r"(d[i].y), "=r"(d[i].z), "=r"(d[i].w)
                   : "l"(s + i)
                   : "memory");
    } else if constexpr (READ_ONLY && kW == 16) {  // narrower slots: the plain load (as measured)
      d[i] = __ldg(s + i);
    } else {
      d[i] = s[i];
    }
  }
}

/// Stores one full slot to global memory with accesses of W bytes. The 16- and
/// 8-byte forms are written as PTX: written as C++, the compiler merged the
/// branches of with_access_width that store the same slot and emitted every
/// width as four 4-byte stores (four instructions, partial sectors), in every
/// kernel (docs/performance.md, change 11).
template <int W, class T, int VEC>
NORMKIT_DEVICE void store_slot_raw(T* dst, const RawSlot<T, VEC>& src) {
  constexpr int kBytes = VEC * static_cast<int>(sizeof(T));
  constexpr int kW = W < kBytes ? W : kBytes;
  using Access = typename Word<kW>::type;
  const Access* s = reinterpret_cast<const Access*>(src.v);
  if constexpr (kW == 16) {
#pragma unroll
    for (int i = 0; i < kBytes / 16; ++i) {
      asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"l"(reinterpret_cast<Access*>(dst) + i),
                   "r"(s[i].x), "r"(s[i].y), "r"(s[i].z), "r"(s[i].w)
                   : "memory");
    }
  } else if constexpr (kW == 8) {
#pragma unroll
    for (int i = 0; i < kBytes / 8; ++i) {
      asm volatile("st.global.v2.b32 [%0], {%1, %2};\n" ::"l"(reinterpret_cast<Access*>(dst) + i), "r"(s[i].x),
                   "r"(s[i].y)
                   : "memory");
    }
  } else {
    Access* d = reinterpret_cast<Access*>(dst);
#pragma unroll
    for (int i = 0; i < kBytes / kW; ++i) d[i] = s[i];
  }
}

/// Calls `f(std::integral_constant<int, W>)` with W the compile-time form of the
/// run-time access width, so that a whole unrolled loop runs under one branch.
template <class T, int VEC, class F>
NORMKIT_DEVICE void with_access_width(int access_bytes, F&& f) {
  constexpr int kMax = slot_bytes<T, VEC>();
  if (access_bytes >= kMax) {
    f(std::integral_constant<int, kMax>{});
  } else if (kMax > 8 && access_bytes >= 8) {
    f(std::integral_constant<int, (kMax > 8 ? 8 : kMax)>{});
  } else if (kMax > 4 && access_bytes >= 4) {
    f(std::integral_constant<int, (kMax > 4 ? 4 : kMax)>{});
  } else if (kMax > 2 && access_bytes >= 2 && sizeof(T) <= 2) {
    f(std::integral_constant<int, (kMax > 2 ? 2 : kMax)>{});
  } else {
    f(std::integral_constant<int, static_cast<int>(sizeof(T))>{});
  }
}

}  // namespace detail

NORMKIT_NAMESPACE_END
