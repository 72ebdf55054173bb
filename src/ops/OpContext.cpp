// OpContext: input and attribute access, checks, and the kernel text an op writes.
#include "ops/OpContext.h"

#include "ir/Diagnostic.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace unitile::ops {

OpDef make_op(std::string name, std::string category, std::string summary, std::vector<Port> inputs,
              std::vector<Port> outputs, std::vector<AttrSpec> attrs, std::function<void(OpContext&)> emit) {
  OpDef op;
  op.name = std::move(name);
  op.category = std::move(category);
  op.summary = std::move(summary);
  op.inputs = std::move(inputs);
  op.outputs = std::move(outputs);
  op.attrs = std::move(attrs);
  op.emit = std::move(emit);
  return op;
}

std::string attr_kind_name(AttrKind k) {
  switch (k) {
  case AttrKind::Int: return "int";
  case AttrKind::Bool: return "bool";
  case AttrKind::Float: return "float";
  case AttrKind::String: return "string";
  case AttrKind::Ints: return "ints";
  case AttrKind::Floats: return "floats";
  }
  return "?";
}

std::string attr_value_text(const AttrValue& v) {
  struct Visitor {
    std::string operator()(int64_t x) const { return std::to_string(x); }
    std::string operator()(double x) const { return fmt::format("{}", x); }
    std::string operator()(const std::string& s) const { return s; }
    std::string operator()(const std::vector<int64_t>& xs) const {
      std::vector<std::string> parts;
      for (int64_t x : xs)
        parts.push_back(std::to_string(x));
      return "[" + join(parts, ",") + "]";
    }
    std::string operator()(const std::vector<double>& xs) const {
      std::vector<std::string> parts;
      for (double x : xs)
        parts.push_back(fmt::format("{}", x));
      return "[" + join(parts, ",") + "]";
    }
  };
  return std::visit(Visitor{}, v);
}

OpContext::OpContext(const OpDef& op, std::map<std::string, TensorSpec> inputs, Attrs attrs)
    : op_(op), inputs_(std::move(inputs)), attrs_(std::move(attrs)) {}

void OpContext::fail_text(const std::string& message) const {
  throw UserError(fmt::format("error: op:{}: {}", op_.name, message));
}

const TensorSpec& OpContext::in(const std::string& port) const {
  auto it = inputs_.find(port);
  if (it == inputs_.end())
    fail("input '{}' is required", port);
  return it->second;
}

std::vector<std::string> OpContext::variadic(const std::string& port) const {
  std::vector<std::string> names;
  for (int i = 0; inputs_.count(port + std::to_string(i)); ++i)
    names.push_back(port + std::to_string(i));
  if (names.empty())
    fail("input '{}' takes one or more tensors, given as {}0, {}1, ...", port, port, port);
  return names;
}

namespace {
const AttrValue& find_attr(const OpContext& ctx, const Attrs& attrs, const std::string& name) {
  auto it = attrs.find(name);
  if (it == attrs.end())
    ctx.fail("attribute '{}' is required", name);
  return it->second;
}
} // namespace

int64_t OpContext::attr_int(const std::string& name) const {
  const AttrValue& v = find_attr(*this, attrs_, name);
  if (auto p = std::get_if<int64_t>(&v))
    return *p;
  fail("attribute '{}' must be an integer, got {}", name, attr_value_text(v));
}

double OpContext::attr_float(const std::string& name) const {
  const AttrValue& v = find_attr(*this, attrs_, name);
  if (auto p = std::get_if<double>(&v))
    return *p;
  if (auto p = std::get_if<int64_t>(&v))
    return static_cast<double>(*p);
  fail("attribute '{}' must be a number, got {}", name, attr_value_text(v));
}

std::string OpContext::attr_string(const std::string& name) const {
  const AttrValue& v = find_attr(*this, attrs_, name);
  if (auto p = std::get_if<std::string>(&v))
    return *p;
  fail("attribute '{}' must be a string, got {}", name, attr_value_text(v));
}

