// Test helpers for the cpu device plugin: load it the way the runtime does (dlopen from
// UNITILE_PLUGIN_DIR), and small RAII wrappers around its buffers and kernels.
#pragma once

#include "codegen/Codegen.h"
#include "unitile/device.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace unitile::cpu_test {

inline const ut_device_api* cpu_api() {
  static const ut_device_api* api = [] {
    std::string path = std::string(UNITILE_PLUGIN_DIR) + "/libunitile-device-cpu.so";
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      return static_cast<const ut_device_api*>(nullptr);
    auto fn = reinterpret_cast<ut_device_plugin_fn>(dlsym(lib, UT_DEVICE_PLUGIN_SYMBOL));
    return fn ? fn() : nullptr;
  }();
  return api;
}

/// A device buffer holding a copy of a host vector.
class Buffer {
public:
  template <typename T>
  explicit Buffer(const std::vector<T>& host) : bytes_(host.size() * sizeof(T)) {
    ut_error err{};
    EXPECT_EQ(cpu_api()->alloc(bytes_, &buf_, &err), UT_OK) << err.message;
    EXPECT_EQ(cpu_api()->copy_in(buf_, 0, host.data(), bytes_, &err), UT_OK) << err.message;
  }
  ~Buffer() { cpu_api()->free(buf_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  template <typename T> std::vector<T> read() const {
    std::vector<T> out(bytes_ / sizeof(T));
    ut_error err{};
    EXPECT_EQ(cpu_api()->copy_out(out.data(), buf_, 0, bytes_, &err), UT_OK) << err.message;
    return out;
  }
  ut_arg arg() const {
    ut_arg a{};
    a.kind = UT_ARG_BUFFER;
    a.value.buffer = buf_;
    return a;
  }
  ut_buffer* handle() const { return buf_; }

private:
  size_t bytes_;
  ut_buffer* buf_ = nullptr;
};

inline ut_arg f64_arg(double v) {
  ut_arg a{};
  a.kind = UT_ARG_F64;
  a.dtype = 2;
  a.value.f64 = v;
  return a;
}

inline ut_arg i64_arg(int64_t v) {
  ut_arg a{};
  a.kind = UT_ARG_I64;
  a.dtype = 7;
  a.value.i64 = v;
  return a;
}

/// Every entry of a generated program, compiled and loaded; released at the end.
class Module {
public:
  Module(const LoopProgram& p, const GeneratedSource& src, const std::string& options = "cc -O2")
      : program_(p) {
    ut_error err{};
    ut_binary* bin = nullptr;
    const void* data = nullptr;
    size_t size = 0;
    ut_status s = cpu_api()->compile(src.code.c_str(), options.c_str(), &bin, &data, &size, &err);
    EXPECT_EQ(s, UT_OK) << err.message << "\n--- source ---\n" << src.code;
    if (s != UT_OK)
      return;
    for (const auto& e : src.entries) {
      ut_kernel* k = nullptr;
      EXPECT_EQ(cpu_api()->load(data, size, e.c_str(), &k, &err), UT_OK) << err.message;
      kernels_.push_back(k);
    }
    cpu_api()->release(UT_RELEASE_BINARY, bin);
  }
  ~Module() {
    for (ut_kernel* k : kernels_)
      cpu_api()->release(UT_RELEASE_KERNEL, k);
  }
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  bool ok() const { return kernels_.size() == program_.funcs.size() && !kernels_.empty(); }

  /// Run every func in order over its launch grid; returns the first failure's status.
  ut_status run(const std::vector<ut_arg>& args, std::string* message = nullptr) const {
    for (size_t f = 0; f < kernels_.size(); ++f) {
      LaunchDims d = launch_dims(program_.funcs[f]);
      ut_error err{};
      ut_status s = cpu_api()->launch(kernels_[f], d.grid.data(), d.block.data(), args.data(),
                                      static_cast<uint32_t>(args.size()), &err);
      if (s != UT_OK) {
        if (message)
          *message = err.message;
        return s;
      }
    }
    return UT_OK;
  }

private:
  const LoopProgram& program_;
  std::vector<ut_kernel*> kernels_;
};

/// Sets an environment variable for one scope.
class ScopedEnv {
public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name))
      old_ = old, had_ = true;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_, old_.c_str(), 1);
    else
      unsetenv(name_);
  }

private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

} // namespace unitile::cpu_test
