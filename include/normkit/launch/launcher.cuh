// normkit/launch/launcher.cuh: from a validated Problem::Params to a launch:
// device capabilities, kernel shape, access widths, grid size, and one
// checked cudaLaunchKernelEx on the caller's stream. No allocation, no
// synchronization: legal inside CUDA graph capture.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

#include "../block/vector_access.cuh"
#include "../config.cuh"
#include "../epilogue/hooks.cuh"
#include "../kernel/row_chunked.cuh"
#include "../kernel/row_cluster_registers.cuh"
#include "../kernel/row_per_block.cuh"
#include "../kernel/rows_per_warp.cuh"
#include "../kernel/shifted_stores.cuh"
#include "../kernel/start_stagger.cuh"
#include "../status.cuh"
#include "device.cuh"
#include "plan.cuh"
#include "validate.cuh"

NORMKIT_NAMESPACE_BEGIN

/// Per-call choices a caller may make; the defaults suit almost everyone.
struct LaunchOptions {
  /// Force a kernel shape (tests, benchmarks, or pinning a shape across
  /// devices); kAuto lets the launcher choose from N, the types and the device.
  Shape shape = Shape::kAuto;
  /// Whether per-row-quantized rows planned at 4 slots per thread
  /// (row_per_block, also at 5; rows_per_warp, also at 3, in groups spanning
  /// at least 64 columns) run in the paired form (half the
  /// threads or lanes, each with two's slots, reduced in the same order: the
  /// same bits either way; plan.cuh, pairs_fit). kAuto: paired when the
  /// batch's x is larger than the L2 cache (x then comes from DRAM, where it
  /// measured faster; a batch that fits in L2, often just written by the
  /// previous kernel, ran faster unpaired).
  LanePairing pairing = LanePairing::kAuto;
  /// If set, receives the plan a successful launch ran: its shape and sizes,
  /// `paired` true only if the paired form ran, `roomy` only if the roomy
  /// form did and `tight` only if the tight form did (for tests and
  /// telemetry).
  LaunchPlan* launched = nullptr;
  /// Optional: two 32-bit words of device memory, zero before the call,
  /// 4-byte aligned, that no other call in flight uses (one pair per stream
  /// is enough; a CUDA graph that may run concurrently with itself needs its
  /// own). The call leaves them zero again, so one cudaMemset at allocation
  /// serves every later call. With it, rows split across the CTAs of a
  /// thread-block cluster are handed to the clusters as they finish rows
  /// (a counter) instead of by a fixed stride, so that clusters the memory
  /// system serves faster take more rows (docs/performance.md, change 130),
  /// and, in calls of at least four rows per resident cluster, the clusters
  /// start staggered over a round of rows, which a counter absorbs (late
  /// clusters take fewer rows; kernel/start_stagger.cuh, changes 132 and 134).
  /// The results are bitwise the same with or without it. Used by the
  /// register-held cluster rows (Shape::kRowInClusterRegisters) that are
  /// slot-aligned or split (row_cluster_registers.cuh says which loops;
  /// rolled rows only in calls of kernel::kRollCounterMinRounds, 6, rows or
  /// more per resident cluster; not per-row-quantized LayerNorm rows in CTAs
  /// of 1024 threads, kernel::kFixedStrideInFullCtas); every other shape and loop ignores it. Not
  /// 4-byte aligned, or sharing a byte with x, y, mean, rstd, a residual,
  /// per-row scales or the weight or bias: kErrorInvalidWorkspace from any
  /// call that would launch, before any CUDA call (a call with no rows, or a
  /// *_plan call, does not look at it; a caller-written policy's pointers are
  /// checked only if its Params declare kRegionsKnown, launch/validate.cuh,
  /// so keep the counter apart from them).
  uint32_t* row_counter = nullptr;
};

namespace detail {

/// Whether `counter` may serve as LaunchOptions::row_counter (null, or
/// aligned for its 32-bit words).
inline bool row_counter_aligned(const uint32_t* counter) {
  return reinterpret_cast<uintptr_t>(counter) % alignof(uint32_t) == 0;
}

template <class Kernel, class... Args>
Status launch_kernel(Kernel kernel, int64_t grid, int threads, size_t smem, int cluster, cudaStream_t stream,
                     Args&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(grid), 1, 1);
  cfg.blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attrs[1];
  cfg.attrs = attrs;
  cfg.numAttrs = 0;
  if (cluster > 1) {
    attrs[0].id = cudaLaunchAttributeClusterDimension;
    attrs[0].val.clusterDim.x = static_cast<unsigned>(cluster);
    attrs[0].val.clusterDim.y = 1;
    attrs[0].val.clusterDim.z = 1;
    cfg.numAttrs = 1;
  }
  const cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // clear the error this launch left, and only it
    return status_from_cuda(e, Status::kErrorCudaLaunch);
  }
  return Status::kSuccess;
}

