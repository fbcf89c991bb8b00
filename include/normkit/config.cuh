// normkit/config.cuh: version, namespaces and portability macros.
#pragma once

#define NORMKIT_VERSION_MAJOR 0
#define NORMKIT_VERSION_MINOR 1
#define NORMKIT_VERSION_PATCH 0

#if defined(__CUDACC__)
#define NORMKIT_HOST_DEVICE __host__ __device__ __forceinline__
#define NORMKIT_DEVICE __device__ __forceinline__
#else
#define NORMKIT_HOST_DEVICE inline
#define NORMKIT_DEVICE inline
#endif

// Kernels are templates defined in headers, so two translation units of a
// caller that were compiled for different GPU architectures can instantiate the
// "same" kernel. The linker keeps one host stub, and with it one set of device
// code, which may lack the running GPU. As CUB does, every symbol lives in an
// inline namespace whose name spells the version and the architecture list of
// the translation unit, so such instantiations never collide.
#define NORMKIT_DETAIL_CAT2(a, b) a##b
#define NORMKIT_DETAIL_CAT(a, b) NORMKIT_DETAIL_CAT2(a, b)
#define NORMKIT_DETAIL_ARCH1(a) _##a
#define NORMKIT_DETAIL_ARCH2(a, b) _##a##_##b
#define NORMKIT_DETAIL_ARCH3(a, b, c) _##a##_##b##_##c
#define NORMKIT_DETAIL_ARCH4(a, b, c, d) _##a##_##b##_##c##_##d
#define NORMKIT_DETAIL_ARCH5(a, b, c, d, e) _##a##_##b##_##c##_##d##_##e
#define NORMKIT_DETAIL_ARCH6(a, b, c, d, e, f) _##a##_##b##_##c##_##d##_##e##_##f
#define NORMKIT_DETAIL_ARCH7(a, b, c, d, e, f, g) _##a##_##b##_##c##_##d##_##e##_##f##_##g
#define NORMKIT_DETAIL_ARCH8(a, b, c, d, e, f, g, h) _##a##_##b##_##c##_##d##_##e##_##f##_##g##_##h
#define NORMKIT_DETAIL_PICK(_1, _2, _3, _4, _5, _6, _7, _8, NAME, ...) NAME
#define NORMKIT_DETAIL_ARCHS(...)                                                                 \
  NORMKIT_DETAIL_PICK(__VA_ARGS__, NORMKIT_DETAIL_ARCH8, NORMKIT_DETAIL_ARCH7,                    \
                      NORMKIT_DETAIL_ARCH6, NORMKIT_DETAIL_ARCH5, NORMKIT_DETAIL_ARCH4,           \
                      NORMKIT_DETAIL_ARCH3, NORMKIT_DETAIL_ARCH2, NORMKIT_DETAIL_ARCH1)           \
  (__VA_ARGS__)
#if defined(__CUDA_ARCH_LIST__)
#define NORMKIT_DETAIL_ARCH_TAG NORMKIT_DETAIL_ARCHS(__CUDA_ARCH_LIST__)
#else
#define NORMKIT_DETAIL_ARCH_TAG _host
#endif
#define NORMKIT_ABI_NAMESPACE                                                                     \
  NORMKIT_DETAIL_CAT(NORMKIT_DETAIL_CAT(v0_1_0, NORMKIT_DETAIL_ARCH_TAG), _)

#define NORMKIT_NAMESPACE_BEGIN \
  namespace normkit {           \
  inline namespace NORMKIT_ABI_NAMESPACE {
#define NORMKIT_NAMESPACE_END \
  }                           \
  }
