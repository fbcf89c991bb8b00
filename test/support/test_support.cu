#include "test_support.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

namespace nktest {

bool gpu_available() {
  static const bool available = [] {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    return n > 0;
  }();
  return available;
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  if (cudaMalloc(&ptr_, bytes) != cudaSuccess) {
    std::fprintf(stderr, "nktest: cudaMalloc(%zu) failed\n", bytes);
    std::abort();
  }
}
DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}
DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
  o.ptr_ = nullptr;
  o.bytes_ = 0;
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  std::swap(ptr_, o.ptr_);
  std::swap(bytes_, o.bytes_);
  return *this;
}

void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  const int64_t threads = std::max<int64_t>(1, std::min<int64_t>(std::thread::hardware_concurrency(), n / 64 + 1));
  if (threads == 1) {
    fn(0, n);
    return;
  }
  std::vector<std::thread> pool;
  const int64_t per = (n + threads - 1) / threads;
  for (int64_t t = 0; t < threads; ++t) {
    const int64_t b = t * per, e = std::min(n, b + per);
    if (b < e) pool.emplace_back(fn, b, e);
  }
  for (auto& th : pool) th.join();
}

namespace {
// Whether the environment variable `name` is set and is neither empty nor
// "0" (.ci/gpu.sh sets the test modes to 0 or 1).
bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' && v[0] != '0';
}
}  // namespace

bool quick_mode() {
  static const bool quick = env_flag("NKTEST_QUICK");
  return quick;
}

bool racecheck_mode() {
  static const bool racecheck = env_flag("NKTEST_RACECHECK");
  return racecheck;
}