std::vector<int64_t> OpContext::attr_ints(const std::string& name) const {
  const AttrValue& v = find_attr(*this, attrs_, name);
  if (auto p = std::get_if<std::vector<int64_t>>(&v))
    return *p;
  if (auto p = std::get_if<int64_t>(&v))
    return {*p};
  fail("attribute '{}' must be a list of integers, got {}", name, attr_value_text(v));
}

std::vector<double> OpContext::attr_floats(const std::string& name) const {
  const AttrValue& v = find_attr(*this, attrs_, name);
  if (auto p = std::get_if<std::vector<double>>(&v))
    return *p;
  if (auto p = std::get_if<std::vector<int64_t>>(&v))
    return {p->begin(), p->end()};
  if (auto p = std::get_if<double>(&v))
    return {*p};
  fail("attribute '{}' must be a list of numbers, got {}", name, attr_value_text(v));
}

int64_t OpContext::axis(int64_t a, int64_t rank, const std::string& what) const {
  const int64_t lo = rank == 0 ? -1 : -rank, hi = rank == 0 ? 0 : rank - 1;
  if (a < lo || a > hi)
    fail("{} {} is out of range for a tensor of rank {} (allowed {}..{})", what, a, rank, lo, hi);
  return a < 0 ? a + std::max<int64_t>(rank, 1) : a;
}

std::vector<int64_t> OpContext::axes(const std::vector<int64_t>& given, int64_t rank,
                                     bool empty_means_all) const {
  std::set<int64_t> out;
  if (given.empty() && empty_means_all)
    for (int64_t a = 0; a < rank; ++a)
      out.insert(a);
  for (int64_t a : given) {
    const int64_t n = axis(a, rank, "axis");
    if (!out.insert(n).second)
      fail("axis {} is given twice", a);
  }
  return {out.begin(), out.end()};
}

void OpContext::require_float(const std::string& port) const {
  const TensorSpec& t = in(port);
  if (!is_float(t.dtype))
    fail("input '{}' must be a floating-point tensor (f16, bf16, f32, f64), got {}", port,
         dtype_text(t.dtype));
}

void OpContext::require_integer(const std::string& port) const {
  const TensorSpec& t = in(port);
  if (!is_integer(t.dtype))
    fail("input '{}' must be an integer tensor, got {}", port, dtype_text(t.dtype));
}

void OpContext::require_dtype_in(const std::string& port, const std::vector<DType>& allowed) const {
  const TensorSpec& t = in(port);
  if (std::find(allowed.begin(), allowed.end(), t.dtype) != allowed.end())
    return;
  std::vector<std::string> names;
  for (DType d : allowed)
    names.push_back(dtype_text(d));
  fail("input '{}' must have dtype {}, got {}", port, join(names, " or "), dtype_text(t.dtype));
}

void OpContext::require_same_dtype(const std::vector<std::string>& ports) const {
  const std::string* first = nullptr;
  for (const std::string& p : ports) {
    if (!has(p))
      continue;
    if (!first) {
      first = &p;
      continue;
    }
    if (in(p).dtype != in(*first).dtype)
      fail("inputs '{}' ({}) and '{}' ({}) must have the same dtype", *first,
           dtype_text(in(*first).dtype), p, dtype_text(in(p).dtype));
  }
}

void OpContext::require_rank(const std::string& port, int64_t rank) const {
  const TensorSpec& t = in(port);
  if (static_cast<int64_t>(t.shape.size()) != rank)
    fail("input '{}' must have rank {}, got shape {}", port, rank, shape_text(t.shape));
}

void OpContext::require_rank_at_least(const std::string& port, int64_t rank) const {
  const TensorSpec& t = in(port);
  if (static_cast<int64_t>(t.shape.size()) < rank)
    fail("input '{}' must have rank {} or more, got shape {}", port, rank, shape_text(t.shape));
}

void OpContext::input(const std::string& port) {
  (void)in(port);
  if (std::find(input_order_.begin(), input_order_.end(), port) == input_order_.end())
    input_order_.push_back(port);
}

void OpContext::output(const std::string& port, DType dtype, const std::vector<int64_t>& shape) {
  for (int64_t d : shape)
    if (d < 1)
      fail("output '{}' would have shape {}: every dimension must be at least 1", port,
           shape_text(shape));
  outputs_.emplace_back(port, TensorSpec{dtype, shape});
}

