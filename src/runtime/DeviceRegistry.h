// Finding device plugins by name: libunitile-device-<name>.so on a search path of
// $UNITILE_PLUGIN_PATH, <dir of the shared library holding the runtime>/plugins (when it
// is a library, such as the Python extension), <dir of the executable>/../lib/unitile/plugins,
// and the install prefix's plugin directory, in that order (the first file of a name wins).
#pragma once

#include "runtime/Device.h"

#include <optional>
#include <string>
#include <vector>

namespace unitile {

/// The directories searched, in order, without duplicates (nonexistent ones included).
std::vector<std::string> plugin_search_path();

struct PluginFile {
  std::string name; // from the file name: libunitile-device-<name>.so
  std::string path;
};
/// Every plugin file on the search path, the first of each name, sorted by name.
std::vector<PluginFile> find_plugin_files();

struct DeviceOptions {
  std::string plugin_path; // --device-plugin: load this file instead of searching
  std::string hcd_path;    // --hcd: run under this HCD (a file or built-in name) instead of the described one
};

/// Open the device `name` (or the plugin in `opts.plugin_path`). An unknown name is a
/// UserError listing the devices found and the directories searched.
Device open_device(const std::string& name, const DeviceOptions& opts = {});

/// One line of `unitile devices`: a plugin that loads and describes gets its HCD
/// summary, one that does not gets the reason instead.
struct DeviceListing {
  std::string name;
  std::string path;
  std::string summary; // hcd::summary of the described HCD, when it loaded
  std::string error;   // why it did not load or describe, otherwise empty
  /// Why the device cannot run kernels here although its plugin loads (its driver or
  /// hardware is missing: a one-byte alloc answers UT_ERROR_UNAVAILABLE), else empty.
  std::string unavailable;
};
std::vector<DeviceListing> list_devices();

} // namespace unitile