template <class Problem>
struct Launcher {
  using Params = typename Problem::Params;
  static constexpr int VEC = Problem::kVec;
  /// The RowFormat fields that do not depend on N (format() below), at
  /// compile time: the predicates that decide which kernels are
  /// instantiated take the same values the plan does.
  static constexpr int kRowReductions = stats::row_reductions_v<typename Problem::Stats>;
  static constexpr int kStorageBytes = static_cast<int>(sizeof(typename Problem::Storage));
  /// The output quantizes (per-row or static scale): RowFormat::quantized.
  static constexpr bool kQuantized = detail::ScalesByFactor<typename Problem::Output>::value;
  /// Whether the plan may give this problem's rows 8 slots per thread (only
  /// then are 8-slot kernels instantiated).
  static constexpr bool kWideSlots = allows_wide_slots(kRowReductions, kStorageBytes, VEC);
  static constexpr int kMaxVecs = kWideSlots ? PlanTuning::kWideVecs : PlanTuning::kMaxRegisterBytes / 16;
  /// Whether the plan may hold this problem's rows across a cluster's
  /// registers (only then is row_cluster_registers instantiated).
  static constexpr bool kClusterRegisterSlots = allows_cluster_register_slots(
      kRowReductions, kStorageBytes, VEC, kQuantized, Problem::Output::kNeedsRowAbsMax, Problem::Input::kIsPlainCopy);
  /// Whether the plan may hold this problem's rows at 4 slots in CTAs of up
  /// to 1024 threads (allows_wide_four_slot_team; only then is that
  /// row_per_block kernel instantiated).
  static constexpr bool kWideFourSlotTeam = allows_wide_four_slot_team(kRowReductions, kStorageBytes, VEC);
  /// Whether row_cluster_registers holds this problem's parts at 4 slots
  /// (four_slot_cluster_parts: only then is that kernel instantiated, and
  /// then no 8-slot register loop; split parts, kSplitsParts, hold 8).
  static constexpr bool kFourSlotClusterParts = four_slot_cluster_parts(
      kRowReductions, kStorageBytes, VEC, kQuantized, Problem::Output::kNeedsRowAbsMax, Problem::Input::kIsPlainCopy);
  /// Whether the plan may hold those 4-slot parts as split 8-slot ones
  /// (kernel::kSplitsParts; only then are those kernels instantiated).
  static constexpr bool kSplitsParts = kFourSlotClusterParts && kernel::kSplitsParts<Problem>;
  /// Whether this problem's 4-slot parts run at the fixed stride in CTAs of
  /// 1024 threads (kernel::RowHandout::kFixedStride, kernel::kFixedStrideInFullCtas:
  /// rows that need their maximum and neither roll nor relay, per-row-quantized
  /// 16-bit LayerNorm; change 177). Fused adds' 4-slot parts keep the counter
  /// (change 131).
  static constexpr bool kFixedStrideFullTeam = kFourSlotClusterParts && kernel::kFixedStrideInFullCtas<Problem>;
  /// Whether the plan may pair this problem's lanes (types_may_pair; only
  /// then are the paired kernels instantiated).
  static constexpr bool kPairs =
      types_may_pair(kQuantized, stats_folds_each_part_v<typename Problem::Stats>, kRowReductions, kStorageBytes, VEC);

  /// Kernels instantiated for misaligned outputs (WithShiftedStores): only
  /// their checked forms exist.
  static constexpr bool kCheckedOnly = kShiftsStores<Problem>;
  /// Whether rows whose outputs are misaligned run WithShiftedStores<Problem>'s
  /// kernels: fused adds (in place, y and residual_out are x and the
  /// residual) whose outputs move in 16-byte slots.
  static constexpr bool kMayShiftStores =
      !kCheckedOnly && IsAddResidual<typename Problem::Input>::value &&
      sizeof(typename Problem::Y) * VEC == 16 && sizeof(typename Problem::Storage) * VEC == 16;

