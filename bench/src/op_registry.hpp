// bench/src/op_registry.hpp: the ops the benchmarks time. An op is a
// normkit entry point at one dtype, described by an OpSpec: how many bytes a
// call must move, how to plan it, and how to set up device buffers and a
// launch. Adding an op (a fused variant, say) is one "Bench" struct (see
// norm_ops.cuh and fused_ops.cuh) and a one-line translation unit under ops/ that registers
// make_op_spec<ThatBench>().
#pragma once

#include <cuda_runtime.h>
#include <normkit/launch/launcher.cuh>

#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cuda_check.hpp"
#include "dtype.hpp"
#include "fill.hpp"
#include "gpu.hpp"

namespace nkbench {

/// The device buffers of one op instance. Random data is made on the
/// benchmark stream, so it is ready before anything timed on that stream.
class OpMemory {
 public:
  template <class T>
  T* alloc(int64_t count) {
    buffers_.push_back(device_alloc(static_cast<size_t>(count) * sizeof(T)));
    return static_cast<T*>(buffers_.back().get());
  }
  /// `count` values uniform in [lo, hi); each buffer gets its own seed.
  template <class T>
  T* random(int64_t count, float lo, float hi) {
    T* p = alloc<T>(count);
    fill_uniform(p, dtype_of<T>(), count, lo, hi, next_seed_++, gpu().stream);
    return p;
  }
  /// A row input (x, the residual): as random, but starting input_offset
  /// elements past the allocation's start (the misaligned set: one element
  /// off 16-byte alignment, as a slice x[..., 1:] of a larger tensor is).
  template <class T>
  T* input(int64_t count, float lo, float hi) {
    return random<T>(count + input_offset_, lo, hi) + input_offset_;
  }
  void set_input_offset(int64_t elements) { input_offset_ = elements; }

 private:
  std::vector<DeviceBuffer> buffers_;
  uint64_t next_seed_ = 1;
  int64_t input_offset_ = 0;
};

using ForwardFn = std::function<normkit::Status(cudaStream_t, const normkit::LaunchOptions&)>;

/// An op ready to launch: its buffers and the call on them.
struct OpInstance {
  OpMemory memory;
  ForwardFn forward;
};

struct OpSpec {
  std::string name;  ///< e.g. "layer_norm": the benchmark names' second part
  DType dtype;       ///< of x: names the benchmark and sizes the sweep's M
  /// Bytes a call on [rows, cols] must move at least: each input read once, each output written once.
  std::function<int64_t(int64_t rows, int64_t cols)> bytes_moved;
  /// The launch plan for rows of `cols` (normkit's plan never depends on M).
  std::function<normkit::Status(int64_t cols, const normkit::LaunchOptions&, normkit::LaunchPlan*)> plan;
  /// Allocates and fills [rows, cols] inputs and outputs on the device, the
  /// row inputs (x, the residual) `input_offset` elements past alignment.
  std::function<OpInstance(int64_t rows, int64_t cols, int64_t input_offset)> setup;
  /// The small-batch set's row lengths for this op; empty: the default set (suites.cu).
  std::vector<int64_t> small_batch_cols;
};

/// Adds an op; returns true so a translation unit can register from a static initializer.
bool register_op(OpSpec spec);

/// Every registered op, ordered by name, then dtype.
std::vector<const OpSpec*> registered_ops();

/// Whether a Bench struct has the optional members make_op_spec looks for.
template <class Bench, class = void>
struct HasPlanArgs : std::false_type {};
template <class Bench>
struct HasPlanArgs<Bench, std::void_t<decltype(Bench::plan_args(int64_t{}))>> : std::true_type {};
template <class Bench, class = void>
struct HasSmallBatchCols : std::false_type {};
template <class Bench>
struct HasSmallBatchCols<Bench, std::void_t<decltype(Bench::small_batch_cols())>> : std::true_type {};

/// An OpSpec from a Bench struct providing:
///   static constexpr const char* kName;
///   using X = ...;     // element type of x
///   using Args = ...;  // a normkit argument struct with a `cols` field
///   static int64_t bytes_moved(int64_t rows, int64_t cols);
///   static Args make_args(OpMemory&, int64_t rows, int64_t cols);
///   static normkit::Status forward(const Args&, cudaStream_t, const normkit::LaunchOptions&);
///   static normkit::Status plan(const Args&, normkit::LaunchPlan*, const normkit::LaunchOptions&);
/// and optionally:
///   static Args plan_args(int64_t cols);                // the arguments plan() gets (default:
///                                                       // Args{} with cols set: M = 0, no buffers)
///   static std::vector<int64_t> small_batch_cols();     // default: the small-batch set's own N
template <class Bench>
OpSpec make_op_spec() {
  OpSpec s;
  s.name = Bench::kName;
  s.dtype = dtype_of<typename Bench::X>();
  s.bytes_moved = &Bench::bytes_moved;
  s.plan = [](int64_t cols, const normkit::LaunchOptions& opts, normkit::LaunchPlan* plan) {
    if constexpr (HasPlanArgs<Bench>::value) {
      return Bench::plan(Bench::plan_args(cols), plan, opts);
    } else {
      typename Bench::Args a{};  // M = 0 and no buffers: a valid call, so it can be planned
      a.cols = cols;
      return Bench::plan(a, plan, opts);
    }
  };
  if constexpr (HasSmallBatchCols<Bench>::value) s.small_batch_cols = Bench::small_batch_cols();
  s.setup = [](int64_t rows, int64_t cols, int64_t input_offset) {
    OpInstance inst;
    inst.memory.set_input_offset(input_offset);
    const typename Bench::Args args = Bench::make_args(inst.memory, rows, cols);
    inst.forward = [args](cudaStream_t stream, const normkit::LaunchOptions& opts) {
      return Bench::forward(args, stream, opts);
    };
    return inst;
  };
  return s;
}

}  // namespace nkbench
