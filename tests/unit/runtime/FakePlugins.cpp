// Building the test-time device plugins (see FakePlugins.h).
#include "FakePlugins.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include <unistd.h>

namespace fs = std::filesystem;

namespace unitile::testing {

fs::path build_c_plugin(const fs::path& dir, const std::string& name, const std::string& c_source) {
  fs::create_directories(dir);
  const fs::path src = dir / (name + ".c");
  const fs::path so = dir / ("libunitile-device-" + name + ".so");
  std::ofstream(src) << c_source;
  const std::string cmd = fmt::format("cc -shared -fPIC -O0 -I'{}/include' -o '{}' '{}' 2>'{}.log'",
                                      UNITILE_SOURCE_DIR, so.string(), src.string(), src.string());
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream log(src.string() + ".log");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    ADD_FAILURE() << "building test plugin " << name << " failed:\n" << text;
    return {};
  }
  return so;
}

std::string fake_device_source(const std::string& name, unsigned abi_version, const std::string& hcd_builtin) {
  std::string s = R"C(
#include <unitile/device.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <time.h>

struct ut_buffer { size_t size; unsigned char* data; };
struct ut_binary { size_t size; char* text; };
struct ut_kernel { char entry[256]; };
struct ut_event { double ms; };

static int compiles, launches;
UT_PLUGIN_EXPORT int fake_compile_count(void) { return compiles; }
UT_PLUGIN_EXPORT int fake_launch_count(void) { return launches; }

static void set_err(ut_error* err, const char* msg) {
  if (err) snprintf(err->message, sizeof err->message, "%s", msg);
}
static ut_status describe(ut_device_info* info, ut_error* err) {
  info->name = "@NAME@";
  info->hcd_toml = NULL;
  info->hcd_builtin = "@HCD@";
  info->toolchain_version = "fake-toolchain 1.0";
  return UT_OK;
}
static ut_status alloc_(size_t bytes, ut_buffer** out, ut_error* err) {
  ut_buffer* b = malloc(sizeof *b);
  b->size = bytes;
  b->data = calloc(bytes, 1);
  *out = b;
  return UT_OK;
}
static void free_(ut_buffer* b) { free(b->data); free(b); }
static ut_status copy_in(ut_buffer* dst, size_t off, const void* src, size_t n, ut_error* err) {
  if (off + n > dst->size) { set_err(err, "copy_in out of range"); return UT_ERROR_INVALID; }
  memcpy(dst->data + off, src, n);
  return UT_OK;
}
static ut_status copy_out(void* dst, const ut_buffer* src, size_t off, size_t n, ut_error* err) {
  if (off + n > src->size) { set_err(err, "copy_out out of range"); return UT_ERROR_INVALID; }
  memcpy(dst, src->data + off, n);
  return UT_OK;
}
static ut_status copy(ut_buffer* d, size_t doff, const ut_buffer* s, size_t soff, size_t n, ut_error* err) {
  memcpy(d->data + doff, s->data + soff, n);
  return UT_OK;
}
static ut_status compile(const char* source, const char* options, ut_binary** out, const void** data,
                         size_t* size, ut_error* err) {
  if (strstr(source, "FAKE_REJECT")) { set_err(err, "fake.c:1:1: error: rejected on purpose"); return UT_ERROR_COMPILE; }
  ++compiles;
  ut_binary* b = malloc(sizeof *b);
  b->size = strlen(source);
  b->text = malloc(b->size + 1);
  memcpy(b->text, source, b->size + 1);
  *out = b; *data = b->text; *size = b->size;
  return UT_OK;
}
static ut_status load(const void* data, size_t size, const char* entry, ut_kernel** out, ut_error* err) {
  char* text = malloc(size + 1);
  memcpy(text, data, size);
  text[size] = 0;
  int found = strstr(text, entry) != NULL;
  free(text);
  if (!found) { set_err(err, "entry not in binary"); return UT_ERROR_INVALID; }
  ut_kernel* k = malloc(sizeof *k);
  snprintf(k->entry, sizeof k->entry, "%s", entry);
  *out = k;
  return UT_OK;
}
static ut_status launch(ut_kernel* k, const uint32_t grid[3], const uint32_t block[3], const ut_arg* args,
                        uint32_t nargs, ut_error* err) {
  ++launches;
  if (getenv("FAKE_LAUNCH_INTERNAL")) { set_err(err, "fake internal failure"); return UT_ERROR_INTERNAL; }
  return UT_OK;
}
static ut_status synchronize(ut_error* err) { return UT_OK; }
static ut_status timer(ut_timer_op op, ut_event** event, const ut_event* start, double* ms, ut_error* err) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  if (op == UT_TIMER_RECORD) {
    *event = malloc(sizeof **event);
    (*event)->ms = ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
    return UT_OK;
  }
  *ms = (*event)->ms - start->ms;
  return UT_OK;
}
static void release(ut_release_kind kind, void* h) {
  if (kind == UT_RELEASE_BINARY) free(((ut_binary*)h)->text);
  free(h);
}
static const ut_device_api api = {@ABI@u, 0, describe, alloc_, free_, copy_in, copy_out, copy, compile,
                                  load, launch, synchronize, timer, release};
UT_PLUGIN_EXPORT const ut_device_api* unitile_device_plugin(void) { return &api; }
)C";
  auto replace = [&](const std::string& from, const std::string& to) {
    for (size_t p; (p = s.find(from)) != std::string::npos;) s.replace(p, from.size(), to);
  };
  replace("@NAME@", name);
  replace("@HCD@", hcd_builtin);
  replace("@ABI@", std::to_string(abi_version));
  return s;
}

TempDir::TempDir(const std::string& tag) {
  path_ = fs::temp_directory_path() /
          fmt::format("unitile-{}-{}-{}", tag, ::getpid(),
                      ::testing::UnitTest::GetInstance()->current_test_info()
                          ? ::testing::UnitTest::GetInstance()->current_test_info()->name()
                          : "suite");
  fs::remove_all(path_);
  fs::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

} // namespace unitile::testing
