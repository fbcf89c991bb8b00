// Must not compile: a quantizing launcher whose output type is not fp8 or
// int8 (issue 4: an unsupported output type is refused with a message that
// says what to change; in a typed API that is a static_assert, not a Status).
#include <normkit/quantize.cuh>

normkit::Status call(const normkit::RmsNormQuantArgs<normkit::bfloat16, normkit::half>& a) {
  return normkit::rms_norm_quant_forward(a);
}
