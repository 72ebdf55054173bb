// Built-in devices by name: the compiled-in devices/*.toml files plus the detected host.
#include "hcd/BuiltinFiles.h"
#include "hcd/Hcd.h"
#include "hcd/NearMiss.h"
#include "ir/Diagnostic.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

namespace unitile::hcd {
namespace {

constexpr std::string_view kHostCpu = "host-cpu";

Hcd host_cpu() {
  // Detection reads sysfs and cpuid; the hardware does not change while we run, but the
  // units do follow UNITILE_NUM_THREADS (usable_cpus), which a process may change between
  // sessions (`unitile bench --threads 1,all` sets it per thread count): one detection
  // per value seen. Before, the first value stuck, and every later thread count got
  // schedules sized for one unit (a GEMM on two threads ran as on one).
  static std::mutex mu;
  static std::map<std::string, Hcd> detected;
  const char* env = std::getenv("UNITILE_NUM_THREADS");
  const std::string key = env ? env : "";
  std::lock_guard<std::mutex> lock(mu);
  auto it = detected.find(key);
  if (it == detected.end()) it = detected.emplace(key, detect_host_cpu()).first;
  return it->second;
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
