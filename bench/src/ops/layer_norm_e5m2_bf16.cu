// bench/src/ops/layer_norm_e5m2_bf16.cu: registers LayerNorm with a bf16 input and an
// fp8 (e5m2) output, with dynamic per-row scales and with a static per-tensor scale
// (layer_norm_fp8_e5m2, layer_norm_fp8_e5m2_static). The launcher instantiates both
// kernels for either call, so they share this file.
#include "../fused_ops.cuh"

static const bool kRegistered =
    nkbench::register_op(
        nkbench::make_op_spec<nkbench::LayerNormQuantBench<normkit::bfloat16, normkit::float8_e5m2>>()) &&
    nkbench::register_op(
        nkbench::make_op_spec<nkbench::LayerNormQuantStaticBench<normkit::bfloat16, normkit::float8_e5m2>>());
