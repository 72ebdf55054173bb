// Loading a device plugin with dlopen and checking it before use.
//
// Plugins are never dlclose'd: a plugin may own threads (the cpu device's pool) or
// atexit handlers that outlive any handle we hold, and unloading code that is still
// referenced crashes at exit. dlopen of the same path returns the same handle anyway.
#include "runtime/DevicePlugin.h"

#include "ir/Diagnostic.h"

#include <fmt/core.h>

#include <dlfcn.h>

namespace unitile {

void check_device_abi(uint32_t plugin_abi_version, const std::string& path) {
  if (plugin_abi_version == UT_DEVICE_ABI_VERSION) return;
  throw UserError(fmt::format("error: plugin {} was built for device ABI v{}; this runtime speaks v{}",
                              path, plugin_abi_version, UT_DEVICE_ABI_VERSION));
}

void check_status(ut_status status, const ut_error& err, std::string_view device,
                  std::string_view what) {
  if (status == UT_OK) return;
  const std::string message = err.message[0] ? std::string(err.message) : "(no message)";
  switch (status) {
  case UT_ERROR_COMPILE:
    throw UserError(fmt::format("error: device {}: {} failed; the compiler said:\n{}", device, what,
                                message));
  case UT_ERROR_MEMORY:
    throw UserError(fmt::format("error: device {}: out of device memory in {}: {}", device, what, message));
  case UT_ERROR_LAUNCH:
    throw UserError(fmt::format("error: device {}: {} failed at run time: {}", device, what, message));
  case UT_ERROR_UNAVAILABLE:
    throw UserError(fmt::format("error: device {} is not available on this machine ({}): {}", device,
                                what, message));
  case UT_ERROR_INVALID:
  case UT_ERROR_INTERNAL:
    break;
  default:
    throw InternalError(fmt::format("device {}: {} returned unknown status {}: {}", device, what,
                                    static_cast<int>(status), message));
  }
  throw InternalError(fmt::format("device {}: {} failed ({}): {}", device, what,
                                  status == UT_ERROR_INVALID ? "invalid argument" : "internal error",
                                  message));
}

DevicePlugin::DevicePlugin(std::string path, const ut_device_api* api, const ut_host_memory_api* host_memory)
    : path_(std::move(path)), api_(api), host_memory_(host_memory) {
  if (!api_) throw UserError(fmt::format("error: plugin {}: {}() returned no device table", path_,
                                         UT_DEVICE_PLUGIN_SYMBOL));
  check_device_abi(api_->abi_version, path_);
  const void* calls[] = {
      reinterpret_cast<const void*>(api_->describe), reinterpret_cast<const void*>(api_->alloc),
      reinterpret_cast<const void*>(api_->free),     reinterpret_cast<const void*>(api_->copy_in),
      reinterpret_cast<const void*>(api_->copy_out), reinterpret_cast<const void*>(api_->copy),
      reinterpret_cast<const void*>(api_->compile),  reinterpret_cast<const void*>(api_->load),
      reinterpret_cast<const void*>(api_->launch),   reinterpret_cast<const void*>(api_->synchronize),
      reinterpret_cast<const void*>(api_->timer),    reinterpret_cast<const void*>(api_->release)};
  for (size_t i = 0; i < std::size(calls); ++i)
    if (!calls[i])
      throw UserError(fmt::format("error: plugin {}: device call {} of 12 is missing (NULL)", path_, i + 1));
  ut_error err{};
  check_status(api_->describe(&info_, &err), err, path_, "describe");
  if (!info_.name || !*info_.name)
    throw UserError(fmt::format("error: plugin {}: describe gave no device name", path_));
  if ((info_.hcd_toml == nullptr) == (info_.hcd_builtin == nullptr))
    throw UserError(fmt::format("error: plugin {}: describe must set exactly one of hcd_toml and "
                                "hcd_builtin", path_));
}

std::shared_ptr<const DevicePlugin> DevicePlugin::load(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    throw UserError(fmt::format("error: cannot load device plugin {}: {}", path, why ? why : "unknown reason"));
  }
  dlerror();
  void* sym = dlsym(handle, UT_DEVICE_PLUGIN_SYMBOL);
  if (!sym)
    throw UserError(fmt::format("error: {} is not a Unitile device plugin: it does not export {}",
                                path, UT_DEVICE_PLUGIN_SYMBOL));
  auto entry = reinterpret_cast<ut_device_plugin_fn>(sym);
  const ut_host_memory_api* host = nullptr;
  if (void* host_sym = dlsym(handle, UT_HOST_MEMORY_SYMBOL)) {
    host = reinterpret_cast<ut_host_memory_fn>(host_sym)();
    if (host && host->abi_version != UT_HOST_MEMORY_ABI_VERSION)
      throw UserError(fmt::format("error: plugin {} was built for host-memory extension v{}; this runtime "
                                  "speaks v{}",
                                  path, host->abi_version, UT_HOST_MEMORY_ABI_VERSION));
    if (host && (!host->host_pointer || !host->wrap))
      throw UserError(fmt::format("error: plugin {}: its host-memory extension has a NULL call", path));
  }
  return std::make_shared<const DevicePlugin>(path, entry(), host);
}

} // namespace unitile
