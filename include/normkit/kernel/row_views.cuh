// normkit/kernel/row_views.cuh: the views through which statistics policies
// walk a thread's share of a row (see stats/row_stats.cuh for the contract).
// Rows are held raw, in the input's Storage type, and converted to fp32 one
// slot at a time.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../block/row_loader.cuh"
#include "../block/vector_access.cuh"
#include "../config.cuh"
#include "../stats/row_stats.cuh"
#include "../types.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace detail {

NORMKIT_HOST_DEVICE int slot_valid(int64_t n, int64_t col, int vec) {
  const int64_t left = n - col;
  return left <= 0 ? 0 : (left >= vec ? vec : static_cast<int>(left));
}

/// How many of a lane's slots lie wholly within the first n columns (its
/// slots 0 .. full_slots - 1; at most one more is partly valid). Loops over
/// those need no per-slot bounds (the staged and streaming kernels use it:
/// docs/performance.md, change 13).
NORMKIT_HOST_DEVICE int full_slots(int64_t n, int vec, int lane, int team) {
  const int64_t whole = n / vec;
  return whole > lane ? static_cast<int>((whole - 1 - lane) / team) + 1 : 0;
}

/// The shift the statistics policy asks for with this view and reducer
/// (kUsesShift): the input's pilot of the row; 0, and no load, otherwise.
template <class Problem, class View, class Reducer>
NORMKIT_DEVICE float row_pilot(const typename Problem::Params& p, int64_t row) {
  if constexpr (stats_uses_shift_v<typename Problem::Stats, View, Reducer>) {
    return Problem::Input::template pilot<Problem::kVec>(p, row);
  } else {
    return 0.f;
  }
}

/// Slot s of `lane`, wholly valid, of a chunk staged in shared memory (32-bit
/// offsets: a staged chunk is at most one CTA's shared memory).
template <class S, int VEC>
NORMKIT_DEVICE RawSlot<S, VEC> read_whole_staged_slot(const S* chunk, int s, int lane, int team) {
  return *reinterpret_cast<const RawSlot<S, VEC>*>(chunk + (s * team + lane) * VEC);
}

/// Writes one slot (its first `valid` elements) of a chunk staged in shared memory.
template <class S, int VEC>
NORMKIT_DEVICE void write_staged_slot(S* chunk, int64_t col, int valid, const RawSlot<S, VEC>& raw) {
  if (valid >= VEC) {
    *reinterpret_cast<RawSlot<S, VEC>*>(chunk + col) = raw;
  } else {
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
      if (i < valid) chunk[col + i] = raw.v[i];
    }
  }
}

/// Reads one slot of a staged chunk (zeros past `valid`).
template <class S, int VEC>
NORMKIT_DEVICE void read_staged_slot(const S* chunk, int64_t col, int valid, RawSlot<S, VEC>& raw) {
  if (valid >= VEC) {
    raw = *reinterpret_cast<const RawSlot<S, VEC>*>(chunk + col);
  } else {
#pragma unroll
    for (int i = 0; i < VEC; ++i) raw.v[i] = i < valid ? chunk[col + i] : from_float<S>(0.f);
  }
}

/// A StagedView's tap that does nothing.
struct NoTap {
  template <int VEC, class Whole>
  NORMKIT_DEVICE void operator()(const float (&)[VEC], int, int, Whole) const {}
};

/// A row chunk staged in shared memory; this thread's slots only, so no
/// barrier is needed between staging and reading. Every walk also calls
/// tap(v, valid, slot, whole) on each slot before the policy sees it (whole:
/// std::true_type for slots within the first n columns), so a kernel can fold
/// a value of its own into the statistics' walk (row_chunked: the fused
/// row maximum, a walk of shared memory fewer).
template <class S, int VEC, class Tap = NoTap>
struct StagedView {
  static constexpr int kVec = VEC;
  static constexpr bool kResident = true;
  const S* chunk;
  int64_t n;
  int slots;
  int lane;
  int team;
  float shift = 0.f;  ///< the row's pilot (Input::pilot), for policies that shift by it
  Tap tap = Tap{};

  template <class F>
  NORMKIT_DEVICE void for_each_slot(F&& f) const {
    const int full = full_slots(n, VEC, lane, team);
    int s = 0;
#pragma unroll 4
    for (; s < full; ++s) {
      const RawSlot<S, VEC> raw = read_whole_staged_slot<S, VEC>(chunk, s, lane, team);
      float v[VEC];
      slot_to_float(raw, v);
      tap(v, VEC, s, std::true_type{});
      f(v, VEC);
    }
    for (; s < slots; ++s) {
      const int64_t c = RowLoader<S, VEC>::column(s, lane, team);
      const int valid = slot_valid(n, c, VEC);
      RawSlot<S, VEC> raw;
      read_staged_slot<S, VEC>(chunk, c, valid, raw);
      float v[VEC];
      slot_to_float(raw, v);
      tap(v, valid, s, std::false_type{});
      f(v, valid);
    }
  }
};

