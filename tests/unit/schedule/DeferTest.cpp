// defer and prefetch's cache level in the schedule text and its JSON: parsed, printed
// back canonically, carried through JSON (the tuning database's form), and refused with
// a clear error when malformed.
#include "ir/Diagnostic.h"
#include "schedule/Schedule.h"

#include <gtest/gtest.h>

namespace unitile {
namespace {

Schedule parse(const std::string& text) { return parse_schedule(text, "t", SourceLoc{1, 1}); }

TEST(DeferSchedule, TextAndJsonRoundTrip) {
  Schedule s = parse("defer Y at i rows 16 on Y\nprefetch X at i level 2 on Y\nprefetch X at j\n");
  ASSERT_EQ(s.primitives.size(), 3u);
  EXPECT_EQ(s.primitives[0].kind, PrimitiveKind::Defer);
  EXPECT_EQ(s.primitives[0].buffer, "Y");
  EXPECT_EQ(s.primitives[0].at, "i");
  EXPECT_EQ(s.primitives[0].factors, (std::vector<int64_t>{16}));
  EXPECT_EQ(s.primitives[1].factors, (std::vector<int64_t>{2}));
  EXPECT_TRUE(s.primitives[2].factors.empty()); // level 1 is the default and prints as nothing
  EXPECT_EQ(to_text(s), "defer Y at i rows 16 on Y\nprefetch X at i level 2 on Y\nprefetch X at j\n");
  EXPECT_EQ(to_text(schedule_from_json(to_json(s), "t")), to_text(s));
  EXPECT_EQ(to_text(parse("prefetch X at i level 1")), "prefetch X at i\n");
}

TEST(DeferSchedule, MalformedIsAUserError) {
  EXPECT_THROW(parse("defer Y at i"), UserError);         // rows are required
  EXPECT_THROW(parse("defer Y at i rows 0"), UserError);  // a positive count
  EXPECT_THROW(parse("defer Y at i rows x"), UserError);
  EXPECT_THROW(parse("prefetch X at i level 3"), UserError);
  EXPECT_THROW(parse("prefetch X at i level"), UserError);
  EXPECT_THROW(parse("prefetch X at i rows 2"), UserError); // rows belong to defer
}

} // namespace
} // namespace unitile
