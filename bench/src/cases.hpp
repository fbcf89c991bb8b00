// bench/src/cases.hpp: the bodies of the registered benchmarks. Each runs one
// Google Benchmark iteration whose manual time is the median of its samples;
// any failure becomes SkipWithError, never a number.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>

#include "copy.hpp"
#include "op_registry.hpp"
#include "timing.hpp"

namespace nkbench {

struct NormCase {
  const OpSpec* op = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  normkit::Shape shape = normkit::Shape::kAuto;  ///< forced for exploration, else kAuto
  Method method = Method::kFlushed;
  int64_t input_offset = 0;  ///< elements x (and a residual) start past alignment
};

/// Times op->forward on [rows, cols]. Counters: bytes (moved per call), TBps,
/// copy_TBps (the copy ceiling for the same bytes and method), copy_share,
/// min_us, max_us, spread ((max - min) / median). Label: the kernel shape.
void run_norm_case(benchmark::State& state, const NormCase& c);

/// Times one copy kind. Counters: bytes, TBps, min_us, max_us, spread. Label: the kind.
void run_copy_case(benchmark::State& state, CopyKind kind, int64_t bytes_moved, Method method);

}  // namespace nkbench
