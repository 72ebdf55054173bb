// Tests of the cpu plugin's ABI calls on their own: describe, memory, compile errors,
// loading, launch checks, the thread-count setting and timers.
#include "test_cpu_plugin.h"

#include "codegen/CDialectAbi.h"
#include "unitile/host_memory.h"

#include <gmock/gmock.h>

#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace unitile::cpu_test {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// A hand-written c-dialect source: each block adds its index into out[bx].
constexpr const char* kBlockIndexSource = R"(#include <stdint.h>
)" UT_C_DIALECT_ABI_TEXT R"(
__attribute__((visibility("default"))) void ut_entry_ids(const ut_c_arg* args, uint32_t bx, uint32_t by, uint32_t bz) {
  int64_t* out = (int64_t*)args[0].p;
  int64_t gx = args[1].i, gy = args[2].i;
  out[(bz * gy + by) * gx + bx] += 1 + (int64_t)(bx + 10 * by + 100 * bz) + (int64_t)args[3].f;
}
)";

struct Compiled {
  ut_binary* bin = nullptr;
  const void* data = nullptr;
  size_t size = 0;
  ut_status status;
  std::string message;
  Compiled(const char* src, const char* options = "cc -O1") {
    ut_error err{};
    status = cpu_api()->compile(src, options, &bin, &data, &size, &err);
    message = err.message;
  }
  ~Compiled() {
    if (bin)
      cpu_api()->release(UT_RELEASE_BINARY, bin);
  }
};

// A compiled source's entry, loaded; released at the end of the scope. `error` says why
// when `k` is null.
struct LoadedEntry {
  ut_kernel* k = nullptr;
  std::string error;
  LoadedEntry(const char* src, const char* entry) {
    Compiled c(src);
    if (c.status != UT_OK) {
      error = "compile: " + c.message;
      return;
    }
    ut_error err{};
    if (cpu_api()->load(c.data, c.size, entry, &k, &err) != UT_OK) error = "load: " + std::string(err.message);
  }
  ~LoadedEntry() {
    if (k)
      cpu_api()->release(UT_RELEASE_KERNEL, k);
  }
  LoadedEntry(const LoadedEntry&) = delete;
  LoadedEntry& operator=(const LoadedEntry&) = delete;
};

TEST(CpuDevice, PluginExportsTheCurrentAbi) {
  const ut_device_api* api = cpu_api();
  ASSERT_NE(api, nullptr) << "cannot dlopen " << UNITILE_PLUGIN_DIR << "/libunitile-device-cpu.so";
  EXPECT_EQ(api->abi_version, UT_DEVICE_ABI_VERSION);
  ut_device_info info{};
  ut_error err{};
  ASSERT_EQ(api->describe(&info, &err), UT_OK);
  EXPECT_STREQ(info.name, "cpu");
  EXPECT_STREQ(info.hcd_builtin, "host-cpu");
  EXPECT_EQ(info.hcd_toml, nullptr);
  EXPECT_THAT(info.toolchain_version, StartsWith("cc"));
}

TEST(CpuDevice, BuffersAreAlignedAndBoundsChecked) {
  const ut_device_api* api = cpu_api();
  ASSERT_NE(api, nullptr);
  ut_buffer* a = nullptr;
  ut_buffer* b = nullptr;
  ut_error err{};
  ASSERT_EQ(api->alloc(100, &a, &err), UT_OK);
  ASSERT_EQ(api->alloc(100, &b, &err), UT_OK);
  std::vector<uint8_t> host(100);
  for (size_t k = 0; k < host.size(); ++k)
    host[k] = static_cast<uint8_t>(k);
  EXPECT_EQ(api->copy_in(a, 0, host.data(), 100, &err), UT_OK);
  EXPECT_EQ(api->copy(b, 10, a, 0, 90, &err), UT_OK);
  std::vector<uint8_t> back(90);
  EXPECT_EQ(api->copy_out(back.data(), b, 10, 90, &err), UT_OK);
  EXPECT_EQ(back, std::vector<uint8_t>(host.begin(), host.begin() + 90));
  EXPECT_EQ(api->copy_in(a, 50, host.data(), 51, &err), UT_ERROR_INVALID);
  EXPECT_THAT(err.message, HasSubstr("outside a buffer of 100"));
  EXPECT_EQ(api->copy_out(back.data(), a, 101, 0, &err), UT_ERROR_INVALID);
  EXPECT_EQ(api->copy(b, 0, a, 90, 20, &err), UT_ERROR_INVALID);
  api->free(a);
  api->free(b);
}

