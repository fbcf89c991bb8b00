// normkit/epilogue/hooks.cuh: how kernels and launchers call an epilogue's
// optional WHOLE-form hooks (see epilogue/affine.cuh for the contract), so
// that a caller's epilogue without them still works: apply is called instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "../config.cuh"
#include "param_slot.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace detail {

template <class E, int VEC, class = void>
struct HasWholeSlots : std::false_type {};
template <class E, int VEC>
struct HasWholeSlots<E, VEC,
                     std::void_t<decltype(E::template whole_slots<VEC>(std::declval<const typename E::Params&>()))>>
    : std::true_type {};

/// Host: whether the epilogue allows the WHOLE form (true when it has no say).
template <class E, int VEC>
inline bool epilogue_whole_slots(const typename E::Params& p) {
  if constexpr (HasWholeSlots<E, VEC>::value) {
    return E::template whole_slots<VEC>(p);
  } else {
    return true;
  }
}

template <class E, class = void>
struct IsHomogeneous : std::false_type {};
template <class E>
struct IsHomogeneous<E, std::void_t<decltype(E::kHomogeneous)>> : std::bool_constant<E::kHomogeneous> {};

/// Whether the epilogue declares itself positively homogeneous (its optional
/// `static constexpr bool kHomogeneous`): apply(c * v) == c * apply(v) for
/// every c > 0, up to fp32 rounding (no term independent of v: a scale, a
/// gate by a per-column value; not a bias). Outputs that need max|y| then take
/// it as rstd * max|apply(x)| in the statistics' reduction (row_output.cuh).
/// The trait is inherited: an epilogue derived from Scale that adds an offset
/// must declare kHomogeneous = false.
template <class E>
inline constexpr bool epilogue_homogeneous_v = IsHomogeneous<E>::value;

template <class E, int VEC, ParamCaching C, class = void>
struct HasCachedWhole : std::false_type {};
template <class E, int VEC, ParamCaching C>
struct HasCachedWhole<E, VEC, C,
                      std::void_t<decltype(E::template apply_whole<VEC, C>(
                          std::declval<const typename E::Params&>(), int64_t{}, int64_t{},
                          std::declval<float (&)[VEC]>()))>> : std::true_type {};

/// The epilogue on one slot: apply_whole where WHOLE and the epilogue has the
/// hooks (apply_whole<VEC, CACHING> where it takes the caching, with or
/// without a default for it), else apply.
template <class E, int VEC, bool WHOLE, ParamCaching CACHING = ParamCaching::kDefault>
NORMKIT_DEVICE void apply_epilogue(const typename E::Params& p, int64_t row, int64_t col0, int valid,
                                   float (&v)[VEC]) {
  if constexpr (WHOLE && HasWholeSlots<E, VEC>::value && HasCachedWhole<E, VEC, CACHING>::value) {
    E::template apply_whole<VEC, CACHING>(p, row, col0, v);
  } else if constexpr (WHOLE && HasWholeSlots<E, VEC>::value) {
    E::template apply_whole<VEC>(p, row, col0, v);
  } else {
    E::template apply<VEC>(p, row, col0, WHOLE ? VEC : valid, v);
  }
}

/// No parameters loaded ahead (transform_slot, store_slots).
struct NoPrefetch {};

// The optional addend forms of the hooks: each hook with a trailing float c
// gives apply(v) + c rounded once (epilogue/affine.cuh's Scale: one fma).
template <class E, int VEC, class = void>
struct HasAddendApply : std::false_type {};
template <class E, int VEC>
struct HasAddendApply<E, VEC,
                      std::void_t<decltype(E::template apply<VEC>(std::declval<const typename E::Params&>(), int64_t{},
                                                                  int64_t{}, 0, std::declval<float (&)[VEC]>(),
                                                                  0.f))>> : std::true_type {};
template <class E, int VEC, ParamCaching C, class = void>
struct HasAddendCachedWhole : std::false_type {};
template <class E, int VEC, ParamCaching C>
struct HasAddendCachedWhole<E, VEC, C,
                            std::void_t<decltype(E::template apply_whole<VEC, C>(
                                std::declval<const typename E::Params&>(), int64_t{}, int64_t{},
                                std::declval<float (&)[VEC]>(), 0.f))>> : std::true_type {};
template <class E, int VEC, class = void>
struct HasAddendWhole : std::false_type {};
template <class E, int VEC>
struct HasAddendWhole<E, VEC,
                      std::void_t<decltype(E::template apply_whole<VEC>(std::declval<const typename E::Params&>(),
                                                                        int64_t{}, int64_t{},
                                                                        std::declval<float (&)[VEC]>(), 0.f))>>
    : std::true_type {};

/// Whether every form of E's epilogue the kernels may call on VEC-element
/// slots has its addend form: apply, apply_whole where E has the WHOLE
/// hooks (HasWholeSlots), apply_prefetched where it has prefetching
/// (HasPrefetch, below). Outputs that round by an addend
/// (Output::kRoundsByAddend) take it then (kernel/row_output.cuh).
template <class E, int VEC>
struct TakesAddend;