  /// Whether an unpaired row_per_block plan of CTAs of up to
  /// kRowPerBlockMaxThreads runs row_per_block's ROOMY form (the same bits):
  /// for a batch of at most one CTA per SM, where a row's latency is the
  /// time and residency does not count, if the form is instantiated (the
  /// WHOLE forms), and for fused-add rows at 8 slots (kRoomyWideRows).
  static bool run_roomy(const Params& p, const LaunchPlan& plan, const DeviceCaps& caps) {
    if (plan.shape != Shape::kRowPerBlock || plan.paired || plan.vecs < 2 || plan.vecs == 3 ||
        plan.threads > kernel::kRowPerBlockMaxThreads) {
      return false;
    }
    if (plan.vecs == 8 && kernel::kRoomyWideRows<Problem>) return true;
    return whole_form(p, plan.threads, plan.vecs) && p.rows <= caps.sm_count;
  }

  /// Whether an unpaired, not roomy row_per_block plan runs row_per_block's
  /// tight form (the same bits): 4-slot WHOLE rows in CTAs of
  /// kernel::kRowPerBlockTightMinThreads to kRowPerBlockTightThreads threads,
  /// of the problems kernel::kTightFourSlotRows names (only there is it
  /// instantiated): three such CTAs an SM instead of two.
  static bool run_tight(const Params& p, const LaunchPlan& plan) {
    return kernel::kTightFourSlotRows<Problem> && plan.shape == Shape::kRowPerBlock && plan.vecs == 4 &&
           !plan.paired && !plan.roomy && plan.threads >= kernel::kRowPerBlockTightMinThreads &&
           plan.threads <= kernel::kRowPerBlockTightThreads && whole_form(p, plan.threads, plan.vecs);
  }

  /// Whether a plan that allows pairing (LaunchPlan::may_pair) runs paired: only
  /// in the WHOLE form (every access slot-aligned; the plan made sure the
  /// team's slots hold the row), then by the options, and by default when
  /// the batch's x is larger than the L2 cache (LaunchOptions::pairing).
  /// Either way the same bits.
  static bool run_paired(const Params& p, const LaunchPlan& plan, const DeviceCaps& caps, const LaunchOptions& opts) {
    if (!plan.may_pair || !p.whole_access || opts.pairing == LanePairing::kOff) return false;
    if (opts.pairing == LanePairing::kOn) return true;
    const int64_t x_bytes = p.rows * p.cols * static_cast<int64_t>(sizeof(typename Problem::X));
    return x_bytes > caps.l2_bytes;
  }

  static RowFormat format(const Params& p) {
    RowFormat f;
    f.cols = p.cols;
    f.vec = VEC;
    f.storage_bytes = kStorageBytes;
    f.needs_on_chip = Problem::Output::kNeedsRowAbsMax;
    f.quantized = kQuantized;
    f.row_reductions = kRowReductions;
    f.folds_each_part = stats_folds_each_part_v<typename Problem::Stats>;
    f.relays_rows = kernel::kRelaysRows<Problem>;
    f.rings_rows = kernel::kRingsRows<Problem>;
    f.prefetches_rows = kernel::kPrefetchesRows<Problem>;
    f.plain_input = Problem::Input::kIsPlainCopy;
    f.splits_parts = kSplitsParts;
    return f;
  }

  /// How many CTAs of `func` (for cluster > 1: clusters) the device runs at
  /// once: the staged, streaming and cluster-register grids are that size
  /// (they stride over the rows beyond), rows_per_warp's grid a multiple of
  /// it (see below).
  static Status resident_units(const void* func, int device, const DeviceCaps& caps, int threads, size_t smem,
                               int cluster, int64_t* units) {
    int resident = 0;
    const Status s = kernel_occupancy(func, device, threads, smem, cluster, &resident);
    if (s != Status::kSuccess) return s;
    *units = cluster == 1 ? static_cast<int64_t>(resident) * caps.sm_count : resident;
    return Status::kSuccess;
  }

  /// Whether every row access (x, y, the input's other rows) and every
  /// per-column parameter access is aligned to a whole slot (access widths
  /// set): Params::whole_access, which lets whole slots skip all checks.
  static bool whole_access(const Params& p) {
    return input_whole_slots<typename Problem::Input, VEC>(p) && p.y_access >= slot_bytes<typename Problem::Y, VEC>() &&
           epilogue_whole_slots<typename Problem::Epilogue, VEC>(p.epilogue);
  }

