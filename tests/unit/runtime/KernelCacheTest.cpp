// The kernel cache: hits compile nothing, corrupt entries are noticed and rebuilt,
// concurrent processes leave exactly one valid entry, an unusable directory degrades.
#include "runtime/KernelCache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace unitile {
namespace {

using ::testing::HasSubstr;

// A fresh directory per test, removed afterwards.
class KernelCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("unitile-cache-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_ / "kernels", fs::perms::owner_all, ec);
    fs::remove_all(dir_, ec);
  }
  std::vector<fs::path> files_in_kernels() const {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir_ / "kernels")) out.push_back(e.path());
    return out;
  }
  KernelCache make_cache() {
    return KernelCache(dir_, [this](const std::string& n) { notes_.push_back(n); });
  }
  fs::path dir_;
  std::vector<std::string> notes_;
};

CacheKey key_for(const std::string& loop_ir) {
  return kernel_cache_key({loop_ir, "source", "c", 1234, "cc 12", "-O2"});
}

std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

TEST(CacheKey, EveryPartChangesTheKey) {
  const CacheKeyParts base{"loop", "src", "c", 1, "cc 12", "-O2"};
  const CacheKey k = kernel_cache_key(base);
  EXPECT_EQ(k, kernel_cache_key(base));
  EXPECT_EQ(k.hex().size(), 32u);
  auto changed = [&](auto edit) {
    CacheKeyParts p = base;
    edit(p);
    return kernel_cache_key(p) != k;
  };
  EXPECT_TRUE(changed([](CacheKeyParts& p) { p.loop_ir += " "; }));
  EXPECT_TRUE(changed([](CacheKeyParts& p) { p.source = "src2"; }));
  EXPECT_TRUE(changed([](CacheKeyParts& p) { p.dialect = "loopir"; }));
  EXPECT_TRUE(changed([](CacheKeyParts& p) { p.hcd_hash = 2; }));
  EXPECT_TRUE(changed([](CacheKeyParts& p) { p.toolchain_version = "cc 13"; }));
  EXPECT_TRUE(changed([](CacheKeyParts& p) { p.options = "-O3"; }));
  // Boundaries between parts count: moving a character across one is a different key.
  EXPECT_TRUE(changed([](CacheKeyParts& p) { p.loop_ir = "loo"; p.source = "psrc"; }));
}

TEST(CacheEntry, HeaderValidatesEverything) {
  const auto payload = bytes_of("a compiled kernel");
  auto entry = encode_cache_entry(payload);
  std::string why;
  EXPECT_EQ(decode_cache_entry(entry, &why), payload);

  auto truncated = entry;
  truncated.pop_back();
  EXPECT_FALSE(decode_cache_entry(truncated, &why));
  EXPECT_THAT(why, HasSubstr("header says"));
  EXPECT_FALSE(decode_cache_entry(std::vector<uint8_t>(entry.begin(), entry.begin() + 10), &why));
  EXPECT_THAT(why, HasSubstr("shorter than the header"));
  auto flipped = entry;
  flipped.back() ^= 0x10;
  EXPECT_FALSE(decode_cache_entry(flipped, &why));
  EXPECT_THAT(why, HasSubstr("hash mismatch"));
  auto magic = entry;
  magic[0] = 'X';
  EXPECT_FALSE(decode_cache_entry(magic, &why));
  EXPECT_THAT(why, HasSubstr("magic"));
  auto version = entry;
  version[8] ^= 0xff;
  EXPECT_FALSE(decode_cache_entry(version, &why));
  EXPECT_THAT(why, HasSubstr("format version"));
}

TEST_F(KernelCacheTest, SecondCompileOfTheSameKernelCompilesNothing) {
  int compiles = 0;
  auto compile = [&] {
    ++compiles;
    return bytes_of("binary");
  };
  {
    KernelCache cache = make_cache();
    EXPECT_EQ(*cache.get_or_compile(key_for("k1"), compile), bytes_of("binary"));
    EXPECT_EQ(*cache.get_or_compile(key_for("k1"), compile), bytes_of("binary"));
    EXPECT_EQ(compiles, 1);
    EXPECT_EQ(cache.stats().memory_hits, 1);
  }
  // A new cache object (a new process) finds the entry on disk.
  KernelCache again = make_cache();
  EXPECT_EQ(*again.get_or_compile(key_for("k1"), compile), bytes_of("binary"));
  EXPECT_EQ(compiles, 1);
  EXPECT_EQ(again.stats().disk_hits, 1);
  // A different kernel is a different entry.
  again.get_or_compile(key_for("k2"), compile);
  EXPECT_EQ(compiles, 2);
  EXPECT_EQ(files_in_kernels().size(), 2u);
  EXPECT_TRUE(notes_.empty());
}

