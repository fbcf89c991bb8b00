// normkit/launch/plan.cuh: which kernel shape runs a problem, and with which
// sizes. A pure host function of N, the element sizes and the device, never of
// M: so a row's result does not depend on the batch it comes in (see
// docs/design.md, "Batch invariance"). The two choices the launcher makes from
// M, the paired form of a plan with `may_pair` and row_per_block's roomy form,
// give the same bits either way.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../config.cuh"
#include "../kernel/row_chunked.cuh"
#include "../kernel/row_cluster_registers.cuh"
#include "../kernel/row_per_block.cuh"
#include "../kernel/rows_per_warp.cuh"
#include "../status.cuh"

NORMKIT_NAMESPACE_BEGIN

/// The kernel shapes. kAuto lets the launcher choose.
enum class Shape : int {
  kAuto = 0,
  kRowsPerWarp,   ///< several short rows per warp, rows in registers
  kRowPerBlock,   ///< one CTA per row, row in registers
  kRowInSmem,     ///< one CTA per row, row staged in shared memory
  kRowInCluster,  ///< one cluster per row (sm_90), row staged across the CTAs' shared memory
  kStreaming,     ///< row read from memory once per pass; no limit on N
  /// One cluster per row (sm_90), each CTA holding its part in registers (8
  /// slots per thread, 4 for fused-add 16-bit LayerNorm rows:
  /// detail::four_slot_cluster_parts, or 8 with half of them in shared memory
  /// in clusters of 2: kernel/row_split_part.cuh; up to 1024 threads); only for
  /// problems whose rows may take them there
  /// (detail::allows_cluster_register_slots), and only rows that split into
  /// whole warps of those slots. Automatic for rows
  /// that need to stay on chip (per-row quantization) past one CTA, and for
  /// others where it measured faster (plan.cuh, registers_beat_staging).
  kRowInClusterRegisters,
};

inline const char* shape_name(Shape s) noexcept {
  switch (s) {
    case Shape::kAuto: return "auto";
    case Shape::kRowsPerWarp: return "rows_per_warp";
    case Shape::kRowPerBlock: return "row_per_block";
    case Shape::kRowInSmem: return "row_in_smem";
    case Shape::kRowInCluster: return "row_in_cluster";
    case Shape::kStreaming: return "streaming";
    case Shape::kRowInClusterRegisters: return "row_in_cluster_registers";
  }
  return "unknown";
}

/// Whether rows run in the paired register forms (LaunchOptions::pairing).
enum class LanePairing : int {
  kAuto = 0,  ///< by batch size: paired when the batch's x is larger than the L2 cache
  kOff,       ///< never paired
  kOn,        ///< paired wherever the plan allows (LaunchPlan::may_pair)
};

/// What the plan needs to know about the device (read once per device and cached).
struct DeviceCaps {
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  int max_smem_per_block_optin = 0;  ///< bytes of dynamic + static shared memory a CTA may opt into
  bool cluster_launch = false;       ///< thread-block clusters (sm_90+)
  int64_t l2_bytes = 0;              ///< L2 cache size (the paired form's choice by batch size)
  int sm_clock_khz = 0;              ///< peak SM clock (the clusters' staggered start; 0: not reported)
  double dram_bytes_per_ns = 0;      ///< nominal DRAM rate (the same; 0: not reported)
};

/// What the plan needs to know about the rows.
struct RowFormat {
  int64_t cols = 0;
  int vec = 0;                 ///< elements per slot (16 bytes of x)
  int storage_bytes = 0;       ///< bytes per element when a row is staged in shared memory
  bool needs_on_chip = false;  ///< the output needs the whole row on chip (per-row quantization)
  /// The output quantizes (per-row or static scale: Output::kScalesByFactor),
  /// so its rows may pair (types_may_pair).
  bool quantized = false;
  int row_reductions = 1;      ///< reductions per row of a row held in registers (TwoPass: 2)
  bool folds_each_part = false;  ///< the statistics fold through fold_slots (kFoldsEachPart)
  bool relays_rows = false;  ///< row_cluster_registers relays these rows (kernel::kRelaysRows)
  /// row_cluster_registers runs these rows through a ring in shared memory
  /// in CTAs of kernel::kRingTeam threads (kernel::kRingsRows).
  bool rings_rows = false;
  /// row_cluster_registers reads these rows' first slots from a ring the
  /// copy engine fills, in CTAs of kernel::kPrefetchTeam threads
  /// (kernel::kPrefetchesRows).
  bool prefetches_rows = false;
  /// The row is x's bytes (Input::kIsPlainCopy); false for a fused add,
  /// whose input stores h as it loads x and the residual.
  bool plain_input = true;
  /// row_cluster_registers may hold these rows in parts split between
  /// registers and shared memory (kernel::kSplitsParts).
  bool splits_parts = false;
};

struct LaunchPlan {
  Shape shape = Shape::kAuto;
  int threads = 0;         ///< threads per CTA
  int vecs = 0;            ///< slots per thread (register shapes, row_in_cluster_registers)
  int group = 0;           ///< lanes per row (rows_per_warp)
  int cluster = 1;         ///< CTAs per row (chunked and cluster-register shapes)
  int64_t chunk = 0;       ///< columns per CTA (chunked and cluster-register shapes)
  size_t smem_bytes = 0;   ///< dynamic shared memory per CTA
  /// A register plan at 4 slots (3 in rows_per_warp, 5 in row_per_block) may
  /// run paired (half the threads or lanes, the same bits;
  /// kernel/row_per_block.cuh, kernel/rows_per_warp.cuh). Set by the plan.
  bool may_pair = false;
  /// Whether the paired form runs: chosen by the launcher from may_pair, the
  /// batch size and the row's alignment (LaunchOptions::pairing); false in a
  /// plan from *_plan, what ran in LaunchOptions::launched.
  bool paired = false;
  /// Whether row_per_block's ROOMY form runs (compiled for one 512-thread
  /// CTA per SM: more registers a thread, the same bits; kernel/row_per_block.cuh):
  /// chosen by the launcher from the batch size and the problem; false in a
  /// plan from *_plan, what ran in LaunchOptions::launched.
  bool roomy = false;
  /// Whether row_per_block's tight form runs (4-slot rows in CTAs of 321-384
  /// threads compiled for three CTAs an SM: at most 56 registers a thread,
  /// the same bits; kernel/row_per_block.cuh, kTightFourSlotRows): chosen by
  /// the launcher; false in a plan from *_plan, what ran in
  /// LaunchOptions::launched.
  bool tight = false;
  /// SM cycles between the phases of the clusters' staggered start
  /// (kernel/start_stagger.cuh): set by the launcher for cluster-register
  /// rows of a call with a row counter and enough rows; 0 in a plan from
  /// *_plan, and where none ran.
  uint32_t start_stagger_cycles = 0;
};

