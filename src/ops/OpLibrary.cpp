// The op list (built once from the family files) and instantiation: ports checked,
// attributes resolved, the generator run, its text parsed and verified.
#include "ops/OpLibrary.h"

#include "ir/Diagnostic.h"
#include "ir/Parser.h"
#include "ops/OpContext.h"
#include "ops/defs/Families.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <set>

namespace unitile::ops {
namespace {

std::vector<OpDef> build_library() {
  std::vector<OpDef> ops;
  add_elementwise_ops(ops);
  add_reduction_ops(ops);
  add_data_movement_ops(ops);
  add_indexing_ops(ops);
  add_matmul_ops(ops);
  add_normalization_ops(ops);
  add_attention_ops(ops);
  add_conv_ops(ops);
  add_pool_ops(ops);
  add_resize_ops(ops);
  add_loss_ops(ops);
  add_dropout_ops(ops);
  add_optimizer_ops(ops);
  add_onnx_extra_ops(ops);
  add_quantization_ops(ops);
  std::sort(ops.begin(), ops.end(),
            [](const OpDef& a, const OpDef& b) { return a.name < b.name; });
  for (size_t i = 1; i < ops.size(); ++i)
    if (ops[i].name == ops[i - 1].name)
      throw std::logic_error("op library: '" + ops[i].name + "' is defined twice");
  return ops;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

bool kind_accepts(AttrKind kind, const AttrValue& v) {
  switch (kind) {
  case AttrKind::Int:
  case AttrKind::Bool: return std::holds_alternative<int64_t>(v);
  case AttrKind::Float:
    return std::holds_alternative<double>(v) || std::holds_alternative<int64_t>(v);
  case AttrKind::String: return std::holds_alternative<std::string>(v);
  case AttrKind::Ints:
    return std::holds_alternative<std::vector<int64_t>>(v) || std::holds_alternative<int64_t>(v);
  case AttrKind::Floats:
    return std::holds_alternative<std::vector<double>>(v) ||
           std::holds_alternative<std::vector<int64_t>>(v) || std::holds_alternative<double>(v) ||
           std::holds_alternative<int64_t>(v);
  }
  return false;
}

// One value normalised to the kind's own alternative (an int given for a float, ...).
AttrValue coerce(AttrKind kind, const AttrValue& v) {
  switch (kind) {
  case AttrKind::Float:
    if (auto p = std::get_if<int64_t>(&v))
      return static_cast<double>(*p);
    return v;
  case AttrKind::Ints:
    if (auto p = std::get_if<int64_t>(&v))
      return std::vector<int64_t>{*p};
    return v;
  case AttrKind::Floats:
    if (auto p = std::get_if<std::vector<int64_t>>(&v))
      return std::vector<double>(p->begin(), p->end());
    if (auto p = std::get_if<int64_t>(&v))
      return std::vector<double>{static_cast<double>(*p)};
    if (auto p = std::get_if<double>(&v))
      return std::vector<double>{*p};
    return v;
  default: return v;
  }
}

const AttrSpec* find_attr_spec(const OpDef& op, const std::string& name) {
  for (const AttrSpec& a : op.attrs)
    if (a.name == name)
      return &a;
  return nullptr;
}

[[noreturn]] void unknown_attr(const OpDef& op, const std::string& name) {
  std::vector<std::string> names;
  for (const AttrSpec& a : op.attrs)
    names.push_back(a.name);
  throw UserError(fmt::format("error: op:{}: unknown attribute '{}' (attributes: {})", op.name,
                              name, names.empty() ? "none" : join(names)));
}

} // namespace

const std::vector<OpDef>& all_ops() {
  static const std::vector<OpDef> ops = build_library();
  return ops;
}

const OpDef* find_op(std::string_view name) {
  const std::vector<OpDef>& ops = all_ops();
  auto it = std::lower_bound(ops.begin(), ops.end(), name,
                             [](const OpDef& a, std::string_view n) { return a.name < n; });
  return it != ops.end() && it->name == name ? &*it : nullptr;
}

const OpDef& op_or_error(std::string_view name) {
  if (const OpDef* op = find_op(name))
    return *op;
  std::vector<std::pair<size_t, std::string>> close;
  for (const OpDef& op : all_ops()) {
    const size_t d = edit_distance(name, op.name);
    if (d <= std::max<size_t>(2, name.size() / 3))
      close.emplace_back(d, op.name);
  }
  std::sort(close.begin(), close.end());
  std::vector<std::string> names;
  for (size_t i = 0; i < close.size() && i < 5; ++i)
    names.push_back(close[i].second);
  throw UserError(fmt::format("error: no library op named '{}'{}; `unitile ops` lists them all",
                              name, names.empty() ? "" : " (did you mean " + join(names) + "?)"));
}

Attrs resolve_attrs(const OpDef& op, const Attrs& given) {
  Attrs out;
  for (const auto& [name, v] : given) {
    const AttrSpec* spec = find_attr_spec(op, name);
    if (!spec)
      unknown_attr(op, name);
    if (!kind_accepts(spec->kind, v))
      throw UserError(fmt::format("error: op:{}: attribute '{}' must be {} ({}), got {}", op.name,
                                  name, attr_kind_name(spec->kind), spec->doc,
                                  attr_value_text(v)));
    out[name] = coerce(spec->kind, v);
  }
  for (const AttrSpec& a : op.attrs)
    if (!out.count(a.name) && a.default_value)
      out[a.name] = coerce(a.kind, *a.default_value);
  return out;
}

AttrValue parse_attr_text(const OpDef& op, const std::string& name, const std::string& text) {
  const AttrSpec* spec = find_attr_spec(op, name);
  if (!spec)
    unknown_attr(op, name);
  auto bad = [&]() -> UserError {
    return UserError(fmt::format("error: op:{}: --attr {}={}: expected {} ({})", op.name, name,
                                 text, attr_kind_name(spec->kind), spec->doc));
  };
  if (spec->kind == AttrKind::String)
    return text;
  // JSON has no infinity; a float attribute may be `inf` (clip_grad_norm's norm_type).
  if (spec->kind == AttrKind::Float && (text == "inf" || text == "+inf" || text == "-inf"))
    return text == "-inf" ? -HUGE_VAL : HUGE_VAL;
  // Lists may be written bare (`0,2,1`) or as JSON (`[0, 2, 1]`).
  std::string json_text = text;
  if ((spec->kind == AttrKind::Ints || spec->kind == AttrKind::Floats) && !text.empty() &&
      text.front() != '[')
    json_text = "[" + text + "]";
  nlohmann::json j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    throw bad();
  auto as_int = [&](const nlohmann::json& x) -> int64_t {
    if (x.is_number_integer())
      return x.get<int64_t>();
    if (x.is_boolean())
      return x.get<bool>() ? 1 : 0;
    throw bad();
  };
  auto as_float = [&](const nlohmann::json& x) -> double {
    if (x.is_number())
      return x.get<double>();
    throw bad();
  };
  switch (spec->kind) {
  case AttrKind::Int:
    if (j.is_boolean())
      throw bad();
    return as_int(j);
  case AttrKind::Bool: {
    const int64_t v = as_int(j);
    if (v != 0 && v != 1)
      throw bad();
    return v;
  }
  case AttrKind::Float: return as_float(j);
  case AttrKind::Ints: {
    if (!j.is_array())
      throw bad();
    std::vector<int64_t> v;
    for (const auto& x : j)
      v.push_back(as_int(x));
    return v;
  }
  case AttrKind::Floats: {
    if (!j.is_array())
      throw bad();
    std::vector<double> v;
    for (const auto& x : j)
      v.push_back(as_float(x));
    return v;
  }
  case AttrKind::String: break;
  }
  throw bad();
}

std::vector<std::string> input_names(const OpDef& op, const std::vector<std::string>& present) {
  std::vector<std::string> names;
  for (const Port& p : op.inputs) {
    if (!p.variadic) {
      names.push_back(p.name);
      continue;
    }
    for (int i = 0;; ++i) {
      const std::string n = p.name + std::to_string(i);
      if (std::find(present.begin(), present.end(), n) == present.end())
        break;
      names.push_back(n);
    }
  }
  return names;
}

OpInstance instantiate(const OpDef& op, const std::map<std::string, TensorSpec>& inputs,
                       const Attrs& attrs) {
  std::vector<std::string> present;
  for (const auto& [name, t] : inputs)
    present.push_back(name);
  const std::vector<std::string> known = input_names(op, present);
  for (const std::string& name : present)
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::vector<std::string> ports;
      for (const Port& p : op.inputs)
        ports.push_back(p.variadic ? p.name + "0, " + p.name + "1, ..." : p.name);
      throw UserError(fmt::format("error: op:{}: no input named '{}' (inputs: {})", op.name, name,
                                  join(ports)));
    }
  for (const Port& p : op.inputs)
    if (!p.optional && !p.variadic && !inputs.count(p.name))
      throw UserError(fmt::format("error: op:{}: input '{}' is required", op.name, p.name));
  for (const auto& [name, t] : inputs)
    for (int64_t d : t.shape)
      if (d < 1)
        throw UserError(fmt::format("error: op:{}: input '{}' has shape {}: every dimension must "
                                    "be at least 1",
                                    op.name, name, shape_text(t.shape)));

  OpInstance inst;
  inst.op = &op;
  inst.attrs = resolve_attrs(op, attrs);
  for (const AttrSpec& a : op.attrs)
    if (!inst.attrs.count(a.name))
      throw UserError(fmt::format("error: op:{}: attribute '{}' is required ({})", op.name, a.name,
                                  a.doc));
  OpContext ctx(op, inputs, inst.attrs);
  op.emit(ctx);
  inst.text = ctx.text(op.name);
  inst.inputs = ctx.declared_inputs();
  inst.outputs = ctx.outputs();
  try {
    inst.module = parse_module(SourceFile{"op:" + op.name, inst.text});
  } catch (const UserError& e) {
    // The generator wrote text the verifier rejects: a bug in the op's definition (or a
    // case it should have refused with its own message), shown with the text.
    throw std::logic_error(fmt::format("op:{}: the generated kernel does not verify:\n{}\n{}",
                                       op.name, e.what(), inst.text));
  }
  return inst;
}

} // namespace unitile::ops