TEST_F(KernelCacheTest, TruncatedOrBitFlippedEntryIsRebuilt) {
  int compiles = 0;
  auto compile = [&] {
    ++compiles;
    return bytes_of("the real binary");
  };
  make_cache().get_or_compile(key_for("k"), compile);
  const fs::path entry = make_cache().entry_path(key_for("k"));
  ASSERT_TRUE(fs::exists(entry));

  for (int damage = 0; damage < 2; ++damage) {
    SCOPED_TRACE(damage == 0 ? "truncated" : "bit flipped");
    if (damage == 0) {
      fs::resize_file(entry, fs::file_size(entry) - 3);
    } else {
      std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
      f.seekg(-1, std::ios::end);
      char c;
      f.get(c);
      f.seekp(-1, std::ios::end);
      f.put(static_cast<char>(c ^ 0x01));
    }
    notes_.clear();
    const int before = compiles;
    KernelCache cache = make_cache();
    EXPECT_EQ(*cache.get_or_compile(key_for("k"), compile), bytes_of("the real binary"));
    EXPECT_EQ(compiles, before + 1) << "a corrupt entry must never be loaded";
    EXPECT_EQ(cache.stats().corrupt_entries, 1);
    ASSERT_EQ(notes_.size(), 1u);
    EXPECT_THAT(notes_[0], HasSubstr("unitile: note: rebuilding corrupt cache entry"));
    EXPECT_THAT(notes_[0], HasSubstr(entry.string()));
    // The rebuilt entry is valid again.
    KernelCache fresh = make_cache();
    fresh.get_or_compile(key_for("k"), compile);
    EXPECT_EQ(compiles, before + 1);
  }
}

TEST_F(KernelCacheTest, TwoProcessesCompilingAtOnceLeaveOneValidEntry) {
  // Both children wait for the same instant, then compile slowly, so their writes race.
  const auto start = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  std::vector<pid_t> children;
  for (int c = 0; c < 2; ++c) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::this_thread::sleep_until(start);
      KernelCache cache(dir_, [](const std::string&) {});
      auto bin = cache.get_or_compile(key_for("shared"), [] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        return std::vector<uint8_t>(100000, 0xab);
      });
      ::_exit(bin->size() == 100000 && cache.stats().compiles == 1 ? 0 : 3);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  const auto files = files_in_kernels();
  ASSERT_EQ(files.size(), 1u) << "no temporary files may be left behind";
  EXPECT_EQ(files[0].filename().string(), key_for("shared").hex() + ".bin");
  std::ifstream in(files[0], std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string why;
  auto payload = decode_cache_entry(bytes, &why);
  ASSERT_TRUE(payload) << why;
  EXPECT_EQ(*payload, std::vector<uint8_t>(100000, 0xab));
}

TEST_F(KernelCacheTest, UnwritableDirectoryDegradesToMemoryOnly) {
  if (::geteuid() == 0) {
    // root ignores permission bits: make the cache path a regular file instead.
    fs::create_directories(dir_);
    std::ofstream(dir_ / "kernels") << "not a directory";
  } else {
    fs::create_directories(dir_ / "kernels");
    fs::permissions(dir_ / "kernels", fs::perms::owner_read | fs::perms::owner_exec);
  }
  KernelCache cache = make_cache();
  EXPECT_FALSE(cache.disk_enabled());
  ASSERT_EQ(notes_.size(), 1u);
  EXPECT_THAT(notes_[0], HasSubstr("continuing without a disk cache"));
  int compiles = 0;
  auto compile = [&] {
    ++compiles;
    return bytes_of("b");
  };
  EXPECT_EQ(*cache.get_or_compile(key_for("k"), compile), bytes_of("b"));
  EXPECT_EQ(*cache.get_or_compile(key_for("k"), compile), bytes_of("b"));
  EXPECT_EQ(compiles, 1);
}

TEST(KernelCache, MemoryOnlyWithoutADirectory) {
  KernelCache cache(std::nullopt);
  EXPECT_FALSE(cache.disk_enabled());
  int compiles = 0;
  cache.get_or_compile(key_for("k"), [&] {
    ++compiles;
    return bytes_of("b");
  });
  cache.get_or_compile(key_for("k"), [&] {
    ++compiles;
    return bytes_of("b");
  });
  EXPECT_EQ(compiles, 1);
}

TEST(KernelCache, CompileErrorsPropagateAndCacheNothing) {
  KernelCache cache(std::nullopt);
  EXPECT_THROW(cache.get_or_compile(key_for("k"), []() -> std::vector<uint8_t> { throw std::runtime_error("x"); }),
               std::runtime_error);
  EXPECT_EQ(cache.stats().compiles, 0);
  int compiles = 0;
  cache.get_or_compile(key_for("k"), [&] {
    ++compiles;
    return bytes_of("b");
  });
  EXPECT_EQ(compiles, 1);
}

} // namespace
} // namespace unitile
