// Unit tests of each building block on the GPU, each used on its own in a
// small test kernel: RowLoader, WarpAllReduce, BlockAllReduce (both
// algorithms), the paired reducers, ClusterAllReduce, the statistics
// policies, the epilogues and the packed slot adds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include <normkit/block/block_reduce.cuh>
#include <normkit/block/cluster_reduce.cuh>
#include <normkit/block/paired_reduce.cuh>
#include <normkit/block/row_loader.cuh>
#include <normkit/block/warp_reduce.cuh>
#include <normkit/epilogue/affine.cuh>
#include <normkit/epilogue/hooks.cuh>
#include <normkit/kernel/problem.cuh>
#include <normkit/kernel/row_per_block.cuh>
#include <normkit/kernel/row_ring.cuh>
#include <normkit/io/quantize.cuh>
#include <normkit/kernel/row_views.cuh>
#include <normkit/stats/mean_square.cuh>
#include <normkit/stats/two_pass.cuh>
#include <normkit/stats/welford.cuh>

#include "test_support.h"

namespace {

using nktest::DeviceBuffer;

// ---------------------------------------------------------------- RowLoader
constexpr int kLoaderK = 3;

template <class T, int VEC>
__global__ void loader_kernel(const T* src, int64_t n, int access, float fill, float* loaded, T* dst,
                              int dst_access) {
  float v[kLoaderK][VEC];
  normkit::RowLoader<T, VEC>::template load<kLoaderK>(src, n, 0, threadIdx.x, blockDim.x, access, fill, v);
  for (int k = 0; k < kLoaderK; ++k)
    for (int i = 0; i < VEC; ++i) loaded[(threadIdx.x * kLoaderK + k) * VEC + i] = v[k][i];
  normkit::RowLoader<T, VEC>::template store<kLoaderK>(dst, n, 0, threadIdx.x, blockDim.x, dst_access, v);
}

template <class T, nktest::DType DT>
void check_loader(int misalign) {
  constexpr int VEC = 16 / sizeof(T);
  const int team = 32;
  const int64_t cap = int64_t{team} * kLoaderK * VEC;
  const uint64_t seed = nktest::fresh_seed();
  nktest::Rng rng(seed);
  for (int64_t n : {int64_t{1}, int64_t{VEC - 1}, int64_t{VEC}, int64_t{VEC + 3}, cap / 2 + 1, cap - 1, cap}) {
    const size_t bytes = (cap + 64) * sizeof(T);
    std::vector<unsigned char> host(bytes);
    for (size_t i = 0; i < bytes / sizeof(T); ++i) nktest::store_as(DT, 3.0 + rng.normal(), &host[i * sizeof(T)]);
    DeviceBuffer src(bytes), dst(bytes), loaded(cap * sizeof(float));
    ASSERT_EQ(cudaMemcpy(src.data(), host.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemset(dst.data(), 0xFF, bytes), cudaSuccess);
    const T* s = reinterpret_cast<const T*>(src.data()) + misalign;
    T* d = reinterpret_cast<T*>(dst.data()) + misalign;
    const int access = normkit::access_bytes_for(s, 0, sizeof(T), 16);
    const int dst_access = normkit::access_bytes_for(d, 0, sizeof(T), 16);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(s) % access, 0u);
    if (misalign == 0) EXPECT_EQ(access, 16);
    loader_kernel<T, VEC><<<1, team>>>(s, n, access, -7.f, reinterpret_cast<float*>(loaded.data()), d, dst_access);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<float> got(cap);
    std::vector<unsigned char> back(bytes);
    ASSERT_EQ(cudaMemcpy(got.data(), loaded.data(), cap * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(back.data(), dst.data(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int lane = 0; lane < team; ++lane) {
      for (int k = 0; k < kLoaderK; ++k) {
        for (int i = 0; i < VEC; ++i) {
          const int64_t col = (int64_t{k} * team + lane) * VEC + i;
          const float want = col < n ? static_cast<float>(nktest::load_as(DT, &host[(misalign + col) * sizeof(T)])) : -7.f;
          ASSERT_EQ(got[(lane * kLoaderK + k) * VEC + i], want) << "n=" << n << " col=" << col << " misalign=" << misalign;
        }
      }
    }
    for (size_t i = 0; i < bytes / sizeof(T); ++i) {
      const int64_t col = static_cast<int64_t>(i) - misalign;
      const bool written = col >= 0 && col < n;
      const unsigned char* b = &back[i * sizeof(T)];
      if (written) {
        ASSERT_EQ(std::memcmp(b, &host[i * sizeof(T)], sizeof(T)), 0) << "store lost element " << col;
      } else {
        for (size_t j = 0; j < sizeof(T); ++j) ASSERT_EQ(b[j], 0xFF) << "store wrote outside [0, n): " << col;
      }
    }
  }
}

TEST(RowLoader, FullVectorsNarrowerFallbacksAndMaskedTails) {
  NK_REQUIRE_GPU();
  for (int mis : {0, 1, 2, 3, 4, 7}) check_loader<normkit::bfloat16, nktest::DType::kBF16>(mis);
  for (int mis : {0, 1, 2, 3}) check_loader<float, nktest::DType::kF32>(mis);
  for (int mis : {0, 2, 5}) check_loader<normkit::half, nktest::DType::kF16>(mis);
}

TEST(RowLoader, AccessWidthFollowsPointerAndStride) {
  // Host-side rule, used by every launcher.
  alignas(16) static char buf[64];
  EXPECT_EQ(normkit::access_bytes_for(buf, 1024, 2, 16), 16);
  EXPECT_EQ(normkit::access_bytes_for(buf, 1025, 2, 16), 2);
  EXPECT_EQ(normkit::access_bytes_for(buf, 1026, 2, 16), 4);
  EXPECT_EQ(normkit::access_bytes_for(buf + 8, 1024, 2, 16), 8);
  EXPECT_EQ(normkit::access_bytes_for(buf + 4, 1024, 4, 16), 4);
  EXPECT_EQ(normkit::access_bytes_for(buf, 4099, 4, 16), 4);
}

// ------------------------------------------------------------ WarpAllReduce
__global__ void warp_reduce_kernel(const float* in, int group, float* sums, normkit::SumPair* pairs,
                                   normkit::WelfordState* welford) {
  const float v = in[threadIdx.x];
  sums[threadIdx.x] = normkit::WarpAllReduce<32>::all_reduce(v, normkit::Sum{}, group);
  pairs[threadIdx.x] = normkit::WarpAllReduce<32>::all_reduce(normkit::SumPair{v, v * v}, normkit::Sum{}, group);
  welford[threadIdx.x] =
      normkit::WarpAllReduce<32>::all_reduce(normkit::WelfordState{1.f, v, 0.f}, normkit::WelfordMerge{}, group);
}

TEST(WarpAllReduce, GroupsOf1To32SumsPairsAndWelford) {
  NK_REQUIRE_GPU();
  nktest::Rng rng(nktest::fresh_seed());
  std::vector<float> in(32);
  for (auto& v : in) v = static_cast<float>(static_cast<int>(rng.next() % 200) - 50);  // integers: sums are exact
  DeviceBuffer din(128), dsum(128), dpair(256), dwel(32 * 12);
  ASSERT_EQ(cudaMemcpy(din.data(), in.data(), 128, cudaMemcpyHostToDevice), cudaSuccess);
  for (int group : {1, 2, 4, 8, 16, 32}) {
    warp_reduce_kernel<<<1, 32>>>(reinterpret_cast<float*>(din.data()), group, reinterpret_cast<float*>(dsum.data()),
                                  reinterpret_cast<normkit::SumPair*>(dpair.data()),
                                  reinterpret_cast<normkit::WelfordState*>(dwel.data()));
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<float> sums(32);
    std::vector<normkit::SumPair> pairs(32);
    std::vector<normkit::WelfordState> wel(32);
    ASSERT_EQ(cudaMemcpy(sums.data(), dsum.data(), 128, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(pairs.data(), dpair.data(), 256, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(wel.data(), dwel.data(), 32 * 12, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int lane = 0; lane < 32; ++lane) {
      const int first = lane / group * group;
      double s = 0, s2 = 0;
      for (int i = first; i < first + group; ++i) {
        s += in[i];
        s2 += double(in[i]) * in[i];
      }
      const double mean = s / group, var = s2 / group - mean * mean;
      EXPECT_EQ(sums[lane], s) << "group " << group << " lane " << lane;
      EXPECT_EQ(pairs[lane].first, s);
      EXPECT_EQ(pairs[lane].second, s2);
      EXPECT_EQ(wel[lane].count, group);
      EXPECT_NEAR(wel[lane].mean, mean, 1e-4);
      EXPECT_NEAR(wel[lane].m2 / group, var, 1e-3 * (var + 1));
      // Every lane of a group holds the same bits.
      EXPECT_EQ(std::memcmp(&wel[lane], &wel[first], sizeof(normkit::WelfordState)), 0);
    }
  }
}

// ----------------------------------------------------------- BlockAllReduce
template <normkit::BlockReduceAlgorithm ALGO>
__global__ void block_reduce_kernel(const float* in, float* out_sum, normkit::SumPair* out_pair, float* out_max) {
  using R = normkit::BlockAllReduce<1024, ALGO>;
  __shared__ typename R::TempStorage temp;
  R reduce(temp);
  const float v = in[threadIdx.x];
  // Three reductions back to back, on the same storage, with no barrier between them.
  const float s = reduce.all_reduce(v, normkit::Sum{});
  const normkit::SumPair p = reduce.all_reduce(normkit::SumPair{v, -2 * v}, normkit::Sum{});
  const float m = reduce.all_reduce(v, normkit::Max{});
  out_sum[threadIdx.x] = s;
  out_pair[threadIdx.x] = p;
  out_max[threadIdx.x] = m;
}

template <normkit::BlockReduceAlgorithm ALGO>
void check_block_reduce() {
  nktest::Rng rng(nktest::fresh_seed());
  for (int threads : {32, 64, 96, 160, 256, 512, 992, 1024}) {
    std::vector<float> in(threads);
    for (auto& v : in) v = static_cast<float>(static_cast<int>(rng.next() % 1000) - 300);
    DeviceBuffer din(threads * 4), ds(threads * 4), dp(threads * 8), dm(threads * 4);
    ASSERT_EQ(cudaMemcpy(din.data(), in.data(), threads * 4, cudaMemcpyHostToDevice), cudaSuccess);
    block_reduce_kernel<ALGO><<<1, threads>>>(reinterpret_cast<float*>(din.data()), reinterpret_cast<float*>(ds.data()),
                                              reinterpret_cast<normkit::SumPair*>(dp.data()),
                                              reinterpret_cast<float*>(dm.data()));
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<float> s(threads), m(threads);
    std::vector<normkit::SumPair> p(threads);
    ASSERT_EQ(cudaMemcpy(s.data(), ds.data(), threads * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(p.data(), dp.data(), threads * 8, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(m.data(), dm.data(), threads * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    double want = 0;
    float mx = in[0];
    for (float v : in) {
      want += v;
      mx = std::max(mx, v);
    }
    for (int t = 0; t < threads; ++t) {
      ASSERT_EQ(s[t], want) << "threads " << threads << " thread " << t;
      ASSERT_EQ(p[t].first, want);
      ASSERT_EQ(p[t].second, -2 * want);
      ASSERT_EQ(m[t], mx);
    }
  }
}

TEST(BlockAllReduce, WarpShuffleAnyWarpCount) {
  NK_REQUIRE_GPU();
  check_block_reduce<normkit::BlockReduceAlgorithm::kWarpShuffle>();
}

TEST(BlockAllReduce, CubBackedAnyWarpCount) {
  NK_REQUIRE_GPU();
  check_block_reduce<normkit::BlockReduceAlgorithm::kCub>();
}

// ------------------------------------- PairedBlockAllReduce, PairedGroupReducer
// Values whose sum depends on the order of the additions: magnitudes 2^-20
// to 2^20, so that a paired reducer that combined them in any other order
// than the reducer it stands in for would differ in the last bits.
std::vector<float> order_sensitive(int count, nktest::Rng& rng) {
  std::vector<float> v(count);
  for (auto& x : v) x = static_cast<float>(rng.normal() * std::ldexp(1.0, static_cast<int>(rng.next() % 41) - 20));
  return v;
}

__device__ float largest(float a) { return a; }
__device__ float largest(const normkit::Parts<float, 2>& v) { return fmaxf(v.part[0], v.part[1]); }

// The squares are rounded on their own (__fmul_rn): a product written a * a
// may be contracted into the addition that receives it (fma), and then the
// two lanes of a butterfly step round differently, so not even the
// reference reducer would leave the same bits in every lane. (The kernels'
// statistics hand the reducers fmaf and sum results, never bare products.)
//
// Three reductions back to back per call (a sum, a pair of sums, a maximum),
// by `threads` threads each with one value (the reference reducers) or by
// half as many each holding the values of threads t and t + half (the paired
// ones); every thread writes what it received. v: a thread's value, or the
// Parts of the two it stands in for.
template <class Reducer, class V>
__device__ void three_reductions(Reducer& reduce, const V& v, float* out) {
  const float s = reduce.all_reduce(v, normkit::Sum{});
  const normkit::SumPair p = reduce.all_reduce(
      normkit::map_parts(v, [](float a) { return normkit::SumPair{a, __fmul_rn(a, a)}; }), normkit::Sum{});
  const float m = reduce.all_reduce(largest(v), normkit::Max{});
  out[0] = s;
  out[1] = p.first;
  out[2] = p.second;
  out[3] = m;
}

__global__ void block_pairs_kernel(const float* in, bool paired, float* out) {
  const int t = threadIdx.x;
  if (paired) {
    using R = normkit::PairedBlockAllReduce<1024>;
    __shared__ R::TempStorage temp;
    R reduce(temp);
    three_reductions(reduce, normkit::Parts<float, 2>{{in[t], in[t + blockDim.x]}}, out + 4 * t);
  } else {
    using R = normkit::BlockAllReduce<1024>;
    __shared__ R::TempStorage temp;
    R reduce(temp);
    three_reductions(reduce, in[t], out + 4 * t);
  }
}

// The same for a group of `group` lanes (the reference) or `group / 2` lanes
// each holding lanes j and j + group / 2 of it (PairedGroupReducer); each
// warp holds several groups.
__global__ void group_pairs_kernel(const float* in, int group, bool paired, float* out) {
  const int t = threadIdx.x;
  if (paired) {
    const int team = group / 2;
    const int g = t / team, j = t % team;
    normkit::PairedGroupReducer reduce{team};
    three_reductions(reduce, normkit::Parts<float, 2>{{in[g * group + j], in[g * group + j + team]}}, out + 4 * t);
  } else {
    normkit::GroupReducer reduce{group};
    three_reductions(reduce, in[t], out + 4 * t);
  }
}

// Runs the reference (threads threads) and the paired form (threads / 2) on
// the same values; returns each one's first thread's four results, having
// checked that all threads of a row (CTA or group) agree.
template <class Launch>
std::pair<std::vector<float>, std::vector<float>> reference_and_paired(Launch&& launch, const std::vector<float>& in,
                                                                       int threads, int per_row) {
  DeviceBuffer din(in.size() * 4), dref(threads * 16), dpair(threads * 8);
  EXPECT_EQ(cudaMemcpy(din.data(), in.data(), in.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  launch(reinterpret_cast<const float*>(din.data()), false, threads, reinterpret_cast<float*>(dref.data()));
  launch(reinterpret_cast<const float*>(din.data()), true, threads / 2, reinterpret_cast<float*>(dpair.data()));
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> ref(threads * 4), pair(threads * 2);
  EXPECT_EQ(cudaMemcpy(ref.data(), dref.data(), ref.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(pair.data(), dpair.data(), pair.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  // Rows of per_row reference threads, per_row / 2 paired ones: compare row by row.
  std::vector<float> r, q;
  for (int row = 0; row < threads / per_row; ++row) {
    for (int k = 0; k < 4; ++k) {
      r.push_back(ref[4 * row * per_row + k]);
      q.push_back(pair[4 * row * (per_row / 2) + k]);
      for (int t = 1; t < per_row / 2; ++t) EXPECT_EQ(pair[4 * (row * (per_row / 2) + t) + k], q.back());
    }
  }
  return {r, q};
}

TEST(PairedReducers, SameBitsAsTheReducersTheyStandInFor) {
  NK_REQUIRE_GPU();
  nktest::Rng rng(nktest::fresh_seed());
  int order_mattered = 0;
  for (int threads : {64, 128, 192, 256, 384, 512, 1024}) {
    const std::vector<float> in = order_sensitive(threads, rng);
    const auto [ref, paired] = reference_and_paired(
        [](const float* x, bool p, int n, float* out) { block_pairs_kernel<<<1, n>>>(x, p, out); }, in, threads,
        threads);
    EXPECT_EQ(ref, paired) << "PairedBlockAllReduce, a CTA of " << threads / 2 << " for one of " << threads;
    float sequential = 0.f;
    for (float v : in) sequential += v;
    order_mattered += sequential != ref[0];
  }
  for (int group : {4, 8, 16, 32}) {
    const int threads = 256;
    const std::vector<float> in = order_sensitive(threads, rng);
    const auto [ref, paired] = reference_and_paired(
        [group](const float* x, bool p, int n, float* out) { group_pairs_kernel<<<1, n>>>(x, group, p, out); }, in,
        threads, group);
    EXPECT_EQ(ref, paired) << "PairedGroupReducer, groups of " << group / 2 << " for groups of " << group;
  }
  // The values are such that order shows: a plain sequential sum differs
  // from the butterfly's (else this test could not fail).
  EXPECT_GE(order_mattered, 1);
}

// --------------------------------------------------------- ClusterAllReduce
// Whether the current device launches thread-block clusters (sm_90+).
bool has_clusters() {
  int dev = 0, major = 0;
  EXPECT_EQ(cudaGetDevice(&dev), cudaSuccess);
  EXPECT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), cudaSuccess);
  return major >= 9;
}

// Launches kernel(in, out) as `clusters` clusters of `cluster` CTAs of `threads`.
cudaError_t launch_in_clusters(void (*kernel)(const float*, float*), int clusters, int cluster, int threads,
                               const DeviceBuffer& in, DeviceBuffer& out) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(clusters * cluster);
  cfg.blockDim = dim3(threads);
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = cluster;
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, kernel, reinterpret_cast<const float*>(in.data()),
                            reinterpret_cast<float*>(out.data()));
}

// Runs kernel(in, out) in clusters as launch_in_clusters does, on fresh
// random integers in [low, low + span) (one per thread; their sums are exact
// in fp32), and returns them with the output, `outputs` floats per thread.
std::pair<std::vector<float>, std::vector<float>> run_in_clusters(void (*kernel)(const float*, float*),
                                                                  int clusters, int cluster, int threads, int low,
                                                                  int span, int outputs, nktest::Rng& rng) {
  const size_t total = static_cast<size_t>(clusters) * cluster * threads;
  std::vector<float> in(total), out(total * outputs);
  for (auto& v : in) v = static_cast<float>(static_cast<int>(rng.next() % span) + low);
  DeviceBuffer din(total * 4), dout(out.size() * 4);
  EXPECT_EQ(cudaMemcpy(din.data(), in.data(), total * 4, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(launch_in_clusters(kernel, clusters, cluster, threads, din, dout), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(out.data(), dout.data(), out.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  return {std::move(in), std::move(out)};
}

__global__ void cluster_reduce_kernel(const float* in, float* out) {
  using R = normkit::ClusterAllReduce<normkit::BlockAllReduce<256>>;
  __shared__ typename R::TempStorage temp;
  R reduce(temp);
  const int gid = blockIdx.x * blockDim.x + threadIdx.x;
  const float a = reduce.all_reduce(in[gid], normkit::Sum{});
  const float b = reduce.all_reduce(2 * in[gid], normkit::Sum{});
  const float c = reduce.all_reduce(in[gid], normkit::Max{});
  out[3 * gid] = a;
  out[3 * gid + 1] = b;
  out[3 * gid + 2] = c;
  reduce.finish();
}

TEST(ClusterAllReduce, AcrossTheCtasOfAClusterOnHopper) {
  NK_REQUIRE_GPU();
  if (!has_clusters()) GTEST_SKIP() << "thread-block clusters need sm_90";
  nktest::Rng rng(nktest::fresh_seed());
  for (int cluster : {1, 2, 4, 8}) {
    const int clusters = 3, threads = 256;
    const auto [in, out] = run_in_clusters(cluster_reduce_kernel, clusters, cluster, threads, -20, 100, 3, rng);
    if (HasFailure()) return;
    for (int c = 0; c < clusters; ++c) {
      double s = 0;
      float mx = -1e30f;
      for (int i = c * cluster * threads; i < (c + 1) * cluster * threads; ++i) {
        s += in[i];
        mx = std::max(mx, in[i]);
      }
      for (int i = c * cluster * threads; i < (c + 1) * cluster * threads; ++i) {
        ASSERT_EQ(out[3 * i], s) << "cluster size " << cluster;
        ASSERT_EQ(out[3 * i + 1], 2 * s);
        ASSERT_EQ(out[3 * i + 2], mx);
      }
    }
  }
}

// Many reductions in a row, with the CTAs of a cluster pushed out of step
// (rank-dependent waits that change every round), so that a partial of the
// next round may arrive before a slow CTA has read this one: each round's
// result must still be exact, and the same in every thread.
constexpr int kRounds = 64;

__global__ void cluster_rounds_kernel(const float* in, float* out) {
  using R = normkit::ClusterAllReduce<normkit::BlockAllReduce<256>>;
  __shared__ typename R::TempStorage temp;
  R reduce(temp);
  const int gid = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned rank = reduce.rank();
  for (int k = 0; k < kRounds; ++k) {
    if (((k + rank) % 3) == 0) __nanosleep(2000 * (rank + 1));
    const float s = reduce.all_reduce(in[gid] * static_cast<float>(k + 1), normkit::Sum{});
    out[static_cast<int64_t>(gid) * kRounds + k] = s;
  }
  reduce.finish();
}

TEST(ClusterAllReduce, ManyRoundsWithCtasOutOfStep) {
  NK_REQUIRE_GPU();
  if (!has_clusters()) GTEST_SKIP() << "thread-block clusters need sm_90";
  nktest::Rng rng(nktest::fresh_seed());
  for (int cluster : {2, 3, 4, 8}) {
    const int clusters = 5, threads = 256;
    const auto [in, out] = run_in_clusters(cluster_rounds_kernel, clusters, cluster, threads, -20, 64, kRounds, rng);
    if (HasFailure()) return;
    for (int c = 0; c < clusters; ++c) {
      double s = 0;  // integers: every partial sum is exact in fp32
      for (int i = c * cluster * threads; i < (c + 1) * cluster * threads; ++i) s += in[i];
      for (int i = c * cluster * threads; i < (c + 1) * cluster * threads; ++i) {
        for (int k = 0; k < kRounds; ++k) {
          ASSERT_EQ(out[static_cast<size_t>(i) * kRounds + k], s * (k + 1))
              << "cluster size " << cluster << ", cluster " << c << ", thread " << i << ", round " << k;
        }
      }
    }
  }
}

// -------------------------------------------------------- statistics policies
// A CTA holds one row in registers through RowLoader and a RegisterView; each
// policy computes its statistics through a BlockAllReduce.
template <class Policy, int K>
__global__ void stats_kernel(const float* row, int64_t n, float eps, normkit::RowStats* out) {
  using R = normkit::BlockAllReduce<256>;
  __shared__ typename R::TempStorage temp;
  R reduce(temp);
  normkit::Slot<float, 4> raw[K];
  normkit::RowLoader<float, 4>::template load_raw<K>(row, n, 0, threadIdx.x, blockDim.x, 16, raw);
  const normkit::RegisterView<float, K, 4> view{raw, n, static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x)};
  const normkit::RowStats st = Policy::compute(view, reduce, n, eps);
  if (threadIdx.x == 0) *out = st;
}

template <class Policy>
normkit::RowStats device_stats(const std::vector<float>& row, float eps) {
  DeviceBuffer d(row.size() * 4 + 16), o(sizeof(normkit::RowStats));
  EXPECT_EQ(cudaMemcpy(d.data(), row.data(), row.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  stats_kernel<Policy, 4><<<1, 256>>>(reinterpret_cast<float*>(d.data()), static_cast<int64_t>(row.size()), eps,
                                      reinterpret_cast<normkit::RowStats*>(o.data()));
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  normkit::RowStats st;
  EXPECT_EQ(cudaMemcpy(&st, o.data(), sizeof(st), cudaMemcpyDeviceToHost), cudaSuccess);
  return st;
}

TEST(StatsPolicies, TwoPassWelfordAndMeanSquareAgainstFloat64) {
  NK_REQUIRE_GPU();
  const uint64_t seed = nktest::fresh_seed();
  nktest::Rng rng(seed);
  for (int64_t n : {1, 3, 257, 1000, 4096}) {  // capacity 256 threads x 4 slots x 4
    std::vector<float> row(n);
    std::vector<double> dr(n);
    const double mu = 5 * rng.normal(), sd = 0.5 + rng.uniform();
    for (int64_t i = 0; i < n; ++i) dr[i] = row[i] = static_cast<float>(mu + sd * rng.normal());
    const auto ln = nktest::reference_row(nktest::Op::kLayerNorm, dr.data(), n, 1e-5);
    const auto rms = nktest::reference_row(nktest::Op::kRmsNorm, dr.data(), n, 1e-5);
    const auto tp = device_stats<normkit::stats::TwoPass>(row, 1e-5f);
    const auto wf = device_stats<normkit::stats::Welford>(row, 1e-5f);
    const auto ms = device_stats<normkit::stats::MeanSquare>(row, 1e-5f);
    EXPECT_NEAR(tp.stored_mean(), ln.mean, 1e-6 * (std::fabs(ln.mean) + sd)) << "n=" << n << " seed=" << seed;
    EXPECT_NEAR(tp.rstd, ln.rstd, 1e-5 * ln.rstd) << "n=" << n;
    EXPECT_NEAR(wf.stored_mean(), ln.mean, 1e-6 * (std::fabs(ln.mean) + sd)) << "n=" << n;
    EXPECT_NEAR(wf.rstd, ln.rstd, 1e-5 * ln.rstd) << "n=" << n;
    EXPECT_EQ(ms.mean, 0.f);
    EXPECT_NEAR(ms.rstd, rms.rstd, 1e-5 * rms.rstd) << "n=" << n;
  }
}

// TwoPass's one-walk form (a view that reads memory on each walk) with rows
// that share a warp (GroupReducer), a path no library kernel takes (their
// warp-shared rows are resident: two walks) but a caller's kernel built from
// the blocks may: a row whose shift is poor walks again about its mean while
// the other rows of its warp need not, and each row must keep its own
// result. reduction_branch makes the whole warp enter that walk, as the
// full-warp shuffles require; on the H200 leaving that out was not seen
// (the shuffles stay within the group, whose lanes are all active: this test,
// memcheck and synccheck passed without it, device runs 138-139), so the test
// guards the retry's results, not the warp-wide entry.
struct StreamedRowView {  // a row in global memory, read again on each walk
  static constexpr int kVec = 4;
  static constexpr bool kResident = false;
  const float* row;
  int64_t n;
  int lane;
  int team;
  int slots;
  float shift = 0.f;  // deliberately poor for a row far from 0
  template <class F>
  __device__ void for_each_slot(F&& f) const {
    for (int s = 0; s < slots; ++s) {
      const int64_t c = normkit::RowLoader<float, 4>::column(s, lane, team);
      float v[4];
      const int valid = normkit::detail::slot_valid(n, c, 4);
      for (int i = 0; i < 4; ++i) v[i] = i < valid ? row[c + i] : 0.f;
      f(v, valid);
    }
  }
};
static_assert(normkit::stats::TwoPass::kOneWalk<StreamedRowView, normkit::GroupReducer>,
              "the test needs TwoPass's one-walk form");

__global__ void grouped_two_pass_kernel(const float* rows, int64_t n, int group, int slots, normkit::RowStats* out) {
  const int lane = threadIdx.x % group;
  const int r = threadIdx.x / group;
  const normkit::GroupReducer reducer{group};
  const StreamedRowView view{rows + r * n, n, lane, group, slots};
  const normkit::RowStats st = normkit::stats::TwoPass::compute(view, reducer, n, 1e-5f);
  if (lane == 0) out[r] = st;
}

TEST(StatsPolicies, TwoPassRetryOfOneRowInAWarpOfSeveral) {
  NK_REQUIRE_GPU();
  const uint64_t seed = nktest::fresh_seed();
  nktest::Rng rng(seed);
  for (int group : {4, 8, 16}) {
    const int rows = 32 / group, slots = 2;
    const int64_t n = group * slots * 4 - 3;  // a partial last slot
    for (int far = 0; far < rows; ++far) {  // the one row whose mean is far from its shift (0)
      std::vector<float> x(rows * n);
      std::vector<double> dx(rows * n);
      for (int r = 0; r < rows; ++r) {
        const double mu = r == far ? 3000.0 : 0.5 * rng.normal();
        for (int64_t i = 0; i < n; ++i) dx[r * n + i] = x[r * n + i] = static_cast<float>(mu + rng.normal());
      }
      DeviceBuffer dxb(x.size() * 4), dout(rows * sizeof(normkit::RowStats));
      NK_CUDA_OK(cudaMemcpy(dxb.data(), x.data(), x.size() * 4, cudaMemcpyHostToDevice));
      NK_CUDA_OK(cudaMemset(dout.data(), 0xff, dout.size()));
      grouped_two_pass_kernel<<<1, 32>>>(reinterpret_cast<const float*>(dxb.data()), n, group, slots,
                                         reinterpret_cast<normkit::RowStats*>(dout.data()));
      NK_CUDA_OK(cudaGetLastError());
      NK_CUDA_OK(cudaDeviceSynchronize());
      std::vector<normkit::RowStats> st(rows);
      NK_CUDA_OK(cudaMemcpy(st.data(), dout.data(), dout.size(), cudaMemcpyDeviceToHost));
      for (int r = 0; r < rows; ++r) {
        const auto ref = nktest::reference_row(nktest::Op::kLayerNorm, dx.data() + r * n, n, 1e-5);
        EXPECT_NEAR(st[r].stored_mean(), ref.mean, 1e-6 * std::fabs(ref.mean) + 1e-5)
            << "group " << group << " row " << r << " (far: " << far << ") seed " << seed;
        // One walk with shift 0 at mean 3000 loses the variance to cancellation
        // (E[x^2] - E[x]^2 in fp32); the retry about the mean recovers it.
        EXPECT_NEAR(st[r].rstd, ref.rstd, 1e-4 * ref.rstd) << "group " << group << " row " << r << " (far: " << far
                                                           << ") seed " << seed;
      }
    }
  }
}

// ----------------------------------------------------------------- epilogues
template <class Epi>
__global__ void epilogue_kernel(typename Epi::Params p, int64_t col0, int valid, const float* in, float* out) {
  float v[8];
  for (int i = 0; i < 8; ++i) v[i] = in[i];
  Epi::template apply<8>(p, 0, col0, valid, v);
  for (int i = 0; i < 8; ++i) out[i] = v[i];
}

TEST(Epilogues, AffineScaleOptionalParamsAndWeightOffset) {
  NK_REQUIRE_GPU();
  const float xh[8] = {-2, -1, -0.5f, 0, 0.25f, 1, 2, 3};
  std::vector<float> w(40), b(40);
  for (int i = 0; i < 40; ++i) {
    w[i] = 0.5f + 0.01f * i;
    b[i] = -0.1f * i;
  }
  DeviceBuffer dw(160), db(160), din(32), dout(32);
  NK_CUDA_OK(cudaMemcpy(dw.data(), w.data(), 160, cudaMemcpyHostToDevice));
  NK_CUDA_OK(cudaMemcpy(db.data(), b.data(), 160, cudaMemcpyHostToDevice));
  NK_CUDA_OK(cudaMemcpy(din.data(), xh, 32, cudaMemcpyHostToDevice));
  const float* pw = reinterpret_cast<const float*>(dw.data());
  const float* pb = reinterpret_cast<const float*>(db.data());
  auto run = [&](auto launch) {
    launch(reinterpret_cast<float*>(din.data()), reinterpret_cast<float*>(dout.data()));
    std::vector<float> o(8);
    EXPECT_EQ(cudaMemcpy(o.data(), dout.data(), 32, cudaMemcpyDeviceToHost), cudaSuccess);
    return o;
  };
  using normkit::epilogue::Affine;
  using normkit::epilogue::Scale;
  for (int64_t col0 : {0, 8, 3}) {  // aligned vector and misaligned scalar paths
    for (int valid : {8, 5}) {
      auto o = run([&](const float* in, float* out) { epilogue_kernel<Affine<float>><<<1, 1>>>({pw, pb}, col0, valid, in, out); });
      for (int i = 0; i < valid; ++i) EXPECT_FLOAT_EQ(o[i], xh[i] * w[col0 + i] + b[col0 + i]);
      o = run([&](const float* in, float* out) { epilogue_kernel<Affine<float>><<<1, 1>>>({nullptr, pb}, col0, valid, in, out); });
      for (int i = 0; i < valid; ++i) EXPECT_FLOAT_EQ(o[i], xh[i] + b[col0 + i]);
      o = run([&](const float* in, float* out) { epilogue_kernel<Affine<float>><<<1, 1>>>({pw, nullptr}, col0, valid, in, out); });
      for (int i = 0; i < valid; ++i) EXPECT_FLOAT_EQ(o[i], xh[i] * w[col0 + i]);
      o = run([&](const float* in, float* out) { epilogue_kernel<Affine<float, true>><<<1, 1>>>({pw, pb}, col0, valid, in, out); });
      for (int i = 0; i < valid; ++i) EXPECT_FLOAT_EQ(o[i], xh[i] * (1 + w[col0 + i]) + b[col0 + i]);
      o = run([&](const float* in, float* out) { epilogue_kernel<Scale<float>><<<1, 1>>>({pw}, col0, valid, in, out); });
      for (int i = 0; i < valid; ++i) EXPECT_FLOAT_EQ(o[i], xh[i] * w[col0 + i]);
      o = run([&](const float* in, float* out) { epilogue_kernel<Scale<float>><<<1, 1>>>({nullptr}, col0, valid, in, out); });
      for (int i = 0; i < valid; ++i) EXPECT_FLOAT_EQ(o[i], xh[i]);
      o = run([&](const float* in, float* out) { epilogue_kernel<Scale<float, true>><<<1, 1>>>({pw}, col0, valid, in, out); });
      for (int i = 0; i < valid; ++i) EXPECT_FLOAT_EQ(o[i], xh[i] * (1 + w[col0 + i]));
    }
  }
}

// The WHOLE form's parameter caching (change 62): Scale reads its weight with
// every combination of READ_ONLY_LOADS and ParamCaching (four load paths, two
// of them inline PTX) and must give apply's values; an epilogue without the
// caching hook is called as apply_whole<VEC> (or apply, without the WHOLE
// hooks) through detail::CachedEpilogue, which the 8-slot row_per_block uses.
struct TimesTwo {  // no WHOLE hooks
  struct Params {};
  template <int VEC>
  static __device__ void apply(const Params&, int64_t, int64_t, int, float (&v)[VEC]) {
    for (int i = 0; i < VEC; ++i) v[i] *= 2.f;
  }
};
struct TimesTwoWhole : TimesTwo {  // the WHOLE form allowed (apply_whole: below)
  template <int VEC>
  static bool whole_slots(const Params&) {
    return true;
  }
};
struct TimesTwoTimesThree : TimesTwoWhole {  // apply and apply_whole told apart by their results
  template <int VEC>
  static __device__ void apply_whole(const Params&, int64_t, int64_t, float (&v)[VEC]) {
    for (int i = 0; i < VEC; ++i) v[i] *= 3.f;
  }
};
using normkit::ParamCaching;
static_assert(normkit::detail::HasCachedWhole<normkit::epilogue::Scale<float>, 8, ParamCaching::kKeepInL1>::value,
              "Scale takes the caching hint");
static_assert(!normkit::detail::HasCachedWhole<normkit::epilogue::Affine<float>, 8, ParamCaching::kKeepInL1>::value,
              "Affine does not (weight and bias together do not stay in L1)");
static_assert(!normkit::detail::HasCachedWhole<TimesTwoTimesThree, 8, ParamCaching::kKeepInL1>::value);

template <class Epi, int VEC, bool WHOLE, ParamCaching C, class W>
__global__ void whole_epilogue_kernel(const W* w, int64_t col0, const float* in, float* out) {
  float v[VEC];
  for (int i = 0; i < VEC; ++i) v[i] = in[i];
  typename Epi::Params p{};
  if constexpr (!std::is_empty_v<typename Epi::Params>) p.weight = w;
  normkit::detail::apply_epilogue<Epi, VEC, WHOLE, C>(p, 0, col0, VEC, v);
  for (int i = 0; i < VEC; ++i) out[i] = v[i];
}

/// A weight of 64 elements, one slot of VEC inputs and one of outputs, on the
/// device (the epilogue tests' buffers).
template <class W, int VEC>
struct SlotBuffers {
  DeviceBuffer dw{64 * sizeof(W)}, din{VEC * 4}, dout{VEC * 4};
  SlotBuffers(const std::vector<W>& w, const std::vector<float>& x) {  // (no ASSERT in a constructor)
    EXPECT_EQ(cudaMemcpy(dw.data(), w.data(), 64 * sizeof(W), cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(din.data(), x.data(), VEC * 4, cudaMemcpyHostToDevice), cudaSuccess);
  }
  const W* weight() { return reinterpret_cast<const W*>(dw.data()); }
  const float* in() { return reinterpret_cast<const float*>(din.data()); }
  float* out() { return reinterpret_cast<float*>(dout.data()); }
};

template <class W, int VEC>
void check_scale_caching() {
  std::vector<W> w(64);
  std::vector<float> wf(64), xh(VEC);
  for (int i = 0; i < 64; ++i) {
    wf[i] = 0.5f + static_cast<float>(i) / 64.f;  // exact in bf16
    w[i] = normkit::detail::from_float<W>(wf[i]);
  }
  for (int i = 0; i < VEC; ++i) xh[i] = 1.25f - 0.375f * static_cast<float>(i);
  SlotBuffers<W, VEC> bufs(w, xh);
  const W* pw = bufs.weight();
  const float* in = bufs.in();
  float* out = bufs.out();
  auto check = [&](auto launch, const char* what, int64_t col0, bool offset) {
    NK_CUDA_OK(cudaMemset(out, 0xff, VEC * 4));  // NaN
    launch();
    NK_CUDA_OK(cudaGetLastError());
    std::vector<float> o(VEC);
    NK_CUDA_OK(cudaMemcpy(o.data(), out, VEC * 4, cudaMemcpyDeviceToHost));
    for (int i = 0; i < VEC; ++i)
      EXPECT_EQ(o[i], xh[i] * (offset ? 1.f + wf[col0 + i] : wf[col0 + i])) << what << " col0 " << col0 << " i " << i;
  };
  using normkit::epilogue::Scale;
  for (int64_t col0 : {0, VEC, 5 * VEC}) {  // whole, aligned slots
    check([&] { whole_epilogue_kernel<Scale<W>, VEC, true, ParamCaching::kDefault><<<1, 1>>>(pw, col0, in, out); },
          "plain", col0, false);
    check([&] { whole_epilogue_kernel<Scale<W>, VEC, true, ParamCaching::kKeepInL1><<<1, 1>>>(pw, col0, in, out); },
          "kept in L1", col0, false);
    check([&] {
      whole_epilogue_kernel<Scale<W, false, true>, VEC, true, ParamCaching::kDefault><<<1, 1>>>(pw, col0, in, out);
    }, "read-only", col0, false);
    check([&] {
      whole_epilogue_kernel<Scale<W, false, true>, VEC, true, ParamCaching::kKeepInL1><<<1, 1>>>(pw, col0, in, out);
    }, "read-only, kept in L1", col0, false);
    check([&] {
      whole_epilogue_kernel<Scale<W, true, true>, VEC, true, ParamCaching::kKeepInL1><<<1, 1>>>(pw, col0, in, out);
    }, "(1 + w), read-only, kept in L1", col0, true);
    check([&] {
      using Cached = normkit::detail::CachedEpilogue<Scale<W>, ParamCaching::kKeepInL1>;
      whole_epilogue_kernel<Cached, VEC, true, ParamCaching::kDefault><<<1, 1>>>(pw, col0, in, out);
    }, "CachedEpilogue", col0, false);
  }
  // A null weight scales by 1 (and by 1 + 0 with the offset): kept in L1, the
  // slot is read from fill_param_slot instead of skipped; the same bits.
  auto check_null = [&](auto launch, const char* what) {
    NK_CUDA_OK(cudaMemset(out, 0xff, VEC * 4));  // NaN
    launch();
    NK_CUDA_OK(cudaGetLastError());
    std::vector<float> o(VEC);
    NK_CUDA_OK(cudaMemcpy(o.data(), out, VEC * 4, cudaMemcpyDeviceToHost));
    for (int i = 0; i < VEC; ++i) EXPECT_EQ(o[i], xh[i]) << what << " i " << i;
  };
  const W* none = nullptr;
  for (int64_t col0 : {int64_t{0}, int64_t{5 * VEC}}) {
    check_null([&] { whole_epilogue_kernel<Scale<W>, VEC, true, ParamCaching::kKeepInL1><<<1, 1>>>(none, col0, in, out); },
               "no w, kept in L1");
    check_null([&] {
      whole_epilogue_kernel<Scale<W, true>, VEC, true, ParamCaching::kKeepInL1><<<1, 1>>>(none, col0, in, out);
    }, "(1 + w), no w, kept in L1");
    check_null([&] {
      whole_epilogue_kernel<Scale<W, true, true>, VEC, true, ParamCaching::kKeepInL1><<<1, 1>>>(none, col0, in, out);
    }, "(1 + w), no w, read-only, kept in L1");
    check_null([&] { whole_epilogue_kernel<Scale<W>, VEC, true, ParamCaching::kDefault><<<1, 1>>>(none, col0, in, out); },
               "no w");
  }
}

// Which hook runs, told apart by the factor it applies: a hook that takes the
// caching hint with a default (as Scale's), and one without a default (it
// must still be called: with kDefault where no hint is given).
template <int VEC>
__device__ void times(float f, float (&v)[VEC]) {
  for (int i = 0; i < VEC; ++i) v[i] *= f;
}
struct HintWithDefault : TimesTwoWhole {
  template <int VEC, ParamCaching C = ParamCaching::kDefault>
  static __device__ void apply_whole(const Params&, int64_t, int64_t, float (&v)[VEC]) {
    times(C == ParamCaching::kKeepInL1 ? 5.f : 3.f, v);
  }
};
struct HintWithoutDefault : TimesTwoWhole {
  template <int VEC, ParamCaching C>
  static __device__ void apply_whole(const Params&, int64_t, int64_t, float (&v)[VEC]) {
    times(C == ParamCaching::kKeepInL1 ? 7.f : 11.f, v);
  }
};
// A final epilogue that takes the hint: row_per_block at 8 slots must not
// derive from it (CachedEpilogue), so it runs unwrapped; this only has to
// compile (taking the kernel's address instantiates it).
struct FinalWithHint final : HintWithDefault {};
using FinalProblem = normkit::Problem<normkit::bfloat16, normkit::stats::MeanSquare, FinalWithHint>;
[[maybe_unused]] const void* const kFinalEpilogueKernel =
    reinterpret_cast<const void*>(&normkit::kernel::row_per_block<FinalProblem, 8, true>);

template <class Epi, ParamCaching C>
__global__ void hint_kernel(const float* in, float* out) {
  float v[8];
  for (int i = 0; i < 8; ++i) v[i] = in[i];
  normkit::detail::apply_epilogue<Epi, 8, true, C>(typename Epi::Params{}, 0, 0, 8, v);
  for (int i = 0; i < 8; ++i) out[i] = v[i];
}

TEST(Epilogues, TheCachingHintReachesTheHookThatTakesIt) {
  NK_REQUIRE_GPU();
  DeviceBuffer din(32), dout(32);
  const float xh[8] = {1, -2, 3, -4, 5, -6, 7, -8};
  NK_CUDA_OK(cudaMemcpy(din.data(), xh, 32, cudaMemcpyHostToDevice));
  const float* in = reinterpret_cast<const float*>(din.data());
  float* out = reinterpret_cast<float*>(dout.data());
  auto check = [&](auto launch, float factor, const char* what) {
    NK_CUDA_OK(cudaMemset(out, 0xff, 32));
    launch();
    NK_CUDA_OK(cudaGetLastError());
    std::vector<float> o(8);
    NK_CUDA_OK(cudaMemcpy(o.data(), out, 32, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 8; ++i) EXPECT_EQ(o[i], factor * xh[i]) << what << ", i " << i;
  };
  using normkit::detail::CachedEpilogue;
  using normkit::detail::WithParamCaching;
  using Wrapped = WithParamCaching<normkit::Problem<float, normkit::stats::MeanSquare, HintWithDefault>,
                                   ParamCaching::kKeepInL1>::Epilogue;
  constexpr ParamCaching kNone = ParamCaching::kDefault, kL1 = ParamCaching::kKeepInL1;
  check([&] { hint_kernel<HintWithDefault, kNone><<<1, 1>>>(in, out); }, 3.f, "default hook, no hint");
  check([&] { hint_kernel<HintWithDefault, kL1><<<1, 1>>>(in, out); }, 5.f, "default hook, kKeepInL1");
  check([&] { hint_kernel<CachedEpilogue<HintWithDefault, kL1>, kNone><<<1, 1>>>(in, out); }, 5.f, "CachedEpilogue");
  check([&] { hint_kernel<Wrapped, kNone><<<1, 1>>>(in, out); }, 5.f, "WithParamCaching");
  check([&] { hint_kernel<HintWithoutDefault, kNone><<<1, 1>>>(in, out); }, 11.f, "hook without a default, no hint");
  check([&] { hint_kernel<HintWithoutDefault, kL1><<<1, 1>>>(in, out); }, 7.f, "hook without a default, kKeepInL1");
  check([&] { hint_kernel<CachedEpilogue<HintWithoutDefault, kL1>, kNone><<<1, 1>>>(in, out); }, 7.f,
        "CachedEpilogue, hook without a default");
  EXPECT_NE(kFinalEpilogueKernel, nullptr);
  EXPECT_TRUE((normkit::detail::epilogue_whole_slots<HintWithDefault, 8>({})));
  EXPECT_TRUE((normkit::detail::epilogue_whole_slots<HintWithoutDefault, 8>({})));
}

// Parameters loaded ahead (row_per_block's roomy form, change 66):
// apply_prefetched on prefetch_whole's slot must give apply_whole's values,
// bit for bit, for Scale and Affine with every parameter present or null and
// with the (1 + w) offset.
static_assert(normkit::detail::HasPrefetch<normkit::epilogue::Scale<float>, 8>::value);
static_assert(normkit::detail::HasPrefetch<normkit::epilogue::Affine<normkit::bfloat16, true>, 8>::value);
static_assert(!normkit::detail::HasPrefetch<TimesTwoTimesThree, 8>::value, "an epilogue without the hooks");
// One derived from Scale inherits the hooks but not the claim that they
// mirror its apply_whole (PrefetchOwner names Scale), nor does CachedEpilogue.
struct ScaleTwice : normkit::epilogue::Scale<float> {};
static_assert(!normkit::detail::HasPrefetch<ScaleTwice, 8>::value, "inherited hooks are not offered");
static_assert(!normkit::detail::HasPrefetch<
              normkit::detail::CachedEpilogue<normkit::epilogue::Scale<float>, ParamCaching::kKeepInL1>, 8>::value);

// The held form (hold_whole, apply_held: the ring holds the weight's slots
// for every row, kernel/row_ring.cuh), through HeldEpilogue, which the ring
// runs: Scale's, with its addend form; not Affine's, nor a derived type's.
using normkit::detail::HasHeld;
using normkit::detail::HeldEpilogue;
static_assert(HasHeld<normkit::epilogue::Scale<normkit::bfloat16>, 8>::value);
static_assert(HasHeld<normkit::epilogue::Scale<float, true, true>, 4>::value);
static_assert(!HasHeld<normkit::epilogue::Affine<normkit::bfloat16>, 8>::value, "Affine has no held form");
static_assert(!HasHeld<ScaleTwice, 8>::value, "inherited hooks are not offered");
static_assert(normkit::detail::HasPrefetch<HeldEpilogue<normkit::epilogue::Scale<float>>, 8>::value);
static_assert(normkit::detail::TakesAddend<HeldEpilogue<normkit::epilogue::Scale<normkit::bfloat16>>, 8>::value);
// Which problems the ring may run (kernel::kRingsRows): RMSNorm with per-row
// scales whose held weight slot is 16 bytes, and 16-bit RMSNorm rows whose
// output needs no maximum (a static scale, converted: change 107); not an
// fp32 weight of a bf16 row (32 bytes a slot: the ring kernel spilled),
// not LayerNorm (Affine holds nothing, TwoPass walks after reducing), not
// fp32 rows without a maximum (they relay), not fused adds.
template <class W, class Stats, class Epi, class Out>
using QuantProblem = normkit::Problem<normkit::bfloat16, Stats, Epi, normkit::input::Plain<normkit::bfloat16>, Out>;
using DynamicFp8 = normkit::output::QuantDynamicRow<normkit::float8_e4m3>;
static_assert(normkit::kernel::kRingsRows<
              QuantProblem<void, normkit::stats::MeanSquare, normkit::epilogue::Scale<normkit::bfloat16>, DynamicFp8>>);
static_assert(normkit::kernel::kRingsRows<QuantProblem<void, normkit::stats::MeanSquare,
                                                       normkit::epilogue::Scale<normkit::bfloat16>,
                                                       normkit::output::QuantDynamicRow<int8_t>>>);
static_assert(!normkit::kernel::kRingsRows<
              QuantProblem<void, normkit::stats::MeanSquare, normkit::epilogue::Scale<float>, DynamicFp8>>);
static_assert(!normkit::kernel::kRingsRows<
              QuantProblem<void, normkit::stats::TwoPass, normkit::epilogue::Affine<normkit::bfloat16>, DynamicFp8>>);
static_assert(normkit::kernel::kRingsRows<QuantProblem<void, normkit::stats::MeanSquare,
                                                       normkit::epilogue::Scale<normkit::bfloat16>,
                                                       normkit::output::QuantStatic<normkit::float8_e4m3>>>);
static_assert(normkit::kernel::kRingsRows<normkit::Problem<
                  normkit::half, normkit::stats::MeanSquare, normkit::epilogue::Scale<normkit::half, true>,
                  normkit::input::Plain<normkit::half>, normkit::output::Convert<normkit::half>>>,
              "converted 16-bit RMSNorm rows, Gemma's (1 + w) too");
static_assert(!normkit::kernel::kRingsRows<normkit::Problem<float, normkit::stats::MeanSquare,
                                                            normkit::epilogue::Scale<float>,
                                                            normkit::input::Plain<float>,
                                                            normkit::output::QuantStatic<int8_t>>>,
              "fp32 rows without a maximum relay");
static_assert(!normkit::kernel::kRingsRows<normkit::Problem<
                  normkit::bfloat16, normkit::stats::MeanSquare, normkit::epilogue::Scale<normkit::bfloat16>,
                  normkit::input::AddResidual<normkit::bfloat16, normkit::bfloat16>,
                  normkit::output::Convert<normkit::bfloat16>>>,
              "fused adds keep the plain loop");
// Which problems row_cluster_registers prefetches (kernel::kPrefetchesRows):
// plain 16-bit RMSNorm rows and fp32 LayerNorm rows; not fp32 RMSNorm rows
// (relayed), not fused adds (they lost with any ring), not 16-bit LayerNorm
// (not measured), not rows that need their maximum (ringed or rolled); rows
// quantized with a static scale as the plain rows of their types (change
// 99); and no problem both prefetches and rolls or relays (16-bit ones
// that prefetch may ring too: the plan picks, change 107).
template <class T, class Stats = normkit::stats::MeanSquare>
using PlainProblem =
    normkit::Problem<T, Stats, normkit::epilogue::Scale<T>, normkit::input::Plain<T>, normkit::output::Convert<T>>;
using normkit::kernel::kPrefetchesRows;
static_assert(kPrefetchesRows<PlainProblem<normkit::bfloat16>> && kPrefetchesRows<PlainProblem<normkit::half>>);
static_assert(!kPrefetchesRows<PlainProblem<float>>, "fp32 plain rows relay (kRelaysRows)");
static_assert(!kPrefetchesRows<normkit::Problem<normkit::bfloat16, normkit::stats::MeanSquare,
                                                normkit::epilogue::Scale<normkit::bfloat16>,
                                                normkit::input::AddResidual<normkit::bfloat16, normkit::bfloat16>,
                                                normkit::output::Convert<normkit::bfloat16>>>,
              "fused adds keep the plain loop");
static_assert(!kPrefetchesRows<QuantProblem<void, normkit::stats::MeanSquare,
                                            normkit::epilogue::Scale<normkit::bfloat16>, DynamicFp8>>);
static_assert(!kPrefetchesRows<QuantProblem<void, normkit::stats::TwoPass,
                                            normkit::epilogue::Affine<normkit::bfloat16>, DynamicFp8>>);
static_assert(kPrefetchesRows<QuantProblem<void, normkit::stats::MeanSquare,
                                           normkit::epilogue::Scale<normkit::bfloat16>,
                                           normkit::output::QuantStatic<normkit::float8_e4m3>>> &&
                  kPrefetchesRows<normkit::Problem<float, normkit::stats::TwoPass, normkit::epilogue::Scale<float>,
                                                   normkit::input::Plain<float>, normkit::output::QuantStatic<int8_t>>>,
              "rows quantized with a static scale are prefetched as plain rows are");
static_assert(!kPrefetchesRows<normkit::Problem<float, normkit::stats::MeanSquare, normkit::epilogue::Scale<float>,
                                                normkit::input::Plain<float>,
                                                normkit::output::QuantStatic<normkit::float8_e4m3>>>,
              "fp32 RMSNorm rows relay, whatever their output");
static_assert(!kPrefetchesRows<PlainProblem<normkit::bfloat16, normkit::stats::TwoPass>>,
              "16-bit LayerNorm keeps the plain loop");
static_assert(kPrefetchesRows<PlainProblem<float, normkit::stats::TwoPass>> &&
                  kPrefetchesRows<PlainProblem<float, normkit::stats::Welford>>,
              "fp32 LayerNorm rows, which do not relay, are prefetched");
template <class P>
constexpr bool kPrefetchesAlone =
    !kPrefetchesRows<P> || !(normkit::kernel::kRollsRows<P> || normkit::kernel::kRelaysRows<P>);
static_assert(kPrefetchesAlone<PlainProblem<normkit::bfloat16>> && kPrefetchesAlone<PlainProblem<float>> &&
              kPrefetchesAlone<PlainProblem<float, normkit::stats::TwoPass>> &&
              kPrefetchesAlone<QuantProblem<void, normkit::stats::MeanSquare,
                                            normkit::epilogue::Scale<normkit::bfloat16>, DynamicFp8>> &&
              kPrefetchesAlone<QuantProblem<void, normkit::stats::MeanSquare,
                                            normkit::epilogue::Scale<normkit::bfloat16>,
                                            normkit::output::QuantStatic<normkit::float8_e4m3>>>);

template <class Epi, int VEC>
__global__ void prefetched_and_whole_kernel(typename Epi::Params p, int64_t col0, const float* in, float* out) {
  float whole[VEC], prefetched[VEC];
  for (int i = 0; i < VEC; ++i) whole[i] = prefetched[i] = in[i];
  const auto pre = Epi::template prefetch_whole<VEC>(p, col0);
  Epi::template apply_whole<VEC>(p, 0, col0, whole);
  Epi::template apply_prefetched<VEC>(p, pre, prefetched);
  for (int i = 0; i < VEC; ++i) {
    out[i] = whole[i];
    out[VEC + i] = prefetched[i];
  }
}

template <class W, int VEC>
void check_prefetched_params() {
  // Fresh random weights, biases and inputs of both signs (the seed is in
  // the trace of a failure).
  const uint64_t seed = nktest::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  nktest::Rng rng(seed);
  std::vector<W> w(64), b(64);
  std::vector<float> xh(VEC);
  for (int i = 0; i < 64; ++i) {
    w[i] = normkit::detail::from_float<W>(static_cast<float>(2 * rng.normal()));
    b[i] = normkit::detail::from_float<W>(static_cast<float>(rng.normal()));
  }
  for (int i = 0; i < VEC; ++i) xh[i] = static_cast<float>(3 * rng.normal());
  DeviceBuffer dw(64 * sizeof(W)), db(64 * sizeof(W)), din(VEC * 4), dout(2 * VEC * 4);
  NK_CUDA_OK(cudaMemcpy(dw.data(), w.data(), 64 * sizeof(W), cudaMemcpyHostToDevice));
  NK_CUDA_OK(cudaMemcpy(db.data(), b.data(), 64 * sizeof(W), cudaMemcpyHostToDevice));
  NK_CUDA_OK(cudaMemcpy(din.data(), xh.data(), VEC * 4, cudaMemcpyHostToDevice));
  const W* pw = reinterpret_cast<const W*>(dw.data());
  const W* pb = reinterpret_cast<const W*>(db.data());
  const float* in = reinterpret_cast<const float*>(din.data());
  float* out = reinterpret_cast<float*>(dout.data());
  auto check = [&](auto launch, const char* what, int64_t col0) {
    NK_CUDA_OK(cudaMemset(out, 0xff, 2 * VEC * 4));  // NaN
    launch();
    NK_CUDA_OK(cudaGetLastError());
    std::vector<float> o(2 * VEC);
    NK_CUDA_OK(cudaMemcpy(o.data(), out, 2 * VEC * 4, cudaMemcpyDeviceToHost));
    for (int i = 0; i < VEC; ++i) {
      EXPECT_FALSE(std::isnan(o[i])) << what << " col0 " << col0 << " i " << i;
      EXPECT_EQ(std::memcmp(&o[i], &o[VEC + i], 4), 0)
          << what << " col0 " << col0 << " i " << i << ": whole " << o[i] << ", prefetched " << o[VEC + i];
    }
  };
  using normkit::epilogue::Affine;
  using normkit::epilogue::Scale;
  for (int64_t col0 : {int64_t{0}, int64_t{VEC}, int64_t{5 * VEC}}) {
    check([&] { prefetched_and_whole_kernel<Scale<W>, VEC><<<1, 1>>>({pw}, col0, in, out); }, "Scale", col0);
    check([&] { prefetched_and_whole_kernel<Scale<W>, VEC><<<1, 1>>>({nullptr}, col0, in, out); }, "Scale, no w",
          col0);
    check([&] { prefetched_and_whole_kernel<Scale<W, true>, VEC><<<1, 1>>>({pw}, col0, in, out); }, "Scale (1 + w)",
          col0);
    check([&] { prefetched_and_whole_kernel<Scale<W, true>, VEC><<<1, 1>>>({nullptr}, col0, in, out); },
          "Scale (1 + w), no w", col0);
    check([&] { prefetched_and_whole_kernel<Scale<W, false, true>, VEC><<<1, 1>>>({pw}, col0, in, out); },
          "Scale, read-only loads", col0);
    // The held form (a null weight's slot read as ones, or zeros under 1 + w).
    check([&] { prefetched_and_whole_kernel<HeldEpilogue<Scale<W>>, VEC><<<1, 1>>>({pw}, col0, in, out); },
          "Scale held", col0);
    check([&] { prefetched_and_whole_kernel<HeldEpilogue<Scale<W>>, VEC><<<1, 1>>>({nullptr}, col0, in, out); },
          "Scale held, no w", col0);
    check([&] { prefetched_and_whole_kernel<HeldEpilogue<Scale<W, true>>, VEC><<<1, 1>>>({pw}, col0, in, out); },
          "Scale (1 + w) held", col0);
    check([&] { prefetched_and_whole_kernel<HeldEpilogue<Scale<W, true>>, VEC><<<1, 1>>>({nullptr}, col0, in, out); },
          "Scale (1 + w) held, no w", col0);
    check([&] { prefetched_and_whole_kernel<Affine<W>, VEC><<<1, 1>>>({pw, pb}, col0, in, out); }, "Affine", col0);
    check([&] { prefetched_and_whole_kernel<Affine<W>, VEC><<<1, 1>>>({nullptr, pb}, col0, in, out); },
          "Affine, no w", col0);
    check([&] { prefetched_and_whole_kernel<Affine<W>, VEC><<<1, 1>>>({pw, nullptr}, col0, in, out); },
          "Affine, no b", col0);
    check([&] { prefetched_and_whole_kernel<Affine<W>, VEC><<<1, 1>>>({nullptr, nullptr}, col0, in, out); },
          "Affine, neither", col0);
    check([&] { prefetched_and_whole_kernel<Affine<W, true>, VEC><<<1, 1>>>({pw, pb}, col0, in, out); },
          "Affine (1 + w)", col0);
    check([&] { prefetched_and_whole_kernel<Affine<W, true>, VEC><<<1, 1>>>({nullptr, pb}, col0, in, out); },
          "Affine (1 + w), no w", col0);
    check([&] { prefetched_and_whole_kernel<Affine<W, true>, VEC><<<1, 1>>>({pw, nullptr}, col0, in, out); },
          "Affine (1 + w), no b", col0);
  }
}

TEST(Epilogues, PrefetchedParamsGiveApplyWholesBits) {
  NK_REQUIRE_GPU();
  check_prefetched_params<float, 4>();
  check_prefetched_params<float, 8>();  // fp32 weights of a 16-bit row: two accesses a slot
  check_prefetched_params<normkit::bfloat16, 8>();
  check_prefetched_params<normkit::half, 8>();
}

TEST(Epilogues, WholeFormParamCachingGivesApplysValues) {
  NK_REQUIRE_GPU();
  check_scale_caching<float, 4>();
  check_scale_caching<float, 8>();
  check_scale_caching<normkit::bfloat16, 8>();
  check_scale_caching<normkit::half, 8>();
}

TEST(Epilogues, CachedEpilogueCallsHooklessEpiloguesAsBefore) {
  NK_REQUIRE_GPU();
  DeviceBuffer din(32), dout(32);
  const float xh[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  NK_CUDA_OK(cudaMemcpy(din.data(), xh, 32, cudaMemcpyHostToDevice));
  const float* in = reinterpret_cast<const float*>(din.data());
  float* out = reinterpret_cast<float*>(dout.data());
  auto result = [&](auto launch) {
    EXPECT_EQ(cudaMemset(out, 0xff, 32), cudaSuccess);
    launch();
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
    std::vector<float> o(8);
    EXPECT_EQ(cudaMemcpy(o.data(), out, 32, cudaMemcpyDeviceToHost), cudaSuccess);
    return o;
  };
  using normkit::detail::CachedEpilogue;
  using Whole = CachedEpilogue<TimesTwoTimesThree, ParamCaching::kKeepInL1>;
  EXPECT_TRUE((normkit::detail::epilogue_whole_slots<Whole, 8>({})));  // the hook, inherited
  using Plain = CachedEpilogue<TimesTwo, ParamCaching::kKeepInL1>;
  const float* none = nullptr;
  auto o = result([&] { whole_epilogue_kernel<Whole, 8, true, ParamCaching::kDefault><<<1, 1>>>(none, 0, in, out); });
  for (int i = 0; i < 8; ++i) EXPECT_EQ(o[i], 3.f * xh[i]) << "apply_whole expected, i " << i;
  o = result([&] { whole_epilogue_kernel<Whole, 8, false, ParamCaching::kDefault><<<1, 1>>>(none, 0, in, out); });
  for (int i = 0; i < 8; ++i) EXPECT_EQ(o[i], 2.f * xh[i]) << "apply expected (checked form), i " << i;
  o = result([&] { whole_epilogue_kernel<Plain, 8, true, ParamCaching::kDefault><<<1, 1>>>(none, 0, in, out); });
  for (int i = 0; i < 8; ++i) EXPECT_EQ(o[i], 2.f * xh[i]) << "apply expected (no WHOLE hooks), i " << i;
}

// The addend forms of Scale's hooks (int8 with per-row scales rounds in the
// epilogue's fma, change 79): each must give fmaf(x, w, c), one rounding of
// the exact x * w + c, through every path a kernel takes (apply, apply_whole
// with and without the L1 hint, CachedEpilogue, apply_prefetched), for a
// weight, no weight (a scale of 1) and the (1 + w) offset. c = 1.5 * 2^23,
// the int8 rounding bias: the data are drawn so that rounding x * w first
// would change some results (checked), so the test tells the forms apart.
static_assert(normkit::detail::TakesAddend<normkit::epilogue::Scale<float>, 8>::value);
static_assert(normkit::detail::TakesAddend<normkit::epilogue::Scale<normkit::bfloat16, true, true>, 8>::value);
static_assert(normkit::detail::TakesAddend<
              normkit::detail::CachedEpilogue<normkit::epilogue::Scale<float>, ParamCaching::kKeepInL1>, 8>::value);
static_assert(!normkit::detail::TakesAddend<normkit::epilogue::Affine<float>, 8>::value, "Affine has no addend form");
static_assert(!normkit::detail::TakesAddend<TimesTwoWhole, 8>::value);

template <class Epi, int VEC, bool WHOLE, ParamCaching C, bool PREFETCHED, class W>
__global__ void addend_epilogue_kernel(const W* w, int64_t col0, float addend, const float* in, float* out) {
  float v[VEC];
  for (int i = 0; i < VEC; ++i) v[i] = in[i];
  typename Epi::Params p{};
  p.weight = w;
  if constexpr (PREFETCHED) {
    Epi::template apply_prefetched<VEC>(p, Epi::template prefetch_whole<VEC>(p, col0), v, addend);
  } else {
    normkit::detail::apply_epilogue_plus<Epi, VEC, WHOLE, C>(p, 0, col0, VEC, v, addend);
  }
  for (int i = 0; i < VEC; ++i) out[i] = v[i];
}

template <class W, int VEC>
void check_addend_forms() {
  const uint64_t seed = nktest::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  nktest::Rng rng(seed);
  std::vector<W> w(64);
  std::vector<float> wf(64), xh(VEC);
  for (int i = 0; i < 64; ++i) {
    w[i] = normkit::detail::from_float<W>(static_cast<float>(0.5 + rng.uniform()));
    wf[i] = normkit::detail::to_float(w[i]);
  }
  // x * w near a half-integer k + 1/2 (|k| < 100) for the first slot's
  // weights, x taken among the floats next to (k + 1/2) / w where x * w
  // rounded to fp32 first lands on the tie itself (which the integer rounding
  // then breaks to even) and the exact product rounds the other way: the
  // two forms differ there. Elsewhere (other slots, no weight, 1 + w)
  // ordinary values, checked all the same.
  const float c = normkit::detail::kInt8RoundingBias;
  auto rounds_apart = [c](float x, float m) {
    volatile float product = x * m;  // rounded first (volatile: no contraction into an fma)
    return product + c != std::fma(x, m, c);
  };
  for (int i = 0; i < VEC; ++i) {
    const double k0 = std::floor(200 * rng.uniform()) - 100;
    xh[i] = static_cast<float>((k0 + 0.5) / wf[i]);
    // k0, k0 + 1, ... (the tie breaks the other way at the next k), each
    // from (k + 1/2) / w out to 4 ulps above and below: one of them does it
    // for about 97-98% of the weights (a host simulation).
    for (int j = 0; j < 8 && !rounds_apart(xh[i], wf[i]); ++j) {
      const float x0 = static_cast<float>((k0 + j + 0.5) / wf[i]);
      float up = x0, down = x0;
      xh[i] = x0;
      for (int step = 0; step < 4 && !rounds_apart(xh[i], wf[i]); ++step) {
        up = std::nextafter(up, 1e9f);
        down = std::nextafter(down, -1e9f);
        xh[i] = rounds_apart(up, wf[i]) ? up : down;
      }
    }
  }
  SlotBuffers<W, VEC> bufs(w, xh);
  const W* pw = bufs.weight();
  const float* in = bufs.in();
  float* out = bufs.out();
  int told_apart = 0;  // elements where rounding x * w first gives another sum
  auto check = [&](auto launch, const char* what, int64_t col0, bool weight, bool offset) {
    NK_CUDA_OK(cudaMemset(out, 0xff, VEC * 4));  // NaN
    launch();
    NK_CUDA_OK(cudaGetLastError());
    std::vector<float> o(VEC);
    NK_CUDA_OK(cudaMemcpy(o.data(), out, VEC * 4, cudaMemcpyDeviceToHost));
    for (int i = 0; i < VEC; ++i) {
      const float m = offset ? 1.f + (weight ? wf[col0 + i] : 0.f) : (weight ? wf[col0 + i] : 1.f);
      const float want = std::fma(xh[i], m, c);
      told_apart += rounds_apart(xh[i], m);
      EXPECT_EQ(o[i], want) << what << " col0 " << col0 << " i " << i;
    }
  };
  using normkit::epilogue::Scale;
  using Cached = normkit::detail::CachedEpilogue<Scale<W>, ParamCaching::kKeepInL1>;
  using Held = HeldEpilogue<Scale<W>>;
  using HeldOffset = HeldEpilogue<Scale<W, true>>;
  constexpr ParamCaching kNone = ParamCaching::kDefault, kL1 = ParamCaching::kKeepInL1;
  for (int64_t col0 : {int64_t{0}, int64_t{VEC}, int64_t{5 * VEC}}) {
    for (const W* wp : {pw, static_cast<const W*>(nullptr)}) {
      const bool has = wp != nullptr;
      check([&] { addend_epilogue_kernel<Scale<W>, VEC, false, kNone, false><<<1, 1>>>(wp, col0, c, in, out); },
            "apply", col0, has, false);
      check([&] { addend_epilogue_kernel<Scale<W>, VEC, true, kNone, false><<<1, 1>>>(wp, col0, c, in, out); },
            "apply_whole", col0, has, false);
      check([&] { addend_epilogue_kernel<Scale<W>, VEC, true, kL1, false><<<1, 1>>>(wp, col0, c, in, out); },
            "apply_whole, kept in L1", col0, has, false);
      check([&] { addend_epilogue_kernel<Cached, VEC, true, kNone, false><<<1, 1>>>(wp, col0, c, in, out); },
            "CachedEpilogue", col0, has, false);
      check([&] { addend_epilogue_kernel<Scale<W>, VEC, true, kNone, true><<<1, 1>>>(wp, col0, c, in, out); },
            "apply_prefetched", col0, has, false);
      check([&] { addend_epilogue_kernel<Scale<W, true>, VEC, false, kNone, false><<<1, 1>>>(wp, col0, c, in, out); },
            "(1 + w) apply", col0, has, true);
      check([&] { addend_epilogue_kernel<Scale<W, true>, VEC, true, kL1, false><<<1, 1>>>(wp, col0, c, in, out); },
            "(1 + w) apply_whole, kept in L1", col0, has, true);
      check([&] { addend_epilogue_kernel<Scale<W, true>, VEC, true, kNone, true><<<1, 1>>>(wp, col0, c, in, out); },
            "(1 + w) apply_prefetched", col0, has, true);
      check([&] { addend_epilogue_kernel<Held, VEC, true, kNone, true><<<1, 1>>>(wp, col0, c, in, out); },
            "apply_held", col0, has, false);
      check([&] { addend_epilogue_kernel<HeldOffset, VEC, true, kNone, true><<<1, 1>>>(wp, col0, c, in, out); },
            "(1 + w) apply_held", col0, has, true);
    }
  }
  EXPECT_GT(told_apart, 0) << "no element where the forms would differ: the data do not test the fma";
}

TEST(Epilogues, AddendFormsRoundOnce) {
  NK_REQUIRE_GPU();
  check_addend_forms<float, 4>();
  check_addend_forms<float, 8>();
  check_addend_forms<normkit::bfloat16, 8>();
  check_addend_forms<normkit::half, 8>();
}

// --------------------------------------------------------- packed slot adds
// detail::add_slots (a fused add's h = x + residual where both are of one
// 16-bit type) adds two elements an instruction, rounding the exact sum once;
// the library's claim is that this is, bit for bit, the fp32 path (both
// converted to fp32, added, the fp32 sum rounded to nearest even). Every pair
// of values of each type is checked, NaNs, infinities, signed zeros and
// subnormals included: block a takes value a, thread lanes the values b, and
// each slot adds (a, b) + (b, a), so both halves of the packed word see both
// orders. The reference is CUDA's own conversions and an fp32 add.
template <class T>
NORMKIT_DEVICE T fp32_path_sum(T a, T b) {
  if constexpr (std::is_same_v<T, normkit::bfloat16>) {
    return __float2bfloat16_rn(__fadd_rn(__bfloat162float(a), __bfloat162float(b)));
  } else {
    return __float2half_rn(__fadd_rn(__half2float(a), __half2float(b)));
  }
}

template <class T>
NORMKIT_DEVICE bool is_nan_bits(uint16_t h) {
  return std::is_same_v<T, normkit::bfloat16> ? (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0
                                              : (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
}

// counts: [0] pairs checked, [1] results that differ and are not both NaN,
// [2] both NaN with different bits, [3] 1 if this kernel's add_slots took the
// packed path (else the check would compare the fp32 path with itself);
// first: the first pair of [1] (a << 16 | b).
template <class T>
__global__ void slot_add_pairs_kernel(unsigned long long* counts, unsigned* first) {
  const uint16_t a = static_cast<uint16_t>(blockIdx.x);
  if (blockIdx.x == 0 && threadIdx.x == 0) counts[3] = normkit::detail::add_slots_packed<true, T, T, 2>() ? 1 : 0;
  unsigned long long checked = 0, wrong = 0, nan_bits = 0;
  for (unsigned b = threadIdx.x; b < 65536u; b += blockDim.x) {
    normkit::Slot<T, 2> x, y;
    const uint16_t xb[2] = {a, static_cast<uint16_t>(b)}, yb[2] = {static_cast<uint16_t>(b), a};
    memcpy(x.v, xb, 4);
    memcpy(y.v, yb, 4);
    const normkit::Slot<T, 2> got = normkit::detail::add_slots<true>(x, y);
    uint16_t g[2];
    memcpy(g, got.v, 4);
    for (int i = 0; i < 2; ++i) {
      const T want_t = fp32_path_sum(x.v[i], y.v[i]);
      uint16_t want;
      memcpy(&want, &want_t, 2);
      ++checked;
      if (g[i] == want) continue;
      if (is_nan_bits<T>(g[i]) && is_nan_bits<T>(want)) {
        ++nan_bits;
      } else if (wrong++ == 0) {
        atomicMin(first, (unsigned{xb[i]} << 16) | yb[i]);
      }
    }
  }
  atomicAdd(&counts[0], checked);
  if (wrong) atomicAdd(&counts[1], wrong);
  if (nan_bits) atomicAdd(&counts[2], nan_bits);
}

template <class T>
void check_slot_add_pairs(const char* name) {
  DeviceBuffer counts(4 * sizeof(unsigned long long)), first(sizeof(unsigned));
  ASSERT_EQ(cudaMemset(counts.data(), 0, 4 * sizeof(unsigned long long)), cudaSuccess);
  ASSERT_EQ(cudaMemset(first.data(), 0xFF, sizeof(unsigned)), cudaSuccess);
  slot_add_pairs_kernel<T><<<65536, 256>>>(reinterpret_cast<unsigned long long*>(counts.data()),
                                          reinterpret_cast<unsigned*>(first.data()));
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  unsigned long long c[4];
  unsigned f;
  ASSERT_EQ(cudaMemcpy(c, counts.data(), sizeof(c), cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(&f, first.data(), sizeof(f), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(c[3], 1ull) << name << ": add_slots<true> took the fp32 path here, so nothing was compared";
  EXPECT_EQ(c[0], 2ull << 32) << name << ": not every pair was checked";
  EXPECT_EQ(c[1], 0ull) << name << ": first differing pair a = 0x" << std::hex << (f >> 16) << ", b = 0x"
                        << (f & 0xffffu);
  EXPECT_EQ(c[2], 0ull) << name << ": NaN sums whose bits differ from the fp32 path's";
}

TEST(SlotAdd, PackedSumsAreTheFp32PathsBitsForEveryPair) {
  NK_REQUIRE_GPU();
  check_slot_add_pairs<normkit::bfloat16>("bf16");
  check_slot_add_pairs<normkit::half>("half");
}

// ------------------------------------------------------------- int8 packing
__global__ void int8_words_kernel(const float* in, const float* factors, int words, uint32_t* exact, uint32_t* saturating) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= words) return;
  const float f = factors[i];
  const float* v = in + 4 * i;
  exact[i] = normkit::detail::int8x4_word_scaled_in_range(f, v[0], v[1], v[2], v[3]);
  saturating[i] = normkit::detail::int8x4_word(v[0] * f, v[1] * f, v[2] * f, v[3] * f);
}

// The per-row int8 path rounds a * factor once (an fma with 1.5 * 2^23): the
// result must be the float64 product rounded to nearest even, ties included,
// and agree with the saturating conversion of the fp32 product wherever that
// product's own rounding cannot move it across a half.
TEST(Int8Words, ScaledInRangeRoundsTheExactProductToNearestEven) {
  NK_REQUIRE_GPU();
  nktest::Rng rng(nktest::fresh_seed());
  constexpr int kWords = 4096;
  std::vector<float> in(4 * kWords), factors(kWords);
  for (int w = 0; w < kWords; ++w) {
    if (w < 256) {  // exact ties: k + 0.5 (factor 1) and odd k times 0.5
      factors[w] = w % 2 ? 1.0f : 0.5f;
      for (int k = 0; k < 4; ++k) {
        const int n = static_cast<int>(rng.next() % 254) - 127;  // [-127, 126]
        in[4 * w + k] = w % 2 ? static_cast<float>(n) + 0.5f : static_cast<float>(2 * n + 1);
      }
    } else {  // |a * factor| <= 127, as a row's max|y| scaled to 127 gives, and
              // at the top up to 127.49 (a row's max a few ulps above it still rounds to 127)
      factors[w] = 127.f / (0.01f + static_cast<float>(rng.uniform()) * 1000.f);
      const double top = w < 512 ? 127.49 : 126.99;
      for (int k = 0; k < 4; ++k) {
        const double u = w < 512 ? 126.5 + rng.uniform() * (top - 126.5) : rng.uniform() * top;
        in[4 * w + k] = static_cast<float>((rng.next() % 2 ? u : -u) / factors[w]);
      }
    }
  }
  DeviceBuffer din(in.size() * 4), dfac(factors.size() * 4), dexact(kWords * 4), dsat(kWords * 4);
  ASSERT_EQ(cudaMemcpy(din.data(), in.data(), in.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dfac.data(), factors.data(), factors.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  int8_words_kernel<<<kWords / 256, 256>>>(reinterpret_cast<const float*>(din.data()), reinterpret_cast<const float*>(dfac.data()),
                                          kWords, reinterpret_cast<uint32_t*>(dexact.data()), reinterpret_cast<uint32_t*>(dsat.data()));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<uint32_t> exact(kWords), sat(kWords);
  ASSERT_EQ(cudaMemcpy(exact.data(), dexact.data(), kWords * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(sat.data(), dsat.data(), kWords * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  int ties = 0, bad = 0;
  for (int w = 0; w < kWords; ++w) {
    for (int k = 0; k < 4; ++k) {
      const double product = static_cast<double>(in[4 * w + k]) * factors[w];  // exact: 24 x 24 bits
      const double want = std::nearbyint(product);  // the host's default mode: nearest even
      const auto got = static_cast<int8_t>((exact[w] >> (8 * k)) & 0xff);
      if (got != want && bad++ < 5) ADD_FAILURE() << "word " << w << " byte " << k << ": " << int(got) << " want " << want;
      ties += std::fabs(product - std::trunc(product)) == 0.5;
      const float fp32_product = in[4 * w + k] * factors[w];
      if (std::fabs(std::fabs(fp32_product - std::trunc(fp32_product)) - 0.5) > 1e-4)
        EXPECT_EQ(static_cast<int8_t>((sat[w] >> (8 * k)) & 0xff), got) << "word " << w << " byte " << k;
    }
  }
  EXPECT_EQ(bad, 0);
  EXPECT_GE(ties, 4 * 256);  // the tie words really hold ties
}

}  // namespace
