// Must not compile: a weight whose type is neither float nor x's.
#include <normkit/quantize.cuh>

normkit::Status call(const normkit::RmsNormQuantArgs<normkit::bfloat16, normkit::float8_e4m3, normkit::half>& a) {
  return normkit::rms_norm_quant_forward(a);
}
