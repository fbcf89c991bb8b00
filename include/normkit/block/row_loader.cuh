// normkit/block/row_loader.cuh: a thread's share of a row, moved between
// global memory and registers (the stores are PTX st.global: rows of tensors,
// not of shared memory).
//
// Layout: a team of `team` threads shares a row (or a chunk of one); lane l of
// the team owns slots s = 0, 1, ..., each of VEC consecutive elements starting
// at column (s * team + l) * VEC. At every slot the team reads one contiguous
// run of team * VEC elements, so accesses coalesce. Columns at or past `n` are
// never touched: a partly valid slot is moved element by element (the scalar
// tail), and its missing elements read as `fill`.
#pragma once

#include <cstdint>
#include <cstring>

#include "../config.cuh"
#include "../types.cuh"
#include "vector_access.cuh"

NORMKIT_NAMESPACE_BEGIN

template <class T, int VEC>
struct RowLoader {
  static_assert(VEC >= 1 && (VEC & (VEC - 1)) == 0, "normkit::RowLoader: VEC must be a power of two");

  /// Column (relative to the row or chunk start) of slot `slot` of lane `lane`.
  static NORMKIT_HOST_DEVICE int64_t column(int slot, int lane, int team) {
    return (static_cast<int64_t>(slot) * team + lane) * VEC;
  }