uint64_t fresh_seed() {
  if (const char* s = std::getenv("NKTEST_SEED")) return std::strtoull(s, nullptr, 0);
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

double Rng::normal() {
  double u1 = uniform(), u2 = uniform();
  if (u1 < 1e-300) u1 = 1e-300;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

void store_as(DType t, double v, void* dst) {
  switch (t) {
    case DType::kF32: {
      const float f = static_cast<float>(v);
      std::memcpy(dst, &f, 4);
      break;
    }
    case DType::kF16: {
      const __half h = __double2half(v);
      std::memcpy(dst, &h, 2);
      break;
    }
    case DType::kBF16: {
      const __nv_bfloat16 h = __double2bfloat16(v);
      std::memcpy(dst, &h, 2);
      break;
    }
  }
}

double load_as(DType t, const void* src) {
  switch (t) {
    case DType::kF32: {
      float f;
      std::memcpy(&f, src, 4);
      return f;
    }
    case DType::kF16: {
      __half h;
      std::memcpy(&h, src, 2);
      return __half2float(h);
    }
    case DType::kBF16: {
      __nv_bfloat16 h;
      std::memcpy(&h, src, 2);
      return __bfloat162float(h);
    }
  }
  return 0;
}

Tolerance output_tolerance(DType y) {
  switch (y) {
    case DType::kF32: return {2e-5, 1e-5};
    case DType::kF16: return {1e-4, 1.0 / 1024};  // one ulp of half
    case DType::kBF16: return {1e-3, 1.0 / 128};  // one ulp of bfloat16
  }
  return {0, 0};
}

bool mean_within(const RowReference& ref, double got, double scale) {
  return std::fabs(got - ref.mean) <= (4e-6 * (std::fabs(ref.mean) + 1.0 / ref.rstd) + 1e-7) * scale;
}

bool rstd_within(const RowReference& ref, double got, double scale) {
  return std::fabs(got - ref.rstd) <= 3e-5 * ref.rstd * scale;
}

RowReference reference_row(Op op, const double* x, int64_t n, double eps) {
  RowReference r;
  if (op == Op::kLayerNorm) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += x[i];
    r.mean = s / n;
    double v = 0;
    for (int64_t i = 0; i < n; ++i) v += (x[i] - r.mean) * (x[i] - r.mean);
    r.rstd = 1.0 / std::sqrt(v / n + eps);
  } else {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += x[i] * x[i];
    r.rstd = 1.0 / std::sqrt(s / n + eps);
  }
  return r;
}

std::string describe(const CaseSpec& s) {
  std::ostringstream o;
  o << (s.op == Op::kLayerNorm ? "LayerNorm" : "RMSNorm") << " x=" << dtype_name(s.x) << " y=" << dtype_name(s.y)
    << " w=" << dtype_name(s.w) << (s.stats == StatsKind::kWelford ? " Welford" : "") << " shape="
    << normkit::shape_name(s.shape) << " M=" << s.rows << " N=" << s.cols;
  if (s.x_stride >= 0) o << " x_stride=" << s.x_stride;
  if (s.y_stride >= 0) o << " y_stride=" << s.y_stride;
  if (s.x_misalign) o << " x_misalign=" << s.x_misalign;
  if (s.y_misalign) o << " y_misalign=" << s.y_misalign;
  if (s.in_place) o << " in_place";
  if (!s.weight) o << " no_weight";
  if (!s.bias) o << " no_bias";
  if (!s.stats_out) o << " no_stats";
  if (s.nan_row >= 0) o << " nan_row=" << s.nan_row;
  if (s.row_counter) o << " row_counter";
  o << " eps=" << s.eps << " mean~[" << s.mean_lo << "," << s.mean_hi << "] std~[" << s.std_lo << "," << s.std_hi
    << "]";
  return o.str();
}

namespace {

constexpr size_t kGuardBytes = 256;
constexpr unsigned char kPoison = 0xFF;

struct Failures {
  std::atomic<int64_t> bad_y{0}, bad_stats{0}, clobbered{0};
  std::mutex mutex;
  std::string first;
  void note(const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex);
    if (first.empty()) first = what;
  }
};

// Rows compared in full: all, or a spread sample including the first and last.
std::vector<int64_t> rows_to_compare(const CaseSpec& s) {
  std::vector<int64_t> rows;
  if (s.sample_rows <= 0 || s.sample_rows >= s.rows) {
    rows.resize(s.rows);
    for (int64_t r = 0; r < s.rows; ++r) rows[r] = r;
    return rows;
  }
  for (int64_t i = 0; i < s.sample_rows; ++i) rows.push_back(i * (s.rows - 1) / (s.sample_rows - 1));
  rows.push_back(1);
  rows.push_back(s.rows - 2);
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

}  // namespace

CaseResult run_case(const CaseSpec& s) {
  CaseResult res;
  res.seed = s.seed ? s.seed : fresh_seed();
  const int64_t M = s.rows, N = s.cols;
  const int64_t xs = s.x_stride < 0 ? N : s.x_stride;
  const int64_t ys = s.in_place ? xs : (s.y_stride < 0 ? N : s.y_stride);
  const DType yt = s.in_place ? s.x : s.y;
  const int xe = dtype_size(s.x), ye = dtype_size(yt), we = dtype_size(s.w);
  const int64_t x_elems = s.x_misalign + (M > 0 ? (M - 1) * xs + N : 0);
  const int64_t y_elems = s.in_place ? x_elems : s.y_misalign + (M > 0 ? (M - 1) * ys + N : 0);
  const size_t x_bytes = x_elems * xe + kGuardBytes, y_bytes = y_elems * ye + kGuardBytes;

  // Host x: gaps between rows hold large junk that would wreck any statistic that read it.
  std::vector<unsigned char> hx(x_bytes);
  const double junk = s.x == DType::kF16 ? 30000.0 : 1e30;
  auto fill_junk = [&](int64_t first_elem, int64_t count) {
    for (int64_t i = 0; i < count; ++i) store_as(s.x, junk, &hx[(first_elem + i) * xe]);
  };
  fill_junk(0, s.x_misalign);
  parallel_for(M, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) fill_junk(s.x_misalign + r * xs + N, r + 1 < M ? xs - N : 0);
  });
  fill_junk(x_elems, static_cast<int64_t>(kGuardBytes) / xe);
  unsigned char* hx_base = hx.data() + static_cast<size_t>(s.x_misalign) * xe;
  parallel_for(M, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      Rng rng(res.seed ^ (static_cast<uint64_t>(r) * 0xD1B54A32D192ED03ull + 1));
      const double mu = s.mean_lo + (s.mean_hi - s.mean_lo) * rng.uniform();
      const double sd = s.std_lo + (s.std_hi - s.std_lo) * rng.uniform();
      unsigned char* row = hx_base + static_cast<size_t>(r * xs) * xe;
      for (int64_t c = 0; c < N; ++c) store_as(s.x, mu + sd * rng.normal(), row + c * xe);
    }
  });
  if (s.nan_row >= 0 && s.nan_row < M) {
    store_as(s.x, std::nan(""), hx_base + static_cast<size_t>(s.nan_row * xs + N / 2) * xe);
  }
  std::vector<unsigned char> hw(N * we), hb(N * we);
  {
    Rng rng(res.seed ^ 0xABCDEFull);
    for (int64_t c = 0; c < N; ++c) {
      store_as(s.w, 1.0 + 0.5 * (2 * rng.uniform() - 1), &hw[c * we]);
      store_as(s.w, 0.5 * (2 * rng.uniform() - 1), &hb[c * we]);
    }
  }

  DeviceBuffer dx(x_bytes), dy(s.in_place ? 0 : y_bytes), dw(N * we), db(N * we);
  const size_t stats_bytes = M * 4 + kGuardBytes;
  DeviceBuffer dmean(stats_bytes), drstd(stats_bytes);
  auto check = [&](cudaError_t e, const char* what) {
    if (e != cudaSuccess && res.first_failure.empty()) {
      res.first_failure = std::string(what) + ": " + cudaGetErrorString(e);
      res.bad_y = std::max<int64_t>(res.bad_y, 1);
    }
  };
  check(cudaMemcpy(dx.data(), hx.data(), x_bytes, cudaMemcpyHostToDevice), "upload x");
  if (!s.in_place) check(cudaMemset(dy.data(), kPoison, y_bytes), "poison y");
  check(cudaMemcpy(dw.data(), hw.data(), hw.size(), cudaMemcpyHostToDevice), "upload w");
  check(cudaMemcpy(db.data(), hb.data(), hb.size(), cudaMemcpyHostToDevice), "upload b");
  check(cudaMemset(dmean.data(), kPoison, stats_bytes), "poison mean");
  check(cudaMemset(drstd.data(), kPoison, stats_bytes), "poison rstd");

  NormCall call;
  call.op = s.op;
  call.x_type = s.x;
  call.y_type = yt;
  call.w_type = s.w;
  call.stats = s.stats;
  call.x = dx.data() + static_cast<size_t>(s.x_misalign) * xe;
  call.y = s.in_place ? const_cast<void*>(call.x) : static_cast<void*>(dy.data() + static_cast<size_t>(s.y_misalign) * ye);
  call.weight = s.weight ? dw.data() : nullptr;
  call.bias = s.bias ? db.data() : nullptr;
  const bool ln = s.op == Op::kLayerNorm;
  call.mean = s.stats_out && ln ? reinterpret_cast<float*>(dmean.data()) : nullptr;
  call.rstd = s.stats_out ? reinterpret_cast<float*>(drstd.data()) : nullptr;
  call.rows = M;
  call.cols = N;
  call.x_stride = s.x_stride < 0 ? normkit::kContiguous : s.x_stride;
  call.y_stride = s.in_place ? call.x_stride : (s.y_stride < 0 ? normkit::kContiguous : s.y_stride);
  call.eps = s.eps;
  call.shape = s.shape;
  DeviceBuffer counter(s.row_counter ? 2 * sizeof(uint32_t) : 0);
  if (s.row_counter) {
    check(cudaMemset(counter.data(), 0, counter.size()), "zero the row counter");
    call.row_counter = reinterpret_cast<uint32_t*>(counter.data());
  }
  (void)plan(call, &res.plan);
  call.launched = &res.plan;
  res.status = launch(call);
  if (res.status != normkit::Status::kSuccess) return res;
  check(cudaDeviceSynchronize(), "kernel execution");
  check(cudaGetLastError(), "kernel execution");
  if (s.row_counter) {
    // The call leaves its counter as it found it (LaunchOptions::row_counter).
    uint32_t words[2] = {1, 1};
    check(cudaMemcpy(words, counter.data(), sizeof words, cudaMemcpyDeviceToHost), "download the row counter");
    if ((words[0] != 0 || words[1] != 0) && res.first_failure.empty()) {
      res.first_failure = "the row counter was left at " + std::to_string(words[0]) + ", " + std::to_string(words[1]);
      res.bad_y = std::max<int64_t>(res.bad_y, 1);
    }
  }

  std::vector<unsigned char> hy(y_bytes), hmean(stats_bytes), hrstd(stats_bytes);
  check(cudaMemcpy(hy.data(), s.in_place ? dx.data() : dy.data(), y_bytes, cudaMemcpyDeviceToHost), "download y");
  check(cudaMemcpy(hmean.data(), dmean.data(), stats_bytes, cudaMemcpyDeviceToHost), "download mean");
  check(cudaMemcpy(hrstd.data(), drstd.data(), stats_bytes, cudaMemcpyDeviceToHost), "download rstd");
  if (!res.first_failure.empty()) return res;

  Failures f;
  const Tolerance tol = output_tolerance(yt);
  const unsigned char* hy_base = hy.data() + static_cast<size_t>(s.in_place ? s.x_misalign : s.y_misalign) * ye;
  std::atomic<uint64_t> max_err_bits{0}, max_excess_bits{0};
  auto fold_max = [](std::atomic<uint64_t>& a, double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);  // non-negative doubles order like their bits
    uint64_t cur = a.load();
    while (bits > cur && !a.compare_exchange_weak(cur, bits)) {
    }
  };

  // 1. Every element of every row written; compared rows against the reference.
  const std::vector<int64_t> compare = rows_to_compare(s);
  std::vector<char> compared(M, 0);
  for (int64_t r : compare) compared[r] = 1;
  parallel_for(M, [&](int64_t b, int64_t e) {
    std::vector<double> xr(N);
    for (int64_t r = b; r < e; ++r) {
      const unsigned char* xrow = hx_base + static_cast<size_t>(r * xs) * xe;
      const unsigned char* yrow = hy_base + static_cast<size_t>(r * ys) * ye;
      if (!compared[r] || r == s.nan_row) {
        const bool want_nan = r == s.nan_row;
        for (int64_t c = 0; c < N; ++c) {
          const double y = load_as(yt, yrow + c * ye);
          if (want_nan ? !std::isnan(y) : !std::isfinite(y)) {
            if (f.bad_y++ == 0) {
              f.note("row " + std::to_string(r) + " col " + std::to_string(c) +
                     (want_nan ? ": expected NaN (row holds a NaN), got " : ": not written / not finite: ") +
                     std::to_string(y));
            }
          }
        }
        continue;
      }
      for (int64_t c = 0; c < N; ++c) xr[c] = load_as(s.x, xrow + c * xe);
      const RowReference ref = reference_row(s.op, xr.data(), N, s.eps);
      for (int64_t c = 0; c < N; ++c) {
        const double w = s.weight ? load_as(s.w, &hw[c * we]) : 1.0;
        const double bb = (s.bias && ln) ? load_as(s.w, &hb[c * we]) : 0.0;
        const double want = (xr[c] - ref.mean) * ref.rstd * w + bb;
        const double got = load_as(yt, yrow + c * ye);
        const double err = std::fabs(got - want);
        const double bound = s.y_abs_tolerance >= 0 ? s.y_abs_tolerance
                                                    : (tol.atol + tol.rtol * std::fabs(want)) * s.tolerance_scale;
        if (std::isfinite(err)) fold_max(max_err_bits, err);
        const double excess = err / bound;
        if (std::isfinite(excess)) fold_max(max_excess_bits, excess);
        if (!(err <= bound)) {
          if (f.bad_y++ == 0) {
            std::ostringstream o;
            o.precision(9);
            o << "row " << r << " col " << c << ": got " << got << " want " << want << " |err| " << err
              << " > bound " << bound;
            f.note(o.str());
          }
        }
      }
      if (!s.stats_out) continue;
      float gm, gr;
      std::memcpy(&gm, &hmean[r * 4], 4);
      std::memcpy(&gr, &hrstd[r * 4], 4);
      if (ln && !mean_within(ref, gm, s.tolerance_scale)) {
        if (f.bad_stats++ == 0) {
          f.note("row " + std::to_string(r) + ": mean " + std::to_string(gm) + " want " + std::to_string(ref.mean));
        }
      }
      if (!rstd_within(ref, gr, s.tolerance_scale)) {
        if (f.bad_stats++ == 0) {
          f.note("row " + std::to_string(r) + ": rstd " + std::to_string(gr) + " want " + std::to_string(ref.rstd));
        }
      }
    }
  });

  // 2. Nothing outside the outputs changed: gaps between rows, the misalignment
  //    prefix, the guard after the last row, the guards after mean and rstd.
  const unsigned char* before = s.in_place ? hx.data() : nullptr;
  const int64_t row_bytes = N * ye, stride_bytes = ys * ye;
  const int64_t prefix = static_cast<int64_t>(s.in_place ? s.x_misalign : s.y_misalign) * ye;
  auto check_untouched = [&](int64_t first, int64_t last) {  // bytes [first, last)
    for (int64_t i = first; i < last; ++i) {
      const unsigned char want = before ? before[i] : kPoison;
      if (hy[i] != want) {
        if (f.clobbered++ == 0) f.note("y buffer byte " + std::to_string(i) + " outside the output changed");
        return;
      }
    }
  };
  check_untouched(0, prefix);
  parallel_for(M, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t end = prefix + r * stride_bytes + row_bytes;
      check_untouched(end, r + 1 < M ? end + stride_bytes - row_bytes : static_cast<int64_t>(y_bytes));
    }
  });
  for (size_t i = M * 4; i < stats_bytes; ++i) {
    if (hmean[i] != kPoison || hrstd[i] != kPoison) {
      if (f.clobbered++ == 0) f.note("mean/rstd guard byte " + std::to_string(i) + " changed");
    }
  }
  if (!s.stats_out || !ln) {
    for (size_t i = 0; i < M * 4 && !ln; ++i) {
      if (hmean[i] != kPoison) {
        if (f.clobbered++ == 0) f.note("mean written although not requested");
        break;
      }
    }
  }

  res.bad_y = f.bad_y;
  res.bad_stats = f.bad_stats;
  res.clobbered = f.clobbered;
  res.first_failure = f.first;
  uint64_t bits = max_err_bits.load();
  std::memcpy(&res.max_y_error, &bits, 8);
  bits = max_excess_bits.load();
  std::memcpy(&res.max_y_excess, &bits, 8);
  return res;
}

}  // namespace nktest
