// bench/src/ops/rms_norm_int8_bf16.cu: registers RMSNorm with a bf16 input and an
// int8 output, with dynamic per-row scales and with a static per-tensor scale (one
// instantiation of the launcher holds both kernels).
#include "../fused_ops.cuh"

static const bool kRegistered =
    nkbench::register_op(nkbench::make_op_spec<nkbench::RmsNormQuantBench<normkit::bfloat16, int8_t>>()) &&
    nkbench::register_op(nkbench::make_op_spec<nkbench::RmsNormQuantStaticBench<normkit::bfloat16, int8_t>>());
