// Learning-rate schedules: constant, linear warm-up then cosine decay to a floor (values
// at chosen updates worked out by hand), and the errors for schedules that make no sense.
#include "ir/Diagnostic.h"
#include "train/LrSchedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

namespace unitile::train {
namespace {

using ::testing::HasSubstr;

TEST(LrSchedule, ConstantIsTheSameAtEveryUpdate) {
  const LrSchedule s = LrSchedule::constant(0.25);
  EXPECT_EQ(s.at(0), 0.25);
  EXPECT_EQ(s.at(12345), 0.25);
}

TEST(LrSchedule, WarmupRampsLinearlyThenCosineFallsToTheFloor) {
  const LrSchedule s = LrSchedule::warmup_cosine(1.0, 4, 12, 0.1);
  EXPECT_DOUBLE_EQ(s.at(0), 0.25); // (0 + 1) / 4
  EXPECT_DOUBLE_EQ(s.at(1), 0.5);
  EXPECT_DOUBLE_EQ(s.at(3), 1.0);
  EXPECT_DOUBLE_EQ(s.at(4), 1.0);  // the cosine starts at base_lr
  EXPECT_DOUBLE_EQ(s.at(8), 0.55); // half way: 0.1 + 0.9 * 0.5 * (1 + cos(pi / 2))
  EXPECT_DOUBLE_EQ(s.at(6), 0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI * 0.25)));
  EXPECT_DOUBLE_EQ(s.at(12), 0.1);
  EXPECT_DOUBLE_EQ(s.at(1000), 0.1);
  for (int64_t t = 4; t < 12; ++t)
    EXPECT_GT(s.at(t), s.at(t + 1)) << "update " << t;
}

TEST(LrSchedule, NoWarmupStartsAtTheBaseRate) {
  const LrSchedule s = LrSchedule::warmup_cosine(0.5, 0, 10);
  EXPECT_DOUBLE_EQ(s.at(0), 0.5);
  EXPECT_DOUBLE_EQ(s.at(5), 0.25);
  EXPECT_DOUBLE_EQ(s.at(10), 0.0);
}

TEST(LrSchedule, NonsenseIsAUserError) {
  auto message = [](auto make) {
    try {
      make();
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(message([] { LrSchedule::warmup_cosine(1.0, 10, 5); }),
              HasSubstr("total_steps must be at least warmup_steps"));
  EXPECT_THAT(message([] { LrSchedule::warmup_cosine(1.0, 1, 5, 2.0); }), HasSubstr("min_lr must be in [0, base_lr]"));
  EXPECT_THAT(message([] { LrSchedule::warmup_cosine(1.0, -1, 5); }), HasSubstr("warmup_steps must not be negative"));
  EXPECT_THAT(message([] { LrSchedule::constant(-0.1); }), HasSubstr("finite number >= 0"));
  EXPECT_THAT(message([] { LrSchedule::constant(NAN); }), HasSubstr("constant(lr=nan)"));
  EXPECT_THAT(message([] { LrSchedule::constant(1).at(-1); }), HasSubstr("updates count from 0"));
}

} // namespace
} // namespace unitile::train
