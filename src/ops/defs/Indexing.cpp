// Indexing ops, which read or write at positions held in an index tensor: gather,
// gather_elements, gather_nd, index_select, embedding, scatter_elements, scatter_nd,
// one_hot and topk, with the backward ops of the gathers and of topk (a scatter-add of
// dY) and of the scatters with reduction none or add (dX is dY, with the overwritten
// positions zeroed under none; dU is dY gathered where each update went).
//
// Index inputs are any integer dtype; a negative index counts from the end of its axis
// (ONNX), written into the read as `(I < 0 ? I + n : I)`. An index outside [-n, n) is
// the device's business (docs/ARCHITECTURE.md, "indirect indexing"): sim reports it as a
// run-time error, cpu clamps a read to the edge and skips a write; the tests use only
// in-range indices.
#include "ops/OpContext.h"
#include "ops/defs/Families.h"

#include <algorithm>
#include <cstdint>

namespace unitile::ops {
namespace {

int64_t rank_of(const TensorSpec& t) { return static_cast<int64_t>(t.shape.size()); }

// An index read, with negative values counted from the end of an axis of extent n.
std::string from_end(const std::string& read, int64_t n) {
  return "(" + read + " < 0 ? " + read + " + " + std::to_string(n) + " : " + read + ")";
}

std::vector<std::string> names_range(int64_t from, int64_t to, const std::string& prefix = "i") {
  std::vector<std::string> v;
  for (int64_t d = from; d < to; ++d)
    v.push_back(prefix + std::to_string(d));
  return v;
}

template <typename T> std::vector<T> concat_vec(std::vector<T> a, const std::vector<T>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<int64_t> slice_of(const std::vector<int64_t>& v, int64_t from, int64_t to) {
  return {v.begin() + from, v.begin() + to};
}

// `dX[...] = 0` over the whole tensor (before a scatter-add), with its own index names.
void zero_fill(OpContext& ctx, const std::string& name, const TensorSpec& t) {
  ctx.stmt(access(name, index_names(rank_of(t), "k")) + " = 0");
}

// --- gather / index_select / embedding -------------------------------------------------------

// Y = data[..., Idx[...], ...] along `axis`: Y's indices are data's before the axis,
// Idx's, then data's after.
struct GatherShape {
  int64_t axis;
  std::vector<int64_t> out_shape;
  std::vector<std::string> data_idx; // data's indices in Y's nest
};

GatherShape gather_shape(const OpContext& ctx, const std::string& data, const std::string& idx,
                         int64_t axis_attr) {
  const TensorSpec& x = ctx.in(data);
  const TensorSpec& ix = ctx.in(idx);
  ctx.require_integer(idx);
  if (rank_of(x) == 0)
    ctx.fail("input '{}' is a scalar: it needs rank 1 or more", data);
  GatherShape g;
  g.axis = ctx.axis(axis_attr, rank_of(x));
  const int64_t q = rank_of(ix);
  g.out_shape = concat_vec(concat_vec(slice_of(x.shape, 0, g.axis), ix.shape),
                           slice_of(x.shape, g.axis + 1, rank_of(x)));
  g.data_idx = names_range(0, g.axis);
  g.data_idx.push_back(
      from_end(access(idx, names_range(g.axis, g.axis + q)), x.shape[g.axis]));
  for (const std::string& s : names_range(g.axis + q, static_cast<int64_t>(g.out_shape.size())))
    g.data_idx.push_back(s);
  return g;
}

void emit_gather(OpContext& ctx, const std::string& data, const std::string& idx, int64_t axis) {
  const GatherShape g = gather_shape(ctx, data, idx, axis);
  ctx.input(data);
  ctx.input(idx);
  ctx.output("Y", ctx.in(data).dtype, g.out_shape);
  ctx.stmt(access("Y", index_names(static_cast<int64_t>(g.out_shape.size()))) + " = " +
           access(data, g.data_idx));
}

void require_dy(OpContext& ctx, const std::string& data, const std::vector<int64_t>& shape) {
  ctx.require_float(data);
  ctx.require_same_dtype({data, "dY"});
  if (ctx.in("dY").shape != shape)
    ctx.fail("dY has shape {} but the forward op's output has shape {}",
             shape_text(ctx.in("dY").shape), shape_text(shape));
}

// d(data) = 0, then dY scatter-added where each element was read (repeated indices sum).
void emit_gather_grad(OpContext& ctx, const std::string& data, const std::string& idx,
                      int64_t axis, const std::string& grad) {
  const GatherShape g = gather_shape(ctx, data, idx, axis);
  require_dy(ctx, data, g.out_shape);
  ctx.input(data);
  ctx.input(idx);
  ctx.input("dY");
  ctx.output(grad, ctx.in(data).dtype, ctx.in(data).shape);
  zero_fill(ctx, grad, ctx.in(data));
  ctx.stmt(access(grad, g.data_idx) +
           " += " + access("dY", index_names(static_cast<int64_t>(g.out_shape.size()))));
}

void require_index_rank(const OpContext& ctx, const std::string& idx, int64_t rank) {
  if (rank_of(ctx.in(idx)) != rank)
    ctx.fail("input '{}' must have rank {}, got shape {}", idx, rank,
             shape_text(ctx.in(idx).shape));
}

// --- gather_elements / scatter_elements ------------------------------------------------------

// Idx has X's rank and, off the axis, extents no larger than X's. The coordinates of
// X's element for Idx's element i: i itself off the axis, Idx[i] on it. Where an extent
// differs from X's, a bare `i<d>` would tie the two extents: a read uses `0 + i<d>`, a
// scatter's left-hand side (which allows only bare variables and tensor reads) an i64
// table pos<d>[j] = j.
std::vector<std::string> element_coords(OpContext& ctx, const std::string& data,
                                        const std::string& idx, int64_t axis, bool for_store) {
  const TensorSpec& x = ctx.in(data);
  const TensorSpec& ix = ctx.in(idx);
  const std::vector<std::string> i = index_names(rank_of(ix));
  std::vector<std::string> c;
  for (int64_t d = 0; d < rank_of(x); ++d) {
    if (d == axis) {
      c.push_back(from_end(access(idx, i), x.shape[d]));
    } else if (ix.shape[d] == x.shape[d]) {
      c.push_back(i[d]);
    } else if (!for_store) {
      c.push_back("0 + " + i[d]);
    } else {
      const std::string table = "pos" + std::to_string(d);
      ctx.local(table, DType::I64, {ix.shape[d]});
      ctx.stmt(table + "[j] = j");
      c.push_back(table + "[" + i[d] + "]");
    }
  }
  return c;
}

int64_t elements_axis(const OpContext& ctx, const std::string& data, const std::string& idx) {
  ctx.require_integer(idx);
  const TensorSpec& x = ctx.in(data);
  const TensorSpec& ix = ctx.in(idx);
  if (rank_of(x) == 0)
    ctx.fail("input '{}' is a scalar: it needs rank 1 or more", data);
  const int64_t axis = ctx.axis(ctx.attr_int("axis"), rank_of(x));
  bool ok = rank_of(ix) == rank_of(x);
  for (int64_t d = 0; ok && d < rank_of(x); ++d)
    ok = d == axis || ix.shape[d] <= x.shape[d];
  if (!ok)
    ctx.fail("'{}' has shape {} but '{}' has {}: the same rank, and off axis {} no larger", idx,
             shape_text(ix.shape), data, shape_text(x.shape), axis);
  return axis;
}

void emit_gather_elements(OpContext& ctx) {
  const int64_t axis = elements_axis(ctx, "X", "Idx");
  ctx.input("X");
  ctx.input("Idx");
  const TensorSpec& ix = ctx.in("Idx");
  ctx.output("Y", ctx.in("X").dtype, ix.shape);
  const std::vector<std::string> c = element_coords(ctx, "X", "Idx", axis, false);
  ctx.stmt(access("Y", index_names(rank_of(ix))) + " = " + access("X", c));
}

void emit_gather_elements_grad(OpContext& ctx) {
  const int64_t axis = elements_axis(ctx, "X", "Idx");
  require_dy(ctx, "X", ctx.in("Idx").shape);
  for (const char* p : {"X", "Idx", "dY"})
    ctx.input(p);
  ctx.output("dX", ctx.in("X").dtype, ctx.in("X").shape);
  zero_fill(ctx, "dX", ctx.in("X"));
  const std::vector<std::string> c = element_coords(ctx, "X", "Idx", axis, true);
  ctx.stmt(access("dX", c) + " += " + access("dY", index_names(rank_of(ctx.in("Idx")))));
}

// The update operator of a scatter's `reduction` attribute.
std::string scatter_operator(const OpContext& ctx, DType t) {
  const std::string r = ctx.attr_string("reduction");
  if (r == "none")
    return " = ";
  if (t == DType::Bool)
    ctx.fail("reduction '{}' needs a numeric X, got bool", r);
  if (r == "add")
    return " += ";
  if (r == "mul")
    return " *= ";
  if (r == "max")
    return " max= ";
  if (r == "min")
    return " min= ";
  ctx.fail("reduction '{}' is not one of none, add, mul, max, min", r);
}

void require_updates(const OpContext& ctx, const std::vector<int64_t>& shape) {
  ctx.require_same_dtype({"X", "U"});
  if (ctx.in("U").shape != shape)
    ctx.fail("updates 'U' have shape {} but must have shape {}", shape_text(ctx.in("U").shape),
             shape_text(shape));
}

// Y = X, then U written (or combined) at the positions Idx names. With reduction none
// and a repeated index the last update in row-major order wins.
void emit_scatter_elements(OpContext& ctx) {
  const int64_t axis = elements_axis(ctx, "X", "Idx");
  const TensorSpec& x = ctx.in("X");
  require_updates(ctx, ctx.in("Idx").shape);
  const std::string op = scatter_operator(ctx, x.dtype);
  for (const char* p : {"X", "Idx", "U"})
    ctx.input(p);
  ctx.output("Y", x.dtype, x.shape);
  ctx.stmt(access("Y", index_names(rank_of(x), "k")) + " = " +
           access("X", index_names(rank_of(x), "k")));
  const std::vector<std::string> c = element_coords(ctx, "X", "Idx", axis, true);
  ctx.stmt(access("Y", c) + op + access("U", index_names(rank_of(ctx.in("Idx")))));
}

// Scatters have a gradient for reduction none and add, as in PyTorch's scatter and
// scatter_add: dX = dY, zero where an update overwrote X (none); dU = dY read where each
// update went (with repeated positions under none, every one of them gets that dY, as
// PyTorch gives). mul, max and min have none here.
bool scatter_overwrites(const OpContext& ctx) {
  const std::string r = ctx.attr_string("reduction");
  if (r != "none" && r != "add")
    ctx.fail("reduction '{}' has no gradient op here (only none and add do)", r);
  return r == "none";
}

void require_scatter_dy(const OpContext& ctx) {
  ctx.require_float("X");
  ctx.require_same_dtype({"X", "dY"});
  if (ctx.in("dY").shape != ctx.in("X").shape)
    ctx.fail("dY has shape {} but the forward op's output (X's shape) is {}",
             shape_text(ctx.in("dY").shape), shape_text(ctx.in("X").shape));
}

void emit_scatter_elements_grad(OpContext& ctx) {
  const int64_t axis = elements_axis(ctx, "X", "Idx");
  const TensorSpec& x = ctx.in("X");
  require_updates(ctx, ctx.in("Idx").shape);
  require_scatter_dy(ctx);
  const bool overwrites = scatter_overwrites(ctx);
  for (const char* p : {"X", "Idx", "U", "dY"})
    ctx.input(p);
  ctx.output("dX", x.dtype, x.shape);
  ctx.output("dU", x.dtype, ctx.in("U").shape);
  const std::vector<std::string> k = index_names(rank_of(x), "k");
  ctx.stmt(access("dX", k) + " = " + access("dY", k));
  if (overwrites)
    ctx.stmt(access("dX", element_coords(ctx, "X", "Idx", axis, true)) + " = 0");
  ctx.stmt(access("dU", index_names(rank_of(ctx.in("Idx")))) + " = " +
           access("dY", element_coords(ctx, "X", "Idx", axis, false)));
}

// --- gather_nd / scatter_nd ---------------------------------------------------------------

// Idx[..., m] holds m coordinates into data's axes b .. b+m-1 (after b batch axes that
// Idx and data share). The result's indices are Idx's but the last, then data's after
// the indexed axes.
struct NdShape {
  std::vector<int64_t> out_shape;
  std::vector<std::string> data_idx;
};

NdShape nd_shape(const OpContext& ctx, const std::string& data, int64_t batch) {
  ctx.require_integer("Idx");
  const TensorSpec& x = ctx.in(data);
  const TensorSpec& ix = ctx.in("Idx");
  const int64_t q = rank_of(ix), r = rank_of(x);
  if (q < 1)
    ctx.fail("input 'Idx' must have rank 1 or more (its last axis holds coordinates)");
  const int64_t m = ix.shape[q - 1];
  if (batch < 0 || batch >= q || batch > r)
    ctx.fail("batch_dims {} must be at least 0 and below Idx's rank {}", batch, q);
  if (slice_of(ix.shape, 0, batch) != slice_of(x.shape, 0, batch))
    ctx.fail("the first {} (batch) dimensions of Idx {} and {} {} differ", batch,
             shape_text(ix.shape), data, shape_text(x.shape));
  if (m > r - batch)
    ctx.fail("Idx's last dimension is {} coordinates, but {} {} has only {} axes after {} batch "
             "axes",
             m, data, shape_text(x.shape), r - batch, batch);
  NdShape s;
  s.out_shape = concat_vec(slice_of(ix.shape, 0, q - 1), slice_of(x.shape, batch + m, r));
  const std::vector<std::string> lead = names_range(0, q - 1);
  s.data_idx = names_range(0, batch);
  for (int64_t k = 0; k < m; ++k)
    s.data_idx.push_back(
        from_end(access("Idx", concat_vec(lead, {std::to_string(k)})), x.shape[batch + k]));
  for (const std::string& v : names_range(q - 1, static_cast<int64_t>(s.out_shape.size())))
    s.data_idx.push_back(v);
  return s;
}

void emit_gather_nd(OpContext& ctx) {
  const NdShape s = nd_shape(ctx, "X", ctx.attr_int("batch_dims"));
  ctx.input("X");
  ctx.input("Idx");
  ctx.output("Y", ctx.in("X").dtype, s.out_shape);
  ctx.stmt(access("Y", index_names(static_cast<int64_t>(s.out_shape.size()))) + " = " +
           access("X", s.data_idx));
}

void emit_gather_nd_grad(OpContext& ctx) {
  const NdShape s = nd_shape(ctx, "X", ctx.attr_int("batch_dims"));
  require_dy(ctx, "X", s.out_shape);
  for (const char* p : {"X", "Idx", "dY"})
    ctx.input(p);
  ctx.output("dX", ctx.in("X").dtype, ctx.in("X").shape);
  zero_fill(ctx, "dX", ctx.in("X"));
  ctx.stmt(access("dX", s.data_idx) +
           " += " + access("dY", index_names(static_cast<int64_t>(s.out_shape.size()))));
}

void emit_scatter_nd(OpContext& ctx) {
  const NdShape s = nd_shape(ctx, "X", 0);
  const TensorSpec& x = ctx.in("X");
  require_updates(ctx, s.out_shape);
  const std::string op = scatter_operator(ctx, x.dtype);
  for (const char* p : {"X", "Idx", "U"})
    ctx.input(p);
  ctx.output("Y", x.dtype, x.shape);
  ctx.stmt(access("Y", index_names(rank_of(x), "k")) + " = " +
           access("X", index_names(rank_of(x), "k")));
  ctx.stmt(access("Y", s.data_idx) + op +
           access("U", index_names(static_cast<int64_t>(s.out_shape.size()))));
}

void emit_scatter_nd_grad(OpContext& ctx) {
  const NdShape s = nd_shape(ctx, "X", 0);
  const TensorSpec& x = ctx.in("X");
  require_updates(ctx, s.out_shape);
  require_scatter_dy(ctx);
  const bool overwrites = scatter_overwrites(ctx);
  for (const char* p : {"X", "Idx", "U", "dY"})
    ctx.input(p);
  ctx.output("dX", x.dtype, x.shape);
  ctx.output("dU", x.dtype, ctx.in("U").shape);
  const std::vector<std::string> k = index_names(rank_of(x), "k");
  ctx.stmt(access("dX", k) + " = " + access("dY", k));
  if (overwrites)
    ctx.stmt(access("dX", s.data_idx) + " = 0");
  ctx.stmt(access("dU", index_names(static_cast<int64_t>(s.out_shape.size()))) + " = " +
           access("dY", s.data_idx));
}

// --- one_hot, topk ------------------------------------------------------------------------

std::string literal_of(const OpContext& ctx, double v, DType t) {
  if (t == DType::Bool)
    return v != 0 ? "true" : "false";
  if (is_integer(t)) {
    if (v != static_cast<double>(static_cast<int64_t>(v)))
      ctx.fail("value {} is not a whole number, but the output is {}", v, dtype_text(t));
    return dtype_text(t) + "(" + std::to_string(static_cast<int64_t>(v)) + ")";
  }
  return dtype_text(t) + "(" + float_literal(v) + ")";
}

// Y[..., c, ...] = Idx[...] == c ? on : off, the new axis at `axis`; an index outside
// [-depth, depth) gives a row of `off`.
void emit_one_hot(OpContext& ctx) {
  ctx.require_integer("Idx");
  const TensorSpec& ix = ctx.in("Idx");
  const int64_t depth = ctx.attr_int("depth");
  if (depth < 1)
    ctx.fail("depth {} must be at least 1", depth);
  const int64_t out_rank = rank_of(ix) + 1;
  const int64_t axis = ctx.axis(ctx.attr_int("axis"), out_rank);
  const std::vector<double> values = ctx.attr_floats("values");
  if (values.size() != 2)
    ctx.fail("values must be [off, on], got {} numbers", values.size());
  const std::string text = ctx.attr_string("dtype");
  const std::optional<DType> t = parse_dtype(text);
  if (!t)
    ctx.fail("attribute 'dtype': unknown dtype '{}'", text);
  std::vector<int64_t> shape = ix.shape;
  shape.insert(shape.begin() + axis, depth);
  const std::vector<std::string> i = index_names(out_rank);
  std::vector<std::string> in = i;
  in.erase(in.begin() + axis);
  ctx.input("Idx");
  ctx.output("Y", *t, shape);
  const std::string v = "i64(" + access("Idx", in) + ")";
  ctx.stmt(access("Y", i) + " = " + from_end(v, depth) + " == " + i[axis] + " ? " +
           literal_of(ctx, values[1], *t) + " : " + literal_of(ctx, values[0], *t));
}

// The lowest (largest = true) or highest value of an integer dtype, as Kernel IR text:
// the fill of a max (min) reduction for the elements it must not pick.
std::string integer_fill(DType t, bool lowest) {
  int64_t v = 0;
  switch (t) {
  case DType::I8: v = lowest ? INT8_MIN : INT8_MAX; break;
  case DType::U8: v = lowest ? 0 : UINT8_MAX; break;
  case DType::I32: v = lowest ? INT32_MIN : INT32_MAX; break;
  default:
    return lowest ? "(i64(-9223372036854775807) - 1)" : "i64(9223372036854775807)";
  }
  return dtype_text(t) + "(" + std::to_string(v) + ")";
}

// topk as k selections in a chain, for small k: selection s is the largest element
// after selection s - 1 in the order (value descending, position ascending), a max
// reduction and a min reduction over the row, so about 3k passes over each row instead
// of the n^2 comparisons of the rank count below. NaN counts as the largest (PyTorch):
// the NaNs are a chain of their own, by position (qn), the other values one by value
// (vv, pv), and output r takes from the NaN chain first (largest) or last (smallest).
void emit_topk_chain(OpContext& ctx, int64_t axis, int64_t k, bool largest) {
  const TensorSpec& x = ctx.in("X");
  const int64_t n = x.shape[axis];
  const bool fp = is_float(x.dtype);
  const std::vector<std::string> i = index_names(rank_of(x));
  const std::string& j = i[axis];
  std::vector<std::string> row_idx = i;
  row_idx.erase(row_idx.begin() + axis);
  std::vector<int64_t> chain_shape = x.shape, row_shape = x.shape;
  chain_shape[axis] = k;
  row_shape.erase(row_shape.begin() + axis);
  // One selection's value or position per row (the reductions' left sides take bare
  // indices, so each selection has a local of its own).
  auto row = [&](const std::string& t, int64_t s) { return access(t + std::to_string(s), row_idx); };
  const std::string X = access("X", i), N = "i64(" + std::to_string(n) + ")";
  const std::string fill = fp ? (largest ? "(-inf)" : "inf") : integer_fill(x.dtype, largest);
  ctx.input("X");
  ctx.output("Values", x.dtype, chain_shape);
  ctx.output("Indices", DType::I64, chain_shape);
  for (int64_t s = 0; s < k; ++s) {
    ctx.local("v" + std::to_string(s), x.dtype, row_shape);
    ctx.local("p" + std::to_string(s), DType::I64, row_shape);
    std::string cand = fp ? "!isnan(" + X + ")" : "";
    if (s > 0) {
      const std::string v = row("v", s - 1);
      const std::string after = "(" + X + (largest ? " < " : " > ") + v + " || " + X + " == " + v +
                                " && " + j + " > " + row("p", s - 1) + ")";
      cand = cand.empty() ? after : cand + " && " + after;
    }
    const std::string pick = cand.empty() ? X : "(" + cand + " ? " + X + " : " + fill + ")";
    ctx.stmt(row("v", s) + (largest ? " max= " : " min= ") + pick);
    const std::string hit = (cand.empty() ? "" : cand + " && ") + X + " == " + row("v", s);
    ctx.stmt(row("p", s) + " min= " + hit + " ? i64(" + j + ") : " + N);
  }
  // The chain's k positions along the output axis: a select over the selections.
  auto gather_chain = [&](const std::string& name, const std::string& per_row) {
    std::string e = row(per_row, k - 1);
    for (int64_t s = k - 1; s-- > 0;)
      e = "(" + j + " == " + std::to_string(s) + " ? " + row(per_row, s) + " : " + e + ")";
    ctx.local(name, DType::I64, chain_shape);
    ctx.stmt(access(name, i) + " = " + e);
  };
  gather_chain("pv", "p");
  ctx.local("pos", DType::I64, chain_shape);
  if (!fp) {
    ctx.stmt(access("pos", i) + " = " + access("pv", i));
  } else {
    for (int64_t s = 0; s < k; ++s) {
      ctx.local("q" + std::to_string(s), DType::I64, row_shape);
      const std::string after = s > 0 ? " && " + j + " > " + row("q", s - 1) : std::string();
      ctx.stmt(row("q", s) + " min= isnan(" + X + ")" + after + " ? i64(" + j + ") : " + N);
    }
    gather_chain("qn", "q");
    ctx.local("cnt", DType::I64, row_shape);
    ctx.stmt(access("cnt", row_idx) + " += isnan(" + X + ") ? 1 : 0");
    // Largest: the first cnt outputs are NaNs. Smallest: the first n - cnt are not.
    const std::string c = access("cnt", row_idx);
    const std::string first = largest ? c : "(" + N + " - " + c + ")";
    const std::string head = largest ? "qn" : "pv", tail = largest ? "pv" : "qn";
    std::vector<std::string> shifted = i;
    shifted[axis] = "(" + j + " >= " + first + " ? " + j + " - " + first + " : 0)";
    ctx.stmt(access("pos", i) + " = " + j + " < " + first + " ? " + access(head, i) + " : " +
             access(tail, shifted));
  }
  ctx.stmt(access("Indices", i) + " = " + access("pos", i));
  std::vector<std::string> from = i;
  from[axis] = access("pos", i);
  ctx.stmt(access("Values", i) + " = " + access("X", from));
}

// The k largest (or smallest) along an axis, in order, and their i64 positions. For
// small k, a chain of k selections (emit_topk_chain). Otherwise each element's place in
// the order is the number of elements that come before it (larger, or equal at a lower
// position; NaN counts as the largest, as in PyTorch); the position at place r is then
// the element whose place is r: O(n^2) per row of the axis.
void emit_topk(OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  if (x.dtype == DType::Bool)
    ctx.fail("input 'X' must be numeric, got bool");
  if (rank_of(x) == 0)
    ctx.fail("input 'X' is a scalar: topk needs rank 1 or more");
  const int64_t axis = ctx.axis(ctx.attr_int("axis"), rank_of(x));
  const int64_t k = ctx.attr_int("k"), n = x.shape[axis];
  if (k < 1 || k > n)
    ctx.fail("k {} must be between 1 and the {} elements along axis {}", k, n, axis);
  const bool largest = ctx.attr_bool("largest");
  // The chain makes about 3k passes (and 3k statements) over a row, the rank count n.
  if (3 * k + 2 <= n / 4 && k <= 32) {
    emit_topk_chain(ctx, axis, k, largest);
    return;
  }
  const std::vector<std::string> i = index_names(rank_of(x));
  std::vector<std::string> other = i;
  other[axis] = "t";
  const std::string xj = access("X", i), xt = access("X", other);
  const std::string& j = i[axis];
  // `a` comes before `b` in the order.
  auto before = [&](const std::string& a, const std::string& b) {
    const std::string hi = largest ? a : b, lo = largest ? b : a;
    if (!is_float(x.dtype))
      return "(" + hi + " > " + lo + ")";
    return "(" + hi + " > " + lo + " || isnan(" + hi + ") && !isnan(" + lo + "))";
  };
  auto same = [&](const std::string& a, const std::string& b) {
    if (!is_float(x.dtype))
      return "(" + a + " == " + b + ")";
    return "(" + a + " == " + b + " || isnan(" + a + ") && isnan(" + b + "))";
  };
  std::vector<int64_t> out_shape = x.shape;
  out_shape[axis] = k;
  ctx.input("X");
  ctx.output("Values", x.dtype, out_shape);
  ctx.output("Indices", DType::I64, out_shape);
  ctx.local("place", DType::I64, x.shape);
  ctx.local("pos", DType::I64, out_shape);
  ctx.stmt(access("place", i) + " += " + before(xt, xj) + " || " + same(xt, xj) + " && t < " + j +
           " ? 1 : 0");
  std::vector<std::string> at = i;
  at[axis] = "r";
  std::vector<std::string> placed = i;
  ctx.stmt(access("pos", at) + " += " + access("place", placed) + " == r ? i64(" + j + ") : 0");
  ctx.stmt(access("Indices", i) + " = " + access("pos", i));
  std::vector<std::string> from = i;
  from[axis] = access("pos", i);
  ctx.stmt(access("Values", i) + " = " + access("X", from));
}

// topk_grad(X, Indices, dValues) -> dX: dValues added at the positions topk chose (X
// gives the shape and dtype; Indices is topk's second output).
void emit_topk_grad(OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  ctx.require_float("X");
  ctx.require_same_dtype({"X", "dValues"});
  ctx.require_integer("Indices");
  if (rank_of(x) == 0)
    ctx.fail("input 'X' is a scalar: topk needs rank 1 or more");
  const int64_t axis = ctx.axis(ctx.attr_int("axis"), rank_of(x));
  const int64_t k = ctx.attr_int("k");
  if (k < 1 || k > x.shape[axis])
    ctx.fail("k {} must be between 1 and the {} elements along axis {}", k, x.shape[axis], axis);
  std::vector<int64_t> out_shape = x.shape;
  out_shape[axis] = k;
  for (const char* p : {"Indices", "dValues"})
    if (ctx.in(p).shape != out_shape)
      ctx.fail("'{}' has shape {} but topk's outputs have shape {}", p, shape_text(ctx.in(p).shape),
               shape_text(out_shape));
  for (const char* p : {"X", "Indices", "dValues"})
    ctx.input(p);
  ctx.output("dX", x.dtype, x.shape);
  zero_fill(ctx, "dX", x);
  ctx.stmt(access("dX", element_coords(ctx, "X", "Indices", axis, true)) +
           " += " + access("dValues", index_names(rank_of(x))));
}

AttrSpec attr(const char* name, AttrKind kind, std::optional<AttrValue> def, const char* doc) {
  return {name, kind, std::move(def), doc};
}

OpDef make(const std::string& name, const std::string& summary, std::vector<Port> inputs,
           std::vector<Port> outputs, std::vector<AttrSpec> attrs,
           std::function<void(OpContext&)> emit) {
  OpDef op;
  op.name = name;
  op.category = "indexing";
  op.summary = summary;
  op.inputs = std::move(inputs);
  op.outputs = std::move(outputs);
  op.attrs = std::move(attrs);
  op.emit = std::move(emit);
  return op;
}

void add_with_grad(std::vector<OpDef>& ops, OpDef op, std::vector<Port> grad_inputs,
                   std::vector<Port> grad_outputs, std::function<void(OpContext&)> grad) {
  OpDef g = make(op.name + "_grad", "gradient of " + op.name, std::move(grad_inputs),
                 std::move(grad_outputs), op.attrs, std::move(grad));
  g.category = "indexing-backward";
  op.gradient = g.name;
  ops.push_back(std::move(g));
  ops.push_back(std::move(op));
}

} // namespace

void add_indexing_ops(std::vector<OpDef>& ops) {
  const Port X{"X"}, Idx{"Idx", PortKind::Index}, U{"U"}, dY{"dY"}, dX{"dX"};
  const AttrSpec axis0 = attr("axis", AttrKind::Int, AttrValue{int64_t{0}}, "the axis, negative from the end");
  const AttrSpec reduction = attr("reduction", AttrKind::String, AttrValue{std::string("none")},
                                  "none (last write wins), add, mul, max or min");

  add_with_grad(ops,
                make("gather", "X's slices along an axis at the positions in Idx (any rank)",
                     {X, Idx}, {{"Y"}}, {axis0},
                     [](OpContext& ctx) { emit_gather(ctx, "X", "Idx", ctx.attr_int("axis")); }),
                {X, Idx, dY}, {dX},
                [](OpContext& ctx) { emit_gather_grad(ctx, "X", "Idx", ctx.attr_int("axis"), "dX"); });

  add_with_grad(
      ops,
      make("index_select", "X's slices along dim at the positions of a 1-D Idx (torch)",
           {X, Idx}, {{"Y"}}, {attr("dim", AttrKind::Int, AttrValue{int64_t{0}}, "the axis")},
           [](OpContext& ctx) {
             require_index_rank(ctx, "Idx", 1);
             emit_gather(ctx, "X", "Idx", ctx.attr_int("dim"));
           }),
      {X, Idx, dY}, {dX}, [](OpContext& ctx) {
        require_index_rank(ctx, "Idx", 1);
        emit_gather_grad(ctx, "X", "Idx", ctx.attr_int("dim"), "dX");
      });

  add_with_grad(ops,
                make("embedding", "rows of the table W for each index: Y[..., d] = W[Idx[...], d]",
                     {Idx, {"W"}}, {{"Y"}}, {},
                     [](OpContext& ctx) {
                       ctx.require_rank("W", 2);
                       emit_gather(ctx, "W", "Idx", 0);
                     }),
                {Idx, {"W"}, dY}, {{"dW"}}, [](OpContext& ctx) {
                  ctx.require_rank("W", 2);
                  emit_gather_grad(ctx, "W", "Idx", 0, "dW");
                });

  add_with_grad(ops,
                make("gather_elements", "Y[i] = X at i with the axis coordinate Idx[i]", {X, Idx},
                     {{"Y"}}, {axis0}, emit_gather_elements),
                {X, Idx, dY}, {dX}, emit_gather_elements_grad);

  add_with_grad(ops,
                make("gather_nd", "slices of X at coordinate tuples (Idx's last axis)", {X, Idx},
                     {{"Y"}},
                     {attr("batch_dims", AttrKind::Int, AttrValue{int64_t{0}},
                           "leading axes Idx and X share")},
                     emit_gather_nd),
                {X, Idx, dY}, {dX}, emit_gather_nd_grad);

  add_with_grad(ops,
                make("scatter_elements",
                     "X with U written (or combined) at i with the axis coordinate Idx[i]",
                     {X, Idx, U}, {{"Y"}}, {axis0, reduction}, emit_scatter_elements),
                {X, Idx, U, dY}, {dX, {"dU"}}, emit_scatter_elements_grad);
  add_with_grad(ops,
                make("scatter_nd", "X with slices U written (or combined) at coordinate tuples",
                     {X, Idx, U}, {{"Y"}}, {reduction}, emit_scatter_nd),
                {X, Idx, U, dY}, {dX, {"dU"}}, emit_scatter_nd_grad);

  ops.push_back(make(
      "one_hot", "Y = off, with on where the new axis equals Idx", {Idx}, {{"Y"}},
      {attr("depth", AttrKind::Int, std::nullopt, "the new axis's size"),
       attr("axis", AttrKind::Int, AttrValue{int64_t{-1}}, "where the new axis goes"),
       attr("values", AttrKind::Floats, AttrValue{std::vector<double>{0.0, 1.0}}, "[off, on]"),
       attr("dtype", AttrKind::String, AttrValue{std::string("f32")}, "the output's dtype")},
      emit_one_hot));

  add_with_grad(ops, make("topk", "the k largest (or smallest) along an axis, sorted, with i64 indices",
                     {X}, {{"Values"}, {"Indices"}},
                     {attr("k", AttrKind::Int, std::nullopt, "how many"),
                      attr("axis", AttrKind::Int, AttrValue{int64_t{-1}}, "the axis"),
                      attr("largest", AttrKind::Bool, AttrValue{int64_t{1}},
                           "the largest (else the smallest)"),
                      attr("sorted", AttrKind::Bool, AttrValue{int64_t{1}},
                           "accepted for ONNX; the result is always sorted")},
                     emit_topk),
                {X, {"Indices", PortKind::Index}, {"dValues"}}, {dX}, emit_topk_grad);
}

} // namespace unitile::ops
