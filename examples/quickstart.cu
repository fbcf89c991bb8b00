// quickstart: LayerNorm and RMSNorm of a bf16 batch with normkit's launchers,
// checked against a float64 computation on the host.
//
//   cmake -S . -B build && cmake --build build --target quickstart && ./build/examples/quickstart
#include <normkit/layer_norm.cuh>
#include <normkit/rms_norm.cuh>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#define CHECK_CUDA(expr)                                                                  \
  do {                                                                                    \
    cudaError_t e_ = (expr);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "%s failed: %s\n", #expr, cudaGetErrorString(e_));             \
      return 1;                                                                           \
    }                                                                                     \
  } while (0)

using bf16 = normkit::bfloat16;

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "quickstart: no CUDA device found; normkit's kernels need an NVIDIA GPU.\n");
    return 2;
  }
  const int64_t rows = 4096, cols = 5120;  // e.g. batch x sequence = 4096 tokens, hidden size 5120
  std::mt19937 gen(42);
  std::normal_distribution<float> dist(0.5f, 2.0f);  // non-zero mean
  std::vector<bf16> x(rows * cols);
  std::vector<float> w(cols), b(cols);
  for (auto& v : x) v = __float2bfloat16(dist(gen));
  for (int64_t c = 0; c < cols; ++c) {
    w[c] = 1.0f + 0.1f * std::sin(c);
    b[c] = 0.05f * std::cos(c);
  }

  bf16 *dx, *dy;
  float *dw, *db, *dmean, *drstd;
  CHECK_CUDA(cudaMalloc(&dx, x.size() * sizeof(bf16)));
  CHECK_CUDA(cudaMalloc(&dy, x.size() * sizeof(bf16)));
  CHECK_CUDA(cudaMalloc(&dw, cols * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&db, cols * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&dmean, rows * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&drstd, rows * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(dx, x.data(), x.size() * sizeof(bf16), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dw, w.data(), cols * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(db, b.data(), cols * sizeof(float), cudaMemcpyHostToDevice));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));

  // LayerNorm: bf16 in and out, fp32 weight and bias, fp32 mean and rstd.
  normkit::LayerNormArgs<bf16, bf16, float> ln;
  ln.x = dx;
  ln.y = dy;
  ln.weight = dw;
  ln.bias = db;
  ln.mean = dmean;
  ln.rstd = drstd;
  ln.rows = rows;
  ln.cols = cols;  // eps defaults to 1e-5, strides to contiguous rows
  normkit::LaunchPlan plan;
  normkit::Status s = normkit::layer_norm_plan(ln, &plan);
  if (s == normkit::Status::kSuccess) s = normkit::layer_norm_forward(ln, stream);
  if (s != normkit::Status::kSuccess) {
    std::fprintf(stderr, "layer_norm_forward: %s\n", normkit::status_string(s));
    return 1;
  }
  std::vector<bf16> y(x.size());
  CHECK_CUDA(cudaMemcpyAsync(y.data(), dy, y.size() * sizeof(bf16), cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));

  double worst = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c) mean += __bfloat162float(x[r * cols + c]);
    mean /= cols;
    for (int64_t c = 0; c < cols; ++c) {
      const double d = __bfloat162float(x[r * cols + c]) - mean;
      var += d * d;
    }
    const double rstd = 1.0 / std::sqrt(var / cols + 1e-5);
    for (int64_t c = 0; c < cols; ++c) {
      const double want = (__bfloat162float(x[r * cols + c]) - mean) * rstd * w[c] + b[c];
      const double got = __bfloat162float(y[r * cols + c]);
      worst = std::fmax(worst, std::fabs(got - want) / (1e-3 + std::fabs(want)));
    }
  }
  std::printf("LayerNorm  %lld x %lld bf16 (kernel shape %s): max relative error %.2e (bf16 rounds at 3.9e-3)\n",
              static_cast<long long>(rows), static_cast<long long>(cols), normkit::shape_name(plan.shape), worst);
  const bool ln_ok = worst < 1.0 / 128;

  // RMSNorm in place, fp32 weight, eps defaults to 1e-6.
  normkit::RmsNormArgs<bf16, bf16, float> rms;
  rms.x = dx;
  rms.y = dx;
  rms.weight = dw;
  rms.rows = rows;
  rms.cols = cols;
  s = normkit::rms_norm_forward(rms, stream);
  if (s != normkit::Status::kSuccess) {
    std::fprintf(stderr, "rms_norm_forward: %s\n", normkit::status_string(s));
    return 1;
  }
  CHECK_CUDA(cudaMemcpyAsync(y.data(), dx, y.size() * sizeof(bf16), cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  worst = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double ms = 0;
    for (int64_t c = 0; c < cols; ++c) ms += std::pow(__bfloat162float(x[r * cols + c]), 2);
    const double rstd = 1.0 / std::sqrt(ms / cols + 1e-6);
    for (int64_t c = 0; c < cols; ++c) {
      const double want = __bfloat162float(x[r * cols + c]) * rstd * w[c];
      worst = std::fmax(worst, std::fabs(__bfloat162float(y[r * cols + c]) - want) / (1e-3 + std::fabs(want)));
    }
  }
  std::printf("RMSNorm    %lld x %lld bf16, in place: max relative error %.2e\n", static_cast<long long>(rows),
              static_cast<long long>(cols), worst);
  const bool rms_ok = worst < 1.0 / 128;
  cudaFree(dx);
  cudaFree(dy);
  cudaFree(dw);
  cudaFree(db);
  cudaFree(dmean);
  cudaFree(drstd);
  cudaStreamDestroy(stream);
  std::printf("%s\n", ln_ok && rms_ok ? "quickstart: OK" : "quickstart: MISMATCH");
  return ln_ok && rms_ok ? 0 : 1;
}
