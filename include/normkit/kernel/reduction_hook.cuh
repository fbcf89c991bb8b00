// normkit/kernel/reduction_hook.cuh: a reducer that runs a hook once, just
// before the row's first reduction: where a kernel's loop starts work for
// the next row while this one reduces (row_relay.cuh parks the row and loads
// the next; row_prefetch.cuh starts the copies of the next row's first
// slots).
#pragma once

#include "../block/reduce_ops.cuh"
#include "../config.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace detail {

/// A reducer that runs `before_first` once, just before its first reduction
/// (every thread of the CTA reaches that reduction, so every thread runs it).
template <class Inner, class Hook>
struct HookBeforeFirstReduction {
  static constexpr bool kCostlyReductions = costly_reductions_v<Inner>;
  Inner& inner;
  Hook& before_first;
  bool fired;

  template <class T, class Op>
  NORMKIT_DEVICE T all_reduce(T v, Op op) {
    if (!fired) {
      fired = true;
      before_first();
    }
    return inner.all_reduce(v, op);
  }
};

}  // namespace detail
NORMKIT_NAMESPACE_END
