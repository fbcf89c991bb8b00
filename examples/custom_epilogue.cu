// custom_epilogue: a caller's own epilogue plugged into normkit's launcher.
// RMSNorm followed by a SiLU gate, y = rms_norm(x) * w * silu(gate), as in
// gated normalization layers (e.g. Mamba-2's RMSNormGated): the launcher
// validates, picks the kernel shape and launches; the epilogue only says what
// happens to each normalized value.
//
//   cmake --build build --target custom_epilogue && ./build/examples/custom_epilogue
#include <normkit/rms_norm.cuh>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

using bf16 = normkit::bfloat16;

// The epilogue contract (see normkit/epilogue/affine.cuh): a Params struct,
// and apply() over one slot of VEC consecutive columns of one row, in fp32.
struct SiluGate {
  struct Params {
    const float* weight;  // [cols]
    const bf16* gate;     // [rows, gate_stride]
    int64_t gate_stride;
  };
  template <int VEC>
  static __device__ void apply(const Params& p, int64_t row, int64_t col0, int valid, float (&v)[VEC]) {
    const bf16* g = p.gate + row * p.gate_stride + col0;
    for (int i = 0; i < VEC; ++i) {
      if (i < valid) {
        const float gi = __bfloat162float(g[i]);
        v[i] *= p.weight[col0 + i] * (gi / (1.0f + __expf(-gi)));
      }
    }
  }
};

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "custom_epilogue: no CUDA device found; this example needs an NVIDIA GPU.\n");
    return 2;
  }
  const int64_t rows = 2048, cols = 2560;
  std::mt19937 gen(3);
  std::normal_distribution<float> dist(0.3f, 1.5f);
  std::vector<bf16> x(rows * cols), gate(rows * cols);
  std::vector<float> w(cols);
  for (auto& v : x) v = __float2bfloat16(dist(gen));
  for (auto& v : gate) v = __float2bfloat16(dist(gen));
  for (int64_t c = 0; c < cols; ++c) w[c] = 1.0f + 0.001f * (c % 13);
  bf16 *dx, *dg, *dy;
  float* dw;
  cudaMalloc(&dx, x.size() * 2);
  cudaMalloc(&dg, gate.size() * 2);
  cudaMalloc(&dy, x.size() * 2);
  cudaMalloc(&dw, cols * 4);
  cudaMemcpy(dx, x.data(), x.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(dg, gate.data(), gate.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(dw, w.data(), cols * 4, cudaMemcpyHostToDevice);

  using GatedRms = normkit::RmsNorm<normkit::io<bf16>, SiluGate>;
  GatedRms::Args args;
  args.x = dx;
  args.y = dy;
  args.epilogue = SiluGate::Params{dw, dg, cols};
  args.rows = rows;
  args.cols = cols;
  args.eps = 1e-6f;
  const normkit::Status s = GatedRms::forward(args);
  cudaError_t e = cudaDeviceSynchronize();
  if (s != normkit::Status::kSuccess || e != cudaSuccess) {
    std::fprintf(stderr, "custom_epilogue: %s / %s\n", normkit::status_string(s), cudaGetErrorString(e));
    return 1;
  }
  std::vector<bf16> y(x.size());
  cudaMemcpy(y.data(), dy, y.size() * 2, cudaMemcpyDeviceToHost);
  double worst = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double ms = 0;
    for (int64_t c = 0; c < cols; ++c) ms += std::pow(__bfloat162float(x[r * cols + c]), 2);
    const double rstd = 1 / std::sqrt(ms / cols + 1e-6);
    for (int64_t c = 0; c < cols; ++c) {
      const double g = __bfloat162float(gate[r * cols + c]);
      const double want = __bfloat162float(x[r * cols + c]) * rstd * w[c] * g / (1 + std::exp(-g));
      worst = std::fmax(worst, std::fabs(__bfloat162float(y[r * cols + c]) - want) / (1e-2 + std::fabs(want)));
    }
  }
  cudaFree(dx);
  cudaFree(dg);
  cudaFree(dy);
  cudaFree(dw);
  const bool ok = worst < 1.0 / 64;
  std::printf("RMSNorm with a SiLU-gated epilogue, %lld x %lld bf16: max relative error %.2e\n%s\n",
              static_cast<long long>(rows), static_cast<long long>(cols), worst,
              ok ? "custom_epilogue: OK" : "custom_epilogue: MISMATCH");
  return ok ? 0 : 1;
}