  /// Whether the register shapes take their WHOLE form: the team's `vecs`
  /// slots hold the row exactly and every access is slot-aligned.
  static bool whole_form(const Params& p, int team, int vecs) {
    return p.cols == static_cast<int64_t>(team) * vecs * VEC && p.whole_access;
  }

  /// Register shapes launch more CTAs than can be resident, so the hardware
  /// hands each one its rows as others finish: measured on the H200
  /// (docs/performance.md, change 18), an occupancy-sized grid striding over
  /// the rows kept every CTA of an SM in step (loading together, then reducing
  /// together) and lost 5-8 points of copy. row_per_block: one CTA per row.
  /// rows_per_warp: at most kRowsPerWarpWaves times the resident CTAs, each
  /// striding over a few groups of rows, since a CTA per group of short rows
  /// measured worse for 16-bit LayerNorm (its start is then paid per group).
  /// 64 times for rows with one reduction and no row maximum (RMSNorm, fused
  /// add + RMSNorm: +1.1 to +2 points at 16-bit N = 64-768) and for fused-add
  /// rows with two (add + LayerNorm bf16 N = 64-1024 +2.1 to +3.7: 256 95.3%
  /// -> 98.0%, 1024 97.3% -> 99.8%; change 108), 16 for the rest (at 64,
  /// plain LayerNorm lost 4.2 points at N = 64 and 1.7 at 768, per-row fp8
  /// 1.6-6; docs/performance.md, change 70).
  static constexpr int64_t kRowsPerWarpWaves =
      (kRowReductions == 1 || !Problem::Input::kIsPlainCopy) && !Problem::Output::kNeedsRowAbsMax ? 64 : 16;
  static constexpr int64_t kMaxGrid = 0x7fffffff;  ///< gridDim.x limit; the kernels stride beyond it

  template <int VECS, bool WHOLE>
  static Status run_rows_per_warp(const Params& p, const LaunchPlan& plan, int device, const DeviceCaps& caps,
                                  cudaStream_t stream) {
    if constexpr ((VECS == 3 || VECS == 4) && WHOLE && kPairs) {
      // The same bits with lanes paired: group / 2 lanes a row.
      if (plan.paired) return launch_rows_per_warp(&kernel::rows_per_warp_paired<Problem, VECS>, p, plan,
                                                  plan.group / 2, device, caps, stream);
    }
    return launch_rows_per_warp(&kernel::rows_per_warp<Problem, VECS, WHOLE>, p, plan, plan.group, device, caps,
                                stream);
  }

  /// Launches a rows_per_warp kernel (passed the plan's group) whose rows
  /// take `lanes` lanes each.
  template <class Kernel>
  static Status launch_rows_per_warp(Kernel kernel, const Params& p, const LaunchPlan& plan, int lanes, int device,
                                     const DeviceCaps& caps, cudaStream_t stream) {
    int64_t resident = 0;
    const Status s =
        resident_units(reinterpret_cast<const void*>(kernel), device, caps, plan.threads, 0, 1, &resident);
    if (s != Status::kSuccess) return s;
    const int64_t groups = ceil_div(p.rows, plan.threads / lanes);
    const int64_t cap = kRowsPerWarpWaves * resident;
    return launch_kernel(kernel, groups < cap ? groups : cap, plan.threads, 0, 1, stream, p, plan.group);
  }

