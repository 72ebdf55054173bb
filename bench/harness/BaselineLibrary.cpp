// dlopen of the baseline libraries and thin wrappers over their C interface.
#include "harness/BaselineLibrary.h"

#include "baselines/baseline.h"

#include <fmt/core.h>

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>

namespace unitile::bench {

struct BaselineApi {
  void* handle = nullptr; // never closed: OpenMP and OpenBLAS threads may outlive a close
  decltype(&ub_abi_version) abi_version = nullptr;
  decltype(&ub_describe) describe = nullptr;
  decltype(&ub_set_threads) set_threads = nullptr;
  decltype(&ub_create) create = nullptr;
  decltype(&ub_op_impl) op_impl = nullptr;
  decltype(&ub_run) run = nullptr;
  decltype(&ub_destroy) destroy = nullptr;
  decltype(&ub_last_error) last_error = nullptr;
};

std::string baseline_dir() {
  if (const char* env = std::getenv("UNITILE_BASELINE_DIR"); env && *env) return env;
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  return (exe.parent_path().parent_path() / "lib" / "unitile" / "baselines").lexically_normal().string();
}

std::optional<BaselineLibrary> BaselineLibrary::open(const std::string& name, std::string* why) {
  const std::string path =
      (std::filesystem::path(baseline_dir()) / ("libunitile-baseline-" + name + ".so")).string();
  if (!std::filesystem::exists(path)) {
    *why = fmt::format("{} not found (not built: its package was missing at configure time?)", path);
    return std::nullopt;
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    *why = fmt::format("cannot load {}: {}", path, dlerror());
    return std::nullopt;
  }
  auto api = std::make_shared<BaselineApi>();
  api->handle = handle;
  bool complete = true;
  auto resolve = [&](auto& fn, const char* symbol) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, symbol));
    complete &= fn != nullptr;
  };
  resolve(api->abi_version, "ub_abi_version");
  resolve(api->describe, "ub_describe");
  resolve(api->set_threads, "ub_set_threads");
  resolve(api->create, "ub_create");
  resolve(api->op_impl, "ub_op_impl");
  resolve(api->run, "ub_run");
  resolve(api->destroy, "ub_destroy");
  resolve(api->last_error, "ub_last_error");
  if (!complete) {
    *why = fmt::format("{} does not export the baseline interface (bench/baselines/baseline.h)", path);
    return std::nullopt;
  }
  if (api->abi_version() != UB_ABI_VERSION) {
    *why = fmt::format("{} has interface version {}, expected {}", path, api->abi_version(), UB_ABI_VERSION);
    return std::nullopt;
  }
  return BaselineLibrary(name, std::move(api));
}

BaselineLibrary::BaselineLibrary(std::string name, std::shared_ptr<const BaselineApi> api)
    : name_(std::move(name)), api_(std::move(api)) {}

std::string BaselineLibrary::describe() const { return api_->describe(); }

int BaselineLibrary::set_threads(int threads) const { return api_->set_threads(threads); }

std::unique_ptr<BaselineOp> BaselineLibrary::create(const std::string& op, const std::string& dtype,
                                                    const std::vector<int64_t>& dims,
                                                    const std::vector<double>& params,
                                                    std::string* why) const {
  ub_op* made = api_->create(op.c_str(), dtype.c_str(), dims.data(), static_cast<int>(dims.size()),
                             params.data(), static_cast<int>(params.size()));
  if (!made) {
    *why = api_->last_error();
    return nullptr;
  }
  return std::make_unique<BaselineOp>(api_, made);
}

BaselineOp::BaselineOp(std::shared_ptr<const BaselineApi> api, ub_op* op)
    : api_(std::move(api)), op_(op) {}

BaselineOp::~BaselineOp() { api_->destroy(op_); }

std::string BaselineOp::impl() const { return api_->op_impl(op_); }

std::optional<std::string> BaselineOp::run(const std::vector<const void*>& inputs,
                                           const std::vector<void*>& outputs) {
  if (api_->run(op_, inputs.data(), outputs.data()) != 0) return std::string(api_->last_error());
  return std::nullopt;
}

} // namespace unitile::bench
