// bench/src/ops/add_layer_norm_bf16.cu: registers residual add + LayerNorm at bf16, out of place.
#include "../fused_ops.cuh"

static const bool kRegistered =
    nkbench::register_op(nkbench::make_op_spec<nkbench::AddLayerNormBench<normkit::bfloat16>>());
