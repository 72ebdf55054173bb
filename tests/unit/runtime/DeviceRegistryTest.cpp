// Plugin loading and the device registry: the ABI check, dlopen and symbol failures,
// the search path order, unknown devices, and `unitile devices` listings.
#include "FakePlugins.h"

#include "ir/Diagnostic.h"
#include "runtime/DeviceRegistry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

namespace fs = std::filesystem;

namespace unitile {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::build_c_plugin;
using testing::fake_device_source;
using testing::TempDir;

// Sets UNITILE_PLUGIN_PATH for one test and restores it afterwards.
class PluginPathOverride {
public:
  explicit PluginPathOverride(const std::string& value) {
    if (const char* old = std::getenv("UNITILE_PLUGIN_PATH")) old_ = old;
    ::setenv("UNITILE_PLUGIN_PATH", value.c_str(), 1);
  }
  ~PluginPathOverride() {
    if (old_)
      ::setenv("UNITILE_PLUGIN_PATH", old_->c_str(), 1);
    else
      ::unsetenv("UNITILE_PLUGIN_PATH");
  }

private:
  std::optional<std::string> old_;
};

std::string user_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no UserError)";
}

TEST(DevicePlugin, AbiVersionCheck) {
  EXPECT_NO_THROW(check_device_abi(UT_DEVICE_ABI_VERSION, "p.so"));
  EXPECT_EQ(user_error_of([] { check_device_abi(2, "/x/libunitile-device-new.so"); }),
            "error: plugin /x/libunitile-device-new.so was built for device ABI v2; this runtime speaks v1");
}

TEST(DevicePlugin, StatusesBecomeUserOrInternalErrors) {
  ut_error err{};
  std::snprintf(err.message, sizeof err.message, "%s", "x.c:3:1: error: expected ';'");
  EXPECT_NO_THROW(check_status(UT_OK, err, "cpu", "compile"));
  EXPECT_THAT(user_error_of([&] { check_status(UT_ERROR_COMPILE, err, "cpu", "compile"); }),
              HasSubstr("expected ';'"));
  EXPECT_THAT(user_error_of([&] { check_status(UT_ERROR_MEMORY, err, "cpu", "alloc"); }),
              HasSubstr("out of device memory"));
  EXPECT_THAT(user_error_of([&] { check_status(UT_ERROR_UNAVAILABLE, err, "cuda", "describe"); }),
              HasSubstr("not available"));
  EXPECT_THROW(check_status(UT_ERROR_INVALID, err, "cpu", "launch"), InternalError);
  EXPECT_THROW(check_status(UT_ERROR_INTERNAL, err, "cpu", "launch"), InternalError);
}

TEST(DevicePlugin, RefusesPluginBuiltForAnotherAbi) {
  TempDir dir("abi");
  const fs::path so = build_c_plugin(dir.path(), "future", fake_device_source("future", 7));
  ASSERT_FALSE(so.empty());
  EXPECT_EQ(user_error_of([&] { open_device("future", {so.string(), ""}); }),
            "error: plugin " + so.string() + " was built for device ABI v7; this runtime speaks v1");
}

TEST(DevicePlugin, RefusesSharedObjectWithoutTheSymbol) {
  TempDir dir("nosym");
  const fs::path so = build_c_plugin(dir.path(), "nosym", "int not_a_plugin(void) { return 1; }\n");
  ASSERT_FALSE(so.empty());
  EXPECT_THAT(user_error_of([&] { open_device("", {so.string(), ""}); }),
              HasSubstr("is not a Unitile device plugin: it does not export unitile_device_plugin"));
}

TEST(DevicePlugin, ReportsDlopenFailureWithDlerror) {
  TempDir dir("garbage");
  const fs::path so = dir.path() / "libunitile-device-garbage.so";
  std::ofstream(so) << "this is not an ELF file, just text long enough to have a header";
  const std::string err = user_error_of([&] { open_device("", {so.string(), ""}); });
  EXPECT_THAT(err, StartsWith("error: cannot load device plugin " + so.string() + ": "));
  EXPECT_THAT(err, HasSubstr(so.string() + ": ")) << "dlerror names the file and the reason";
  EXPECT_THAT(user_error_of([&] { open_device("", {(dir.path() / "missing.so").string(), ""}); }),
              HasSubstr("cannot load device plugin"));
}

