// When kernels take their WHOLE form (no bounds, one access per slot): the
// register shapes only when the team's slots hold the row exactly, and every
// shape only when every access of x, y, the residuals and the parameters is
// aligned to a whole slot (Params::whole_access). A wrong "yes" would read
// past rows or misalign accesses, so each condition is checked on its own.
// Host only: the pointers are fake. An input policy without the WHOLE hooks
// (written to the older contract) still compiles and never takes the form.
#include <gtest/gtest.h>

#include <normkit/add_norm.cuh>
#include <normkit/layer_norm.cuh>
#include <normkit/launch/launcher.cuh>
#include <normkit/rms_norm.cuh>

namespace {

using bf16 = normkit::bfloat16;
using LN = normkit::detail::LayerNormProblem<bf16, bf16, bf16, normkit::stats::TwoPass>;
using AddRms = normkit::detail::AddRmsNormProblem<bf16, bf16, bf16, bf16>;

template <class T>
T* fake(uintptr_t a) {
  return reinterpret_cast<T*>(a);
}

// Access widths and whole_access as Launcher::run sets them.
template <class P>
typename P::Params prepared(typename P::Params p) {
  p.x_access = normkit::access_bytes_for(p.x, p.x_stride, sizeof(typename P::X), 16);
  p.y_access = normkit::access_bytes_for(p.y, p.y_stride, sizeof(typename P::Y), 16);
  P::Input::prepare(p.input);
  p.whole_access = normkit::detail::Launcher<P>::whole_access(p);
  return p;
}

LN::Params ln(int64_t cols, uintptr_t x = 0x100000, uintptr_t y = 0x900000, uintptr_t w = 0x2000,
              uintptr_t b = 0x4000) {
  LN::Params p;
  p.x = fake<const bf16>(x);
  p.y = fake<bf16>(y);
  p.rows = 3;
  p.cols = p.x_stride = p.y_stride = cols;
  p.epilogue.weight = fake<const bf16>(w);
  p.epilogue.bias = fake<const bf16>(b);
  return prepared<LN>(p);
}

TEST(WholeForm, OnlyRowsTheTeamHoldsExactly) {
  using L = normkit::detail::Launcher<LN>;
  EXPECT_TRUE(L::whole_form(ln(4096), 128, 4));  // 128 threads x 4 slots x 8 = 4096
  EXPECT_TRUE(L::whole_form(ln(256), 16, 2));
  EXPECT_FALSE(L::whole_form(ln(4096), 160, 4));  // more slots than the row
  EXPECT_FALSE(L::whole_form(ln(4088), 128, 4));  // the last slot empty
  EXPECT_FALSE(L::whole_form(ln(4095), 128, 4));  // the last slot partial
  // 3 slots (N = 768 in one warp) run only in the WHOLE form; otherwise the
  // checked 4-slot kernel takes the row (Launcher::checked_vecs).
  EXPECT_TRUE(L::whole_form(ln(768), 32, 3));
  EXPECT_FALSE(L::whole_form(ln(768, 0x100002), 32, 3));
  EXPECT_FALSE(L::whole_form(ln(767), 32, 3));
  EXPECT_EQ(L::checked_vecs(3), 4);
  EXPECT_EQ(L::checked_vecs(2), 2);
  EXPECT_EQ(L::checked_vecs(4), 4);
}

TEST(WholeForm, OnlyWhenEveryAccessIsAlignedToASlot) {
  using L = normkit::detail::Launcher<LN>;
  EXPECT_FALSE(L::whole_form(ln(4096, 0x100002), 128, 4));  // x
  EXPECT_FALSE(L::whole_form(ln(4096, 0x100000, 0x900008), 128, 4));  // y
  EXPECT_FALSE(L::whole_form(ln(4096, 0x100000, 0x900000, 0x2002), 128, 4));  // weight
  EXPECT_FALSE(L::whole_form(ln(4096, 0x100000, 0x900000, 0x2000, 0x4008), 128, 4));  // bias
  LN::Params strided = ln(4096);
  strided.x_stride = 4100;  // rows after the first start 8 bytes off
  EXPECT_FALSE(L::whole_form(prepared<LN>(strided), 128, 4));
  strided.x_stride = 4104;  // 16 bytes further: aligned again
  EXPECT_TRUE(L::whole_form(prepared<LN>(strided), 128, 4));
  LN::Params no_params = ln(4096, 0x100000, 0x900000, 0, 0);  // null weight and bias
  EXPECT_TRUE(L::whole_form(no_params, 128, 4));
}

TEST(WholeForm, ResidualsAlignedToo) {
  using L = normkit::detail::Launcher<AddRms>;
  auto add = [](uintptr_t r, uintptr_t ro) {
    AddRms::Params p;
    p.x = fake<const bf16>(0x100000);
    p.y = fake<bf16>(0x900000);
    p.rows = 3;
    p.cols = p.x_stride = p.y_stride = 1024;
    p.input.residual = fake<const bf16>(r);
    p.input.residual_out = fake<bf16>(ro);
    p.input.residual_stride = p.input.residual_out_stride = 1024;
    p.epilogue.weight = fake<const bf16>(0x2000);
    return prepared<AddRms>(p);
  };
  EXPECT_TRUE(L::whole_form(add(0x500000, 0x700000), 64, 2));
  EXPECT_FALSE(L::whole_form(add(0x500002, 0x700000), 64, 2));
  EXPECT_FALSE(L::whole_form(add(0x500000, 0x700004), 64, 2));
}

// An input policy written to the contract before the WHOLE form: no
// whole_slots, no WHOLE argument to load. It must still compile in every
// kernel and never be given the WHOLE form.
struct OldPlainInput {
  using Storage = bf16;
  struct Params {};
  static void prepare(Params&) {}
  static constexpr bool kIsPlainCopy = false;
  template <int K, int VEC, class P>
  static __device__ void load(const P& p, int64_t row, int64_t col_base, int64_t n, int first_slot, int lane,
                              int team, bool, normkit::detail::RawSlot<bf16, VEC> (&v)[K]) {
    normkit::RowLoader<bf16, VEC>::template load_raw<K>(p.x + row * p.x_stride + col_base, n, first_slot, lane, team,
                                                        p.x_access, v);
  }
  template <int VEC, class P>
  static __device__ float pilot(const P&, int64_t) {
    return 0.f;
  }
};
using OldInputLN = normkit::Problem<bf16, normkit::stats::TwoPass, normkit::epilogue::Affine<bf16>, OldPlainInput>;

TEST(WholeForm, InputPoliciesWithoutTheHooksNeverTakeIt) {
  using L = normkit::detail::Launcher<OldInputLN>;
  OldInputLN::Params p;
  p.x = fake<const bf16>(0x100000);
  p.y = fake<bf16>(0x900000);
  p.rows = 3;
  p.cols = p.x_stride = p.y_stride = 4096;
  EXPECT_FALSE(L::whole_access(prepared<OldInputLN>(p)));
  // Every kernel the launcher may start compiles with it.
  EXPECT_NE(reinterpret_cast<const void*>(&normkit::kernel::rows_per_warp<OldInputLN, 2, true>), nullptr);
  EXPECT_NE(reinterpret_cast<const void*>(&normkit::kernel::row_per_block<OldInputLN, 4, true>), nullptr);
  EXPECT_NE(reinterpret_cast<const void*>(&normkit::kernel::row_chunked<OldInputLN, false>), nullptr);
  EXPECT_NE(reinterpret_cast<const void*>(&normkit::kernel::row_chunked<OldInputLN, true>), nullptr);
  // Split parts copy and add AddResidual's rows themselves: a caller's own
  // input that is not a plain copy never takes them (nor instantiates them).
  EXPECT_FALSE(L::kSplitsParts);
  EXPECT_FALSE(normkit::kernel::kSplitsParts<OldInputLN>);
}

}  // namespace
