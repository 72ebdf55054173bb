// `op:NAME` targets: the op's input types from .npy headers and --shape/--dtype, its
// attributes from --attr.
#include "OpTarget.h"

#include "unitile/Command.h"

#include "ir/Diagnostic.h"
#include "runtime/Npy.h"

#include <fmt/core.h>

#include <set>
#include <sstream>

namespace unitile::cli {

bool is_op_target(const std::string& file) { return file.starts_with("op:"); }

void add_op_target_options(CLI::App* cmd, OpTargetOptions& o) {
  cmd->add_option("--attr", o.attrs,
                  "op:NAME only: an attribute NAME=VALUE (lists as 0,2,1 or [0,2,1]); may repeat")
      ->allow_extra_args(false);
  cmd->add_option("--dtype", o.dtypes,
                  "op:NAME only: dtype of the inputs not read from .npy files: DT for every data "
                  "input, or NAME=DT; may repeat. bf16 also reads a <u2 .npy file as bf16 bits")
      ->allow_extra_args(false);
}

namespace {

std::vector<int64_t> parse_dims(const std::string& name, const std::string& text) {
  std::vector<int64_t> dims;
  if (text.empty() || text == "scalar")
    return dims;
  std::stringstream ss(text);
  for (std::string d; std::getline(ss, d, 'x');) {
    const int64_t v = parse_int(d, "--shape " + name);
    if (v < 1)
      throw UserError(fmt::format("error: --shape {}={}: every dimension must be at least 1",
                                  name, text));
    dims.push_back(v);
  }
  return dims;
}

DType parse_dtype_flag(const std::string& flag, const std::string& text) {
  if (auto d = parse_dtype(text))
    return *d;
  throw UserError(fmt::format("error: {}: unknown dtype '{}' (f16, bf16, f32, f64, i8, i16, i32, "
                              "i64, u8, bool)",
                              flag, text));
}

} // namespace

ops::OpInstance instantiate_op_target(const std::string& target,
                                      const std::vector<std::string>& shapes,
                                      const std::vector<std::string>& inputs,
                                      const OpTargetOptions& o) {
  const ops::OpDef& op = ops::op_or_error(target.substr(3));

  // Which port a tensor name belongs to (X3 -> the variadic port X).
  auto port_of = [&](const std::string& name) -> const ops::Port* {
    for (const ops::Port& p : op.inputs) {
      if (p.name == name)
        return &p;
      if (p.variadic && name.size() > p.name.size() && name.starts_with(p.name) &&
          name.find_first_not_of("0123456789", p.name.size()) == std::string::npos)
        return &p;
    }
    std::vector<std::string> names;
    for (const ops::Port& p : op.inputs)
      names.push_back(p.variadic ? p.name + "0, " + p.name + "1, ..." : p.name);
    throw UserError(fmt::format("error: op:{}: no input named '{}' (inputs: {})", op.name, name,
                                cli::join(names)));
  };

  std::optional<DType> data_dtype;
  std::map<std::string, DType> named_dtypes;
  for (const std::string& d : o.dtypes) {
    const auto eq = d.find('=');
    if (eq == std::string::npos) {
      data_dtype = parse_dtype_flag("--dtype", d);
      continue;
    }
    const std::string name = d.substr(0, eq);
    port_of(name);
    named_dtypes[name] = parse_dtype_flag("--dtype " + name, d.substr(eq + 1));
  }

  std::map<std::string, ops::TensorSpec> specs;
  for (const auto& [name, path] : name_values(inputs, "--input", false)) {
    const ops::Port* p = port_of(name);
    // A .npy file has no bf16 descr: its <u2 bits are bf16 when --dtype says so.
    std::optional<DType> as = named_dtypes.count(name) ? std::optional(named_dtypes[name])
                              : p->kind == ops::PortKind::Data ? data_dtype
                                                               : std::nullopt;
    const Tensor t = read_npy(path, as);
    if (named_dtypes.count(name) && named_dtypes[name] != t.dtype)
      throw UserError(fmt::format("error: --dtype {}={} but {} holds {}", name,
                                  dtype_name(named_dtypes[name]), path, dtype_name(t.dtype)));
    specs[name] = {t.dtype, t.shape};
  }
  for (const auto& [name, text] : name_values(shapes, "--shape", true)) {
    const ops::Port* p = port_of(name);
    if (specs.count(name))
      throw UserError(fmt::format("error: --shape {}: the input is also given with --input", name));
    DType dt = p->kind == ops::PortKind::Index ? DType::I64
               : p->kind == ops::PortKind::Mask ? DType::Bool
                                                : data_dtype.value_or(DType::F32);
    if (auto it = named_dtypes.find(name); it != named_dtypes.end())
      dt = it->second;
    specs[name] = {dt, parse_dims(name, text)};
  }
  for (const auto& [name, dt] : named_dtypes)
    if (!specs.count(name))
      throw UserError(fmt::format("error: --dtype {}: give the input's shape with --shape {}=... "
                                  "or its data with --input",
                                  name, name));
  for (const ops::Port& p : op.inputs)
    if (!p.optional && !p.variadic && !specs.count(p.name))
      throw UserError(fmt::format("error: op:{}: input '{}' needs --input {}=FILE.npy or --shape "
                                  "{}=D0xD1...",
                                  op.name, p.name, p.name, p.name));

  ops::Attrs attrs;
  for (const auto& [name, text] : name_values(o.attrs, "--attr", false))
    attrs[name] = ops::parse_attr_text(op, name, text);
  return ops::instantiate(op, specs, attrs);
}

} // namespace unitile::cli
