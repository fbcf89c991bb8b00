// bench/src/ops/add_rms_norm_bf16.cu: registers residual add + RMSNorm at bf16, out of
// place and in place. Both run the same kernel instantiation, so they share this file.
#include "../fused_ops.cuh"

static const bool kRegistered =
    nkbench::register_op(nkbench::make_op_spec<nkbench::AddRmsNormBench<normkit::bfloat16, false>>()) &&
    nkbench::register_op(nkbench::make_op_spec<nkbench::AddRmsNormBench<normkit::bfloat16, true>>());
