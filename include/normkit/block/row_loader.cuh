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
  /// access per slot, no bounds, no branch.
  template <int K, bool WHOLE = false>
  static NORMKIT_DEVICE void store_raw(T* row, int64_t n, int first_slot, int lane, int team,
                                       int access_bytes, const detail::RawSlot<T, VEC> (&raw)[K]) {
    if constexpr (WHOLE) {
#pragma unroll
      for (int k = 0; k < K; ++k) {
        detail::store_slot_raw<16, T, VEC>(row + column(first_slot + k, lane, team), raw[k]);
      }
      return;
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
};

NORMKIT_NAMESPACE_END
