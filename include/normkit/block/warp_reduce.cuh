// normkit/block/warp_reduce.cuh: all-reduce by shuffles within groups of 1 to
// 32 lanes (aligned groups of a power-of-two width), so that several short
// rows can share one warp; a whole warp's NonNegativeMax by one redux.sync.
#pragma once

#include <type_traits>

#include "../config.cuh"
#include "reduce_ops.cuh"

NORMKIT_NAMESPACE_BEGIN

namespace detail {

/// __shfl_xor_sync for any trivially copyable value whose size is a multiple of 4.
template <class T>
NORMKIT_DEVICE T shfl_xor(const T& v, int lane_mask) {
  static_assert(sizeof(T) % 4 == 0, "normkit: shuffled values must be a multiple of 4 bytes");
  constexpr int kWords = sizeof(T) / 4;
  union {
    T value;
    int words[kWords];
  } in{v}, out;
#pragma unroll
  for (int i = 0; i < kWords; ++i) out.words[i] = __shfl_xor_sync(0xffffffffu, in.words[i], lane_mask);
  return out.value;
}

}  // namespace detail

/// Butterfly all-reduce over aligned groups of `group` lanes (a power of two,
/// at most MAX_GROUP). Every lane of the warp must call it (the shuffles name
/// the full warp), and every lane of a group receives the group's result.
template <int MAX_GROUP = 32>
struct WarpAllReduce {
  static_assert(MAX_GROUP >= 1 && MAX_GROUP <= 32 && (MAX_GROUP & (MAX_GROUP - 1)) == 0,
                "normkit::WarpAllReduce: MAX_GROUP must be a power of two in [1, 32]");

  template <class T, class Op>
  static NORMKIT_DEVICE T all_reduce(T v, Op op, int group = MAX_GROUP) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (std::is_same_v<Op, NonNegativeMax> && std::is_same_v<T, float> && MAX_GROUP == 32) {
      if (group == 32) return __uint_as_float(__reduce_max_sync(0xffffffffu, __float_as_uint(v)));
    }
#endif
#pragma unroll
    for (int offset = MAX_GROUP / 2; offset > 0; offset >>= 1) {
      if (offset < group) v = op(v, detail::shfl_xor(v, offset));
    }
    return v;
  }
};

/// The reducer a stats policy sees for a row shared by a group of lanes.
struct GroupReducer {
  int group;
  /// A warp holds several rows (see reduction_branch).
  static constexpr bool kWarpHoldsSeveralRows = true;
  template <class T, class Op>
  NORMKIT_DEVICE T all_reduce(T v, Op op) const {
    return WarpAllReduce<32>::all_reduce(v, op, group);
  }
};

template <class Reducer, class = void>
struct WarpHoldsSeveralRows : std::false_type {};
template <class Reducer>
struct WarpHoldsSeveralRows<Reducer, std::void_t<decltype(Reducer::kWarpHoldsSeveralRows)>>
    : std::bool_constant<Reducer::kWarpHoldsSeveralRows> {};

/// Whether a branch around further reductions must be entered: `b` is the
/// same for every thread of a row, and a block or cluster reducer's threads
/// all share the row, so it is `b` itself; where a warp holds several rows
/// (GroupReducer, PairedGroupReducer), whose shuffles are full-warp
/// shuffles, the whole warp enters if any of its rows needs to.
template <class Reducer>
NORMKIT_DEVICE bool reduction_branch(const Reducer&, bool b) {
  if constexpr (WarpHoldsSeveralRows<Reducer>::value) {
    return __any_sync(0xffffffffu, b) != 0;
  } else {
    return b;
  }
}

NORMKIT_NAMESPACE_END
