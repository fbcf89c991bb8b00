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

  /// Bytes of a slot, and whether rows narrower-aligned than a slot move in
  /// shifted slot-wide words (slots of 8 or 16 bytes; load_shifted).
  static constexpr int kSlotBytes = VEC * static_cast<int>(sizeof(T));
  static constexpr bool kShifts = detail::shifts_slots<T, VEC>();

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
  /// SHIFTED (where kShifts): rows narrower-aligned than a slot move in
  /// shifted slot-wide words (load_shifted) instead of narrower accesses; for
  /// kernels that run only such rows (the checked forms whose slots are all
  /// valid), since its shuffles and selects cost registers that spilled the
  /// kernels shared with aligned rows (the staged and streaming shapes, 100
  /// to 400 bytes).
  template <int K, bool WHOLE = false, bool SHIFTED = false>
  static NORMKIT_DEVICE void load_raw(const T* row, int64_t n, int first_slot, int lane, int team,
                                      int access_bytes, detail::RawSlot<T, VEC> (&out)[K]) {
    if constexpr (WHOLE) {
#pragma unroll
      for (int k = 0; k < K; ++k) {
        detail::load_slot_raw<16, T, VEC>(row + column(first_slot + k, lane, team), out[k]);
      }
      return;
    }
    if constexpr (SHIFTED && kShifts) {
      if (access_bytes < kSlotBytes) {
        load_shifted<K>(row, n, first_slot, lane, team, out);
        return;
      }
    }
    detail::with_access_width<T, VEC>(access_bytes, [&](auto width) {
      constexpr int kW = decltype(width)::value;
      if constexpr (SHIFTED && kShifts && kW < kSlotBytes) {
        // load_shifted's case: no code
      } else {
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
  /// access per slot, no bounds, no branch. SHIFTED: as for load_raw
  /// (store_shifted).
  template <int K, bool WHOLE = false, bool SHIFTED = false>
  static NORMKIT_DEVICE void store_raw(T* row, int64_t n, int first_slot, int lane, int team,
                                       int access_bytes, const detail::RawSlot<T, VEC> (&raw)[K]) {
    if constexpr (WHOLE) {
#pragma unroll
      for (int k = 0; k < K; ++k) {
        detail::store_slot_raw<16, T, VEC>(row + column(first_slot + k, lane, team), raw[k]);
      }
      return;
    }
    if constexpr (SHIFTED && kShifts) {
      if (access_bytes < kSlotBytes) {
        store_shifted<K>(row, n, first_slot, lane, team, raw);
        return;
      }
    }
    detail::with_access_width<T, VEC>(access_bytes, [&](auto width) {
      constexpr int kW = decltype(width)::value;
      if constexpr (SHIFTED && kShifts && kW < kSlotBytes) {
        // store_shifted's case: no code
      } else {
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
      }
    });
  }

  /// load_raw for a row whose accesses are narrower-aligned than a slot
  /// (kShifts): every slot still moves in aligned slot-wide words. The row
  /// starts e bytes past an aligned boundary (e = row % kSlotBytes; the
  /// layout keeps every slot of every lane at that offset), so slot k of
  /// this lane is bytes [e, e + kSlotBytes) of two aligned words: B0, which
  /// the lane below (lane - 1 of the team, the same slot) loaded as its B1,
  /// and B1, which this lane loads. B0 comes by a shuffle from that lane
  /// where it is active and holds the same row; otherwise (lane 0 of each
  /// warp, the team's first lane) the lane loads it too. A word that
  /// reaches outside the bytes this call may read (the row's first n
  /// columns, up to the end of the call's slots) is read element by
  /// element, so no byte outside them is touched. Shuffles take the active
  /// lanes (__activemask), so a caller need not be converged.
  template <int K>
  static NORMKIT_DEVICE void load_shifted(const T* row, int64_t n, int first_slot, int lane, int team,
                                          detail::RawSlot<T, VEC> (&out)[K]) {
    constexpr int kW = kSlotBytes / 4;
    const uintptr_t lo = reinterpret_cast<uintptr_t>(row);
    const uintptr_t hi = lo + static_cast<uintptr_t>(call_columns<K>(n, first_slot, team)) * sizeof(T);
    const unsigned e = static_cast<unsigned>(lo % kSlotBytes);
    const unsigned mask = __activemask();
    const unsigned me = detail::lane_id();
    // Every shuffle runs in every active lane (never behind a condition: a
    // lane of `mask` that skips one leaves the exchange undefined).
    const unsigned long long below_base = __shfl_up_sync(mask, static_cast<unsigned long long>(lo), 1);
    const bool below_same_row = me > 0 && ((mask >> (me - 1)) & 1u) && below_base == lo;
    uint32_t chain = 0;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const uintptr_t at = lo + static_cast<uintptr_t>(column(first_slot + k, lane, team)) * sizeof(T);
      uint32_t own[kW], below[kW];
      detail::load_word_within<T, kSlotBytes>(e != 0 ? at - e + kSlotBytes : at, lo, hi, own);
#pragma unroll
      for (int j = 0; j < kW; ++j) below[j] = __shfl_up_sync(mask, own[j], 1);
      const uint32_t below_at = __shfl_up_sync(mask, static_cast<uint32_t>(at), 1);
      if (e != 0) {
        if (!(below_same_row && below_at == static_cast<uint32_t>(at - kSlotBytes))) {
          // After the slot before is assembled (an empty asm ties the address
          // to it), so that this word takes no registers before then: issued
          // early for every slot, these loads spilled the 8-slot kernels.
          uintptr_t head_word = at - e;
          asm volatile("" : "+l"(head_word) : "r"(chain));
          detail::load_word_within<T, kSlotBytes>(head_word, lo, hi, below);
        }
        uint32_t both[2 * kW];
#pragma unroll
        for (int j = 0; j < kW; ++j) {
          both[j] = below[j];
          both[kW + j] = own[j];
        }
        detail::shift_words<kW>(both, e, own);
      }
      memcpy(out[k].v, own, kSlotBytes);
      chain = own[0];
    }
  }

  /// store_raw for a row whose accesses are narrower-aligned than a slot
  /// (kShifts), the mirror of load_shifted: each lane stores the aligned
  /// word B1 that holds its slot's tail and the head of the slot of the lane
  /// above (lane + 1, the same slot, taken by a shuffle) in one access,
  /// where that lane is active, holds the same row and the word lies within
  /// the bytes this call may write; its own tail otherwise, element by
  /// element, and a lane whose head the lane below did not store (tells it
  /// by a shuffle) stores that element by element. Every byte of the call's
  /// valid columns is written once, no other byte.
  template <int K>
  static NORMKIT_DEVICE void store_shifted(T* row, int64_t n, int first_slot, int lane, int team,
                                           const detail::RawSlot<T, VEC> (&raw)[K]) {
    constexpr int kW = kSlotBytes / 4;
    const uintptr_t lo = reinterpret_cast<uintptr_t>(row);
    const uintptr_t hi = lo + static_cast<uintptr_t>(call_columns<K>(n, first_slot, team)) * sizeof(T);
    const unsigned e = static_cast<unsigned>(lo % kSlotBytes);
    const unsigned mask = __activemask();
    const unsigned me = detail::lane_id();
    const unsigned long long base = lo;
    // Every shuffle runs in every active lane (see load_shifted).
    const unsigned long long above_base = __shfl_down_sync(mask, base, 1);
    const unsigned long long below_base = __shfl_up_sync(mask, base, 1);
    const bool above_same_row = me < 31 && ((mask >> (me + 1)) & 1u) && above_base == base;
    const bool below_same_row = me > 0 && ((mask >> (me - 1)) & 1u) && below_base == base;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const uintptr_t at = lo + static_cast<uintptr_t>(column(first_slot + k, lane, team)) * sizeof(T);
      uint32_t mine[kW], above[kW];
      memcpy(mine, raw[k].v, kSlotBytes);
#pragma unroll
      for (int j = 0; j < kW; ++j) above[j] = __shfl_down_sync(mask, mine[j], 1);
      const uint32_t above_at = __shfl_down_sync(mask, static_cast<uint32_t>(at), 1);
      const uint32_t below_at = __shfl_up_sync(mask, static_cast<uint32_t>(at), 1);
      const uintptr_t tail_word = at - e + kSlotBytes;  // B1 (e > 0)
      const bool whole = e != 0 && above_same_row && above_at == static_cast<uint32_t>(at + kSlotBytes) &&
                         tail_word + kSlotBytes <= hi;
      const unsigned below_word_whole = __shfl_up_sync(mask, static_cast<unsigned>(whole), 1);
      const bool below_whole =
          below_word_whole != 0u && below_same_row && below_at == static_cast<uint32_t>(at - kSlotBytes);
      if (e == 0) {
        if (at + kSlotBytes <= hi) {
          detail::store_slot_raw<kSlotBytes, T, VEC>(reinterpret_cast<T*>(at), raw[k]);
        } else {
#pragma unroll
          for (int i = 0; i < VEC; ++i) {
            if (at + i * sizeof(T) < hi) reinterpret_cast<T*>(at)[i] = raw[k].v[i];
          }
        }
        continue;
      }
      if (whole) {
        uint32_t both[2 * kW], word[kW];
#pragma unroll
        for (int j = 0; j < kW; ++j) {
          both[j] = mine[j];
          both[kW + j] = above[j];
        }
        detail::shift_words<kW>(both, kSlotBytes - e, word);
        detail::RawSlot<T, VEC> w;
        memcpy(w.v, word, kSlotBytes);
        detail::store_slot_raw<kSlotBytes, T, VEC>(reinterpret_cast<T*>(tail_word), w);
      }
      if (!whole || !below_whole) {
        // The head is the slot's first kSlotBytes - e bytes, the tail the rest.
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
          const bool head = i * sizeof(T) < kSlotBytes - e;
          if ((head ? !below_whole : !whole) && at + i * sizeof(T) < hi) reinterpret_cast<T*>(at)[i] = raw[k].v[i];
        }
      }
    }
  }

 private:
  /// The columns a call on K slots from first_slot may touch: the row's
  /// first n, and none past the call's last slot (a row whose slots all hold
  /// valid columns may pass an n past its end: detail::kEverySlotValid).
  template <int K>
  static NORMKIT_DEVICE int64_t call_columns(int64_t n, int first_slot, int team) {
    const int64_t end = (static_cast<int64_t>(first_slot) + K) * team * VEC;
    return n < end ? (n > 0 ? n : 0) : end;
  }
};

NORMKIT_NAMESPACE_END
