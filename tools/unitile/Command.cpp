// Subcommand registry and the helpers the subcommands share.
#include "unitile/Command.h"

#include "ir/Diagnostic.h"
#include "runtime/Inputs.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <set>
#include <sstream>

namespace unitile::cli {

namespace {
std::vector<CommandInfo>& registry() {
  static std::vector<CommandInfo> commands;
  return commands;
}
} // namespace

CommandRegistration::CommandRegistration(CommandInfo info) {
  registry().push_back(std::move(info));
}

const std::vector<CommandInfo>& registered_commands() {
  std::vector<CommandInfo>& r = registry();
  std::stable_sort(r.begin(), r.end(),
                   [](const CommandInfo& a, const CommandInfo& b) { return a.order < b.order; });
  return r;
}

std::vector<std::pair<std::string, std::string>> name_values(const std::vector<std::string>& items,
                                                             const char* flag, bool split_commas) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& list : items) {
    std::vector<std::string> parts;
    if (split_commas) {
      std::stringstream ss(list);
      for (std::string item; std::getline(ss, item, ',');)
        parts.push_back(item);
    } else {
      parts.push_back(list);
    }
    for (const std::string& kv : parts) {
      const auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size())
        throw UserError(fmt::format("error: {} expects NAME=VALUE, got '{}'", flag, kv));
      out.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
  }
  return out;
}

int64_t parse_int(const std::string& text, const std::string& what) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size())
    throw UserError(fmt::format("error: {}: '{}' is not an integer", what, text));
  return v;
}

double parse_number(const std::string& text, const std::string& what) {
  try {
    size_t used = 0;
    double v = std::stod(text, &used);
    if (used == text.size())
      return v;
  } catch (const std::exception&) {
  }
  if (text == "true")
    return 1;
  if (text == "false")
    return 0;
  throw UserError(fmt::format("error: {}: '{}' is not a number", what, text));
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v)
    s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "(none)" : s;
}

std::vector<const Kernel*> select_kernels(const Module& m, const std::string& name,
                                          const std::string& file) {
  std::vector<const Kernel*> out;
  if (name.empty()) {
    for (const Kernel& k : m.kernels)
      out.push_back(&k);
    if (out.empty())
      throw UserError(fmt::format("{}: error: the file defines no kernel", file));
    return out;
  }
  if (const Kernel* k = m.find(name))
    return {k};
  std::vector<std::string> names;
  for (const Kernel& k : m.kernels)
    names.push_back(k.name);
  throw UserError(fmt::format("{}: error: no kernel named '{}'; the file defines: {}", file, name,
                              join(names)));
}

std::vector<std::string> bindable_names(const Kernel& k) {
  std::vector<std::string> names = k.shape_symbols();
  for (const std::string& p : specialisation_params(k))
    if (std::find(names.begin(), names.end(), p) == names.end())
      names.push_back(p);
  return names;
}

void add_common(CLI::App* cmd, CommonOptions& o) {
  cmd->add_option("file", o.file, "the .ut file, or op:NAME (a library op; run also takes a .loop Loop IR program)")->required();
  cmd->add_option("--kernel", o.kernel,
                  "only this kernel (default: every kernel in the file, in order)");
  cmd->add_option("--device", o.device, "device name, as `unitile devices` lists them")->required();
  cmd->add_option("--device-plugin", o.device_plugin,
                  "load the device from this plugin file instead of searching");
  cmd->add_option("--hcd", o.hcd,
                  "run under this HCD file instead of the device's own (sim models other chips)");
  cmd->add_option("--shape", o.shapes, "shape bindings NAME=VALUE[,NAME=VALUE...]; may repeat")
      ->allow_extra_args(false);
}

DeviceOptions device_options(const CommonOptions& o) {
  return {o.device_plugin, o.hcd};
}

ShapeBindings shape_bindings(const CommonOptions& o, const std::vector<const Kernel*>& kernels) {
  std::set<std::string> known;
  for (const Kernel* k : kernels)
    for (const std::string& n : bindable_names(*k))
      known.insert(n);
  ShapeBindings b;
  for (const auto& [name, value] : name_values(o.shapes, "--shape", true)) {
    if (!known.count(name))
      throw UserError(
          fmt::format("error: --shape {}: no kernel run here has a shape symbol '{}' (symbols: {})",
                      name, name, join({known.begin(), known.end()})));
    b[name] = parse_int(value, "--shape " + name);
  }
  return b;
}

} // namespace unitile::cli