// UNITILE_HUGE_PAGES=1: buffers of 2 MiB or more start on a 2 MiB boundary (whether the
// kernel then backs them with huge pages is its own choice) and hold their bytes as any
// other buffer does; smaller ones are unaffected.
TEST(CpuDevice, HugePageBuffersAreWholePagesWhenAsked) {
  const ut_device_api* api = cpu_api();
  ASSERT_NE(api, nullptr);
  void* lib = dlopen(UNITILE_PLUGIN_DIR "/libunitile-device-cpu.so", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr);
  auto host_fn = reinterpret_cast<ut_host_memory_fn>(dlsym(lib, UT_HOST_MEMORY_SYMBOL));
  ASSERT_NE(host_fn, nullptr);
  const ut_host_memory_api* host = host_fn();
  constexpr size_t kHuge = size_t{2} << 20, kBytes = 3 * kHuge + 100;
  ASSERT_EQ(setenv("UNITILE_HUGE_PAGES", "1", 1), 0);
  ut_error err{};
  ut_buffer* big = nullptr;
  ut_buffer* small = nullptr;
  ASSERT_EQ(api->alloc(kBytes, &big, &err), UT_OK) << err.message;
  ASSERT_EQ(api->alloc(kHuge - 1, &small, &err), UT_OK) << err.message;
  unsetenv("UNITILE_HUGE_PAGES");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(host->host_pointer(big)) % kHuge, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(host->host_pointer(small)) % 64, 0u);
  std::vector<uint8_t> bytes(kBytes);
  for (size_t k = 0; k < bytes.size(); ++k)
    bytes[k] = static_cast<uint8_t>(k * 7 + 3);
  ASSERT_EQ(api->copy_in(big, 0, bytes.data(), kBytes, &err), UT_OK) << err.message;
  std::vector<uint8_t> back(kBytes);
  ASSERT_EQ(api->copy_out(back.data(), big, 0, kBytes, &err), UT_OK) << err.message;
  EXPECT_EQ(back, bytes);
  EXPECT_EQ(api->copy_in(big, kBytes - 10, bytes.data(), 11, &err), UT_ERROR_INVALID);
  api->free(big);
  api->free(small);
}

TEST(CpuDevice, BrokenSourceGivesTheCompilerLog) {
  ASSERT_NE(cpu_api(), nullptr);
  Compiled c("int broken( {\n");
  EXPECT_EQ(c.status, UT_ERROR_COMPILE);
  EXPECT_THAT(c.message, HasSubstr("compiler 'cc' failed"));
  EXPECT_THAT(c.message, HasSubstr("kernel.c:1"));
  EXPECT_THAT(c.message, HasSubstr("error"));
}

TEST(CpuDevice, MissingCompilerIsUnavailable) {
  ASSERT_NE(cpu_api(), nullptr);
  Compiled c("int x;\n", "unitile-no-such-compiler -O2");
  EXPECT_EQ(c.status, UT_ERROR_UNAVAILABLE);
  EXPECT_THAT(c.message, HasSubstr("cannot run compiler 'unitile-no-such-compiler'"));
}

