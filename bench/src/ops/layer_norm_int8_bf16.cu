// bench/src/ops/layer_norm_int8_bf16.cu: registers LayerNorm with a bf16 input and an
// int8 output, with dynamic per-row scales and with a static per-tensor scale
// (layer_norm_int8, layer_norm_int8_static; one instantiation of the launcher holds
// both kernels).
#include "../fused_ops.cuh"

static const bool kRegistered =
    nkbench::register_op(nkbench::make_op_spec<nkbench::LayerNormQuantBench<normkit::bfloat16, int8_t>>()) &&
    nkbench::register_op(nkbench::make_op_spec<nkbench::LayerNormQuantStaticBench<normkit::bfloat16, int8_t>>());
