// Host tests of the row layout arithmetic the kernels share (RowLoader's
// columns, slot_valid, full_slots), by brute force: the staged and streaming
// kernels skip every bounds check on the slots full_slots counts, so a count
// one too high would read and write past the row.
#include <gtest/gtest.h>

#include <cstdint>

#include <normkit/block/row_loader.cuh>
#include <normkit/kernel/row_views.cuh>

namespace {

using normkit::detail::full_slots;
using normkit::detail::slot_valid;

TEST(RowLayout, FullSlotsAreExactlyTheLeadingWhollyValidSlots) {
  const int vecs[] = {1, 2, 4, 8, 16};
  const int teams[] = {1, 3, 4, 32, 96, 128, 384, 512, 1024};
  int64_t checked = 0;
  for (int vec : vecs) {
    for (int team : teams) {
      for (int64_t n = 0; n <= 3 * int64_t{team} * vec + 2 * vec + 1; n += (n < 600 ? 1 : 7)) {
        const int64_t slots = (n + int64_t{team} * vec - 1) / (int64_t{team} * vec);
        for (int lane = 0; lane < team; lane += (team > 64 ? 13 : 1)) {
          const int full = full_slots(n, vec, lane, team);
          int partial = 0;
          for (int s = 0; s < slots + 2; ++s) {
            const int64_t c = (int64_t{s} * team + lane) * vec;
            const int valid = slot_valid(n, c, vec);
            if (s < full) {
              ASSERT_EQ(valid, vec) << "n " << n << " vec " << vec << " team " << team << " lane " << lane << " s " << s;
            } else {
              ASSERT_LT(valid, vec) << "n " << n << " vec " << vec << " team " << team << " lane " << lane << " s " << s;
              if (valid > 0) ++partial;
            }
          }
          ASSERT_LE(partial, 1);  // the kernels' remainder path handles at most one
          ASSERT_LE(full, slots);
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 10000);
}

TEST(RowLayout, FullSlotsOfRowsPast2Pow31) {
  // 64-bit n: a streaming chunk may exceed 2^31 columns.
  const int64_t n = (int64_t{1} << 33) + 5;
  const int team = 512, vec = 8;
  const int64_t whole = n / vec;
  for (int lane : {0, 1, 511}) {
    const int full = full_slots(n, vec, lane, team);
    EXPECT_EQ(int64_t{full}, (whole - lane + team - 1) / team);
    EXPECT_EQ(slot_valid(n, (int64_t{full - 1} * team + lane) * vec, vec), vec);
    EXPECT_LT(slot_valid(n, (int64_t{full} * team + lane) * vec, vec), vec);
  }
}

TEST(RowLayout, ColumnsCoalesceBySlot) {
  using L = normkit::RowLoader<float, 4>;
  EXPECT_EQ(L::column(0, 0, 128), 0);
  EXPECT_EQ(L::column(0, 5, 128), 20);
  EXPECT_EQ(L::column(3, 5, 128), (3 * 128 + 5) * 4);
  EXPECT_EQ(L::column(1 << 20, 1023, 1024), ((int64_t{1} << 30) + 1023) * 4);  // past 2^31
}

}  // namespace
