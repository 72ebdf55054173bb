// Byte sizes and did-you-mean suggestions, the small helpers behind HCD diagnostics.
#include "hcd/NearMiss.h"
#include "hcd/Size.h"

#include <gtest/gtest.h>

namespace unitile::hcd {
namespace {

TEST(HcdSize, ParsesIntegersAndBinaryUnits) {
  EXPECT_EQ(parse_size("0"), 0);
  EXPECT_EQ(parse_size("4096"), 4096);
  EXPECT_EQ(parse_size("512B"), 512);
  EXPECT_EQ(parse_size("32KiB"), 32 * 1024);
  EXPECT_EQ(parse_size("32 KiB"), 32 * 1024);
  EXPECT_EQ(parse_size("1MiB"), 1 << 20);
  EXPECT_EQ(parse_size("2GiB"), int64_t{2} << 30);
  EXPECT_EQ(parse_size("1TiB"), int64_t{1} << 40);
}

TEST(HcdSize, RejectsEverythingElse) {
  for (const char* bad : {"", "KiB", "32KB", "32kb", "32 MB", "-1", "1.5MiB", "32KiBs", "32  KiB",
                          "99999999999999999999", "9999999999999TiB", " 32KiB"})
    EXPECT_EQ(parse_size(bad), std::nullopt) << bad;
}

TEST(HcdSize, LiteralsAreExactAndReadBack) {
  EXPECT_EQ(size_literal(0), "0");
  EXPECT_EQ(size_literal(1000), "1000");
  EXPECT_EQ(size_literal(48 * 1024), "\"48KiB\"");
  EXPECT_EQ(size_literal(1536 * 1024), "\"1536KiB\"");
  EXPECT_EQ(size_literal(int64_t{3} << 30), "\"3GiB\"");
  for (int64_t bytes : {int64_t{1024}, int64_t{5} << 20, (int64_t{7} << 40) + 2048}) {
    std::string lit = size_literal(bytes);
    EXPECT_EQ(parse_size(lit.substr(1, lit.size() - 2)), bytes) << lit;
  }
}

TEST(HcdSize, HumanSizes) {
  EXPECT_EQ(human_size(512), "512 B");
  EXPECT_EQ(human_size(48 * 1024), "48 KiB");
  EXPECT_EQ(human_size(1536 * 1024), "1.5 MiB");
  EXPECT_EQ(human_size(105 << 20), "105 MiB");
}

TEST(HcdNearMiss, SuggestsOnlyPlausibleTypos) {
  constexpr std::string_view keys[] = {"vector_bits", "vector_registers", "warp_size", "isa"};
  EXPECT_EQ(closest_name("vectr_bits", keys), "vector_bits");
  EXPECT_EQ(closest_name("Warp_Size", keys), "warp_size");
  EXPECT_EQ(closest_name("vector_register", keys), "vector_registers");
  EXPECT_EQ(closest_name("colour", keys), std::nullopt);
  EXPECT_EQ(closest_name("is", keys), "isa");
  EXPECT_EQ(closest_name("wa", keys), std::nullopt); // two edits in a two-letter word
  EXPECT_EQ(closest_name("", keys), std::nullopt);
}

} // namespace
} // namespace unitile::hcd
