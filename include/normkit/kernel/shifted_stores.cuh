// normkit/kernel/shifted_stores.cuh: the Problem adaptor for kernels that run
// rows whose outputs are not slot-aligned.
#pragma once

#include <type_traits>

#include "../config.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace detail {

/// Problem, run by kernels instantiated for rows whose outputs are not
/// slot-aligned: their stores go out as shifted aligned words
/// (RowLoader::store_shifted). Kernels of their own, since that path's code
/// in the kernels that also run aligned outputs spilled them
/// (docs/performance.md, change 84). The same Params, the same bits.
template <class P>
struct WithShiftedStores : P {
  static constexpr bool kShiftsStores = true;
};

// A member constant, detected, rather than a specialization on
// WithShiftedStores: the kernels wrap Problem again (WithParamCaching derives
// from it), and the constant is inherited through such adaptors.
template <class P, class = void>
struct ShiftsStores : std::false_type {};
template <class P>
struct ShiftsStores<P, std::void_t<decltype(P::kShiftsStores)>> : std::bool_constant<P::kShiftsStores> {};
/// Whether Problem's kernels store shifted words (WithShiftedStores).
template <class P>
inline constexpr bool kShiftsStores = ShiftsStores<P>::value;

}  // namespace detail
NORMKIT_NAMESPACE_END
