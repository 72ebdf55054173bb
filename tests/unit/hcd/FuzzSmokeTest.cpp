// Random byte mutations of valid HCD files: the loader may reject them, but only with a
// UserError, never a crash, an InternalError or another exception.
#include "hcd/Hcd.h"
#include "ir/Diagnostic.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>

namespace unitile::hcd {
namespace {

std::string mutate(std::string text, std::mt19937& rng) {
  static const std::string interesting = "[]{}=\"'.,#\n\\ 0-+eE_KiB";
  int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits && !text.empty(); ++e) {
    size_t at = rng() % text.size();
    switch (rng() % 5) {
    case 0: text[at] = static_cast<char>(rng() % 256); break;
    case 1: text[at] = interesting[rng() % interesting.size()]; break;
    case 2: text.insert(at, 1, interesting[rng() % interesting.size()]); break;
    case 3: text.erase(at, 1 + rng() % 8); break;
    case 4: text.insert(at, text.substr(rng() % text.size(), 1 + rng() % 16)); break;
    }
  }
  return text;
}

TEST(HcdFuzzSmoke, MutatedFilesOnlyEverRaiseUserError) {
  std::vector<std::string> seeds;
  for (const char* name : {"sim", "nvidia-h200", "virtual-npu"}) seeds.push_back(to_toml(builtin(name)));
  std::mt19937 rng(12345); // fixed: a failure must reproduce
  int accepted = 0, rejected = 0;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 3000; ++i) {
    std::string input = mutate(seeds[i % seeds.size()], rng);
    try {
      Hcd h = load_string(input, "fuzz.toml");
      // Whatever loads must survive its own round trip.
      EXPECT_EQ(load_string(to_toml(h), "again.toml").hash(), h.hash()) << input;
      ++accepted;
    } catch (const UserError& e) {
      ASSERT_EQ(e.diagnostics().size(), 1u) << input;
      EXPECT_FALSE(e.diagnostics()[0].message.empty());
      ++rejected;
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GT(accepted, 0);
  EXPECT_GT(rejected, 0);
  EXPECT_LT(seconds, 3.0);
}

} // namespace
} // namespace unitile::hcd