TEST(CpuDevice, CompilerFlagsComeFromOptions) {
  ASSERT_NE(cpu_api(), nullptr);
  Compiled c("#ifndef UT_FLAG\n#error flag missing\n#endif\nint x;\n", "cc -O1 -DUT_FLAG=1");
  EXPECT_EQ(c.status, UT_OK) << c.message;
  Compiled d("#ifndef UT_FLAG\n#error flag missing\n#endif\nint x;\n", "cc -O1");
  EXPECT_EQ(d.status, UT_ERROR_COMPILE);
  EXPECT_THAT(d.message, HasSubstr("flag missing"));
}

TEST(CpuDevice, MissingEntryIsNamed) {
  ASSERT_NE(cpu_api(), nullptr);
  Compiled c(kBlockIndexSource);
  ASSERT_EQ(c.status, UT_OK) << c.message;
  ut_kernel* k = nullptr;
  ut_error err{};
  EXPECT_EQ(cpu_api()->load(c.data, c.size, "ut_entry_nope", &k, &err), UT_ERROR_INVALID);
  EXPECT_THAT(err.message, HasSubstr("'ut_entry_nope'"));
}

// Run the block-index kernel over a grid and check every block ran exactly once.
void check_grid(ut_kernel* k, uint32_t gx, uint32_t gy, uint32_t gz) {
  std::vector<int64_t> zeros(size_t{gx} * gy * gz, 0);
  Buffer out(zeros);
  std::vector<ut_arg> args = {out.arg(), i64_arg(gx), i64_arg(gy), f64_arg(1000.0)};
  const uint32_t grid[3] = {gx, gy, gz}, block[3] = {1, 1, 1};
  ut_error err{};
  ASSERT_EQ(cpu_api()->launch(k, grid, block, args.data(), 4, &err), UT_OK) << err.message;
  std::vector<int64_t> got = out.read<int64_t>();
  for (uint32_t z = 0; z < gz; ++z)
    for (uint32_t y = 0; y < gy; ++y)
      for (uint32_t x = 0; x < gx; ++x)
        ASSERT_EQ(got[(size_t{z} * gy + y) * gx + x], 1001 + x + 10 * y + 100 * z)
            << x << "," << y << "," << z;
}

TEST(CpuDevice, EveryBlockRunsOnceForAnyThreadCount) {
  ASSERT_NE(cpu_api(), nullptr);
  LoadedEntry loaded(kBlockIndexSource, "ut_entry_ids");
  ASSERT_NE(loaded.k, nullptr) << loaded.error;
  ut_kernel* k = loaded.k;
  for (const char* threads : {"1", "2", "3", "8"}) {
    ScopedEnv env("UNITILE_NUM_THREADS", threads);
    SCOPED_TRACE(threads);
    check_grid(k, 1, 1, 1);
    check_grid(k, 7, 1, 1);
    check_grid(k, 5, 3, 2);
    check_grid(k, 1000, 1, 1);
  }
  check_grid(k, 33, 2, 1); // the affinity-mask default
}

// Idle pool threads poll for the next launch for UNITILE_SPIN_US before sleeping:
// launches back to back, and from several host threads at once, still run every block
// exactly once, with the poll on (the default, and a long one) and off.
TEST(CpuDevice, BackToBackLaunchesFromSeveralHostThreads) {
  ASSERT_NE(cpu_api(), nullptr);
  LoadedEntry loaded(kBlockIndexSource, "ut_entry_ids");
  ASSERT_NE(loaded.k, nullptr) << loaded.error;
  ut_kernel* k = loaded.k;
  // A new thread count makes a new pool, which reads UNITILE_SPIN_US.
  for (auto [threads, spin] : {std::pair{"3", "0"}, std::pair{"4", "100"}, std::pair{"5", "20000"}}) {
    ScopedEnv pool_threads("UNITILE_NUM_THREADS", threads);
    ScopedEnv pool_spin("UNITILE_SPIN_US", spin);
    SCOPED_TRACE(std::string(threads) + " threads, spin " + spin);
    std::vector<std::thread> hosts;
    for (int h = 0; h < 3; ++h)
      hosts.emplace_back([&, h] {
        for (int n = 0; n < 60; ++n) check_grid(k, 1 + uint32_t((n + h) % 9), 1 + uint32_t(h), 1);
      });
    for (std::thread& t : hosts) t.join();
  }
}

