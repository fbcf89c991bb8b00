// bench/src/ops/layer_norm_gemma_bf16.cu: registers LayerNorm with the zero-centred weight's (1 + w) scale at bf16.
#include "../norm_ops.cuh"

static const bool kRegistered =
    nkbench::register_op(nkbench::make_op_spec<nkbench::GemmaLayerNormBench<normkit::bfloat16>>());
