// normkit/kernel/start_stagger.cuh: staggered starts for the resident
// clusters of row_cluster_registers.
//
// The clusters of a cluster-register grid all start at once, and every one
// loads its first row while none reduces: the first rounds, then, take turns
// between DRAM busy with every cluster's loads and DRAM idle while they all
// reduce. Starting cluster c (c mod kStartStaggerPhases) / kStartStaggerPhases
// of a round late (a round: one row of every resident cluster at the
// device's DRAM rate) spreads those phases from the first row on. With a
// row counter (LaunchOptions::row_counter) a late cluster just takes fewer
// rows, so the delay costs only the idle SM time it leaves at the start
// (docs/performance.md, changes 127-128, 132 and 134: with the counter, on
// an H100, +0.1 to +4.8 points of the copy at bf16 N = 131072-262144, and
// +0.5 to +5 at batches of 8 rounds). Under a fixed stride
// the late clusters keep their rows and finish late, which lost at add +
// RMSNorm (change 127), so the launcher staggers only calls with a counter,
// and of those only the loops that take their rows from it (the plain
// loop's WHOLE form, split parts, the prefetching loop, the ring, rolled
// rows; the ring in clusters of 2, staggered since change 132, takes the
// counter since change 137, rolled rows both since change 141, in calls of
// kRollCounterMinRounds rows per cluster or more). The checked loop,
// relayed rows and the plain loop where it runs at the fixed stride
// (per-row LayerNorm in CTAs of 1024 threads, RowHandout::kFixedStride: change 177)
// start together.
//
// The bits do not change: the delay only moves when rows run.
#pragma once

#include <cstdint>

#include "../config.cuh"

NORMKIT_NAMESPACE_BEGIN
namespace kernel {

/// Phases of the stagger: cluster c starts (c mod 16) / 16 of a round late
/// (change 132: 8, 16 and 32 phases within a point at 131072; at 262144 8
/// phases varied by 2.6 points between passes, 16 and 32 by 0.3).
inline constexpr unsigned kStartStaggerPhases = 16;

/// Fewest rounds (rows per resident cluster) a call must have to be
/// staggered: a cluster that runs only a row or two gains nothing from
/// starting late. At 4 rounds it gained +0.9 to +6.8 points (change 134,
/// H100); fewer rounds are not measured.
inline constexpr int64_t kStartStaggerMinRounds = 4;

/// The share of the nominal DRAM rate (memory clock x bus width) taken as
/// the rate a round moves at: a device-to-device copy reaches about 85-90%
/// of the nominal rate on the H100 and H200.
inline constexpr double kStartStaggerDramShare = 0.85;

}  // namespace kernel

namespace detail {

/// SM clock cycles between phases for a call of `rows` rows, each moving
/// `row_bytes` of DRAM traffic, on `clusters` resident clusters, on a device
/// of `dram_bytes_per_ns` nominal DRAM rate and `sm_clock_khz` peak SM clock
/// (DeviceCaps; clock64 counts at the actual clock, so an SM running slower
/// waits longer in time, and stays as far apart in cycles of work); 0 (no
/// stagger) for calls of fewer than
/// kStartStaggerMinRounds rounds, a single cluster, or a device that did not
/// report its clocks.
inline uint32_t start_stagger_cycles(int64_t rows, int64_t clusters, double row_bytes, double dram_bytes_per_ns,
                                     int sm_clock_khz) {
  if (clusters <= 1 || rows < kernel::kStartStaggerMinRounds * clusters || !(row_bytes > 0) ||
      !(dram_bytes_per_ns > 0) || sm_clock_khz <= 0) {
    return 0;
  }
  const double round_ns = static_cast<double>(clusters) * row_bytes / (dram_bytes_per_ns * kernel::kStartStaggerDramShare);
  const double step = round_ns * (sm_clock_khz * 1e-6) / kernel::kStartStaggerPhases;
  // (A step of 2^30 cycles, about half a second, is past any real row.)
  return step < 1.0 ? 0u : step > 1073741824.0 ? 1073741824u : static_cast<uint32_t>(step);
}

/// Waits `step_cycles` SM cycles for each phase cluster `cluster` lies past
/// the first (Params::start_stagger_cycles; 0: no wait).
NORMKIT_DEVICE void stagger_start(uint32_t step_cycles, unsigned cluster) {
  const long long wait = static_cast<long long>(step_cycles) * (cluster % kernel::kStartStaggerPhases);
  if (wait == 0) return;
  const long long start = clock64();
  while (clock64() - start < wait) __nanosleep(64);
}

}  // namespace detail
NORMKIT_NAMESPACE_END
