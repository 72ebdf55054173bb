// Tests of the cross-CPU plugins (cpu-aarch64, cpu-riscv64) through the 12 calls: their
// HCD, every grid block run once with its params, buffers shared with the server, clear
// errors for bad binaries and crashing kernels, and real NEON / RVV instructions in the
// code their toolchains make from the C dialect. A device whose compiler or emulator is
// not installed is skipped; any other unavailability fails.
#include "codegen/CDialectAbi.h"
#include "hcd/Hcd.h"
#include "ir/Parser.h"
#include "runtime/DeviceRegistry.h"
#include "runtime/Session.h"
#include "unitile/device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace unitile {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;

struct CrossCase {
  const char* device;
  const char* hcd;
  uint16_t elf_machine;   // e_machine of the binaries its compiler makes
  const char* vector_f32; // a regex the f32 matmul's assembly must match
  const char* vector_f64;
};

void PrintTo(const CrossCase& c, std::ostream* os) {
  *os << c.device;
}

const CrossCase kCases[] = {
    {"cpu-aarch64", "aarch64-neon", 183 /* EM_AARCH64 */, R"(fmla\s+v[0-9]+\.4s)",
     R"(fmla\s+v[0-9]+\.2d)"},
    {"cpu-riscv64", "riscv64-rvv", 243 /* EM_RISCV */, R"(vfmacc\.vf|vfmadd\.vf)",
     R"(vsetivli\s+zero,\s*2,\s*e64)"},
};

// Every block adds 1 + its coordinates into out[its linear index] and stores a product
// of its index with the f64 param; the grid extents come as i64 params.
constexpr const char* kBlocksSource = R"(#include <stdint.h>
)" UT_C_DIALECT_ABI_TEXT R"(
__attribute__((visibility("default"))) void ut_entry_blocks(const ut_c_arg* args, uint32_t bx, uint32_t by, uint32_t bz) {
  int64_t* out = (int64_t*)args[0].p;
  double* scaled = (double*)args[1].p;
  int64_t gx = args[2].i, gy = args[3].i;
  int64_t b = ((int64_t)bz * gy + by) * gx + bx;
  out[b] += 1 + (int64_t)(bx + 10 * by + 100 * bz);
  scaled[b] = args[4].f * (double)b;
}
__attribute__((visibility("default"))) void ut_entry_crash(const ut_c_arg* args, uint32_t bx, uint32_t by, uint32_t bz) {
  if (bx == 2) *(volatile int*)args[0].p = 1;
}
)";

const ut_device_api* plugin_api(const std::string& device) {
  std::string path = std::string(UNITILE_PLUGIN_DIR) + "/libunitile-device-" + device + ".so";
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return nullptr;
  auto fn = reinterpret_cast<ut_device_plugin_fn>(dlsym(lib, UT_DEVICE_PLUGIN_SYMBOL));
  return fn ? fn() : nullptr;
}

class CrossCpu : public ::testing::TestWithParam<CrossCase> {
protected:
  void SetUp() override {
    api_ = plugin_api(GetParam().device);
    ASSERT_NE(api_, nullptr) << "cannot load the " << GetParam().device << " plugin";
    ut_error err{};
    ut_status s = api_->describe(&info_, &err);
    const std::string why = err.message;
    if (s == UT_ERROR_UNAVAILABLE && (why.find("is not installed") != std::string::npos ||
                                      why.find("was not built") != std::string::npos))
      GTEST_SKIP() << why;
    ASSERT_EQ(s, UT_OK) << err.message;
    hcd_ = hcd::load_string(info_.hcd_toml, GetParam().device);
    options_ = hcd_.compiler;
    for (const std::string& f : hcd_.flags)
      options_ += " " + f;
  }

  // Compile `source` with the HCD's toolchain; the binary's bytes, or empty on failure.
  std::vector<unsigned char> compile(const char* source, const std::string& options,
                                     std::string* message = nullptr) {
    ut_binary* bin = nullptr;
    const void* data = nullptr;
    size_t size = 0;
    ut_error err{};
    ut_status s = api_->compile(source, options.c_str(), &bin, &data, &size, &err);
    if (message)
      *message = err.message;
    if (s != UT_OK)
      return {};
    std::vector<unsigned char> bytes(static_cast<const unsigned char*>(data),
                                     static_cast<const unsigned char*>(data) + size);
    api_->release(UT_RELEASE_BINARY, bin);
    return bytes;
  }

  ut_kernel* load(const std::vector<unsigned char>& binary, const char* entry) {
    ut_kernel* k = nullptr;
    ut_error err{};
    EXPECT_EQ(api_->load(binary.data(), binary.size(), entry, &k, &err), UT_OK) << err.message;
    return k;
  }

  const ut_device_api* api_ = nullptr;
  ut_device_info info_{};
  hcd::Hcd hcd_;
  std::string options_;
};

ut_arg buffer_arg(ut_buffer* b) {
  ut_arg a{};
  a.kind = UT_ARG_BUFFER;
  a.value.buffer = b;
  return a;
}

