// The device plugin search path, discovery by file name, and opening devices by name.
#include "runtime/DeviceRegistry.h"

#include "ir/Diagnostic.h"

#include <fmt/core.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <sstream>

#ifndef UNITILE_INSTALL_PLUGIN_DIR
#error "UNITILE_INSTALL_PLUGIN_DIR must be defined by the build (src/runtime/CMakeLists.txt)"
#endif

namespace fs = std::filesystem;

namespace unitile {

namespace {

constexpr std::string_view kPrefix = "libunitile-device-";
constexpr std::string_view kSuffix = ".so";

std::string executable_plugin_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec || exe.empty()) return {};
  return (exe.parent_path().parent_path() / "lib" / "unitile" / "plugins").lexically_normal().string();
}

// <folder of the shared library holding this code>/plugins, when that library is not the
// executable: the Python package keeps its plugins beside its extension module.
std::string library_plugin_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&library_plugin_dir), &info) == 0 || !info.dli_fname) return {};
  std::error_code ec;
  fs::path lib = fs::canonical(info.dli_fname, ec);
  if (ec) return {};
  fs::path exe = fs::canonical("/proc/self/exe", ec);
  if (!ec && exe == lib) return {};
  return (lib.parent_path() / "plugins").string();
}

// One DevicePlugin per path for the life of the process (plugins are never unloaded).
std::shared_ptr<const DevicePlugin> load_plugin_once(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const DevicePlugin>> loaded;
  std::lock_guard lock(mu);
  auto it = loaded.find(path);
  if (it != loaded.end()) return it->second;
  auto p = DevicePlugin::load(path);
  loaded.emplace(path, p);
  return p;
}

// --hcd names a file (a path with '/' or ending in .toml) or a built-in description.
std::optional<hcd::Hcd> hcd_override(const DeviceOptions& opts) {
  const std::string& h = opts.hcd_path;
  if (h.empty()) return std::nullopt;
  if (h.find('/') != std::string::npos || h.ends_with(".toml")) return hcd::load_file(h);
  return hcd::builtin(h);
}

} // namespace

std::vector<std::string> plugin_search_path() {
  std::vector<std::string> dirs;
  auto add = [&](const std::string& d) {
    if (!d.empty() && std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(d);
  };
  if (const char* env = std::getenv("UNITILE_PLUGIN_PATH")) {
    std::stringstream ss(env);
    std::string dir;
    while (std::getline(ss, dir, ':')) add(dir);
  }
  add(library_plugin_dir());
  add(executable_plugin_dir());
  add(UNITILE_INSTALL_PLUGIN_DIR);
  return dirs;
}

std::vector<PluginFile> find_plugin_files() {
  std::map<std::string, std::string> first;
  for (const std::string& dir : plugin_search_path()) {
    std::error_code ec;
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir, ec)) files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      const std::string base = f.filename().string();
      if (!base.starts_with(kPrefix) || !base.ends_with(kSuffix)) continue;
      const std::string name = base.substr(kPrefix.size(), base.size() - kPrefix.size() - kSuffix.size());
      if (!name.empty()) first.emplace(name, f.string());
    }
  }
  std::vector<PluginFile> out;
  for (auto& [name, path] : first) out.push_back({name, path});
  return out;
}

Device open_device(const std::string& name, const DeviceOptions& opts) {
  if (!opts.plugin_path.empty()) {
    auto plugin = load_plugin_once(opts.plugin_path);
    if (!name.empty() && plugin->name() != name)
      throw UserError(fmt::format("error: --device {} but plugin {} is device '{}'", name,
                                  opts.plugin_path, plugin->name()));
    return Device(plugin, hcd_override(opts));
  }
  const auto files = find_plugin_files();
  for (const PluginFile& f : files)
    if (f.name == name) return Device(load_plugin_once(f.path), hcd_override(opts));

  std::string found;
  for (const PluginFile& f : files) found += fmt::format("\n  {}  ({})", f.name, f.path);
  std::string searched;
  for (const std::string& d : plugin_search_path()) searched += fmt::format("\n  {}", d);
  if (found.empty()) found = "\n  (none)";
  throw UserError(fmt::format("error: unknown device '{}'; devices found:{}\n"
                              "searched (set UNITILE_PLUGIN_PATH to add directories):{}\n",
                              name, found, searched));
}

std::vector<DeviceListing> list_devices() {
  std::vector<DeviceListing> out;
  for (const PluginFile& f : find_plugin_files()) {
    DeviceListing l{f.name, f.path, {}, {}, {}};
    try {
      auto plugin = load_plugin_once(f.path);
      Device d(plugin);
      l.summary = hcd::summary(d.hcd());
      // Describing needs only the plugin; running needs the device: probe it.
      ut_error err{};
      ut_buffer* probe = nullptr;
      ut_status probed = plugin->api().alloc(1, &probe, &err);
      if (probed == UT_OK)
        plugin->api().free(probe);
      else if (probed == UT_ERROR_UNAVAILABLE)
        l.unavailable = err.message[0] ? err.message : "(no reason given)";
    } catch (const std::exception& e) {
      std::string why = e.what();
      while (!why.empty() && why.back() == '\n') why.pop_back();
      if (why.starts_with("error: ")) why = why.substr(7);
      l.error = why;
    }
    out.push_back(std::move(l));
  }
  return out;
}

} // namespace unitile