/// apply_epilogue with an addend (TakesAddend): the epilogue's addend form.
template <class E, int VEC, bool WHOLE, ParamCaching CACHING = ParamCaching::kDefault>
NORMKIT_DEVICE void apply_epilogue_plus(const typename E::Params& p, int64_t row, int64_t col0, int valid,
                                        float (&v)[VEC], float addend) {
  if constexpr (WHOLE && HasWholeSlots<E, VEC>::value && HasAddendCachedWhole<E, VEC, CACHING>::value) {
    E::template apply_whole<VEC, CACHING>(p, row, col0, v, addend);
  } else if constexpr (WHOLE && HasWholeSlots<E, VEC>::value) {
    E::template apply_whole<VEC>(p, row, col0, v, addend);
  } else {
    E::template apply<VEC>(p, row, col0, WHOLE ? VEC : valid, v, addend);
  }
}

/// Whether E offers its WHOLE form's parameters loaded ahead: a type
/// E::Prefetched<VEC>, E::prefetch_whole<VEC>(params, col0) returning one
/// slot's, and E::apply_prefetched<VEC>(params, pre, v), which must give
/// apply_whole's values (epilogue/affine.cuh), and `using PrefetchOwner = E;`
/// naming E itself. The hooks mirror one type's apply_whole, so a type
/// derived from it (which may override apply_whole, or be CachedEpilogue)
/// inherits them but not the claim: its PrefetchOwner names the base, and it
/// runs without them unless it declares its own.
template <class E, int VEC, class = void>
struct HasPrefetch : std::false_type {};
template <class E, int VEC>
struct HasPrefetch<E, VEC,
                   std::void_t<typename E::PrefetchOwner,
                               decltype(E::template prefetch_whole<VEC>(std::declval<const typename E::Params&>(),
                                                                        int64_t{})),
                               decltype(E::template apply_prefetched<VEC>(
                                   std::declval<const typename E::Params&>(),
                                   std::declval<const typename E::template Prefetched<VEC>&>(),
                                   std::declval<float (&)[VEC]>()))>>
    : std::is_same<typename E::PrefetchOwner, E> {};

template <class E, int VEC, class = void>
struct HasAddendPrefetched : std::false_type {};
template <class E, int VEC>
struct HasAddendPrefetched<E, VEC,
                           std::void_t<decltype(E::template apply_prefetched<VEC>(
                               std::declval<const typename E::Params&>(),
                               std::declval<const typename E::template Prefetched<VEC>&>(),
                               std::declval<float (&)[VEC]>(), 0.f))>> : std::true_type {};

template <class E, int VEC>
struct TakesAddend
    : std::bool_constant<HasAddendApply<E, VEC>::value &&
                         (!HasWholeSlots<E, VEC>::value || HasAddendWhole<E, VEC>::value) &&
                         (!HasPrefetch<E, VEC>::value || HasAddendPrefetched<E, VEC>::value)> {};

/// Whether E offers its prefetched parameters' held form (hold_whole,
/// apply_held: epilogue/affine.cuh), for kernels that hold them for every
/// row (the ring). Like HasPrefetch, only E itself (PrefetchOwner).
template <class E, int VEC, class = void>
struct HasHeld : std::false_type {};
template <class E, int VEC>
struct HasHeld<E, VEC,
               std::void_t<decltype(E::template hold_whole<VEC>(std::declval<const typename E::Params&>(), int64_t{})),
                           decltype(E::template apply_held<VEC>(
                               std::declval<const typename E::Params&>(),
                               std::declval<const typename E::template Prefetched<VEC>&>(),
                               std::declval<float (&)[VEC]>()))>>
    : std::bool_constant<HasPrefetch<E, VEC>::value> {};

/// Bytes of one slot of E's held parameters (its Prefetched<VEC>), 0 where
/// E has no held form.
template <class E, int VEC, bool = HasHeld<E, VEC>::value>
struct HeldSlotBytes : std::integral_constant<size_t, 0> {};
template <class E, int VEC>
struct HeldSlotBytes<E, VEC, true> : std::integral_constant<size_t, sizeof(typename E::template Prefetched<VEC>)> {};