TEST(DevicePlugin, DevicePluginNameMustMatchRequestedDevice) {
  TempDir dir("mismatch");
  const fs::path so = build_c_plugin(dir.path(), "alpha", fake_device_source("alpha"));
  ASSERT_FALSE(so.empty());
  EXPECT_THAT(user_error_of([&] { open_device("beta", {so.string(), ""}); }),
              HasSubstr("--device beta but plugin " + so.string() + " is device 'alpha'"));
  Device d = open_device("alpha", {so.string(), ""});
  EXPECT_EQ(d.name(), "alpha");
  EXPECT_EQ(d.hcd().dialect, "loopir") << "the fake plugin describes the built-in sim HCD";
  EXPECT_EQ(d.toolchain_version(), "fake-toolchain 1.0");
}

TEST(DeviceRegistry, SearchPathOrderAndFirstNameWins) {
  TempDir a("path-a"), b("path-b");
  const fs::path first = build_c_plugin(a.path(), "dup", fake_device_source("dup"));
  const fs::path second = build_c_plugin(b.path(), "dup", fake_device_source("dup"));
  build_c_plugin(b.path(), "only-b", fake_device_source("only-b"));
  PluginPathOverride env(a.path().string() + ":" + b.path().string());
  const auto path = plugin_search_path();
  ASSERT_GE(path.size(), 3u);
  EXPECT_EQ(path[0], a.path().string());
  EXPECT_EQ(path[1], b.path().string());
  // Then the directory next to the running executable: build/bin -> build/lib/unitile/plugins.
  EXPECT_EQ(path[2], fs::path(UNITILE_PLUGIN_DIR).lexically_normal().string());
  std::map<std::string, std::string> found;
  for (const PluginFile& f : find_plugin_files()) found.emplace(f.name, f.path);
  EXPECT_EQ(found.at("dup"), first.string());
  EXPECT_EQ(found.at("only-b"), (b.path() / "libunitile-device-only-b.so").string());
  EXPECT_EQ(open_device("dup").plugin_path(), first.string());
  (void)second;
}

TEST(DeviceRegistry, UnknownDeviceListsTheDevicesFound) {
  TempDir dir("unknown");
  const fs::path so = build_c_plugin(dir.path(), "fakedev", fake_device_source("fakedev"));
  PluginPathOverride env(dir.path().string());
  const std::string err = user_error_of([] { open_device("no-such-device"); });
  EXPECT_THAT(err, StartsWith("error: unknown device 'no-such-device'; devices found:"));
  EXPECT_THAT(err, HasSubstr("fakedev  (" + so.string() + ")"));
  EXPECT_THAT(err, HasSubstr("searched (set UNITILE_PLUGIN_PATH to add directories):\n  " + dir.path().string()));
}

TEST(DeviceRegistry, ListingKeepsBrokenPluginsWithTheReason) {
  TempDir dir("listing");
  build_c_plugin(dir.path(), "good", fake_device_source("good"));
  build_c_plugin(dir.path(), "old", fake_device_source("old", 0));
  build_c_plugin(dir.path(), "badhcd", fake_device_source("badhcd", 1, "no-such-builtin-hcd"));
  PluginPathOverride env(dir.path().string());
  std::map<std::string, DeviceListing> by_name;
  for (DeviceListing& l : list_devices()) by_name.emplace(l.name, l);
  ASSERT_TRUE(by_name.count("good") && by_name.count("old") && by_name.count("badhcd"));
  EXPECT_TRUE(by_name["good"].error.empty()) << by_name["good"].error;
  EXPECT_FALSE(by_name["good"].summary.empty());
  EXPECT_THAT(by_name["old"].error, HasSubstr("was built for device ABI v0; this runtime speaks v1"));
  EXPECT_FALSE(by_name["badhcd"].error.empty());
  EXPECT_TRUE(by_name["badhcd"].summary.empty());
}

} // namespace
} // namespace unitile