// A kernel whose blocks write the id of the thread that ran them, after about 0.3 ms of
// work each, so that every pool thread is awake and taking chunks while they run.
constexpr const char* kThreadIdSource = R"(#define _GNU_SOURCE
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>
)" UT_C_DIALECT_ABI_TEXT R"(
__attribute__((visibility("default"))) void ut_entry_tid(const ut_c_arg* args, uint32_t bx, uint32_t by, uint32_t bz) {
  (void)by; (void)bz;
  volatile double x = 0;
  for (int k = 0; k < 300000; ++k) x = x + 1e-9 * k;
  ((int64_t*)args[0].p)[bx] = (int64_t)syscall(SYS_gettid);
}
)";

// Each pool thread owns the same contiguous share of every launch (as an OpenMP static
// schedule), so a kernel launched again on the same data finds its share in that core's
// caches; others take from a share's end only once their own is done. Two threads, 8
// blocks (8 chunks): the calling thread always starts its share (blocks 0-3) with block
// 0, and the worker's share starts at block 4, which the caller reaches only after
// stealing 7, 6 and 5 from the back; so block 4 runs on the worker in (nearly) every
// launch, and never does block 0.
TEST(CpuDevice, EachThreadOwnsTheSameShareOfEveryLaunch) {
  ASSERT_NE(cpu_api(), nullptr);
  LoadedEntry loaded(kThreadIdSource, "ut_entry_tid");
  ASSERT_NE(loaded.k, nullptr) << loaded.error;
  ut_kernel* k = loaded.k;
  ScopedEnv threads("UNITILE_NUM_THREADS", "2");
  ScopedEnv spin("UNITILE_SPIN_US", "20000");
  const int64_t caller = static_cast<int64_t>(gettid());
  const uint32_t grid[3] = {8, 1, 1}, block[3] = {1, 1, 1};
  int worker_took_4 = 0;
  const int launches = 20;
  for (int n = 0; n < launches; ++n) {
    Buffer out(std::vector<int64_t>(8, 0));
    std::vector<ut_arg> args = {out.arg()};
    ut_error err{};
    ASSERT_EQ(cpu_api()->launch(k, grid, block, args.data(), 1, &err), UT_OK) << err.message;
    const std::vector<int64_t> tid = out.read<int64_t>();
    for (int64_t t : tid) ASSERT_NE(t, 0); // every block ran
    EXPECT_EQ(tid[0], caller) << "launch " << n;
    worker_took_4 += tid[4] != caller;
  }
  // A worker descheduled for a whole launch (a loaded CI machine) loses its share to the
  // caller; a shared queue would give block 4 to the worker about half the time.
  EXPECT_GE(worker_took_4, launches * 3 / 4);
}

TEST(CpuDevice, BadThreadCountsAndBlocksAreClearErrors) {
  ASSERT_NE(cpu_api(), nullptr);
  LoadedEntry loaded(kBlockIndexSource, "ut_entry_ids");
  ASSERT_NE(loaded.k, nullptr) << loaded.error;
  ut_kernel* k = loaded.k;
  std::vector<int64_t> zeros(4, 0);
  Buffer out(zeros);
  std::vector<ut_arg> args = {out.arg(), i64_arg(4), i64_arg(1), f64_arg(0)};
  const uint32_t grid[3] = {4, 1, 1}, one[3] = {1, 1, 1}, wide[3] = {32, 1, 1};
  for (const char* bad : {"0", "abc", "-3", "4x", ""}) {
    ScopedEnv env("UNITILE_NUM_THREADS", bad);
    ut_error e{};
    EXPECT_EQ(cpu_api()->launch(k, grid, one, args.data(), 4, &e), UT_ERROR_INVALID) << bad;
    EXPECT_THAT(e.message, HasSubstr("UNITILE_NUM_THREADS must be a positive integer"));
    EXPECT_THAT(e.message, HasSubstr(std::string("got '") + bad + "'"));
  }
  ut_error e{};
  EXPECT_EQ(cpu_api()->launch(k, grid, wide, args.data(), 4, &e), UT_ERROR_INVALID);
  EXPECT_THAT(e.message, HasSubstr("blocks have one thread"));
  ut_arg bad_kind = args[0];
  bad_kind.kind = 9;
  EXPECT_EQ(cpu_api()->launch(k, grid, one, &bad_kind, 1, &e), UT_ERROR_INVALID);
  EXPECT_THAT(e.message, HasSubstr("unknown kind 9"));
  EXPECT_EQ(out.read<int64_t>(), zeros); // nothing ran
}