/// E with its held form as its prefetching hooks (HasHeld), so that the row
/// code every kernel shares (epilogue_on_slot) applies held slots; its
/// PrefetchOwner is itself.
template <class E>
struct HeldEpilogue : E {
  using PrefetchOwner = HeldEpilogue;
  template <int VEC>
  static NORMKIT_DEVICE typename E::template Prefetched<VEC> prefetch_whole(const typename E::Params& p,
                                                                            int64_t col0) {
    return E::template hold_whole<VEC>(p, col0);
  }
  template <int VEC>
  static NORMKIT_DEVICE void apply_prefetched(const typename E::Params& p,
                                              const typename E::template Prefetched<VEC>& pre, float (&v)[VEC]) {
    E::template apply_held<VEC>(p, pre, v);
  }
  /// The addend form, where E has one.
  template <int VEC, class Base = E,
            class = decltype(Base::template apply_held<VEC>(std::declval<const typename E::Params&>(),
                                                            std::declval<const typename E::template Prefetched<VEC>&>(),
                                                            std::declval<float (&)[VEC]>(), 0.f))>
  static NORMKIT_DEVICE void apply_prefetched(const typename E::Params& p,
                                              const typename E::template Prefetched<VEC>& pre, float (&v)[VEC],
                                              float addend) {
    E::template apply_held<VEC>(p, pre, v, addend);
  }
};

/// Problem with its epilogue's held form (HeldEpilogue): the same Params.
template <class Problem>
struct WithHeldParams : Problem {
  using Epilogue = HeldEpilogue<typename Problem::Epilogue>;
};

/// E's Prefetched<VEC> where USE, NoPrefetch otherwise.
template <class E, int VEC, bool USE>
struct PrefetchOf {
  using type = NoPrefetch;
};
template <class E, int VEC>
struct PrefetchOf<E, VEC, true> {
  using type = typename E::template Prefetched<VEC>;
};

/// E whose WHOLE form caches its parameters as C asks (where E takes the
/// caching; otherwise E unchanged): what WithParamCaching gives a kernel.
/// Derives from E, so E must not be final (row_per_block wraps only
/// epilogues that take the caching and are not).
template <class E, ParamCaching C>
struct CachedEpilogue : E {
  template <int VEC>
  static NORMKIT_DEVICE void apply_whole(const typename E::Params& p, int64_t row, int64_t col0, float (&v)[VEC]) {
    apply_epilogue<E, VEC, true, C>(p, row, col0, VEC, v);
  }
  /// The addend form, where E has one (TakesAddend).
  template <int VEC, class Base = E, std::enable_if_t<TakesAddend<Base, VEC>::value, int> = 0>
  static NORMKIT_DEVICE void apply_whole(const typename E::Params& p, int64_t row, int64_t col0, float (&v)[VEC],
                                         float addend) {
    apply_epilogue_plus<E, VEC, true, C>(p, row, col0, VEC, v, addend);
  }
};

/// Problem with its epilogue's parameters cached as C asks, for a kernel
/// shape to pass to the row code it shares with the others (the same
/// Params, the same values; row_per_block at 8 slots: change 62).
template <class Problem, ParamCaching C>
struct WithParamCaching : Problem {
  using Epilogue = CachedEpilogue<typename Problem::Epilogue, C>;
};

/// Whether E offers whole_params_present and apply_whole_present
/// (epilogue/affine.cuh): a kernel may test the first once a row and then
/// walk the row's slots with the second.
template <class E, class = void>
struct HasPresentForm : std::false_type {};
template <class E>
struct HasPresentForm<E, std::void_t<decltype(E::whole_params_present(std::declval<const typename E::Params&>()))>>
    : std::true_type {};

/// E whose WHOLE form assumes what whole_params_present tested (the same
/// values as E's apply_whole there). Derives from E, so E must not be final.
template <class E>
struct PresentEpilogue : E {
  template <int VEC>
  static NORMKIT_DEVICE void apply_whole(const typename E::Params& p, int64_t row, int64_t col0, float (&v)[VEC]) {
    E::template apply_whole_present<VEC>(p, row, col0, v);
  }
};

/// Problem with its epilogue's WHOLE form taken as present (PresentEpilogue),
/// for row code run once whole_params_present held for the row.
template <class Problem>
struct WithPresentParams : Problem {
  using Epilogue = PresentEpilogue<typename Problem::Epilogue>;
};

/// Whether row code may test Problem's parameters once a row
/// (WithPresentParams): its epilogue has the present form and neither it nor
/// Problem is final.
template <class Problem>
inline constexpr bool kTestsParamsOnce = HasPresentForm<typename Problem::Epilogue>::value &&
                                         !std::is_final_v<Problem> && !std::is_final_v<typename Problem::Epilogue>;

/// What a kernel passes its row code to keep the WHOLE form's parameters in
/// L1 where it WANTs that (row_per_block at 8 slots, row_cluster_registers):
/// WithParamCaching<Problem, kKeepInL1> where the epilogue takes the hint
/// (HasCachedWhole) and neither it nor Problem is final (CachedEpilogue
/// derives from it); Problem itself otherwise, which then runs as it is.
template <class Problem, bool WANT>
using ParamsKeptInL1 =
    std::conditional_t<WANT && !std::is_final_v<Problem> && !std::is_final_v<typename Problem::Epilogue> &&
                           HasCachedWhole<typename Problem::Epilogue, Problem::kVec, ParamCaching::kKeepInL1>::value,
                       WithParamCaching<Problem, ParamCaching::kKeepInL1>, Problem>;

}  // namespace detail
NORMKIT_NAMESPACE_END