/// A row chunk read from global memory on every walk (streaming kernel), in
/// batches of UNROLL slots so that several loads are in flight.
template <class Problem, int UNROLL>
struct StreamView {
  using S = typename Problem::Storage;
  static constexpr int VEC = Problem::kVec;
  static constexpr int kVec = VEC;
  static constexpr bool kResident = false;
  const typename Problem::Params& p;
  int64_t row;
  int64_t col_base;
  int64_t n;
  int slots;
  int lane;
  int team;
  float shift = 0.f;
  mutable int reads = 0;

  template <class F>
  NORMKIT_DEVICE void for_each_slot(F&& f) const {
    const bool first = reads++ == 0;
    const int full = full_slots(n, VEC, lane, team);
    // whole: the batch lies within the first n columns (a constant `valid`).
    auto batch = [&](int s0, auto whole) {
      RawSlot<S, VEC> raw[UNROLL];
      Problem::Input::template load<UNROLL, VEC>(p, row, col_base, n, s0, lane, team, first, raw);
#pragma unroll
      for (int k = 0; k < UNROLL; ++k) {
        float v[VEC];
        slot_to_float(raw[k], v);
        f(v, decltype(whole)::value ? VEC : slot_valid(n, RowLoader<S, VEC>::column(s0 + k, lane, team), VEC));
      }
    };
    int s0 = 0;
    for (; s0 + UNROLL <= full; s0 += UNROLL) batch(s0, std::true_type{});
    for (; s0 < slots; s0 += UNROLL) batch(s0, std::false_type{});
  }
};

}  // namespace detail

/// A thread's K slots of a row held in registers as raw S (the layout of
/// RowLoader), seen by a statistics policy. Public: custom kernels build one
/// over what RowLoader::load_raw gave them. WHOLE: all K slots lie within the
/// first n columns (every slot is walked as wholly valid, without bounds).
template <class S, int K, int VEC, bool WHOLE = false>
struct RegisterView {
  static constexpr int kVec = VEC;
  static constexpr bool kResident = true;
  static constexpr bool kWhole = WHOLE;
  const detail::RawSlot<S, VEC> (&raw)[K];
  int64_t n;
  int lane;
  int team;
  /// A value near the row's mean, the same for every thread of the row (for
  /// example Input::pilot); TwoPass's single pass sums x - shift. Any value is
  /// correct (0 included); a poor one costs TwoPass a second pass.
  float shift = 0.f;

  template <class F>
  NORMKIT_DEVICE void for_each_slot(F&& f) const {
    for_each_indexed_slot([&](const float (&v)[VEC], int valid, int) { f(v, valid); });
  }

  /// for_each_slot, with f(v, valid, k) also told the slot's index k.
  template <class F>
  NORMKIT_DEVICE void for_each_indexed_slot(F&& f) const {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      float v[VEC];
      detail::slot_to_float(raw[k], v);
      f(v, WHOLE ? VEC : detail::slot_valid(n, RowLoader<S, VEC>::column(k, lane, team), VEC), k);
    }
  }
};

namespace detail {

/// A RegisterView whose thread stands in for PARTS threads of a team PARTS
/// times as large (the paired register forms): with the view's K slots
/// at RowLoader's layout for `team`, slot k is slot k / PARTS of the larger
/// team's thread lane + (k % PARTS) * team, its part k % PARTS.
/// for_each_part_slot(f) walks the slots in order with f(v, valid, part), so
/// fold_slots folds each part in that thread's slot order, and the walk is
/// the one every other walk of the row takes (measured: folding part by
/// part instead made ptxas spill); for_each_slot walks every slot (for what
/// has no order, as a maximum). PARTS == 1: the thread's own slots, for a
/// tap on the walk (normalize_register_part).
template <class Slots, int PARTS, class Tap = NoTap>
struct InterleavedParts {
  static constexpr int kVec = Slots::kVec;
  static constexpr bool kResident = Slots::kResident;
  static constexpr int kParts = PARTS;
  Slots slots;
  Tap tap;
  float shift = slots.shift;  ///< the slots' shift, for policies that shift (row_shift)

  /// Also calls tap(v, valid, k, whole) on each slot first (as StagedView
  /// does), every slot marked whole in the WHOLE form (the paired forms run
  /// only that), none in the checked form.
  template <class F>
  NORMKIT_DEVICE void for_each_part_slot(F&& f) const {
    slots.for_each_indexed_slot([&](const float (&v)[kVec], int valid, int k) {
      tap(v, valid, k, std::bool_constant<Slots::kWhole>{});
      f(v, valid, k % PARTS);
    });
  }

  template <class F>
  NORMKIT_DEVICE void for_each_slot(F&& f) const {
    for_each_part_slot([&](const float (&v)[kVec], int valid, int) { f(v, valid); });
  }
};

}  // namespace detail

NORMKIT_NAMESPACE_END