  template <int VECS, bool WHOLE>
  static Status run_register_form(const Params& p, const LaunchPlan& plan, int device, const DeviceCaps& caps,
                                  cudaStream_t stream) {
    if (plan.shape == Shape::kRowsPerWarp) {
      // rows_per_warp is planned with at most 4 slots: no wider kernel is instantiated.
      if constexpr (VECS <= PlanTuning::kMaxRegisterBytes / 16) {
        return run_rows_per_warp<VECS, WHOLE>(p, plan, device, caps, stream);
      } else {
        return Status::kErrorUnsupportedShape;
      }
    }
    if constexpr (VECS == 3) {
      return Status::kErrorUnsupportedShape;  // planned for rows_per_warp only: no such row_per_block kernel
    } else {
      const int64_t grid = p.rows < kMaxGrid ? p.rows : kMaxGrid;  // one CTA per row
      if constexpr (VECS == 4) {
        // 4 slots in more than 512 threads: the kernel of 1024-thread CTAs,
        // instantiated where the plan may give them (kWideFourSlotTeam;
        // never paired or roomy).
        if (plan.threads > kernel::kRowPerBlockMaxThreads) {
          if constexpr (kWideFourSlotTeam) {
            return launch_kernel(&kernel::row_per_block<Problem, 4, WHOLE, BlockReduceAlgorithm::kWarpShuffle, false,
                                                        kernel::kRowPerBlockWideMaxThreads>,
                                 grid, plan.threads, 0, 1, stream, p);
          } else {
            return Status::kErrorUnsupportedShape;
          }
        }
      }
      // The tight form (run_tight): three CTAs of up to 384 threads an SM.
      if constexpr (VECS == 4 && WHOLE && kernel::kTightFourSlotRows<Problem>) {
        if (plan.tight) {
          return launch_kernel(&kernel::row_per_block<Problem, 4, true, BlockReduceAlgorithm::kWarpShuffle, false,
                                                      kernel::kRowPerBlockTightThreads>,
                               grid, plan.threads, 0, 1, stream, p);
        }
      } else {
        if (plan.tight) return Status::kErrorUnsupportedShape;
      }
      if constexpr ((VECS == 4 || VECS == 5) && WHOLE && kPairs) {
        if (plan.paired) {  // the same bits in half the threads
          return launch_kernel(&kernel::row_per_block_paired<Problem, VECS>, grid, plan.threads / 2, 0, 1, stream,
                               p);
        }
      }
      // The roomy form: instantiated for the WHOLE forms (row_per_block is
      // planned at 2 slots or more), and for the checked 8-slot form of
      // kRoomyWideRows (at 64 registers it spilled). run_roomy chooses it
      // only where it is instantiated; a plan that asks for it elsewhere
      // is refused rather than run and reported as what it is not.
      if constexpr ((WHOLE && VECS >= 2) || (VECS == 8 && kernel::kRoomyWideRows<Problem>)) {
        if (plan.roomy) {
          return launch_kernel(
              &kernel::row_per_block<Problem, VECS, WHOLE, BlockReduceAlgorithm::kWarpShuffle, true>, grid,
              plan.threads, 0, 1, stream, p);
        }
      } else {
        if (plan.roomy) return Status::kErrorUnsupportedShape;
      }
      return launch_kernel(&kernel::row_per_block<Problem, VECS, WHOLE>, grid, plan.threads, 0, 1, stream, p);
    }
  }

  /// Slots per thread of the checked (not WHOLE) kernel that runs a plan of
  /// `vecs`: 3 slots run the checked 4-slot kernel, whose 4th slot lies past
  /// the row (zeros, which add nothing: the same lanes, slots, order and
  /// bits); 5 slots have a checked kernel of their own (the checked 8-slot
  /// one would give the same bits but spills over 1 KB and ran misaligned
  /// rows 4.4x slower).
  static constexpr int checked_vecs(int vecs) { return vecs == 3 ? 4 : vecs; }

  template <int VECS>
  static Status run_register(const Params& p, const LaunchPlan& plan, int device, const DeviceCaps& caps,
                             cudaStream_t stream) {
    if constexpr (VECS > kMaxVecs) {
      return Status::kErrorUnsupportedShape;
    } else {
      const int team = plan.shape == Shape::kRowsPerWarp ? plan.group : plan.threads;
      if constexpr (!kCheckedOnly) {
        if (whole_form(p, team, VECS)) return run_register_form<VECS, true>(p, plan, device, caps, stream);
      }
      // 3 slots (planned only where they hold the row exactly) have no
      // checked kernel: the checked 4-slot one gives each lane the same
      // columns in the same order (the 4th slot, empty, adds nothing), so the
      // same bits.
      return run_register_form<checked_vecs(VECS), false>(p, plan, device, caps, stream);
    }
  }