ut_arg i64_arg(int64_t v) {
  ut_arg a{};
  a.kind = UT_ARG_I64;
  a.dtype = 7;
  a.value.i64 = v;
  return a;
}

ut_arg f64_arg(double v) {
  ut_arg a{};
  a.kind = UT_ARG_F64;
  a.dtype = 3;
  a.value.f64 = v;
  return a;
}

TEST_P(CrossCpu, DescribesItsOwnHcd) {
  EXPECT_STREQ(info_.name, GetParam().device);
  EXPECT_EQ(info_.hcd_builtin, nullptr);
  EXPECT_EQ(hcd_.name, GetParam().hcd);
  EXPECT_EQ(hcd_.plugin, GetParam().device);
  EXPECT_EQ(hcd_.dialect, "c");
  EXPECT_FALSE(hcd_.runner.empty());
  EXPECT_THAT(info_.toolchain_version, HasSubstr(hcd_.compiler.substr(0, 5)));
}

TEST_P(CrossCpu, CompilesForTheTargetCpu) {
  std::vector<unsigned char> so = compile(kBlocksSource, options_);
  ASSERT_GT(so.size(), 20u);
  EXPECT_EQ(so[0], 0x7f);
  EXPECT_EQ(std::string(so.begin() + 1, so.begin() + 4), "ELF");
  EXPECT_EQ(so[18] | (so[19] << 8), GetParam().elf_machine);
}

TEST_P(CrossCpu, RunsEveryBlockOnceWithItsParams) {
  std::vector<unsigned char> so = compile(kBlocksSource, options_);
  ASSERT_FALSE(so.empty());
  ut_kernel* k = load(so, "ut_entry_blocks");
  ASSERT_NE(k, nullptr);
  const uint32_t grid[3] = {7, 3, 2}, block[3] = {1, 1, 1};
  const size_t blocks = 7 * 3 * 2;
  ut_buffer *out = nullptr, *scaled = nullptr;
  ut_error err{};
  ASSERT_EQ(api_->alloc(blocks * 8, &out, &err), UT_OK) << err.message;
  ASSERT_EQ(api_->alloc(blocks * 8, &scaled, &err), UT_OK) << err.message;
  std::vector<int64_t> start(blocks, 1000);
  ASSERT_EQ(api_->copy_in(out, 0, start.data(), blocks * 8, &err), UT_OK);
  std::vector<ut_arg> args = {buffer_arg(out), buffer_arg(scaled), i64_arg(7), i64_arg(3),
                              f64_arg(0.25)};
  ASSERT_EQ(api_->launch(k, grid, block, args.data(), 5, &err), UT_OK) << err.message;
  ASSERT_EQ(api_->synchronize(&err), UT_OK);
  std::vector<int64_t> got(blocks);
  std::vector<double> got_scaled(blocks);
  ASSERT_EQ(api_->copy_out(got.data(), out, 0, blocks * 8, &err), UT_OK);
  ASSERT_EQ(api_->copy_out(got_scaled.data(), scaled, 0, blocks * 8, &err), UT_OK);
  for (uint32_t z = 0; z < 2; ++z)
    for (uint32_t y = 0; y < 3; ++y)
      for (uint32_t x = 0; x < 7; ++x) {
        size_t b = (z * 3 + y) * 7 + x;
        EXPECT_EQ(got[b], 1000 + 1 + x + 10 * y + 100 * z) << "block " << x << "," << y << "," << z;
        EXPECT_EQ(got_scaled[b], 0.25 * static_cast<double>(b));
      }
  // A second launch sees the first one's results in the shared buffer.
  ASSERT_EQ(api_->launch(k, grid, block, args.data(), 5, &err), UT_OK) << err.message;
  ASSERT_EQ(api_->copy_out(got.data(), out, 0, blocks * 8, &err), UT_OK);
  EXPECT_EQ(got[blocks - 1], 1000 + 2 * (1 + 6 + 20 + 100));
  api_->release(UT_RELEASE_KERNEL, k);
  api_->free(out);
  api_->free(scaled);
}

TEST_P(CrossCpu, BuffersCopyAndCheckBounds) {
  ut_buffer *a = nullptr, *b = nullptr;
  ut_error err{};
  const size_t n = 3 << 20; // several pages, not a multiple of one
  ASSERT_EQ(api_->alloc(n + 5, &a, &err), UT_OK) << err.message;
  ASSERT_EQ(api_->alloc(n + 5, &b, &err), UT_OK) << err.message;
  std::vector<uint8_t> host(n + 5);
  for (size_t k = 0; k < host.size(); ++k)
    host[k] = static_cast<uint8_t>(k * 7);
  EXPECT_EQ(api_->copy_in(a, 0, host.data(), host.size(), &err), UT_OK);
  EXPECT_EQ(api_->copy(b, 1, a, 0, n, &err), UT_OK);
  std::vector<uint8_t> back(n);
  EXPECT_EQ(api_->copy_out(back.data(), b, 1, n, &err), UT_OK);
  EXPECT_TRUE(std::equal(back.begin(), back.end(), host.begin()));
  EXPECT_EQ(api_->copy_in(a, n, host.data(), 6, &err), UT_ERROR_INVALID);
  EXPECT_THAT(err.message, HasSubstr("outside a buffer of"));
  api_->free(a);
  api_->free(b);
}

