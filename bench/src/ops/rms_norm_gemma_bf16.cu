// bench/src/ops/rms_norm_gemma_bf16.cu: registers RMSNorm with Gemma's (1 + w) scale at bf16.
#include "../norm_ops.cuh"

static const bool kRegistered =
    nkbench::register_op(nkbench::make_op_spec<nkbench::GemmaRmsNormBench<normkit::bfloat16>>());