  /// A row across a cluster, each CTA's part in registers (planned where
  /// allows_cluster_register_slots holds; WHOLE when every access
  /// is slot-aligned, the parts being whole by plan). Grid: the resident
  /// clusters, striding over the rows; relayed rows (kRelaysRows) park their
  /// parts in relay_smem_bytes of dynamic shared memory.
  static Status run_cluster_registers(const Params& p, LaunchPlan& plan, int device, const DeviceCaps& caps,
                                      cudaStream_t stream) {
    if constexpr (!kClusterRegisterSlots) {
      return Status::kErrorUnsupportedShape;  // never planned: no such kernel is instantiated
    } else {
      using kernel::SmemLoop;
      if constexpr (kSplitsParts) {
        // Split parts (the plan gave their shared memory), WHOLE or checked.
        constexpr int kVecs = kernel::kSplitPartVecs;
        constexpr int kTeam = kernel::kSplitPartTeam;
        if (plan.vecs == kVecs && plan.threads == kTeam && plan.smem_bytes == kernel::split_part_smem_bytes(kTeam)) {
          if constexpr (!kCheckedOnly) {
            if (p.whole_access) {
              return launch_cluster_loop<kVecs, true, kTeam, SmemLoop::kSplitPart>(p, plan, plan.smem_bytes, device,
                                                                                   caps, stream);
            }
          }
          return launch_cluster_loop<kVecs, false, kTeam, SmemLoop::kSplitPart>(p, plan, plan.smem_bytes, device, caps,
                                                                                stream);
        }
      }
      constexpr int V = kFourSlotClusterParts ? PlanTuning::kMaxRegisterBytes / 16 : PlanTuning::kWideVecs;
      if (plan.vecs != V) return Status::kErrorUnsupportedShape;  // never planned: no such kernel
      constexpr bool kSmemLoops = kernel::kRingsRows<Problem> || kernel::kPrefetchesRows<Problem>;
      if constexpr (kSmemLoops && !kCheckedOnly) {
        // Ringed rows (kernel::kRingsRows) and prefetched ones
        // (kernel::kPrefetchesRows) run their ring where the plan gave them
        // its shared memory (devices with it; rows both admit, the one the
        // plan chose: cluster_ring_smem_bytes); the rest roll, or run the
        // plain or checked loop, without it.
        if constexpr (kernel::kRingsRows<Problem>) {
          constexpr int kTeam = kernel::kRingTeam;
          if (p.whole_access && plan.threads == kTeam && plan.smem_bytes == kernel::ring_smem_bytes(kTeam)) {
            return launch_cluster_loop<V, true, kTeam, SmemLoop::kRing>(p, plan, plan.smem_bytes, device, caps, stream);
          }
        }
        if constexpr (kernel::kPrefetchesRows<Problem>) {
          constexpr int kTeam = kernel::kPrefetchTeam;
          if (p.whole_access && plan.threads == kTeam && plan.smem_bytes == kernel::prefetch_smem_bytes(kTeam)) {
            return launch_cluster_loop<V, true, kTeam, SmemLoop::kPrefetch>(p, plan, plan.smem_bytes, device, caps,
                                                                            stream);
          }
        }
      }
      // The loops below use shared memory only to relay rows
      // (kernel::kRelaysRows, relay_smem_bytes); rows that ring or prefetch
      // never relay, and run them without it.
      static_assert(!(kSmemLoops && kernel::kRelaysRows<Problem>),
                    "normkit: rows that ring or prefetch must not also relay (the launcher would launch their "
                    "fallback loop without the relay's shared memory): narrow kRelaysRows, kRingsRows or "
                    "kPrefetchesRows");
      const size_t smem = kSmemLoops ? 0 : plan.smem_bytes;
      if constexpr (kernel::kRollsRows<Problem>) {
        // Rolled rows at the CTA sizes the plan gives rows of powers of two
        // take them at compile time (kernel::row_cluster_registers' TEAM).
        if (p.whole_access && plan.threads == 1024) {
          return launch_cluster_loop<V, true, 1024>(p, plan, smem, device, caps, stream);
        }
        if (p.whole_access && plan.threads == 512) {
          return launch_cluster_loop<V, true, 512>(p, plan, smem, device, caps, stream);
        }
      }
      if constexpr (!kCheckedOnly) {
        if constexpr (kFixedStrideFullTeam) {
          if (p.whole_access && plan.threads == kernel::kClusterRegistersMaxThreads) {
            return launch_cluster_loop<V, true, 0, SmemLoop::kNone, kernel::RowHandout::kFixedStride>(p, plan, smem,
                                                                                                     device, caps,
                                                                                                     stream);
          }
        }
        if (p.whole_access) return launch_cluster_loop<V, true>(p, plan, smem, device, caps, stream);
      }
      return launch_cluster_loop<V, false>(p, plan, smem, device, caps, stream);
    }
  }

