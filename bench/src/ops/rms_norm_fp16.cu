// bench/src/ops/rms_norm_fp16.cu: registers RMSNorm forward at fp16. One op and
// dtype per file: each kernel instantiation compiles once, in parallel.
#include "../norm_ops.cuh"

static const bool kRegistered = nkbench::register_op(nkbench::make_op_spec<nkbench::RmsNormBench<normkit::half>>());
