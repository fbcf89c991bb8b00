// bench/src/suites.cu: the benchmark sets and their names.
//
//   copy/<memcpy|vector>/moved_MiB:1024                   copy ceilings, 1 GiB moved
//   sweep/<op>/<dtype>/N:<n>/M:<m>                        x about 512 MiB, L2 flushed
//   small_batch/<op>/bf16/N:<n>/M:<m>                     per call, CUDA-graph replay
//                                                         (N: the op's small_batch_cols, else 4096 and 8192)
//   misaligned/<op>/bf16/N:<n>/M:<m>                      as sweep, x (and the residual) one element
//                                                         off 16-byte alignment (N: kMisalignedCols)
//   shape/<op>/<dtype>/N:<n>/M:<m>/shape:<shape>          NORMKIT_BENCH_SHAPES=1 only
//
// Google Benchmark appends "/iterations:1/manual_time". bench/report.py parses these names.
#include "suites.hpp"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cases.hpp"
#include "copy.hpp"
#include "op_registry.hpp"

namespace nkbench {
namespace {

constexpr int64_t kMiB = int64_t(1) << 20;
constexpr int64_t kSweepXBytes = 512 * kMiB;    // x per call: ~10x the H200's L2
constexpr int64_t kCopyBenchMoved = 1024 * kMiB;  // read + written, like a 512 MiB x and y

const std::vector<int64_t> kSweepCols = {64,   128,   256,   512,   768,   1024,  2048,   4096,
                                         5120, 8192,  12288, 16384, 32768, 65536, 131072, 262144};
const std::vector<int64_t> kSmallBatchRows = {1, 8, 32, 128, 512, 2048};
const std::vector<int64_t> kSmallBatchCols = {4096, 8192};
/// Rows whose x is not 16-byte aligned run the checked forms of the kernels
/// the plan chose (the plan may not depend on alignment: aligned and
/// misaligned rows give the same bits); these lengths cover 4 slots a
/// thread, 8 slots in one CTA (512 and 1024 threads), a cluster of 2, and
/// one of 4 (RMSNorm there takes registers over staging since change 96, so
/// a misaligned row runs the checked register loop).
const std::vector<int64_t> kMisalignedCols = {4096, 32768, 65536, 131072, 262144};
constexpr int64_t kShapeMinCols = 1024;  // below, only rows_per_warp and row_per_block compete
const std::vector<normkit::Shape> kForcedShapes = {normkit::Shape::kRowsPerWarp, normkit::Shape::kRowPerBlock,
                                                   normkit::Shape::kRowInSmem, normkit::Shape::kRowInCluster,
                                                   normkit::Shape::kStreaming,
                                                   normkit::Shape::kRowInClusterRegisters};

benchmark::internal::Benchmark* configure(benchmark::internal::Benchmark* b) {
  // One iteration whose manual time is the median of the samples taken inside it.
  return b->UseManualTime()->Iterations(1)->Unit(benchmark::kMicrosecond);
}

std::string norm_name(const char* set, const OpSpec& op, int64_t rows, int64_t cols) {
  return std::string(set) + "/" + op.name + "/" + dtype_name(op.dtype) + "/N:" + std::to_string(cols) +
         "/M:" + std::to_string(rows);
}

void add_norm(const std::string& name, const NormCase& c) {
  configure(benchmark::RegisterBenchmark(name.c_str(), [c](benchmark::State& s) { run_norm_case(s, c); }));
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

void register_copies() {
  for (CopyKind kind : {CopyKind::kMemcpy, CopyKind::kVector}) {
    const std::string name =
        std::string("copy/") + copy_kind_name(kind) + "/moved_MiB:" + std::to_string(kCopyBenchMoved / kMiB);
    configure(benchmark::RegisterBenchmark(name.c_str(), [kind](benchmark::State& s) {
      run_copy_case(s, kind, kCopyBenchMoved, Method::kFlushed);
    }));
  }
}

/// NORMKIT_BENCH_SWEEP_ROWS="N=M,N=M,...": the sweep's M for those N instead
/// of 512 MiB of x (for instance M a whole number of the resident clusters'
/// rounds, to see what the batch's last partial round costs). Unset: none.
int64_t sweep_rows_override(int64_t cols) {
  const char* spec = std::getenv("NORMKIT_BENCH_SWEEP_ROWS");
  while (spec != nullptr && *spec != '\0') {
    char* end = nullptr;
    const long long n = std::strtoll(spec, &end, 10);
    if (end == spec || *end != '=') break;
    const char* m_begin = end + 1;
    const long long m = std::strtoll(m_begin, &end, 10);
    if (end == m_begin) break;
    if (n == cols && m > 0) return m;
    spec = *end == ',' ? end + 1 : end;
  }
  return 0;
}

int64_t sweep_rows(const OpSpec& op, int64_t cols) {
  if (const int64_t rows = sweep_rows_override(cols); rows > 0) return rows;
  const int64_t rows = kSweepXBytes / (cols * static_cast<int64_t>(dtype_size(op.dtype)));
  return rows < 1 ? 1 : rows;
}

/// False, with a note on stderr, when normkit has no kernel shape for rows of
/// `cols` (per-row fp8 scales need the row on chip); any other plan failure
/// registers, to show up as the benchmark's error.
bool plannable(const OpSpec& op, int64_t cols) {
  normkit::LaunchPlan plan;
  if (op.plan(cols, normkit::LaunchOptions{}, &plan) != normkit::Status::kErrorUnsupportedShape) return true;
  std::fprintf(stderr, "normkit_bench: %s/%s: no kernel shape holds N = %lld on this device; left out\n",
               op.name.c_str(), dtype_name(op.dtype), static_cast<long long>(cols));
  return false;
}

void register_sweep() {
  for (const OpSpec* op : registered_ops()) {
    for (int64_t cols : kSweepCols) {
      if (!plannable(*op, cols)) continue;
      const int64_t rows = sweep_rows(*op, cols);
      add_norm(norm_name("sweep", *op, rows, cols), NormCase{op, rows, cols, normkit::Shape::kAuto, Method::kFlushed});
    }
  }
}

void register_small_batch() {
  for (const OpSpec* op : registered_ops()) {
    if (op->dtype != DType::kBF16) continue;
    for (int64_t cols : op->small_batch_cols.empty() ? kSmallBatchCols : op->small_batch_cols) {
      if (!plannable(*op, cols)) continue;
      for (int64_t rows : kSmallBatchRows) {
        add_norm(norm_name("small_batch", *op, rows, cols),
                 NormCase{op, rows, cols, normkit::Shape::kAuto, Method::kGraphReplay});
      }
    }
  }
}

/// The sweep's bf16 rows with x (and, for the fused add, the residual; in
/// place also y and residual_out, which are them) one element past 16-byte
/// alignment: the slowest case the library has (docs/performance.md,
/// "Misaligned long rows"), measured so that it stays in view.
void register_misaligned() {
  for (const OpSpec* op : registered_ops()) {
    if (op->dtype != DType::kBF16) continue;
    for (int64_t cols : kMisalignedCols) {
      if (!plannable(*op, cols)) continue;
      const int64_t rows = sweep_rows(*op, cols);
      NormCase c{op, rows, cols, normkit::Shape::kAuto, Method::kFlushed};
      c.input_offset = 1;
      add_norm(norm_name("misaligned", *op, rows, cols), c);
    }
  }
}

/// Every shape that can hold N, for exploring the automatic choice; shapes
/// the device or N rule out (normkit's plan refuses them) are left out.
void register_forced_shapes() {
  for (const OpSpec* op : registered_ops()) {
    if (op->dtype != DType::kBF16 && op->dtype != DType::kF32) continue;
    for (int64_t cols : kSweepCols) {
      if (cols < kShapeMinCols) continue;
      const int64_t rows = sweep_rows(*op, cols);
      for (normkit::Shape shape : kForcedShapes) {
        normkit::LaunchPlan plan;
        if (op->plan(cols, normkit::LaunchOptions{shape}, &plan) != normkit::Status::kSuccess) continue;
        add_norm(norm_name("shape", *op, rows, cols) + "/shape:" + normkit::shape_name(shape),
                 NormCase{op, rows, cols, shape, Method::kFlushed});
      }
    }
  }
}

}  // namespace

void register_benchmarks() {
  register_copies();
  register_sweep();
  register_small_batch();
  register_misaligned();
  if (env_flag("NORMKIT_BENCH_SHAPES")) register_forced_shapes();
}

}  // namespace nkbench