  /// Launches row_cluster_registers<Problem, VECS, WHOLE, TEAM, LOOP, HANDOUT>
  /// on the resident clusters (launch_resident), its start staggered where
  /// that instantiation takes the counter (kernel::kTakesCounter, the
  /// predicate the kernel compiles the wait by), so that
  /// plan.start_stagger_cycles reports the wait the kernel runs, and with the
  /// caller's counter only in calls of kernel::kCounterMinRounds rows or more
  /// per resident cluster.
  template <int VECS, bool WHOLE, int TEAM = 0, kernel::SmemLoop LOOP = kernel::SmemLoop::kNone,
            kernel::RowHandout HANDOUT = kernel::RowHandout::kCounter>
  static Status launch_cluster_loop(const Params& p, LaunchPlan& plan, size_t smem, int device, const DeviceCaps& caps,
                                    cudaStream_t stream) {
    constexpr bool kStaggers = kernel::kTakesCounter<Problem, WHOLE, LOOP, HANDOUT>;
    return launch_resident(&kernel::row_cluster_registers<Problem, VECS, WHOLE, TEAM, LOOP, HANDOUT>, p, plan, smem,
                           device, caps, stream, kStaggers ? &plan.start_stagger_cycles : nullptr,
                           kernel::kCounterMinRounds<Problem, WHOLE, TEAM, LOOP>);
  }

  /// Launches `kernel(p, plan.chunk)` on as many CTAs or clusters as are
  /// resident at once (at most one per row); they stride over the rest.
  /// `stagger`: for the row_cluster_registers loops that wait for it
  /// (launch_cluster_loop, kernel::kTakesCounter), receives the cycles
  /// between the phases of the clusters' start (Params::start_stagger_cycles),
  /// staggered only in calls with a counter (kernel/start_stagger.cuh); null:
  /// not staggered. `counter_min_rounds`: calls with fewer rows per resident
  /// cluster run without the caller's counter (kernel::kCounterMinRounds).
  template <class Kernel>
  static Status launch_resident(Kernel kernel, const Params& p, const LaunchPlan& plan, size_t smem, int device,
                                const DeviceCaps& caps, cudaStream_t stream, uint32_t* stagger = nullptr,
                                int64_t counter_min_rounds = 0) {
    int64_t units = 0;
    const Status s =
        resident_units(reinterpret_cast<const void*>(kernel), device, caps, plan.threads, smem, plan.cluster, &units);
    if (s != Status::kSuccess) return s;
    const int64_t clusters = p.rows < units ? p.rows : units;
    if (stagger == nullptr && counter_min_rounds == 0) {
      return launch_kernel(kernel, clusters * plan.cluster, plan.threads, smem, plan.cluster, stream, p, plan.chunk);
    }
    Params q = p;
    if (q.rows < counter_min_rounds * clusters) q.row_counter = nullptr;
    if (stagger != nullptr) {
      q.start_stagger_cycles =
          q.row_counter == nullptr
              ? 0
              : start_stagger_cycles(q.rows, clusters, row_traffic_bytes(q), caps.dram_bytes_per_ns, caps.sm_clock_khz);
    }
    const Status launched =
        launch_kernel(kernel, clusters * plan.cluster, plan.threads, smem, plan.cluster, stream, q, plan.chunk);
    if (stagger != nullptr) *stagger = launched == Status::kSuccess ? q.start_stagger_cycles : 0;
    return launched;
  }

  /// Bytes of DRAM traffic a row makes, about: x read and y written, and
  /// for fused adds the residual read and the sum written in the residual's
  /// type (Input::Storage).
  static double row_traffic_bytes(const Params& p) {
    const double xy = static_cast<double>(sizeof(typename Problem::X) + sizeof(typename Problem::Y));
    const double residual = Problem::Input::kIsPlainCopy ? 0.0 : 2.0 * sizeof(typename Problem::Storage);
    return static_cast<double>(p.cols) * (xy + residual);
  }

  static Status run_chunked(const Params& p, const LaunchPlan& plan, int device, const DeviceCaps& caps,
                            cudaStream_t stream) {
    if constexpr (Problem::Output::kNeedsRowAbsMax) {
      // The plan never streams outputs that need the row's maximum (the row
      // must stay on chip), so no streaming kernel is instantiated for them.
      if (plan.shape == Shape::kStreaming) return Status::kErrorUnsupportedShape;
      return run_chunked_form<true>(p, plan, device, caps, stream);
    } else {
      return plan.shape == Shape::kStreaming ? run_chunked_form<false>(p, plan, device, caps, stream)
                                             : run_chunked_form<true>(p, plan, device, caps, stream);
    }
  }

