// The opencl plugin through its 12 calls, as the runtime uses them: the HCD it describes
// carries the driver's limits, buffers copy and check bounds, a build failure returns the
// build log, arguments are narrowed as the dialect declares them, a work-group beyond the
// device's limit is refused, and the timer measures device time. Skipped (not passed)
// where the plugin was not built.
#include "hcd/Hcd.h"
#include "unitile/device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <filesystem>
#include <string>
#include <vector>

namespace unitile {
namespace {

using ::testing::HasSubstr;

const ut_device_api* opencl_api() {
  const std::string path = std::string(UNITILE_PLUGIN_DIR) + "/libunitile-device-opencl.so";
  if (!std::filesystem::exists(path))
    return nullptr;
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return nullptr;
  auto fn = reinterpret_cast<ut_device_plugin_fn>(dlsym(lib, UT_DEVICE_PLUGIN_SYMBOL));
  return fn ? fn() : nullptr;
}

// Scales X by a float param and adds an integer param; each work-item one element.
constexpr const char* kSource = R"(
__kernel void ut_entry_axpb(__global const float* restrict X, __global float* restrict Y,
                            float a, long b) {
  const long i = get_group_id(0) * get_local_size(0) + get_local_id(0);
  Y[i] = X[i] * a + (float)b;
}
)";

class OpenCLPlugin : public ::testing::Test {
protected:
  void SetUp() override {
    api_ = opencl_api();
    if (!api_)
      GTEST_SKIP() << "the opencl plugin was not built";
    ASSERT_EQ(api_->abi_version, UT_DEVICE_ABI_VERSION);
    ut_error err{};
    ASSERT_EQ(api_->describe(&info_, &err), UT_OK) << err.message;
  }

  ut_buffer* buffer(const std::vector<float>& values) {
    ut_buffer* b = nullptr;
    ut_error err{};
    EXPECT_EQ(api_->alloc(values.size() * 4, &b, &err), UT_OK) << err.message;
    EXPECT_EQ(api_->copy_in(b, 0, values.data(), values.size() * 4, &err), UT_OK) << err.message;
    return b;
  }

  ut_kernel* kernel(const char* source, const char* entry) {
    ut_binary* bin = nullptr;
    const void* data = nullptr;
    size_t size = 0;
    ut_error err{};
    EXPECT_EQ(api_->compile(source, "pocl -cl-std=CL1.2", &bin, &data, &size, &err), UT_OK)
        << err.message;
    ut_kernel* k = nullptr;
    EXPECT_EQ(api_->load(data, size, entry, &k, &err), UT_OK) << err.message;
    api_->release(UT_RELEASE_BINARY, bin);
    return k;
  }

  const ut_device_api* api_ = nullptr;
  ut_device_info info_{};
};

TEST_F(OpenCLPlugin, DescribesItsHcdWithTheDriversLimits) {
  EXPECT_STREQ(info_.name, "opencl");
  ASSERT_NE(info_.hcd_toml, nullptr);
  hcd::Hcd h = hcd::load_string(info_.hcd_toml, "opencl describe");
  EXPECT_EQ(h.dialect, "opencl");
  EXPECT_EQ(h.plugin, "opencl");
  EXPECT_GE(h.units, 1);
  EXPECT_GE(h.max_threads_per_block, 1);
  EXPECT_EQ(h.max_block.size(), 3u);
  EXPECT_GT(h.shared_memory_per_block, 0);
  EXPECT_THAT(info_.toolchain_version, HasSubstr("OpenCL"));
}

TEST_F(OpenCLPlugin, RunsAKernelInWorkGroupsWithNarrowedParams) {
  std::vector<float> x(64);
  for (size_t k = 0; k < x.size(); ++k)
    x[k] = static_cast<float>(k);
  ut_buffer* X = buffer(x);
  ut_buffer* Y = buffer(std::vector<float>(64, 0.0f));
  ut_kernel* k = kernel(kSource, "ut_entry_axpb");
  ASSERT_NE(k, nullptr);
  ut_arg args[4] = {};
  args[0].kind = UT_ARG_BUFFER;
  args[0].value.buffer = X;
  args[1].kind = UT_ARG_BUFFER;
  args[1].value.buffer = Y;
  args[2].kind = UT_ARG_F64;
  args[2].dtype = 2; // f32: passed as float
  args[2].value.f64 = 0.5;
  args[3].kind = UT_ARG_I64;
  args[3].dtype = 6;
  args[3].value.i64 = 3;
  const uint32_t grid[3] = {8, 1, 1}, block[3] = {8, 1, 1};
  ut_error err{};
  ut_event* start = nullptr;
  ut_event* end = nullptr;
  ASSERT_EQ(api_->timer(UT_TIMER_RECORD, &start, nullptr, nullptr, &err), UT_OK) << err.message;
  ASSERT_EQ(api_->launch(k, grid, block, args, 4, &err), UT_OK) << err.message;
  ASSERT_EQ(api_->timer(UT_TIMER_RECORD, &end, nullptr, nullptr, &err), UT_OK) << err.message;
  ASSERT_EQ(api_->synchronize(&err), UT_OK) << err.message;
  double ms = -1;
  ASSERT_EQ(api_->timer(UT_TIMER_ELAPSED, &end, start, &ms, &err), UT_OK) << err.message;
  EXPECT_GE(ms, 0.0);
  std::vector<float> y(64);
  ASSERT_EQ(api_->copy_out(y.data(), Y, 0, 256, &err), UT_OK) << err.message;
  for (size_t i = 0; i < y.size(); ++i)
    EXPECT_EQ(y[i], x[i] * 0.5f + 3.0f) << i;

  // Too few arguments, and a work-group beyond the device's limit, are refused.
  EXPECT_EQ(api_->launch(k, grid, block, args, 3, &err), UT_ERROR_INVALID);
  EXPECT_THAT(err.message, HasSubstr("takes 4 arguments, got 3"));
  const uint32_t huge[3] = {1u << 20, 1, 1};
  EXPECT_EQ(api_->launch(k, grid, huge, args, 4, &err), UT_ERROR_LAUNCH);
  EXPECT_THAT(err.message, HasSubstr("exceeds the device's work-item limit"));
  // Copies outside a buffer are refused.
  EXPECT_EQ(api_->copy_out(y.data(), Y, 8, 256, &err), UT_ERROR_INVALID);
  api_->release(UT_RELEASE_EVENT, start);
  api_->release(UT_RELEASE_EVENT, end);
  api_->release(UT_RELEASE_KERNEL, k);
  api_->free(X);
  api_->free(Y);
}

TEST_F(OpenCLPlugin, ABuildFailureReturnsTheBuildLog) {
  ut_binary* bin = nullptr;
  const void* data = nullptr;
  size_t size = 0;
  ut_error err{};
  EXPECT_EQ(api_->compile("__kernel void f(__global float* y) { y[0] = undefined_name; }",
                          "pocl -cl-std=CL1.2", &bin, &data, &size, &err),
            UT_ERROR_COMPILE);
  EXPECT_THAT(err.message, HasSubstr("build log:"));
  EXPECT_THAT(err.message, HasSubstr("undefined_name"));
  // A binary that is not one and an entry that does not exist are errors too.
  ut_kernel* k = nullptr;
  const char junk[] = "not a program binary";
  EXPECT_NE(api_->load(junk, sizeof junk, "f", &k, &err), UT_OK);
  EXPECT_EQ(k, nullptr);
}

} // namespace
} // namespace unitile