  /// Loads K slots (slot indices first_slot .. first_slot + K - 1) of `row`,
  /// whose first `n` elements are valid, as raw T; invalid elements are zero.
  /// `access_bytes` is the widest aligned access for this row (see
  /// access_bytes_for). The whole loop runs under one branch on the width, so
  /// all K loads are in flight together. WHOLE: the caller knows that all K
  /// slots lie within the first n columns and that access_bytes is at least a
  /// slot's size (at most 16 bytes): one access per slot, no bounds, no branch.
  template <int K, bool WHOLE = false>
  static NORMKIT_DEVICE void load_raw(const T* row, int64_t n, int first_slot, int lane, int team,
                                      int access_bytes, detail::RawSlot<T, VEC> (&out)[K]) {
    if constexpr (WHOLE) {
#pragma unroll
      for (int k = 0; k < K; ++k) {
        detail::load_slot_raw<16, T, VEC>(row + column(first_slot + k, lane, team), out[k]);
      }
      return;
    }
    detail::with_access_width<T, VEC>(access_bytes, [&](auto width) {
      constexpr int kW = decltype(width)::value;
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int64_t c = column(first_slot + k, lane, team);
        if (c + VEC <= n) {
          detail::load_slot_raw<kW, T, VEC>(row + c, out[k]);
        } else {
#pragma unroll
          for (int i = 0; i < VEC; ++i) out[k].v[i] = c + i < n ? row[c + i] : detail::from_float<T>(0.f);
        }
      }
    });
  }

  /// As load_raw, converted to fp32, with invalid elements set to `fill`.
  template <int K>
  static NORMKIT_DEVICE void load(const T* row, int64_t n, int first_slot, int lane, int team,
                                  int access_bytes, float fill, float (&out)[K][VEC]) {
    detail::RawSlot<T, VEC> raw[K];
    load_raw<K>(row, n, first_slot, lane, team, access_bytes, raw);
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int64_t c = column(first_slot + k, lane, team);
#pragma unroll
      for (int i = 0; i < VEC; ++i) out[k][i] = (c + i < n) ? detail::to_float(raw[k].v[i]) : fill;
    }
  }

  /// Converts K slots from fp32 to T (round to nearest even) and stores the
  /// valid elements; the mirror of load.
  template <int K>
  static NORMKIT_DEVICE void store(T* row, int64_t n, int first_slot, int lane, int team,
                                   int access_bytes, const float (&in)[K][VEC]) {
    detail::RawSlot<T, VEC> raw[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
#pragma unroll
      for (int i = 0; i < VEC; ++i) raw[k].v[i] = detail::from_float<T>(in[k][i]);
    }
    store_raw<K>(row, n, first_slot, lane, team, access_bytes, raw);
  }

  /// Stores K slots already in T. WHOLE: the caller knows all K lie within the
  /// first n columns and that access_bytes is at least a slot's size: one
  /// access per slot, no bounds, no branch. SHIFT: rows not 16-byte aligned,
  /// with 16-byte slots and teams of whole warps, are stored as aligned words
  /// (store_shifted; only in kernels instantiated for misaligned outputs,
  /// detail::WithShiftedStores: its code in the other kernels spilled them).
  template <int K, bool WHOLE = false, bool SHIFT = false>
  static NORMKIT_DEVICE void store_raw(T* row, int64_t n, int first_slot, int lane, int team,
                                       int access_bytes, const detail::RawSlot<T, VEC> (&raw)[K]) {
    if constexpr (WHOLE) {
#pragma unroll
      for (int k = 0; k < K; ++k) {
        detail::store_slot_raw<16, T, VEC>(row + column(first_slot + k, lane, team), raw[k]);
      }
      return;
    }
    if constexpr (SHIFT && sizeof(detail::RawSlot<T, VEC>) == 16) {
      // team is the same for every lane of a warp, so the whole warp takes
      // this branch or none does (store_shifted shuffles).
      if (access_bytes < 16 && team % 32 == 0) {
        store_shifted<K>(row, n, first_slot, lane, team, raw);
        return;
      }
    }
    detail::with_access_width<T, VEC>(access_bytes, [&](auto width) {
      constexpr int kW = decltype(width)::value;
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int64_t c = column(first_slot + k, lane, team);
        if (c + VEC <= n) {
          detail::store_slot_raw<kW, T, VEC>(row + c, raw[k]);
        } else {
#pragma unroll
          for (int i = 0; i < VEC; ++i) {
            if (c + i < n) row[c + i] = raw[k].v[i];
          }
        }
      }
    });
  }

  /// store_raw for a row whose slots (16 bytes each) start `mis` bytes past a
  /// 16-byte boundary, by teams of whole warps (every lane of each warp calls
  /// it, with the same K and slots). Element-wide stores there put each of a
  /// warp's 16 sectors of a slot in 8 partial writes: in place (y = x) the
  /// L2 took 6x the write sectors of an aligned row and ran at 90% of its
  /// peak with DRAM at 23% (ncu; docs/performance.md, "Misaligned rows").
  /// Here lane j of a warp stores the aligned 16-byte word that holds the
  /// tail of lane j - 1's slot (by a shuffle) and the head of its own, so a
  /// warp writes whole sectors but at its two edges: lane 0 stores its head,
  /// and lane 31 its tail, element by element, as does any lane whose word
  /// would reach past column n. The same bytes land, none outside the row.
  template <int K>
  static NORMKIT_DEVICE void store_shifted(T* row, int64_t n, int first_slot, int lane, int team,
                                           const detail::RawSlot<T, VEC> (&raw)[K]) {
    static_assert(sizeof(detail::RawSlot<T, VEC>) == 16, "normkit: store_shifted moves 16-byte slots");
    const int mis = static_cast<int>(reinterpret_cast<uintptr_t>(row) & 15u);
    const int wl = lane & 31;
    // Bytes of the slot before the next aligned word: the head (elements
    // [0, head) of the slot) completes the word that ends in it.
    const int head_bytes = 16 - mis;
    const int head = head_bytes / static_cast<int>(sizeof(T));
    const int q = head_bytes >> 2;
    const unsigned r = static_cast<unsigned>(head_bytes & 3) * 8u;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int64_t c = column(first_slot + k, lane, team);
      uint32_t w[4];
      memcpy(w, raw[k].v, 16);
      uint32_t cat[8];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        cat[i] = __shfl_up_sync(0xffffffffu, w[i], 1);  // every lane, unconditionally
        cat[4 + i] = w[i];
      }
      const bool wide = mis != 0 && wl != 0 && c + VEC <= n;
      const bool next_wide = mis != 0 && wl != 31 && c + 2 * VEC <= n;
      if (mis == 0 && c + VEC <= n) {
        detail::store_slot_raw<16, T, VEC>(row + c, raw[k]);
        continue;
      }
      if (wide) {
        // Bytes [head_bytes, head_bytes + 16) of the previous slot's and
        // this one's 32: words q .. q + 4 of them, funnel-shifted by r.
        uint32_t pick[5];
#pragma unroll
        for (int i = 0; i < 5; ++i) {
          pick[i] = q == 0 ? cat[i] : q == 1 ? cat[i + 1] : q == 2 ? cat[i + 2] : cat[i + 3];
        }
        detail::RawSlot<T, VEC> word;
        uint32_t out[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) out[i] = __funnelshift_r(pick[i], pick[i + 1], r);
        memcpy(word.v, out, 16);
        detail::store_slot_raw<16, T, VEC>(
            reinterpret_cast<T*>(reinterpret_cast<unsigned char*>(row + c) - mis), word);
      }
#pragma unroll
      for (int i = 0; i < VEC; ++i) {
        if (c + i < n && (i < head ? !wide : !next_wide)) row[c + i] = raw[k].v[i];
      }
    }
  }
};

NORMKIT_NAMESPACE_END