  template <bool STAGED>
  static Status run_chunked_form(const Params& p, const LaunchPlan& plan, int device, const DeviceCaps& caps,
                                 cudaStream_t stream) {
    // One row at a time per CTA or cluster (streaming plans no shared memory).
    return launch_resident(&kernel::row_chunked<Problem, STAGED>, p, plan, STAGED ? plan.smem_bytes : 0, device,
                           caps, stream);
  }

  /// The shape that would run these params on the current device.
  static Status plan(const Params& p, const LaunchOptions& opts, LaunchPlan* out, int* device = nullptr,
                     DeviceCaps* caps_out = nullptr) {
    int dev = 0;
    DeviceCaps caps;
    Status s = current_device_caps(&dev, &caps);
    if (s != Status::kSuccess) return s;
    if (device) *device = dev;
    if (caps_out) *caps_out = caps;
    return choose_plan(format(p), caps, opts.shape, out);
  }

  /// Launches validated params (strides resolved, rows > 0).
  static Status run(Params p, const LaunchOptions& opts, cudaStream_t stream) {
    if (!row_counter_aligned(opts.row_counter) || row_counter_overlaps(p, opts.row_counter)) {
      return Status::kErrorInvalidWorkspace;
    }
    p.row_counter = opts.row_counter;
    int device = 0;
    DeviceCaps caps;
    LaunchPlan lp;
    Status s = plan(p, opts, &lp, &device, &caps);
    if (s != Status::kSuccess) return s;
    p.x_access = access_bytes_for(p.x, p.x_stride, sizeof(typename Problem::X), 16);
    p.y_access = access_bytes_for(p.y, p.y_stride, sizeof(typename Problem::Y), 16);
    Problem::Input::prepare(p.input);
    Problem::Output::prepare(p.output);
    p.whole_access = whole_access(p);
    lp.paired = run_paired(p, lp, caps, opts);
    lp.roomy = run_roomy(p, lp, caps);
    lp.tight = run_tight(p, lp);
    // Rows that would ring or prefetch (the plan gave the ring's shared
    // memory) but are not slot-aligned run the checked loop, without it:
    // what ran says so.
    if ((kernel::kRingsRows<Problem> || kernel::kPrefetchesRows<Problem>) && !p.whole_access &&
        lp.shape == Shape::kRowInClusterRegisters) {
      lp.smem_bytes = 0;
    }
    if constexpr (kMayShiftStores) {
      if (!p.whole_access && (p.y_access < 16 || p.input.residual_out_access < 16)) {
        s = Launcher<WithShiftedStores<Problem>>::dispatch(p, lp, device, caps, stream);
      } else {
        s = dispatch(p, lp, device, caps, stream);
      }
    } else {
      s = dispatch(p, lp, device, caps, stream);
    }
    if (s == Status::kSuccess && opts.launched != nullptr) *opts.launched = lp;
    return s;
  }

  static Status dispatch(const Params& p, LaunchPlan& lp, int device, const DeviceCaps& caps,
                         cudaStream_t stream) {
    switch (lp.shape) {
      case Shape::kRowsPerWarp:
      case Shape::kRowPerBlock:
        switch (lp.vecs) {
          case 1: return run_register<1>(p, lp, device, caps, stream);
          case 2: return run_register<2>(p, lp, device, caps, stream);
          case 3: return run_register<3>(p, lp, device, caps, stream);
          case 4: return run_register<4>(p, lp, device, caps, stream);
          case 5:  // planned only for rows that may pair: no such kernel otherwise
            if constexpr (kPairs) return run_register<5>(p, lp, device, caps, stream);
            return Status::kErrorUnsupportedShape;
          case 8: return run_register<8>(p, lp, device, caps, stream);
          default: return Status::kErrorUnsupportedShape;
        }
      case Shape::kRowInClusterRegisters: return run_cluster_registers(p, lp, device, caps, stream);
      default: return run_chunked(p, lp, device, caps, stream);
    }
  }
};

}  // namespace detail
NORMKIT_NAMESPACE_END
