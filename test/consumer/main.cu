// Builds against normkit as a user would; run without a GPU it reports the
// launcher's status rather than crashing.
#include <normkit/rms_norm.cuh>

#include <cstdio>

int main() {
  normkit::RmsNormArgs<normkit::bfloat16> args;  // null pointers, rows = 0: a valid no-op
  args.cols = 4096;
  const normkit::Status s = normkit::rms_norm_forward(args);
  std::printf("normkit consumer: %s\n", normkit::status_string(s));
  return s == normkit::Status::kSuccess ? 0 : 1;
}
