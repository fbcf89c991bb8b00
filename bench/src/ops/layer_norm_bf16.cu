// bench/src/ops/layer_norm_bf16.cu: registers LayerNorm forward at bf16. One op and
// dtype per file: each kernel instantiation compiles once, in parallel.
#include "../norm_ops.cuh"

static const bool kRegistered = nkbench::register_op(nkbench::make_op_spec<nkbench::LayerNormBench<normkit::bfloat16>>());
