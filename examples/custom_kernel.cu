// custom_kernel: a caller's own kernel assembled from normkit's building
// blocks. It normalizes rows gathered from an embedding table through an index
// array (a gather no launcher offers), with its own epilogue: LayerNorm's
// affine transform followed by a per-token gate read from another array.
//
//   cmake --build build --target custom_kernel && ./build/examples/custom_kernel
#include <normkit/block/block_reduce.cuh>
#include <normkit/block/row_loader.cuh>
#include <normkit/epilogue/affine.cuh>
#include <normkit/kernel/row_views.cuh>
#include <normkit/stats/two_pass.cuh>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

using bf16 = normkit::bfloat16;
constexpr int kVec = 8;      // 16 bytes of bf16 per slot
constexpr int kSlots = 2;    // slots per thread: 256 threads hold rows up to 4096
constexpr int kThreads = 256;

__global__ void gathered_layer_norm(const bf16* table, const int* index, const float* gate, int64_t rows,
                                    int64_t cols, normkit::epilogue::Affine<float>::Params affine, float eps,
                                    int table_access, bf16* out, int out_access) {
  using Reduce = normkit::BlockAllReduce<kThreads>;
  __shared__ Reduce::TempStorage temp;
  Reduce reduce(temp);
  const int lane = threadIdx.x, team = blockDim.x;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    // 1. Load the gathered row into registers (16-byte loads when allowed).
    const bf16* src = table + static_cast<int64_t>(index[r]) * cols;
    normkit::Slot<bf16, kVec> raw[kSlots];
    normkit::RowLoader<bf16, kVec>::load_raw<kSlots>(src, cols, 0, lane, team, table_access, raw);
    // 2. Statistics of the register-resident row through the block reduction.
    const normkit::RegisterView<bf16, kSlots, kVec> view{raw, cols, lane, team};
    const normkit::RowStats st = normkit::stats::TwoPass::compute(view, reduce, cols, eps);
    // 3. Our own epilogue: the library's affine transform, then the token's gate.
    float y[kSlots][kVec];
    const float g = gate[r];
    for (int k = 0; k < kSlots; ++k) {
      const int64_t col = normkit::RowLoader<bf16, kVec>::column(k, lane, team);
      const int valid = col >= cols ? 0 : static_cast<int>(cols - col < kVec ? cols - col : kVec);
      for (int i = 0; i < kVec; ++i) y[k][i] = st.normalize(__bfloat162float(raw[k].v[i]));
      normkit::epilogue::Affine<float>::apply<kVec>(affine, r, col, valid, y[k]);
      for (int i = 0; i < kVec; ++i) y[k][i] *= g;
    }
    // 4. Store (masked tail, conversion to bf16).
    normkit::RowLoader<bf16, kVec>::store<kSlots>(out + r * cols, cols, 0, lane, team, out_access, y);
  }
}

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "custom_kernel: no CUDA device found; this example needs an NVIDIA GPU.\n");
    return 2;
  }
  const int64_t vocab = 1000, cols = 3000, rows = 512;
  std::mt19937 gen(7);
  std::normal_distribution<float> dist(1.0f, 3.0f);
  std::vector<bf16> table(vocab * cols);
  for (auto& v : table) v = __float2bfloat16(dist(gen));
  std::vector<int> index(rows);
  std::vector<float> gate(rows), w(cols), b(cols);
  for (auto& i : index) i = static_cast<int>(gen() % vocab);
  for (auto& g : gate) g = 0.5f + (gen() % 100) / 100.f;
  for (int64_t c = 0; c < cols; ++c) {
    w[c] = 1.0f + 0.01f * (c % 7);
    b[c] = 0.02f * (c % 5);
  }
  bf16 *dtable, *dout;
  int* dindex;
  float *dgate, *dw, *db;
  cudaMalloc(&dtable, table.size() * 2);
  cudaMalloc(&dout, rows * cols * 2);
  cudaMalloc(&dindex, rows * 4);
  cudaMalloc(&dgate, rows * 4);
  cudaMalloc(&dw, cols * 4);
  cudaMalloc(&db, cols * 4);
  cudaMemcpy(dtable, table.data(), table.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(dindex, index.data(), rows * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dgate, gate.data(), rows * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dw, w.data(), cols * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), cols * 4, cudaMemcpyHostToDevice);

  const int table_access = normkit::access_bytes_for(dtable, cols, sizeof(bf16), 16);
  const int out_access = normkit::access_bytes_for(dout, cols, sizeof(bf16), 16);
  gathered_layer_norm<<<128, kThreads>>>(dtable, dindex, dgate, rows, cols, {dw, db}, 1e-5f, table_access, dout,
                                         out_access);
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    std::fprintf(stderr, "custom_kernel: %s\n", cudaGetErrorString(e));
    return 1;
  }
  std::vector<bf16> out(rows * cols);
  cudaMemcpy(out.data(), dout, out.size() * 2, cudaMemcpyDeviceToHost);

  double worst = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const bf16* x = &table[static_cast<int64_t>(index[r]) * cols];
    double mean = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c) mean += __bfloat162float(x[c]);
    mean /= cols;
    for (int64_t c = 0; c < cols; ++c) var += std::pow(__bfloat162float(x[c]) - mean, 2);
    const double rstd = 1 / std::sqrt(var / cols + 1e-5);
    for (int64_t c = 0; c < cols; ++c) {
      const double want = ((__bfloat162float(x[c]) - mean) * rstd * w[c] + b[c]) * gate[r];
      worst = std::fmax(worst, std::fabs(__bfloat162float(out[r * cols + c]) - want) / (1e-3 + std::fabs(want)));
    }
  }
  std::printf("gathered LayerNorm with a gated epilogue, %lld rows of %lld: max relative error %.2e\n",
              static_cast<long long>(rows), static_cast<long long>(cols), worst);
  cudaFree(dtable);
  cudaFree(dout);
  cudaFree(dindex);
  cudaFree(dgate);
  cudaFree(dw);
  cudaFree(db);
  const bool ok = worst < 1.0 / 128;
  std::printf("%s\n", ok ? "custom_kernel: OK" : "custom_kernel: MISMATCH");
  return ok ? 0 : 1;
}
