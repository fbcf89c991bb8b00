// normkit/kernel/problem.cuh: one normalization problem as the kernels see it:
// the policy types and the flat argument struct every kernel shape takes.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../config.cuh"
#include "../io/input.cuh"
#include "../io/output.cuh"
#include "../types.cuh"

NORMKIT_NAMESPACE_BEGIN

/// Bundles what is computed (statistics, epilogue) with what is read and
/// written (input, output). The kernel shapes take any Problem; the launcher
/// chooses the shape.
template <class X_, class Stats_, class Epilogue_, class Input_ = input::Plain<X_>,
          class Output_ = output::Convert<X_>>
struct Problem {
  static_assert(is_io_type_v<X_>, "normkit: x must be float, half or bfloat16; convert x before the call");
  using X = X_;
  using Stats = Stats_;
  using Epilogue = Epilogue_;
  using Input = Input_;
  using Output = Output_;
  using Y = typename Output::Type;
  using Storage = typename Input::Storage;

  /// Elements per slot: one 16-byte load of x.
  static constexpr int kVec = 16 / static_cast<int>(sizeof(X));

  struct Params {
    const X* x = nullptr;
    Y* y = nullptr;
    float* mean = nullptr;  ///< fp32 [rows], optional (LayerNorm only)
    float* rstd = nullptr;  ///< fp32 [rows], optional
    int64_t rows = 0;
    int64_t cols = 0;
    int64_t x_stride = 0;  ///< elements between rows of x
    int64_t y_stride = 0;  ///< elements between rows of y
    float eps = 0.f;
    int x_access = 0;  ///< widest aligned access to x rows, bytes (set by the launcher)
    int y_access = 0;
    bool whole_access = false;  ///< every row and parameter access is slot-aligned (set by the launcher)
    /// LaunchOptions::row_counter (set by the launcher): the cluster rows'
    /// counter (kernel/row_schedule.cuh), or null for a fixed stride.
    uint32_t* row_counter = nullptr;
    /// SM cycles between the phases of the clusters' staggered start (set by
    /// the launcher: kernel/start_stagger.cuh), or 0 for none.
    uint32_t start_stagger_cycles = 0;
    typename Input::Params input{};
    typename Epilogue::Params epilogue{};
    typename Output::Params output{};
  };
};

NORMKIT_NAMESPACE_END
