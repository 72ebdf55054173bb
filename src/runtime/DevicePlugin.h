// One loaded device plugin: the shared object, its checked ABI table and what its
// describe call reported. The checks a plugin must pass before anything else is called
// live here, so a plugin built for another ABI is refused, never run.
#pragma once

#include "unitile/device.h"
#include "unitile/host_memory.h"

#include <memory>
#include <string>
#include <string_view>

namespace unitile {

class DevicePlugin {
public:
  /// dlopen `path`, find `unitile_device_plugin`, check its ABI version and call
  /// describe. Any failure is a UserError naming the path and the reason.
  static std::shared_ptr<const DevicePlugin> load(const std::string& path);

  const ut_device_api& api() const { return *api_; }
  const std::string& path() const { return path_; }
  /// What describe reported; the strings belong to the plugin, which stays loaded.
  const ut_device_info& info() const { return info_; }
  std::string name() const { return info_.name ? info_.name : ""; }

  /// The optional host-memory extension (unitile/host_memory.h), or nullptr when the
  /// plugin's buffers are not host memory.
  const ut_host_memory_api* host_memory() const { return host_memory_; }

  /// Build from an already-resolved table (tests; plugins linked into the process).
  DevicePlugin(std::string path, const ut_device_api* api, const ut_host_memory_api* host_memory = nullptr);

private:
  std::string path_;
  const ut_device_api* api_ = nullptr;
  const ut_host_memory_api* host_memory_ = nullptr;
  ut_device_info info_{};
};

/// Refuse a plugin whose table says another ABI version: UserError "plugin PATH was
/// built for device ABI vN; this runtime speaks v1".
void check_device_abi(uint32_t plugin_abi_version, const std::string& path);

/// Turn a plugin call's status into an exception: the device's own message is kept.
/// Compile failures (with the vendor's log), out-of-memory, launch failures and a missing
/// device are the user's to fix (UserError); an invalid argument or an internal failure
/// means the runtime or plugin is wrong (InternalError). `what` names the call.
void check_status(ut_status status, const ut_error& err, std::string_view device,
                  std::string_view what);

} // namespace unitile