/// The tuning constants of the automatic choice, in one place (docs/performance.md
/// records the measurements behind them).
struct PlanTuning {
  static constexpr int kMaxRegisterBytes = 64;            ///< bytes of a row a thread holds (register shapes)
  static constexpr int kWideRegisterBytes = 128;          ///< ... in wide rows (see wide_slots_fit)
  static constexpr int kWideVecs = kWideRegisterBytes / 16;  ///< slots per thread in wide rows
  /// largest x row in one CTA's registers, wide (1024 threads of 8 slots)
  static constexpr int64_t kAutoWideRegisterRowBytes = 131072;
  static constexpr int64_t kShortRowBytes = 2048;          ///< x rows up to this size ...
  static constexpr int kShortRowRegisterBytes = 32;        ///< ... hold 32 bytes per thread
  static constexpr int64_t kAutoRegisterRowBytes = 32768;  ///< largest x row (bytes) kept in registers
  static constexpr int64_t kStagedChunkBytes = 98304;      ///< target staged bytes per CTA (two CTAs per SM)
  static constexpr int64_t kAutoStagedRowBytes = 524288;   ///< longest row staged on chip; longer rows stream
  static constexpr int kMaxCluster = 8;                    ///< portable cluster size limit
  static constexpr int kStreamingCluster = 8;
  static constexpr int64_t kPairedMinRowBytes = 4096;      ///< row_per_block rows from this size may run paired
  /// Longest x row kept on chip (per-row quantization) in one CTA's
  /// registers: longer rows (1024-thread CTAs, one per SM) split over a
  /// cluster of 2 CTAs of half the threads, two per SM, so that one CTA's
  /// arithmetic runs while the other's loads are in flight (per-row int8 bf16
  /// N = 65536 89.8% -> 92.6% of the copy, fp8 level; docs/performance.md,
  /// change 76).
  static constexpr int64_t kOneCtaOnChipRowBytes = 65536;
  /// The same for 16-bit LayerNorm rows with per-row scales held at 4 slots
  /// (per_row_four_slot_parts): past 32 KiB of x (bf16 N = 32768) they too
  /// split over a cluster of 2 CTAs of 512 threads, two per SM, instead of
  /// one CTA of 1024 alone on its SM, which loads nothing while it reduces
  /// and writes (per-row fp8 / int8 bf16 32768 82.7% -> 85.1% / 82.0% ->
  /// 84.5% of the copy on an H100, misaligned 49.4% -> 55.6%;
  /// docs/performance.md, change 185).
  static constexpr int64_t kOneCtaPerRowLayerNormRowBytes = 32768;
  /// Largest cluster whose CTAs hold split parts (kernel/row_split_part.cuh:
  /// 8 slots a thread, half in shared memory, where four_slot_cluster_parts
  /// would hold 4 in twice the CTAs): add + LayerNorm bf16 N = 131072 in
  /// clusters of 2, 88.7% -> 90.9% of the copy, against 4-slot parts in
  /// clusters of 4 (change 113; as landed, change 115, run 286: 88.7% ->
  /// 90.5%); N = 262144 in clusters of 4, 84.6% -> 81.5% against clusters
  /// of 8 (docs/performance.md, change 113), so not there.
  static constexpr int kSplitPartMaxCluster = 2;
  /// rows_per_warp groups whose slots span this many columns (group * vec)
  /// may run paired, so that half the lanes still store a 1-byte output in
  /// whole 32-byte sectors (bf16 N = 128, 2 lanes paired: 95% -> 58% of the
  /// copy; half-sector stores are the likely cause, not profiled).
  static constexpr int kPairedMinGroupColumns = 64;
};