TEST(CpuDevice, SeveralLoadedBinariesStayDistinct) {
  // Two binaries loaded at once must not be confused by the loader, nor after one of
  // them is released and a third one is loaded.
  ASSERT_NE(cpu_api(), nullptr);
  auto source = [](int value) {
    return std::string("#include <stdint.h>\n") + UT_C_DIALECT_ABI_TEXT +
           "\n__attribute__((visibility(\"default\"))) void ut_entry_f(const ut_c_arg* a, uint32_t "
           "x, "
           "uint32_t y, uint32_t z) { *(int64_t*)a[0].p = " +
           std::to_string(value) + "; }\n";
  };
  auto value_of = [](ut_kernel* k) {
    std::vector<int64_t> cell(1, 0);
    Buffer out(cell);
    ut_arg a = out.arg();
    const uint32_t one[3] = {1, 1, 1};
    ut_error err{};
    EXPECT_EQ(cpu_api()->launch(k, one, one, &a, 1, &err), UT_OK) << err.message;
    return out.read<int64_t>()[0];
  };
  std::vector<ut_kernel*> kernels;
  for (int v : {11, 22, 33}) {
    Compiled c(source(v).c_str());
    ASSERT_EQ(c.status, UT_OK) << c.message;
    ut_kernel* k = nullptr;
    ut_error err{};
    ASSERT_EQ(cpu_api()->load(c.data, c.size, "ut_entry_f", &k, &err), UT_OK) << err.message;
    kernels.push_back(k);
    if (v == 22) {
      EXPECT_EQ(value_of(kernels[0]), 11);
      cpu_api()->release(UT_RELEASE_KERNEL, kernels[0]);
    }
  }
  EXPECT_EQ(value_of(kernels[1]), 22);
  EXPECT_EQ(value_of(kernels[2]), 33);
  cpu_api()->release(UT_RELEASE_KERNEL, kernels[1]);
  cpu_api()->release(UT_RELEASE_KERNEL, kernels[2]);
}

TEST(CpuDevice, TimerMeasuresSteadyTime) {
  ASSERT_NE(cpu_api(), nullptr);
  ut_event* start = nullptr;
  ut_event* stop = nullptr;
  ut_error err{};
  ASSERT_EQ(cpu_api()->timer(UT_TIMER_RECORD, &start, nullptr, nullptr, &err), UT_OK);
  ASSERT_EQ(cpu_api()->synchronize(&err), UT_OK);
  ASSERT_EQ(cpu_api()->timer(UT_TIMER_RECORD, &stop, nullptr, nullptr, &err), UT_OK);
  double ms = -1;
  ASSERT_EQ(cpu_api()->timer(UT_TIMER_ELAPSED, &stop, start, &ms, &err), UT_OK);
  EXPECT_GE(ms, 0.0);
  EXPECT_LT(ms, 1000.0);
  EXPECT_EQ(cpu_api()->timer(UT_TIMER_ELAPSED, &stop, nullptr, &ms, &err), UT_ERROR_INVALID);
  cpu_api()->release(UT_RELEASE_EVENT, start);
  cpu_api()->release(UT_RELEASE_EVENT, stop);
}

} // namespace
} // namespace unitile::cpu_test
