// Built-in devices by name: the compiled-in devices/*.toml files plus the detected host.
#include "hcd/BuiltinFiles.h"
#include "hcd/Hcd.h"
#include "hcd/NearMiss.h"
#include "ir/Diagnostic.h"

#include <algorithm>

namespace unitile::hcd {
namespace {

constexpr std::string_view kHostCpu = "host-cpu";

const Hcd& host_cpu() {
  // Detection reads sysfs and cpuid; the answer does not change while we run.
  static const Hcd host = detect_host_cpu();
  return host;
}

} // namespace

std::vector<std::string> builtin_names() {
  std::vector<std::string> names{std::string(kHostCpu)};
  for (const auto& f : builtin_files()) names.emplace_back(f.name);
  std::sort(names.begin(), names.end());
  return names;
}

Hcd builtin(const std::string& name) {
  if (name == kHostCpu) return host_cpu();
  for (const auto& f : builtin_files()) {
    if (f.name != name) continue;
    // Diagnostics name the file as it sits in the source tree; a broken built-in file
    // is caught by the unit tests, but the message should still lead to it.
    Hcd h = load_string(std::string(f.text), std::string(f.path));
    h.source = "builtin:" + name;
    return h;
  }
  std::vector<std::string> names = builtin_names();
  std::vector<std::string_view> views(names.begin(), names.end());
  auto near = closest_name(name, views);
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  Diagnostic d;
  d.message = "unknown device '" + name + "'";
  d.hint = (near ? "did you mean '" + *near + "'? " : std::string()) + "built-in devices: " +
           list + "; or give the path of an HCD .toml file";
  throw UserError(std::move(d));
}

} // namespace unitile::hcd