namespace detail {

inline int next_pow2(int64_t v) {
  int p = 1;
  while (p < v) p <<= 1;
  return p;
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Whether a problem's rows may be held at 8 slots per thread: only where a
/// slot holds 16 bytes (not a bf16 x with an fp32 residual, whose slots hold
/// 32), and not 16-bit rows with two reductions (TwoPass: LayerNorm): at 8
/// slots those compile to 64 registers and spill 96 bytes, and N = 32768 ran
/// at 65% of the copy against 86% staged (docs/performance.md, change 37).
/// The launcher instantiates 8-slot row_per_block kernels only where this
/// holds. (Measured again in change 101: 16-bit LayerNorm at 8 slots in
/// row_per_block's roomy form, 512 threads at 124 registers, N = 32768 85.5%
/// staged -> 81.8%; 1024 threads at 64 registers, 144 bytes of spills, N =
/// 65536 80.5% -> 50.2%.)
constexpr bool allows_wide_slots(int row_reductions, int storage_bytes, int vec) {
  return vec * storage_bytes <= 16 && (row_reductions < 2 || storage_bytes >= 4);
}

/// Whether a problem's rows may be held at 4 slots a thread in one CTA of up
/// to 1024 threads (row_per_block; 512 otherwise): rows that may not take 8
/// slots (allows_wide_slots false) in 16-byte slots of 16-bit x with two
/// reductions (LayerNorm, add + LayerNorm), whatever their output.
/// Their kernel runs alone on its SM and takes TwoPass's one walk
/// (kernel::AloneOnSm). Measured (docs/performance.md, change 104): bf16
/// N = 32768 in 1024 threads of 4 slots instead of staged, add + LayerNorm
/// 85.3% -> 97.1% of the copy, LayerNorm bf16 85.4% -> 87.0%, fp16 77.0% ->
/// 88.1% (with TwoPass's two walks: 94.9%, 81.6%, 81.2%); LayerNorm bf16 to
/// fp8 (change 157, H100) 86.6% -> 90.8% with a static scale, 65.2% -> 74.2%
/// with per-row scales. The launcher instantiates that kernel only where
/// this holds.
constexpr bool allows_wide_four_slot_team(int row_reductions, int storage_bytes, int vec) {
  return !allows_wide_slots(row_reductions, storage_bytes, vec) && vec * storage_bytes == 16;
}

/// The output quantizes or needs the whole row on chip (RowFormat's
/// `quantized` and `needs_on_chip`, which the predicates below take).
constexpr bool scaled_output(bool quantized, bool needs_on_chip) { return quantized || needs_on_chip; }

/// Whether a problem's rows are held at 4 slots a thread across a cluster's
/// registers with y held between the maximum's walk and the output's
/// (normalize_held_part's kHoldsY: 4 slots, not rolled), instead of staged:
/// rows of plain 16-bit x that allows_wide_four_slot_team admits (16-bit
/// LayerNorm) whose output needs the row's maximum (per-row scales), whose
/// walk for it is a walk of its own (LayerNorm's bias). ptxas (sm_90): 64
/// registers, 8 bytes of spills WHOLE (none in CTAs of 1024, which run at
/// the fixed stride since change 177), 24 checked. Measured on an H100
/// (docs/performance.md, experiment 171, landed as change 172), bf16 to fp8
/// (int8 within 1.6 points) against staging: N = 65536 62.6% -> 74.9% of
/// the copy in clusters of 4 CTAs of 512 threads (73.4% in 2 of 1024),
/// 131072 57.0% -> 68.4% in 8 of 512 (63.8% in 4 of 1024), 262144 53.1% ->
/// 59.1% in 8 of 1024; misaligned rows (the checked form) +8 to +10.5 in
/// those CTAs (+13 in 1024-thread CTAs at 65536). So the plan gives them
/// CTAs of 512 threads, two an SM, where a cluster of at most
/// PlanTuning::kMaxCluster holds the row so, and 1024 otherwise
/// (plan_cluster_registers); other part sizes stay staged
/// (cluster_registers_measured), unmeasured. Experiment 162 held the
/// same rows at 8 slots (no held y; 180 bytes of spills) and lost 9-13
/// points to staging.
constexpr bool per_row_four_slot_parts(int row_reductions, int storage_bytes, int vec, bool needs_on_chip,
                                       bool plain_input) {
  return allows_wide_four_slot_team(row_reductions, storage_bytes, vec) && needs_on_chip && plain_input;
}

/// Rows that read x alone and quantize with a static scale (held across a
/// cluster's registers: allows_cluster_register_slots): from RowFormat's
/// fields, or at compile time from the launcher's.
constexpr bool static_scale_plain(bool quantized, bool needs_on_chip, bool plain_input) {
  return quantized && !needs_on_chip && plain_input;
}
inline bool static_scale_plain(const RowFormat& f) {
  return static_scale_plain(f.quantized, f.needs_on_chip, f.plain_input);
}

/// Whether a problem's rows may be held across a cluster's registers
/// (row_cluster_registers): at 8 slots per thread where allows_wide_slots
/// holds, and for rows of 16-bit x with two reductions (LayerNorm, add +
/// LayerNorm: 16-byte slots of 2-byte elements) whose output neither
/// quantizes nor needs the row's maximum (scaled_output false), or that
/// read x alone and quantize with a static scale (static_scale_plain:
/// LayerNorm to fp8 or int8, change 163). Their WHOLE kernels spill there
/// 16-44 bytes in the cluster's one-walk form (TwoPass with a shift), 24
/// with a static scale, not 144 as in one CTA; the checked ones 660-1068.
/// The plan runs them there only where that measured faster than staging
/// (registers_beat_staging; changes 101 and 163). At 4 slots: fused-add
/// rows (four_slot_cluster_parts), and rows with per-row scales that read x
/// alone (per_row_four_slot_parts; change 172). Not fp32 x
/// with a 16-bit residual, nor fused-add rows with a scaled output
/// (unmeasured). The launcher instantiates row_cluster_registers only where
/// this holds. The arguments are RowFormat's fields of the same names, so
/// the launcher's compile-time predicate and the plan's agree.
constexpr bool allows_cluster_register_slots(int row_reductions, int storage_bytes, int vec, bool quantized,
                                             bool needs_on_chip, bool plain_input) {
  return allows_wide_slots(row_reductions, storage_bytes, vec) ||
         (vec * storage_bytes == 16 && (!scaled_output(quantized, needs_on_chip) ||
                                        static_scale_plain(quantized, needs_on_chip, plain_input))) ||
         per_row_four_slot_parts(row_reductions, storage_bytes, vec, needs_on_chip, plain_input);
}

/// The threads that hold `slots` slots at `vecs` each, if they make whole
/// warps and no more than `max_threads`; 0 otherwise (the register kernels'
/// WHOLE form then needs no bounds and leaves no slot empty).
inline int64_t whole_warp_threads(int64_t slots, int64_t vecs, int max_threads) {
  if (slots % vecs != 0) return 0;
  const int64_t threads = slots / vecs;
  return threads % 32 == 0 && threads <= max_threads ? threads : 0;
}

/// CTAs per row for a row that wants `ctas` of them: rounded up to a power of
/// two (at most kMaxCluster). Measured (docs/performance.md, change 33): a
/// cluster of 3 ran add + RMSNorm bf16 N = 131072 at 68-82% of the copy where
/// one of 4 runs 90%, and 6 lost to 8 at 262144 (fp8 44% against 48%).
inline int cluster_size(int64_t ctas) {
  return ctas <= 1 ? 1 : (ctas >= PlanTuning::kMaxCluster ? PlanTuning::kMaxCluster : next_pow2(ctas));
}

/// Bytes of one row of x (a slot is 16 bytes of x).
inline int64_t x_row_bytes(const RowFormat& f) { return f.vec > 0 ? f.cols * (16 / f.vec) : 0; }

/// Static shared memory the chunked kernel uses besides the staged chunk (reducers), with slack.
inline constexpr size_t kChunkedStaticSmem = 2048;

/// Whether a CTA may opt into `dynamic_bytes` of dynamic shared memory on
/// device `d`, beside its reducers' static shared memory (kChunkedStaticSmem).
inline bool smem_fits(const DeviceCaps& d, size_t dynamic_bytes) {
  return dynamic_bytes + kChunkedStaticSmem <= static_cast<size_t>(d.max_smem_per_block_optin);
}

/// Wide rows: 8 slots per thread in one CTA of whole warps that hold the row
/// exactly (row_per_block's WHOLE form), for x rows past 32 KiB (which 4
/// slots cannot hold) up to 128 KiB (CTAs of up to 1024 threads:
/// kernel::kRowPerBlockWideMaxThreads). Measured (docs/performance.md, change
/// 37): RMSNorm to fp8 with per-row scales N = 32768 73% -> 99% of the copy,
/// int8 68.5% -> 93%, RMSNorm 16-bit N = 32768 92% -> 99%, LayerNorm fp32
/// N = 16384 88% -> 99% (all staged before); change 50, rows of 64-128 KiB
/// in one CTA of 1024 threads instead of a cluster of 2: fp8 with per-row
/// scales bf16 N = 65536 84.5% -> 87%, int8 81% -> 84%, RMSNorm 16-bit 91%
/// -> 92-93%, fused add + RMSNorm within a point. Half the threads per row halve
/// the fixed work per element (the reduction, addresses, the row's scale) and
/// twice the rows are in flight per SM. Not for shorter rows, though there
/// per-row fp8 ran 89-96.5% -> 99-100.5% with x in DRAM (changes 37 and 39):
/// with x in L2 (a row the previous kernel just wrote, graph replay) the
/// 8-slot form was 11-39% slower per call at N = 8192, M = 1-2048 (run 67,
/// change 40), as each thread's serial work doubles; nor for rows that do not
/// split into whole warps. (The checked 8-slot form spills over 1 KB; it
/// runs only where pointers or strides are not slot-aligned, since the plan
/// may not depend on alignment: aligned and misaligned rows give the same
/// bits.)
inline bool wide_slots_fit(const RowFormat& f) {
  if (f.vec <= 0 || f.cols % f.vec != 0 || !allows_wide_slots(f.row_reductions, f.storage_bytes, f.vec)) {
    return false;
  }
  const int64_t bytes = x_row_bytes(f);
  if (bytes <= PlanTuning::kAutoRegisterRowBytes || bytes > PlanTuning::kAutoWideRegisterRowBytes) return false;
  constexpr int kMaxThreads = kernel::row_per_block_max_threads(PlanTuning::kWideVecs);
  return whole_warp_threads(f.cols / f.vec, PlanTuning::kWideVecs, kMaxThreads) > 0;
}

/// Whether row_cluster_registers holds a problem's parts at 4 slots a thread
/// (CTAs of up to 1024 threads, one an SM) rather than 8: fused-add rows
/// (not a plain copy of x) that allows_wide_four_slot_team admits (add +
/// LayerNorm in 16 bits) with an output that neither quantizes nor needs the
/// row maximum (no built-in call quantizes fused-add rows; unmeasured),
/// whose 8-slot parts spill and whose 4-slot ones do
/// not (ptxas: 0 bytes WHOLE, 48 checked, against 44 and 660). Measured
/// (docs/performance.md, change 105): add + LayerNorm bf16 N = 65536
/// (clusters of 2) 85.4% of the copy at 8 slots (84.7% staged) -> 93.1%,
/// 131072 (4) 86.0% -> 89.2%, 262144 (8) 75.0% (4 CTAs of 8 slots) ->
/// 83.6%; plain LayerNorm rows lost at 131072 (clusters of 4, 83.3% ->
/// 73.9%), so they keep 8 slots. The launcher instantiates the 4-slot
/// kernel only where this holds, and no 8-slot register loop there (8-slot
/// parts half in shared memory, split parts, where those fill a cluster of
/// at most PlanTuning::kSplitPartMaxCluster: kernel/row_split_part.cuh).
/// Also rows with per-row scales that read x alone (per_row_four_slot_parts,
/// change 172), in CTAs of 512 or 1024 threads. The arguments are
/// RowFormat's fields of the same names.
constexpr bool four_slot_cluster_parts(int row_reductions, int storage_bytes, int vec, bool quantized,
                                       bool needs_on_chip, bool plain_input) {
  return (allows_wide_four_slot_team(row_reductions, storage_bytes, vec) &&
          !scaled_output(quantized, needs_on_chip) && !plain_input) ||
         per_row_four_slot_parts(row_reductions, storage_bytes, vec, needs_on_chip, plain_input);
}

/// The predicates above from RowFormat's fields.
inline bool per_row_four_slot_parts(const RowFormat& f) {
  return per_row_four_slot_parts(f.row_reductions, f.storage_bytes, f.vec, f.needs_on_chip, f.plain_input);
}
inline bool allows_cluster_register_slots(const RowFormat& f) {
  return allows_cluster_register_slots(f.row_reductions, f.storage_bytes, f.vec, f.quantized, f.needs_on_chip,
                                       f.plain_input);
}
inline bool four_slot_cluster_parts(const RowFormat& f) {
  return four_slot_cluster_parts(f.row_reductions, f.storage_bytes, f.vec, f.quantized, f.needs_on_chip,
                                 f.plain_input);
}

/// The most threads a row_per_block CTA of `vecs` slots may have for these
/// rows: kernel::row_per_block_max_threads, or 1024 at 4 slots where
/// allows_wide_four_slot_team holds.
inline int row_per_block_threads_limit(const RowFormat& f, int vecs) {
  return vecs == 4 && allows_wide_four_slot_team(f.row_reductions, f.storage_bytes, f.vec)
             ? kernel::kRowPerBlockWideMaxThreads
             : kernel::row_per_block_max_threads(vecs);
}

/// Whether rows too long for 4 slots in 512 threads are held in one CTA of
/// up to 1024 threads at 4 slots (row_per_block_threads_limit): x rows past
/// 32 KiB up to 64 KiB of problems that may not take 8 slots.
inline bool wide_four_slot_team_fits(const RowFormat& f) {
  const int64_t bytes = x_row_bytes(f);
  return f.vec > 0 && allows_wide_four_slot_team(f.row_reductions, f.storage_bytes, f.vec) &&
         bytes > PlanTuning::kAutoRegisterRowBytes &&
         bytes <= int64_t{kernel::kRowPerBlockWideMaxThreads} * PlanTuning::kMaxRegisterBytes;
}

// Register shapes give each thread as many slots as they can (up to 4, 64
// bytes of the row; 8 for wide rows, above) and use as few threads per row
// as that allows: the
// fixed per-thread registers are then spread over more of the row, so more
// rows, and more loads, are in flight per multiprocessor. Short rows (x up
// to 2 KiB) take 2 slots per thread instead where that measured faster
// (docs/performance.md, change 10): rows a warp holds at 2 slots per lane
// and rows that fill whole warps at 2 slots per thread (LayerNorm 16-bit
// +9 to +12 points, fused add + RMSNorm +11, RMSNorm +2 to +9). Not rows that
// would leave a 2-slot CTA's last slots empty (16-bit N = 768: RMSNorm 88% ->
// 71%), nor outputs scaled by the row's maximum (fp8 with per-row scales: -5).
// Statistics with two reductions per row (TwoPass: LayerNorm) keep 4 slots:
// fewer threads per row, so rows up to 1024 elements stay in one warp's
// shuffles instead of a block reduction's barriers (change 23: LayerNorm
// N = 128-1024 +4 to +6.5 points; RMSNorm and add + RMSNorm lose 1-3 at 4).
// Forced register shapes take the same slots whenever those hold the row, so
// forcing the shape auto would pick changes nothing.
inline int preferred_vecs(const RowFormat& f) {
  if (wide_slots_fit(f)) return PlanTuning::kWideVecs;
  const int64_t slots = f.vec > 0 ? ceil_div(f.cols, f.vec) : 0;
  const bool fills_warps = slots <= 64 || slots % 64 == 0;
  const bool two = x_row_bytes(f) <= PlanTuning::kShortRowBytes && fills_warps && !f.needs_on_chip &&
                   f.row_reductions < 2;
  return (two ? PlanTuning::kShortRowRegisterBytes : PlanTuning::kMaxRegisterBytes) / 16;
}

/// Whether a problem's types let its rows pair at all (pairs_fit's part that
/// does not depend on N; the launcher instantiates paired kernels only where
/// it holds): a quantized output (per-row or static scale: change 100),
/// statistics that fold by part, and 8 slots a thread allowed.
constexpr bool types_may_pair(bool quantized, bool folds_each_part, int row_reductions, int storage_bytes,
                              int vec) {
  return quantized && folds_each_part && allows_wide_slots(row_reductions, storage_bytes, vec);
}

/// Whether a register plan may run paired (see LaunchPlan::may_pair): a
/// quantized output (per-row or static scale), 4 slots per thread (3
/// in rows_per_warp, 5 in row_per_block) that hold the row exactly, only
/// where 8 slots per thread are allowed (allows_wide_slots: registers) and
/// the statistics fold by part; in row_per_block, an even number of whole
/// warps and x rows of 4 KiB and more; in rows_per_warp, groups spanning at
/// least 64 columns (kPairedMinGroupColumns: bf16 groups of 8-32 lanes, fp32
/// of 16-32). A pure function of N and the types, as the plan: the launcher
/// then takes the paired form for batches whose x is larger than the L2
/// cache, and the unpaired one otherwise. Measured (docs/performance.md), x
/// in DRAM: RMSNorm to fp8 with per-row scales, bf16 N = 2048-16384, 89-97%
/// -> 99-100.5% of the copy, int8 84-93.5% -> 96.5-99.5% (change 41); bf16
/// N = 5120 at 5 slots, fp8 94.8% -> 100.4%, int8 93.1% -> 98.4% (change
/// 47); paired plain and fused-add rows (16-bit and fp32, N = 8192-16384)
/// gained nothing (within a point, some 1-3 lower), so only quantized rows
/// pair: per-row scales, and since change 100 static ones (bf16 N = 16384,
/// fp8 93% of the copy unpaired: 512 threads at 47 registers, two CTAs an
/// SM).
/// rows_per_warp (changes 42 and 46, with 8-slot lanes at 80 registers):
/// bf16 N = 256-1024, fp8 95-97% -> 99.7-102%, int8 92-97% -> 98.6-101.8%;
/// N = 128 (2 lanes paired) 95% -> 58%.
inline bool pairs_fit(const RowFormat& f, const LaunchPlan& p) {
  if (!types_may_pair(f.quantized, f.folds_each_part, f.row_reductions, f.storage_bytes, f.vec)) return false;
  if (p.shape == Shape::kRowsPerWarp) {
    return (p.vecs == 3 || p.vecs == 4) && int64_t{p.group} * f.vec >= PlanTuning::kPairedMinGroupColumns &&
           f.cols == int64_t{p.group} * p.vecs * f.vec;
  }
  return p.shape == Shape::kRowPerBlock && (p.vecs == 4 || p.vecs == 5) && p.threads % 64 == 0 &&
         f.cols == int64_t{p.threads} * p.vecs * f.vec &&
         x_row_bytes(f) >= PlanTuning::kPairedMinRowBytes;
}

inline bool plan_rows_per_warp(const RowFormat& f, int max_vecs, LaunchPlan* p) {
  // At most 4 slots a lane, whatever the row's preference (wide rows are
  // row_per_block's; no wider rows_per_warp kernel is instantiated).
  constexpr int kMaxLaneVecs = PlanTuning::kMaxRegisterBytes / 16;
  if (max_vecs > kMaxLaneVecs) max_vecs = kMaxLaneVecs;
  const int64_t slots = ceil_div(f.cols, f.vec);
  if (slots > 32LL * max_vecs) return false;
  const int group = next_pow2(ceil_div(slots, max_vecs));
  p->shape = Shape::kRowsPerWarp;
  p->threads = kernel::kRowsPerWarpThreads;
  p->group = group < 4 ? 4 : group;
  p->vecs = next_pow2(ceil_div(slots, p->group));
  // 3 slots per lane where they hold the row exactly and 4 would leave a
  // quarter of every lane's slots empty (16-bit N = 768: 32 lanes x 3; 384:
  // 16 x 3): the WHOLE form instead of the checked one (docs/performance.md,
  // change 25). The launcher runs 3 slots only in the WHOLE form; otherwise
  // the checked 4-slot kernel, with the same lanes, slots and order.
  if (p->vecs == 4 && f.cols % f.vec == 0 && slots == 3LL * p->group) p->vecs = 3;
  p->may_pair = pairs_fit(f, *p);
  return true;
}

inline bool plan_row_per_block(const RowFormat& f, int max_vecs, LaunchPlan* p) {
  const int64_t slots = ceil_div(f.cols, f.vec);
  // Half the slots per thread where that makes whole warps hold the row
  // exactly (the kernels' WHOLE form: no bounds, no empty slots), e.g. fp32
  // N = 768: 96 threads of 2 slots rather than 64 of 4, a quarter of them
  // empty (docs/performance.md, change 19). Not down to 1 slot: unmeasured.
  if (f.cols % f.vec == 0) {
    // 5 slots where whole warps at 4 would be an odd number or none, so that
    // the row pairs (e.g. bf16 N = 2560, 5120, 7680: 64, 128, 192 threads of
    // 5 slots, not 160 of 2, 160 of 4, 480 of 2; fp32 1280, 2560;
    // docs/performance.md, change 47).
    const int64_t fours = whole_warp_threads(slots, 4, kernel::kRowPerBlockMaxThreads);
    const int64_t fives = whole_warp_threads(slots, 5, kernel::kRowPerBlockMaxThreads);
    int vecs = 0;
    int64_t threads = 0;
    if (max_vecs == 4 && !(fours > 0 && fours % 64 == 0) && fives > 0 && fives % 64 == 0 &&
        types_may_pair(f.quantized, f.folds_each_part, f.row_reductions, f.storage_bytes, f.vec)) {
      vecs = 5;
      threads = fives;
    }
    for (int v = max_vecs; vecs == 0 && v >= 2; v /= 2) {
      threads = whole_warp_threads(slots, v, row_per_block_threads_limit(f, v));
      if (threads > 0) vecs = v;
    }
    if (vecs > 0) {
      p->shape = Shape::kRowPerBlock;
      p->vecs = vecs;
      p->threads = static_cast<int>(threads);
      p->may_pair = pairs_fit(f, *p);
      return true;
    }
  }
  const int64_t threads = ceil_div(ceil_div(slots, max_vecs), 32) * 32;
  if (threads > row_per_block_threads_limit(f, max_vecs)) return false;
  p->shape = Shape::kRowPerBlock;
  p->vecs = max_vecs;
  p->threads = static_cast<int>(threads);
  return true;
}

/// A forced register shape: the preferred slots per thread if they hold the
/// row, else the most a thread may hold.
template <class PlanFn>
inline bool plan_register_forced(const RowFormat& f, PlanFn plan, LaunchPlan* p) {
  return plan(f, preferred_vecs(f), p) || plan(f, PlanTuning::kMaxRegisterBytes / 16, p);
}

inline void set_chunks(const RowFormat& f, int cluster, int threads, LaunchPlan* p) {
  p->cluster = cluster;
  p->chunk = ceil_div(ceil_div(f.cols, cluster), f.vec) * f.vec;
  p->threads = threads;
}

inline bool plan_staged(const RowFormat& f, const DeviceCaps& d, int cluster, LaunchPlan* p) {
  set_chunks(f, cluster, kernel::ChunkedTuning<true>::kThreads, p);
  const size_t bytes = static_cast<size_t>(ceil_div(p->chunk * f.storage_bytes, 16) * 16);
  if (!smem_fits(d, bytes)) return false;
  p->shape = cluster > 1 ? Shape::kRowInCluster : Shape::kRowInSmem;
  p->smem_bytes = bytes;
  return true;
}

/// Whether row_cluster_registers runs rows that both its ring
/// (kernel::kRingsRows) and its prefetching loop (kernel::kPrefetchesRows)
/// admit through the ring, in clusters of `cluster` CTAs: quantized ones
/// (a static scale) in clusters of 4 or more, converted ones (16-bit
/// RMSNorm, Gemma's (1 + w)) only in clusters of 8. Change 107
/// (docs/performance.md; bf16, without a row counter) measured the ring
/// ahead at N = 262144 (clusters of 4) for static int8 81.0% -> 90.3% of
/// the copy, fp8 85.6% -> 91.0%, Gemma 84.8% -> 88.5%, RMSNorm 85.7% ->
/// 87.9%, and at 131072 (clusters of 2) for static int8 and fp8 but not
/// converted rows. Since the row counter and the staggered start (changes
/// 131, 134), which the prefetching loop takes, converted rows of 262144
/// gain by it again (change 140, H100, with a counter): RMSNorm 92.9% ->
/// 97.9%, Gemma 92.9% -> 97.8%, at M = 128 +2.6 and +2.9. Rows with a static scale in clusters of 2 (131072) gain
/// by it too (change 143, H100, with a counter: static fp8, e5m2 and int8
/// 96.8-97.2% -> 98.8-99.6%, M = 128-512 +1.4 to +3.3), but not in clusters
/// of 4 (262144: -0.0 to -0.8), where they keep the ring. Clusters of 8
/// (16-bit rows past 512 KiB) keep the ring, unmeasured either way.
inline bool rings_over_prefetch(const RowFormat& f, int cluster) { return cluster >= (f.quantized ? 4 : 8); }

/// The ring row_cluster_registers runs these rows through in CTAs of
/// `threads` threads in clusters of `cluster`: ringed rows' (kernel::kRingsRows, CTAs of
/// kernel::kRingTeam; rows the prefetching loop admits too where
/// rings_over_prefetch holds) or prefetched rows' (kernel::kPrefetchesRows,
/// CTAs of kernel::kPrefetchTeam, in any cluster: changes 94, 96, 97;
/// 16-bit rows in clusters of 8, past 512 KiB, not measured with it),
/// where the device has the shared memory for it (sm_90's 227 KiB; with
/// less, rows the prefetching loop admits take its smaller ring instead of
/// the ring); 0 for none.
inline size_t cluster_ring_smem_bytes(const RowFormat& f, int64_t threads, int cluster, const DeviceCaps& d) {
  const size_t ring = kernel::ring_smem_bytes(kernel::kRingTeam);
  if (f.rings_rows && threads == kernel::kRingTeam && (!f.prefetches_rows || rings_over_prefetch(f, cluster)) &&
      smem_fits(d, ring)) {
    return ring;
  }
  const size_t prefetch = kernel::prefetch_smem_bytes(kernel::kPrefetchTeam);
  return f.prefetches_rows && threads == kernel::kPrefetchTeam && smem_fits(d, prefetch) ? prefetch : 0;
}

/// A row split across the smallest cluster (2, 4 or 8 CTAs) whose parts fill
/// whole warps at 8 slots per thread (4 where four_slot_cluster_parts
/// holds; up to 1024 threads a CTA), each part in
/// one CTA's registers. First for outputs that need the row on chip: measured
/// against staging (docs/performance.md, change 37), RMSNorm to fp8 with
/// per-row scales N = 65536 70% -> 84.5%, 131072 61% -> 68.5%, 262144 58% ->
/// 64.5%; for RMSNorm bf16 131072 and fused add + RMSNorm it lost 2-5
/// points. CTAs of 1024 threads rather than 512 (change 50): 131072 68% ->
/// 79%, 262144 64.5% -> 68% (int8 65% -> 76%, 63% -> 65.5%). Rows that need
/// not stay on chip take it where it measured faster than the staged shapes
/// (change 52; registers_beat_staging). Rows held at 4 slots hold 8, half of
/// them in shared memory, where that fills a cluster of at most
/// PlanTuning::kSplitPartMaxCluster CTAs (split parts: smem_bytes
/// kernel::split_part_smem_bytes; change 113).
inline bool plan_cluster_registers(const RowFormat& f, const DeviceCaps& d, LaunchPlan* p) {
  if (!d.cluster_launch || f.vec <= 0 || f.cols % f.vec != 0 || !allows_cluster_register_slots(f)) {
    return false;
  }
  const int64_t slots = f.cols / f.vec;
  const bool four_slots = four_slot_cluster_parts(f);
  const int vecs = four_slots ? PlanTuning::kMaxRegisterBytes / 16 : PlanTuning::kWideVecs;
  auto take = [&](int cluster, int64_t threads, int slots_per_thread, size_t smem) {
    p->shape = Shape::kRowInClusterRegisters;
    p->cluster = cluster;
    p->threads = static_cast<int>(threads);
    p->vecs = slots_per_thread;
    p->chunk = f.cols / cluster;
    p->smem_bytes = smem;
    return true;
  };
  // Rows with per-row scales at 4 slots (per_row_four_slot_parts) first in
  // CTAs of exactly 512 threads, two an SM, in any cluster that holds them
  // so (measured above 1024-thread CTAs at bf16 N = 65536 and 131072:
  // change 172), then as every row. They use no shared memory of the
  // plan's (no ring, prefetch, relay or split part).
  if (per_row_four_slot_parts(f)) {
    constexpr int kHalf = kernel::kClusterRegistersMaxThreads / 2;
    for (int c = 2; c <= PlanTuning::kMaxCluster; c *= 2) {
      if (whole_warp_threads(slots, int64_t{c} * vecs, kHalf) == kHalf) return take(c, kHalf, vecs, 0);
    }
  }
  for (int c = 2; c <= PlanTuning::kMaxCluster; c *= 2) {
    // Rows held at 4 slots split their parts where 8-slot ones fill a
    // cluster of at most kSplitPartMaxCluster CTAs of kSplitPartTeam threads
    // (half of each in shared memory; kernel/row_split_part.cuh).
    if (four_slots && f.splits_parts && c <= PlanTuning::kSplitPartMaxCluster &&
        whole_warp_threads(slots, int64_t{c} * kernel::kSplitPartVecs, kernel::kSplitPartTeam) ==
            kernel::kSplitPartTeam &&
        smem_fits(d, kernel::split_part_smem_bytes(kernel::kSplitPartTeam))) {
      return take(c, kernel::kSplitPartTeam, kernel::kSplitPartVecs,
                  kernel::split_part_smem_bytes(kernel::kSplitPartTeam));
    }
    const int64_t threads = whole_warp_threads(slots, int64_t{c} * vecs, kernel::kClusterRegistersMaxThreads);
    if (threads > 0) {
      // Relayed rows park each CTA's part in shared memory: where it does
      // not fit (devices with less to opt into than sm_90's 227 KiB), a
      // larger cluster, whose CTAs hold less, or no such plan.
      size_t smem = f.relays_rows ? kernel::relay_smem_bytes(static_cast<int>(threads), PlanTuning::kWideVecs) : 0;
      if (smem > 0 && !smem_fits(d, smem)) continue;
      // Ringed and prefetched rows take their ring where the device has the
      // shared memory for it (cluster_ring_smem_bytes); elsewhere the plain
      // loop, with none.
      const size_t ring = cluster_ring_smem_bytes(f, threads, c, d);
      if (ring > 0) smem = ring;
      return take(c, threads, vecs, smem);
    }
  }
  return false;
}

/// Whether the automatic plan runs a row that need not stay on chip
/// (plain and fused-add rows) across a cluster's registers (`p`, a
/// row_in_cluster_registers plan) rather than staged or streamed: in
/// clusters of 2, and for rows past what is staged (which would stream).
/// Measured with 1024-thread CTAs (docs/performance.md, change 52):
/// clusters of 2, bf16 N = 131072, RMSNorm 86.5% -> 90% of the copy, add +
/// RMSNorm 92% -> 93.5% (in place the same), LayerNorm fp32 N = 131072 in
/// clusters of 4 77% -> 81% but RMSNorm fp32 there 85% -> 84%, and bf16
/// N = 262144 in clusters of 4 RMSNorm 83.5% -> 79.5%, add + RMSNorm -1 (so
/// not clusters of 4); rows of 1 MiB, fp32 N = 262144 in clusters of 8,
/// streamed before: RMSNorm 66% -> 74%, LayerNorm 62.5% -> 68%. Relayed
/// fp32 rows (kernel::kRelaysRows, change 72) in any cluster: RMSNorm fp32
/// N = 131072 in clusters of 4 85% staged -> 91%; not 16-bit ones (RMSNorm
/// bf16 N = 262144 in clusters of 4, relayed: 83% staged -> 79%). Fused-add
/// rows with one reduction (add + RMSNorm) in any cluster: since change 71
/// keeps their weight in L1 there, bf16 N = 262144 in clusters of 4 reads
/// 88.8% staged -> 91.9%, in place 90.9% -> 92.9% (change 76). Prefetched
/// rows (kernel::kPrefetchesRows) where the plan gave them their ring (or
/// the ring of kernel::kRingsRows, rings_over_prefetch), in
/// any cluster: RMSNorm bf16 N = 262144 in clusters of 4, 82.9% staged ->
/// 86.1% (change 96; the plain loop there 79.4%; ringed, 87.9%: change
/// 107), LayerNorm fp32 N = 131072 in clusters of 4, 76.5% -> 82.4% (change 97). 16-bit rows with two
/// reductions (allows_wide_slots false: LayerNorm) past 128 KiB of x in
/// clusters of 2 (change 101, run 247: LayerNorm bf16 N = 131072 77.5% ->
/// 83.5%, fp16 71.1% -> 79.7%); not in clusters of 4 (LayerNorm bf16
/// 262144 73.0% staged -> 67.2%), nor N = 65536 (clusters of 2 of 512
/// threads: within 1.5 points of staging, and misaligned rows, which run
/// the checked form, lose more). Fused-add ones at 4 slots
/// (four_slot_cluster_parts) in any cluster, in parts of 1024 threads
/// (change 105): add + LayerNorm bf16 65536 84.7% staged -> 93.1%, 131072
/// 89.2%, 262144 67.3% staged -> 83.6% (in 8-slot parts, change 101:
/// 85.4%, 86.0%, 75.0%); parts of fewer threads (rows that are not 32768
/// times a power of two, e.g. 34816: 2 CTAs of 544) stay staged, unmeasured.
inline bool registers_beat_staging(const RowFormat& f, const LaunchPlan& p) {
  if (four_slot_cluster_parts(f)) {
    return p.threads == kernel::kClusterRegistersMaxThreads;  // any cluster, in the measured parts of 1024 threads
  }
  if (!allows_wide_slots(f.row_reductions, f.storage_bytes, f.vec)) {
    // Those with a static scale (allows_cluster_register_slots) past what
    // one CTA holds (64 KiB of x: wide_four_slot_team_fits), in the measured
    // parts: clusters of 2 and 4 CTAs of 512 or 1024 threads (change 163,
    // H100, LayerNorm bf16 to fp8: 65536 in clusters of 2 of 512 threads
    // 84.4% -> 92.6% of the copy, 131072 80.9% -> 92.4%, 262144 in clusters
    // of 4 75.7% -> 84.9%; misaligned rows, the checked form, 48-54% ->
    // 21-24%). Others (e.g. 2 CTAs of 288-480 or 768 threads, clusters of 8
    // past 512 KiB) stay staged or stream, as before: unmeasured.
    if (f.quantized) return p.cluster <= 4 && p.threads % 512 == 0;
    return x_row_bytes(f) > PlanTuning::kAutoWideRegisterRowBytes && p.cluster == 2;
  }
  return p.cluster == 2 || f.cols * f.storage_bytes > PlanTuning::kAutoStagedRowBytes ||
         (f.relays_rows && f.storage_bytes == 4) || (!f.plain_input && f.row_reductions == 1) ||
         (f.prefetches_rows && p.smem_bytes > 0);  // the plan gave them a ring (cluster_ring_smem_bytes)
}

/// The longest x row (bytes) that must stay on chip which the automatic plan
/// holds in one CTA's registers; longer rows split over a cluster's
/// (row_in_cluster_registers) where it holds them: 16-bit LayerNorm rows
/// with per-row scales at 4 slots (per_row_four_slot_parts) past
/// PlanTuning::kOneCtaPerRowLayerNormRowBytes, every other such row past
/// PlanTuning::kOneCtaOnChipRowBytes.
inline int64_t one_cta_on_chip_row_bytes(const RowFormat& f) {
  return per_row_four_slot_parts(f) ? PlanTuning::kOneCtaPerRowLayerNormRowBytes : PlanTuning::kOneCtaOnChipRowBytes;
}

/// Whether the automatic plan takes a row_in_cluster_registers plan `p` for
/// rows that must stay on chip: rows with per-row scales held at 4 slots
/// (per_row_four_slot_parts) only in the measured parts, CTAs of 512 or 1024
/// threads (change 172; others, e.g. 4 CTAs of 640 threads at bf16 N =
/// 81920, stay staged, unmeasured); every other such row in any.
inline bool cluster_registers_measured(const RowFormat& f, const LaunchPlan& p) {
  return !per_row_four_slot_parts(f) || p.threads % (kernel::kClusterRegistersMaxThreads / 2) == 0;
}

inline bool plan_streaming(const RowFormat& f, const DeviceCaps& d, LaunchPlan* p) {
  if (f.needs_on_chip) return false;
  int cluster = 1;
  if (d.cluster_launch) {
    using T = kernel::ChunkedTuning<false>;
    const int64_t per_cta = static_cast<int64_t>(T::kThreads) * f.vec * T::kUnroll;
    const int64_t ctas = ceil_div(f.cols, per_cta);
    cluster = cluster_size(ctas < PlanTuning::kStreamingCluster ? ctas : PlanTuning::kStreamingCluster);
  }
  set_chunks(f, cluster, kernel::ChunkedTuning<false>::kThreads, p);
  p->shape = Shape::kStreaming;
  p->smem_bytes = 0;
  return true;
}

}  // namespace detail

/// Chooses (requested == kAuto) or checks (any other value) the kernel shape.
/// Returns kErrorUnsupportedShape when a requested shape cannot hold the row,
/// or when no shape can (a row that must stay on chip but does not fit).
inline Status choose_plan(const RowFormat& f, const DeviceCaps& d, Shape requested, LaunchPlan* plan) {
  LaunchPlan p;
  bool ok = false;
  switch (requested) {
    case Shape::kRowsPerWarp: ok = detail::plan_register_forced(f, detail::plan_rows_per_warp, &p); break;
    case Shape::kRowPerBlock: ok = detail::plan_register_forced(f, detail::plan_row_per_block, &p); break;
    case Shape::kRowInSmem: ok = detail::plan_staged(f, d, 1, &p); break;
    case Shape::kRowInCluster: {
      if (!d.cluster_launch) break;
      const int64_t row_bytes = f.cols * f.storage_bytes;
      const int64_t ctas = detail::ceil_div(row_bytes, PlanTuning::kStagedChunkBytes);
      ok = detail::plan_staged(f, d, detail::cluster_size(ctas < 2 ? 2 : ctas), &p);
      break;
    }
    case Shape::kStreaming: ok = detail::plan_streaming(f, d, &p); break;
    case Shape::kRowInClusterRegisters: ok = detail::plan_cluster_registers(f, d, &p); break;
    case Shape::kAuto: {
      const int64_t row_bytes = f.cols * f.storage_bytes;  // as staged on chip
      const int vecs = detail::preferred_vecs(f);
      if (detail::plan_rows_per_warp(f, vecs, &p)) {
        ok = true;
      } else if (LaunchPlan r; f.needs_on_chip && detail::x_row_bytes(f) > detail::one_cta_on_chip_row_bytes(f) &&
                                detail::plan_cluster_registers(f, d, &r) &&
                                detail::cluster_registers_measured(f, r)) {
        p = r;  // in CTAs of half the threads, two per SM (one_cta_on_chip_row_bytes)
        ok = true;
      } else if ((detail::x_row_bytes(f) <= PlanTuning::kAutoRegisterRowBytes || detail::wide_slots_fit(f) ||
                  detail::wide_four_slot_team_fits(f)) &&
                 detail::plan_row_per_block(f, vecs, &p)) {
        ok = true;
      } else if (LaunchPlan r; detail::plan_cluster_registers(f, d, &r) &&
                                (f.needs_on_chip ? detail::cluster_registers_measured(f, r)
                                                 : detail::registers_beat_staging(f, r))) {
        p = r;
        ok = true;
      } else if (row_bytes > PlanTuning::kAutoStagedRowBytes && !f.needs_on_chip) {
        // Rows up to 512 KiB are staged across a cluster of up to 8 CTAs:
        // measured against streaming (two reads of the row), a fused add +
        // RMSNorm bf16 N = 262144 87-88% of the copy against 77-79% (change
        // 33), and, once a cluster reduction no longer cost a cluster barrier
        // (change 35), plain rows too: RMSNorm 16-bit N = 262144 68% -> 82.5%,
        // fp32 131072 71.5% -> 85%, LayerNorm bf16 262144 67% -> 73% (change
        // 38). Longer rows stream, but for those a cluster holds in registers
        // (above).
        ok = detail::plan_streaming(f, d, &p);
      } else {
        int c = detail::cluster_size(detail::ceil_div(row_bytes, PlanTuning::kStagedChunkBytes));
        if (c <= 1 || !d.cluster_launch) {
          ok = detail::plan_staged(f, d, 1, &p);
        } else {
          for (; c <= PlanTuning::kMaxCluster && !ok; c *= 2) ok = detail::plan_staged(f, d, c, &p);
        }
        if (!ok) ok = detail::plan_streaming(f, d, &p);
      }
      break;
    }
  }
  if (!ok) return Status::kErrorUnsupportedShape;
  *plan = p;
  return Status::kSuccess;
}

NORMKIT_NAMESPACE_END
