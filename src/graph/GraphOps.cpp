// The graph's own ops (see GraphOps.h): each writes one instance's Kernel IR through
// OpContext, exactly as a library op does, so retiring one means deleting its row.
#include "graph/GraphOps.h"

#include "graph/GradientOps.h"
#include "ops/OpContext.h"

#include <algorithm>

namespace unitile::graph {

namespace {

using ops::AttrKind;
using ops::AttrSpec;
using ops::AttrValue;
using ops::OpContext;
using ops::OpDef;
using ops::Port;
using ops::TensorSpec;

// Y = X with its dimensions permuted: Y.shape[d] = X.shape[perm[d]]; no perm reverses.
void emit_transpose(OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> perm = ctx.attr_ints("perm");
  if (perm.empty())
    for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
  if (static_cast<int64_t>(perm.size()) != rank) ctx.fail("perm has {} entries for a rank-{} tensor", perm.size(), rank);
  std::vector<std::string> x_idx(static_cast<size_t>(rank));
  std::vector<int64_t> shape;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t p = ctx.axis(perm[static_cast<size_t>(d)], rank, "perm entry");
    if (seen[static_cast<size_t>(p)]) ctx.fail("perm names axis {} twice", p);
    seen[static_cast<size_t>(p)] = true;
    x_idx[static_cast<size_t>(p)] = "i" + std::to_string(d);
    shape.push_back(x.shape[static_cast<size_t>(p)]);
  }
  ctx.input("X");
  ctx.output("Y", x.dtype, shape);
  ctx.stmt(ops::access("Y", ops::index_names(rank)) + " = " + ops::access("X", x_idx));
}

// The same elements in C order under another shape (one extent may be -1: inferred).
void emit_reshape(OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  std::vector<int64_t> shape = ctx.attr_ints("shape");
  const int64_t n = ops::numel(x.shape);
  int64_t known = 1, inferred = -1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1) {
      if (inferred >= 0) ctx.fail("only one extent of the new shape may be -1");
      inferred = static_cast<int64_t>(d);
    } else if (shape[d] < 1) {
      ctx.fail("the new shape {} has an extent below 1", ops::shape_text(shape));
    } else {
      known *= shape[d];
    }
  }
  if (inferred >= 0 && known > 0 && n % known == 0) shape[static_cast<size_t>(inferred)] = n / known;
  if (ops::numel(shape) != n || (inferred >= 0 && n % known != 0))
    ctx.fail("cannot reshape {} ({} elements) to {}", ops::shape_text(x.shape), n, ops::shape_text(ctx.attr_ints("shape")));
  const int64_t rank = static_cast<int64_t>(shape.size());
  const std::vector<std::string> y_idx = ops::index_names(rank);
  // flat = the output element's C-order position, then split by the input's strides.
  std::vector<std::string> terms;
  int64_t stride = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (shape[static_cast<size_t>(d)] != 1)
      terms.insert(terms.begin(), stride == 1 ? y_idx[static_cast<size_t>(d)]
                                              : y_idx[static_cast<size_t>(d)] + "*" + std::to_string(stride));
    stride *= shape[static_cast<size_t>(d)];
  }
  const std::string flat = terms.empty() ? "0" : "(" + ops::join(terms, " + ") + ")";
  std::vector<std::string> x_idx(x.shape.size());
  int64_t xs = 1;
  for (size_t d = x.shape.size(); d-- > 0;) {
    std::string e = xs == 1 ? flat : flat + "//" + std::to_string(xs);
    if (d > 0) e = "(" + e + ")%" + std::to_string(x.shape[d]);
    x_idx[d] = x.shape[d] == 1 ? "0" : e;
    xs *= x.shape[d];
  }
  ctx.input("X");
  ctx.output("Y", x.dtype, shape);
  ctx.stmt(ops::access("Y", y_idx) + " = " + ops::access("X", x_idx));
}

// Basic indexing: per input dimension a start, a step and the number of elements taken;
// dimensions listed in `squeeze` take one element and are dropped (an integer index).
void emit_slice(OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  const size_t rank = x.shape.size();
  const std::vector<int64_t> starts = ctx.attr_ints("starts"), steps = ctx.attr_ints("steps"),
                             sizes = ctx.attr_ints("sizes"), squeeze = ctx.attr_ints("squeeze");
  if (starts.size() != rank || steps.size() != rank || sizes.size() != rank)
    ctx.fail("starts, steps and sizes need one entry per dimension ({})", rank);
  std::vector<std::string> x_idx, y_idx;
  std::vector<int64_t> shape;
  for (size_t d = 0; d < rank; ++d) {
    const bool drop = std::find(squeeze.begin(), squeeze.end(), static_cast<int64_t>(d)) != squeeze.end();
    if (sizes[d] < 1) ctx.fail("dimension {} of the slice is empty; empty tensors are not supported", d);
    const int64_t last = starts[d] + (sizes[d] - 1) * steps[d];
    if (starts[d] < 0 || starts[d] >= x.shape[d] || last < 0 || last >= x.shape[d])
      ctx.fail("index {} out of range for dimension {} of extent {}", starts[d] < 0 || starts[d] >= x.shape[d] ? starts[d] : last, d, x.shape[d]);
    if (drop) {
      x_idx.push_back(std::to_string(starts[d]));
      continue;
    }
    const std::string i = "i" + std::to_string(y_idx.size());
    std::string e = steps[d] == 1 ? i : i + "*" + std::to_string(steps[d]);
    // A bare `i` would tie Y's extent to X's: a prefix of a longer axis reads X[0 + i].
    if (starts[d] != 0 || (steps[d] == 1 && sizes[d] != x.shape[d]))
      e = std::to_string(starts[d]) + " + " + e;
    x_idx.push_back(e);
    y_idx.push_back(i);
    shape.push_back(sizes[d]);
  }
  ctx.input("X");
  ctx.output("Y", x.dtype, shape);
  ctx.stmt(ops::access("Y", y_idx) + " = " + ops::access("X", x_idx));
}

