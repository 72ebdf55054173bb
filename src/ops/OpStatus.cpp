// The op status file: JSON written by tests/ops/conftest.py after the op tests run.
#include "ops/OpStatus.h"

#include "ir/Diagnostic.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace unitile::ops {

std::string default_op_status_path() {
  if (const char* env = std::getenv("UNITILE_OPS_STATUS"); env && *env)
    return env;
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec || exe.empty())
    return "ops-status.json";
  return (exe.parent_path().parent_path() / "share" / "unitile" / "ops-status.json")
      .lexically_normal()
      .string();
}

OpStatus read_op_status(const std::string& path) {
  OpStatus s;
  s.path = path;
  std::ifstream in(path);
  if (!in)
    return s;
  s.found = true;
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  auto bad = [&](const std::string& why) {
    return UserError(fmt::format("error: {}: not an op status file ({}); rerun the op tests "
                                 "(tests/ops) to rewrite it",
                                 path, why));
  };
  if (j.is_discarded() || !j.is_object())
    throw bad("not a JSON object");
  if (!j.contains("devices") || !j["devices"].is_object())
    throw bad("no \"devices\" object");
  if (j.contains("written") && j["written"].is_string())
    s.written = j["written"].get<std::string>();
  for (const auto& [device, ops] : j["devices"].items()) {
    if (!ops.is_object())
      throw bad("\"devices\"." + device + " is not an object");
    for (const auto& [op, status] : ops.items()) {
      if (!status.is_string())
        throw bad("\"devices\"." + device + "." + op + " is not a string");
      s.results[device][op] = status.get<std::string>();
    }
  }
  return s;
}

std::string device_status(const OpStatus& status, const std::string& device,
                          const std::string& op) {
  if (!status.found)
    return fmt::format("not tested: no op test results ({} does not exist; the op tests in "
                       "tests/ops write it)",
                       status.path);
  auto dev = status.results.find(device);
  if (dev == status.results.end())
    return "not tested: the op tests did not run on this device";
  auto it = dev->second.find(op);
  if (it == dev->second.end())
    return "not tested: no test case for this op ran on this device";
  return it->second;
}

} // namespace unitile::ops
