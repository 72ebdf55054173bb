// `unitile ops`: every library op with its ports, attributes and defaults, and whether
// it works on each device as its tests last found (never a hand-kept table).
#include "unitile/Command.h"

#include "ops/OpContext.h"
#include "ops/OpLibrary.h"
#include "ops/OpStatus.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <iostream>

namespace unitile::cli {
namespace {

struct OpsOptions {
  bool json = false;
  std::string category, name, status_path;
};

nlohmann::json attr_json(const std::optional<ops::AttrValue>& v, ops::AttrKind kind) {
  if (!v)
    return nullptr; // required
  return std::visit(
      [&](const auto& x) -> nlohmann::json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, int64_t>)
          return kind == ops::AttrKind::Bool ? nlohmann::json(x != 0) : nlohmann::json(x);
        else
          return nlohmann::json(x);
      },
      *v);
}

std::vector<std::string> port_names(const std::vector<ops::Port>& ports) {
  std::vector<std::string> out;
  for (const ops::Port& p : ports)
    out.push_back(p.variadic ? p.name + "..." : p.optional ? p.name + "?" : p.name);
  return out;
}

int ops_command(const OpsOptions& o) {
  const ops::OpStatus status =
      ops::read_op_status(o.status_path.empty() ? ops::default_op_status_path() : o.status_path);
  std::vector<std::string> devices;
  for (const DeviceListing& d : list_devices())
    devices.push_back(d.name);

  std::vector<const ops::OpDef*> selected;
  if (!o.name.empty()) {
    selected.push_back(&ops::op_or_error(o.name));
  } else {
    for (const ops::OpDef& op : ops::all_ops())
      if (o.category.empty() || op.category == o.category)
        selected.push_back(&op);
    if (selected.empty())
      throw UserError(fmt::format("error: --category {}: no op has that category", o.category));
  }

  if (o.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const ops::OpDef* op : selected) {
      nlohmann::json j;
      j["name"] = op->name;
      nlohmann::json ins = nlohmann::json::array(), outs = nlohmann::json::array();
      for (const ops::Port& p : op->inputs)
        ins.push_back(p.name);
      for (const ops::Port& p : op->outputs)
        outs.push_back(p.name);
      j["inputs"] = ins;
      j["outputs"] = outs;
      nlohmann::json optional = nlohmann::json::array(), variadic = nlohmann::json::array();
      for (const ops::Port& p : op->inputs) {
        if (p.optional)
          optional.push_back(p.name);
        if (p.variadic)
          variadic.push_back(p.name);
      }
      j["optional_inputs"] = optional;
      j["variadic_inputs"] = variadic;
      nlohmann::json attrs = nlohmann::json::object();
      for (const ops::AttrSpec& a : op->attrs)
        attrs[a.name] = attr_json(a.default_value, a.kind);
      j["attrs"] = attrs;
      nlohmann::json devs = nlohmann::json::object();
      for (const std::string& d : devices)
        devs[d] = ops::device_status(status, d, op->name);
      j["devices"] = devs;
      j["category"] = op->category;
      j["summary"] = op->summary;
      j["gradient"] = op->gradient.empty() ? nlohmann::json(nullptr) : nlohmann::json(op->gradient);
      out.push_back(std::move(j));
    }
    std::cout << out.dump(1) << "\n";
    return 0;
  }

  if (!o.name.empty()) {
    const ops::OpDef& op = *selected.front();
    std::cout << fmt::format("{}  ({})  {}\n", op.name, op.category, op.summary);
    std::cout << fmt::format("  inputs:  {}\n", join(port_names(op.inputs)));
    std::cout << fmt::format("  outputs: {}\n", join(port_names(op.outputs)));
    for (const ops::AttrSpec& a : op.attrs)
      std::cout << fmt::format("  attr {} ({}) = {}: {}\n", a.name, ops::attr_kind_name(a.kind),
                               a.default_value ? ops::attr_value_text(*a.default_value)
                                               : "(required)",
                               a.doc);
    if (!op.gradient.empty())
      std::cout << fmt::format("  gradient: {}\n", op.gradient);
    for (const std::string& d : devices)
      std::cout << fmt::format("  {}: {}\n", d, ops::device_status(status, d, op.name));
    return 0;
  }

  size_t width = 4;
  for (const ops::OpDef* op : selected)
    width = std::max(width, op->name.size());
  for (const ops::OpDef* op : selected) {
    std::vector<std::string> bad;
    for (const std::string& d : devices)
      if (ops::device_status(status, d, op->name) != "ok")
        bad.push_back(d);
    std::vector<std::string> good;
    for (const std::string& d : devices)
      if (std::find(bad.begin(), bad.end(), d) == bad.end())
        good.push_back(d);
    std::cout << fmt::format("{:<{}}  {:<20}  ({}) -> ({})  {}  [ok: {}]\n", op->name, width,
                             op->category, ops::join(port_names(op->inputs)),
                             ops::join(port_names(op->outputs)), op->summary,
                             good.empty() ? "none" : ops::join(good));
  }
  std::cout << fmt::format("{} ops; device status from {}{}\n", selected.size(), status.path,
                           status.found ? (status.written.empty() ? "" : " (" + status.written + ")")
                                        : " (not written yet: run the op tests)");
  return 0;
}

CommandAction setup_ops(CLI::App& cmd) {
  auto o = std::make_shared<OpsOptions>();
  cmd.add_option("name", o->name, "show one op in full");
  cmd.add_flag("--json", o->json,
               "print a JSON list of {name, inputs, outputs, attrs: {name: default}, devices: "
               "{device: \"ok\" | reason}, ...}");
  cmd.add_option("--category", o->category, "only ops of this category");
  cmd.add_option("--status", o->status_path,
                 "read the device status from this file (default $UNITILE_OPS_STATUS, else "
                 "<prefix>/share/unitile/ops-status.json, written by the op tests)");
  cmd.footer(std::string("Run an op with `unitile run op:NAME --device DEV --shape X=2x3 --attr "
                         "K=V`.\nA required attribute shows null as its default in --json.\n") +
             kExitStatusHelp);
  return [o] { return ops_command(*o); };
}

const CommandRegistration reg{
    {"ops", "list the operator library: ports, attributes, status per device", 15, setup_ops}};

} // namespace
} // namespace unitile::cli