TEST_P(CrossCpu, ReportsCompileAndLoadErrors) {
  std::string message;
  EXPECT_TRUE(compile("this is not C", options_, &message).empty());
  EXPECT_THAT(message, HasSubstr("failed with exit status"));
  EXPECT_THAT(message, HasSubstr("error"));

  // A host (x86-64) shared object is refused by the target's loader, with its reason.
  std::vector<unsigned char> host_so = compile(kBlocksSource, "cc -O1");
  ASSERT_FALSE(host_so.empty());
  ut_kernel* k = nullptr;
  ut_error err{};
  EXPECT_EQ(api_->load(host_so.data(), host_so.size(), "ut_entry_blocks", &k, &err),
            UT_ERROR_INVALID);
  EXPECT_THAT(err.message, HasSubstr("cannot load the binary"));

  std::vector<unsigned char> so = compile(kBlocksSource, options_);
  EXPECT_EQ(api_->load(so.data(), so.size(), "ut_entry_nothing", &k, &err), UT_ERROR_INVALID);
  EXPECT_THAT(err.message, HasSubstr("no entry point 'ut_entry_nothing'"));
}

// The C dialect's vector loops become the target's vector instructions: the generated
// matmul, compiled with exactly the options the runtime passes, to assembly.
TEST_P(CrossCpu, VectorLoopsBecomeVectorInstructions) {
  Module m = parse_module(SourceFile{"mm.ut", R"(
kernel MatMulF32 {
  input:  f32[M,K] A, f32[K,N] B
  output: f32[M,N] C
  operation: C[i,j] += A[i,k] * B[k,j]
}
kernel MatMulF64 {
  input:  f64[M,K] A, f64[K,N] B
  output: f64[M,N] C
  operation: C[i,j] += A[i,k] * B[k,j]
}
)"});
  Session session(open_device(GetParam().device), std::make_shared<KernelCache>(std::nullopt));
  const std::string dir = ::testing::TempDir();
  for (const auto& [kernel, pattern] :
       {std::pair{0, GetParam().vector_f32}, std::pair{1, GetParam().vector_f64}}) {
    auto ck = session.compile(m.kernels[kernel], {{"M", 8}, {"K", 8}, {"N", 64}});
    // Named per device and process: ctest runs the instances (and other checkouts their
    // own suites) in parallel in the same temporary directory.
    const std::string stem = dir + "/cross-vector-" + GetParam().device + "-" +
                             std::to_string(::getpid()),
                      src = stem + ".c", asm_path = stem + ".s";
    std::ofstream(src) << ck->source.code;
    const std::string command =
        session.compile_options() + " -fPIC -S -o " + asm_path + " " + src + " 2>&1";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    std::ifstream in(asm_path);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_THAT(text.str(), ContainsRegex(pattern)) << m.kernels[kernel].name << "\n"
                                                    << ck->source.code;
    std::remove(src.c_str());
    std::remove(asm_path.c_str());
  }
}

// Last: a crashing kernel stops the server for the rest of the process (its memory may
// be corrupt), and both the launch and every later call say so.
TEST_P(CrossCpu, ACrashingKernelIsAClearErrorAndStopsTheDevice) {
  std::vector<unsigned char> so = compile(kBlocksSource, options_);
  ASSERT_FALSE(so.empty());
  ut_kernel* k = load(so, "ut_entry_crash");
  ASSERT_NE(k, nullptr);
  ut_buffer* b = nullptr;
  ut_error err{};
  ASSERT_EQ(api_->alloc(8, &b, &err), UT_OK);
  ut_arg null_buffer{};
  null_buffer.kind = UT_ARG_I64; // a zero where the kernel expects a pointer
  const uint32_t grid[3] = {4, 1, 1}, block[3] = {1, 1, 1};
  EXPECT_EQ(api_->launch(k, grid, block, &null_buffer, 1, &err), UT_ERROR_LAUNCH);
  EXPECT_THAT(err.message, HasSubstr("kernel server"));
  EXPECT_THAT(err.message, HasSubstr("'ut_entry_crash' crashed with signal"));
  EXPECT_THAT(err.message, HasSubstr("in block (2, 0, 0)")) << err.message;
  EXPECT_EQ(api_->launch(k, grid, block, &null_buffer, 1, &err), UT_ERROR_LAUNCH);
  EXPECT_THAT(err.message, HasSubstr("died earlier"));
  api_->release(UT_RELEASE_KERNEL, k);
  api_->free(b);
}

INSTANTIATE_TEST_SUITE_P(Devices, CrossCpu, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<CrossCase>& info) {
                           return std::string(info.param.device == std::string("cpu-aarch64")
                                                  ? "aarch64"
                                                  : "riscv64");
                         });

} // namespace
} // namespace unitile