DType dtype_attr(const OpContext& ctx) {
  const std::string name = ctx.attr_string("dtype");
  auto t = parse_dtype(name);
  if (!t) ctx.fail("unknown dtype '{}'", name);
  return *t;
}

void emit_cast(OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  const DType to = dtype_attr(ctx);
  const std::vector<std::string> idx = ops::index_names(static_cast<int64_t>(x.shape.size()));
  const std::string X = ops::access("X", idx);
  ctx.input("X");
  ctx.output("Y", to, x.shape);
  const std::string value = to == DType::Bool ? X + " != 0" : x.dtype == to ? X : ops::dtype_text(to) + "(" + X + ")";
  ctx.stmt(ops::access("Y", idx) + " = " + (x.dtype == DType::Bool && to == DType::Bool ? X : value));
}

void emit_constant(OpContext& ctx) {
  const DType t = dtype_attr(ctx);
  const double v = ctx.attr_float("value");
  std::string literal;
  if (t == DType::Bool)
    literal = v != 0 ? "true" : "false";
  else if (is_integer(t))
    literal = std::to_string(static_cast<int64_t>(v));
  else
    literal = ops::dtype_text(t) + "(" + ops::float_literal(v) + ")";
  ctx.output("Y", t, {});
  ctx.stmt("Y[] = " + literal);
}

// The values from..to-1 as one expression of the position i: a balanced tree of selects,
// so a table of n entries nests only log2(n) deep.
std::string select_tree(const std::vector<int64_t>& values, size_t from, size_t to) {
  if (to - from == 1)
    return "i64(" + std::to_string(values[from]) + ")";
  const size_t mid = from + (to - from) / 2;
  return "(i0 < " + std::to_string(mid) + " ? " + select_tree(values, from, mid) + " : " +
         select_tree(values, mid, to) + ")";
}

// A 1-D i64 table of literal integers: the index arrays Python writes in a traced
// function (x[[0, 2, 1]]), which have no tensor input to come from.
void emit_index_constant(OpContext& ctx) {
  const std::vector<int64_t> values = ctx.attr_ints("values");
  if (values.empty())
    ctx.fail("values is empty: tensors have no zero-sized dimensions");
  ctx.output("Y", DType::I64, {static_cast<int64_t>(values.size())});
  ctx.stmt("Y[i0] = " + select_tree(values, 0, values.size()));
}

void emit_copy(OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  const std::vector<std::string> idx = ops::index_names(static_cast<int64_t>(x.shape.size()));
  ctx.input("X");
  ctx.output("Y", x.dtype, x.shape);
  ctx.stmt(ops::access("Y", idx) + " = " + ops::access("X", idx));
}

AttrSpec ints(const char* name, const char* doc) { return {name, AttrKind::Ints, AttrValue{std::vector<int64_t>{}}, doc}; }

std::vector<OpDef> build() {
  std::vector<OpDef> v;
  v.push_back({"cast", "elementwise", "Y = X converted to dtype", {{"X"}}, {{"Y"}},
               {{"dtype", AttrKind::String, std::nullopt, "the target dtype (f32, i64, bool, ...)"}}, "", emit_cast});
  v.push_back({"constant", "creation", "a rank-0 tensor holding value", {}, {{"Y"}},
               {{"value", AttrKind::Float, std::nullopt, "the value"},
                {"dtype", AttrKind::String, AttrValue{std::string("f32")}, "its dtype"}},
               "", emit_constant});
  v.push_back({"index_constant",
               "creation",
               "a 1-D i64 tensor holding the listed integers",
               {},
               {{"Y"}},
               {{"values", AttrKind::Ints, std::nullopt, "the integers, in order"}},
               "",
               emit_index_constant});
  v.push_back({"copy", "data movement", "Y = X", {{"X"}}, {{"Y"}}, {}, "", emit_copy});
  v.push_back({"reshape", "data movement", "the elements of X in C order under a new shape", {{"X"}}, {{"Y"}},
               {{"shape", AttrKind::Ints, std::nullopt, "the new shape; one extent may be -1"}}, "reshape_grad", emit_reshape});
  v.push_back({"slice", "data movement", "basic indexing: start, step and size per dimension", {{"X"}}, {{"Y"}},
               {ints("starts", "first index per dimension"), ints("steps", "step per dimension"),
                ints("sizes", "elements taken per dimension"), ints("squeeze", "dimensions indexed by an integer")},
               "slice_grad", emit_slice});
  v.push_back({"transpose", "data movement", "X with its axes permuted", {{"X"}}, {{"Y"}},
               {ints("perm", "Y's axis d is X's axis perm[d]; empty reverses the axes")}, "", emit_transpose});
  for (OpDef& op : gradient_graph_ops()) v.push_back(std::move(op));
  std::sort(v.begin(), v.end(), [](const OpDef& a, const OpDef& b) { return a.name < b.name; });
  return v;
}

} // namespace

const std::vector<OpDef>& graph_ops() {
  static const std::vector<OpDef> ops = build();
  return ops;
}

const OpDef* find_graph_op(std::string_view name) {
  for (const OpDef& op : graph_ops())
    if (op.name == name) return &op;
  return nullptr;
}

} // namespace unitile::graph