void OpContext::local(const std::string& name, DType dtype, const std::vector<int64_t>& shape) {
  locals_.emplace_back(name, TensorSpec{dtype, shape});
}

void OpContext::stmt(const std::string& text) { stmts_.push_back(text); }

std::string OpContext::text(const std::string& kernel_name) const {
  auto decls = [&](const std::vector<std::pair<std::string, TensorSpec>>& ts) {
    std::vector<std::string> parts;
    for (const auto& [name, t] : ts) {
      std::vector<std::string> dims;
      for (int64_t d : t.shape)
        dims.push_back(std::to_string(d));
      parts.push_back(fmt::format("{}[{}] {}", dtype_text(t.dtype), join(dims), name));
    }
    return join(parts);
  };
  std::vector<std::pair<std::string, TensorSpec>> ins;
  for (const std::string& p : input_order_)
    ins.emplace_back(p, inputs_.at(p));
  std::string s = fmt::format("kernel {} {{\n", kernel_name);
  if (!ins.empty())
    s += "  input: " + decls(ins) + "\n";
  s += "  output: " + decls(outputs_) + "\n";
  if (!locals_.empty())
    s += "  local: " + decls(locals_) + "\n";
  s += "  operation:\n";
  for (const std::string& st : stmts_)
    s += "    " + st + "\n";
  s += "}\n";
  return s;
}

std::string index_list(int64_t rank, const std::string& prefix) {
  return join(index_names(rank, prefix));
}

std::vector<std::string> index_names(int64_t rank, const std::string& prefix) {
  std::vector<std::string> v;
  for (int64_t i = 0; i < rank; ++i)
    v.push_back(prefix + std::to_string(i));
  return v;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i)
    s += (i ? sep : "") + parts[i];
  return s;
}

std::string access(const std::string& tensor, const std::vector<std::string>& indices) {
  return tensor + "[" + join(indices) + "]";
}

std::string float_literal(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v > 0 ? "inf" : "(-inf)";
  std::string s = fmt::format("{:.17g}", v);
  if (s.find_first_of(".eEn") == std::string::npos)
    s += ".0";
  return v < 0 ? "(" + s + ")" : s;
}

std::string dtype_text(DType t) { return std::string(dtype_name(t)); }

std::string shape_text(const std::vector<int64_t>& shape) {
  std::vector<std::string> dims;
  for (int64_t d : shape)
    dims.push_back(std::to_string(d));
  return "[" + join(dims) + "]";
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::vector<int64_t> broadcast_shapes(const OpContext& ctx,
                                      const std::vector<std::pair<std::string, TensorSpec>>& ins) {
  size_t rank = 0;
  for (const auto& [name, t] : ins)
    rank = std::max(rank, t.shape.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& [name, t] : ins) {
    const size_t off = rank - t.shape.size();
    for (size_t d = 0; d < t.shape.size(); ++d) {
      int64_t& o = out[off + d];
      const int64_t s = t.shape[d];
      if (s == o || s == 1)
        continue;
      if (o == 1) {
        o = s;
        continue;
      }
      std::vector<std::string> parts;
      for (const auto& [n2, t2] : ins)
        parts.push_back(fmt::format("'{}' {}", n2, shape_text(t2.shape)));
      ctx.fail("shapes do not broadcast: {} (dimension {} from the right is {} in one and {} in "
               "another)",
               join(parts), rank - off - d, o, s);
    }
  }
  return out;
}

std::vector<std::string> broadcast_indices(const TensorSpec& in, int64_t out_rank,
                                           const std::vector<int64_t>& out_shape,
                                           const std::string& prefix) {
  std::vector<std::string> idx;
  const int64_t off = out_rank - static_cast<int64_t>(in.shape.size());
  for (size_t d = 0; d < in.shape.size(); ++d) {
    const int64_t od = off + static_cast<int64_t>(d);
    idx.push_back(in.shape[d] == 1 && out_shape[od] != 1 ? "0" : prefix + std::to_string(od));
  }
  return idx;
}

} // namespace unitile::ops
