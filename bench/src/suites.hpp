// bench/src/suites.hpp: which benchmarks exist. Registration needs the device
// (forced shapes are checked against it), so main calls these after it found one.
#pragma once

namespace nkbench {

/// Registers the default sets, plus the forced-shape set when the environment
/// variable NORMKIT_BENCH_SHAPES is set to a non-empty value other than 0.
void register_benchmarks();

}  // namespace nkbench
