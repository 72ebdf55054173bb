// Data movement ops that rearrange elements by index arithmetic alone: reshape,
// flatten, squeeze, unsqueeze, identity, transpose, concat, split, slice, expand, tile,
// flip, pad, triu/tril, depth_to_space, space_to_depth, cast and range, with the
// backward op of each one that has a gradient.
//
// Each is a copy comprehension over the output whose right-hand indices are affine in
// the output's indices (with `//` and `%` by constants). What affine arithmetic cannot
// say (pad's reflect and edge modes) goes through a small i64 index table, a local
// written first and read as a data-dependent index. Backward ops take the forward
// inputs (for their shapes) and the output gradient and write the gradient of the data
// input: usually the inverse copy, a sum where the forward op repeated elements.
#include "ops/OpContext.h"
#include "ops/defs/Families.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace unitile::ops {
namespace {

int64_t rank_of(const TensorSpec& t) { return static_cast<int64_t>(t.shape.size()); }

// The literal a dtype's "nothing here" is written with (guarded reads, masks).
std::string zero_of(DType t) { return t == DType::Bool ? "false" : "0"; }

// `T[idx] ?? fill`, guarded only when `guard`.
std::string maybe_guarded(const std::string& read, bool guard, DType t) {
  return guard ? read + " ?? " + zero_of(t) : read;
}

// --- reshape-like copies ------------------------------------------------------------------

// The element of a tensor of shape `shape` at row-major position `linear` (an index
// expression), one index per dimension: (linear // stride) % extent.
std::vector<std::string> unflatten(const std::string& linear, const std::vector<int64_t>& shape) {
  std::vector<std::string> idx(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 1) {
      idx[d] = "0";
    } else {
      std::string e = "(" + linear + ")";
      if (stride != 1)
        e += " // " + std::to_string(stride);
      if (d != 0)
        e += " % " + std::to_string(shape[d]);
      idx[d] = e;
    }
    stride *= shape[d];
  }
  return idx;
}

// The row-major position of the element at indices i0.. of a tensor of shape `shape`.
std::string linear_index(const std::vector<int64_t>& shape, const std::string& prefix = "i") {
  std::vector<std::string> terms;
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1)
      terms.push_back(stride == 1 ? prefix + std::to_string(d)
                                  : prefix + std::to_string(d) + " * " + std::to_string(stride));
    stride *= shape[d];
  }
  std::reverse(terms.begin(), terms.end());
  return terms.empty() ? "0" : join(terms, " + ");
}

// `to[...] = from[...]` for two shapes with the same number of elements, in row-major
// order (reshape, and the backward op of every reshape-like op).
void emit_row_major_copy(OpContext& ctx, const std::string& from, const std::string& to,
                         const std::vector<int64_t>& to_shape) {
  const TensorSpec& src = ctx.in(from);
  ctx.input(from);
  ctx.output(to, src.dtype, to_shape);
  const std::vector<std::string> out = index_names(rank_of(TensorSpec{src.dtype, to_shape}));
  const std::vector<std::string> in =
      src.shape == to_shape ? out : unflatten(linear_index(to_shape), src.shape);
  ctx.stmt(access(to, out) + " = " + access(from, in));
}

// The backward op of a reshape-like op: dY back into X's shape.
void emit_reshape_back(OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  const TensorSpec& dy = ctx.in("dY");
  if (dy.dtype != x.dtype)
    ctx.fail("dY has dtype {} but X has {}: they must be equal", dtype_text(dy.dtype),
             dtype_text(x.dtype));
  if (numel(dy.shape) != numel(x.shape))
    ctx.fail("dY has shape {} ({} elements) but X has shape {} ({} elements)",
             shape_text(dy.shape), numel(dy.shape), shape_text(x.shape), numel(x.shape));
  emit_row_major_copy(ctx, "dY", "dX", x.shape);
}

// ONNX Reshape's target: 0 copies the input's dimension, -1 is inferred.
std::vector<int64_t> reshape_target(const OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  std::vector<int64_t> shape = ctx.attr_ints("shape");
  int64_t known = 1, infer = -1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) {
      if (d >= x.shape.size())
        ctx.fail("shape {} has 0 at position {}, but X {} has no dimension there to copy",
                 shape_text(shape), d, shape_text(x.shape));
      shape[d] = x.shape[d];
    }
    if (shape[d] == -1) {
      if (infer >= 0)
        ctx.fail("shape {} has more than one -1", shape_text(ctx.attr_ints("shape")));
      infer = static_cast<int64_t>(d);
      continue;
    }
    if (shape[d] < 1)
      ctx.fail("shape {} has {} at position {} (dimensions are positive, 0 copies X's, -1 is "
               "inferred)",
               shape_text(ctx.attr_ints("shape")), shape[d], d);
    known *= shape[d];
  }
  const int64_t n = numel(x.shape);
  if (infer >= 0) {
    if (n % known != 0)
      ctx.fail("cannot reshape X {} ({} elements) into {}: {} is not a multiple of {}",
               shape_text(x.shape), n, shape_text(ctx.attr_ints("shape")), n, known);
    shape[infer] = n / known;
  } else if (known != n) {
    ctx.fail("cannot reshape X {} ({} elements) into {} ({} elements)", shape_text(x.shape), n,
             shape_text(shape), known);
  }
  return shape;
}

std::vector<int64_t> flatten_target(const OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  const int64_t rank = rank_of(x);
  int64_t axis = ctx.attr_int("axis");
  if (axis < -rank || axis > rank)
    ctx.fail("axis {} is out of range for a tensor of rank {} (allowed {}..{})", axis, rank, -rank,
             rank);
  if (axis < 0)
    axis += rank;
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= x.shape[d];
  return {outer, numel(x.shape) / outer};
}

std::vector<int64_t> squeeze_target(const OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  const int64_t rank = rank_of(x);
  const std::vector<int64_t> given = ctx.attr_ints("axes");
  const std::vector<int64_t> axes = ctx.axes(given, rank, /*empty_means_all=*/true);
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    const bool listed = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (listed && x.shape[d] != 1 && !given.empty())
      ctx.fail("cannot squeeze axis {} of X {}: its size is {}, not 1", d, shape_text(x.shape),
               x.shape[d]);
    if (!(listed && x.shape[d] == 1))
      shape.push_back(x.shape[d]);
  }
  return shape;
}

std::vector<int64_t> unsqueeze_target(const OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  const std::vector<int64_t> given = ctx.attr_ints("axes");
  if (given.empty())
    ctx.fail("attribute 'axes' must name at least one axis to insert");
  const int64_t out_rank = rank_of(x) + static_cast<int64_t>(given.size());
  const std::vector<int64_t> axes = ctx.axes(given, out_rank, false);
  std::vector<int64_t> shape;
  size_t next = 0;
  for (int64_t d = 0; d < out_rank; ++d)
    shape.push_back(std::find(axes.begin(), axes.end(), d) != axes.end() ? 1
                                                                          : x.shape[next++]);
  return shape;
}

// --- transpose ------------------------------------------------------------------------

std::vector<int64_t> permutation(const OpContext& ctx) {
  const int64_t rank = rank_of(ctx.in("X"));
  std::vector<int64_t> perm = ctx.attr_ints("perm");
  if (perm.empty()) {
    for (int64_t d = rank; d-- > 0;)
      perm.push_back(d);
    return perm;
  }
  if (static_cast<int64_t>(perm.size()) != rank)
    ctx.fail("perm {} has {} entries but X has rank {}", shape_text(perm), perm.size(), rank);
  std::vector<bool> seen(rank, false);
  for (int64_t& p : perm) {
    p = ctx.axis(p, rank, "perm entry");
    if (seen[p])
      ctx.fail("perm {} is not a permutation: {} occurs twice", shape_text(ctx.attr_ints("perm")),
               p);
    seen[p] = true;
  }
  return perm;
}

// Y dimension k is X dimension perm[k].
void emit_transpose(OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  const std::vector<int64_t> perm = permutation(ctx);
  std::vector<int64_t> shape;
  std::vector<std::string> in(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) {
    shape.push_back(x.shape[perm[k]]);
    in[perm[k]] = "i" + std::to_string(k);
  }
  ctx.input("X");
  ctx.output("Y", x.dtype, shape);
  ctx.stmt(access("Y", index_names(rank_of(x))) + " = " + access("X", in));
}

void require_grad_dtype(OpContext& ctx) {
  ctx.require_same_dtype({"X", "dY"});
}

void require_dy_shape(OpContext& ctx, const std::vector<int64_t>& shape) {
  if (ctx.in("dY").shape != shape)
    ctx.fail("dY has shape {} but the forward op's output has shape {}",
             shape_text(ctx.in("dY").shape), shape_text(shape));
}

void emit_transpose_grad(OpContext& ctx) {
  require_grad_dtype(ctx);
  const TensorSpec& x = ctx.in("X");
  const std::vector<int64_t> perm = permutation(ctx);
  std::vector<int64_t> yshape;
  std::vector<std::string> dy;
  for (int64_t p : perm) {
    yshape.push_back(x.shape[p]);
    dy.push_back("i" + std::to_string(p));
  }
  require_dy_shape(ctx, yshape);
  ctx.input("dY");
  ctx.output("dX", x.dtype, x.shape);
  ctx.stmt(access("dX", index_names(rank_of(x))) + " = " + access("dY", dy));
}

// --- concat and split ----------------------------------------------------------------------

// The pieces along `axis`, as [offset, offset + size) of the joined tensor, read from
// ports `parts`; every other dimension equal to `ref`'s.
struct Pieces {
  int64_t axis = 0;
  std::vector<int64_t> offsets, sizes;
  std::vector<int64_t> joined_shape;
};

Pieces concat_pieces(const OpContext& ctx, const std::vector<std::string>& parts) {
  const TensorSpec& first = ctx.in(parts[0]);
  const int64_t rank = rank_of(first);
  if (rank == 0)
    ctx.fail("input '{}' is a scalar: concat needs rank 1 or more", parts[0]);
  Pieces p;
  p.axis = ctx.axis(ctx.attr_int("axis"), rank);
  p.joined_shape = first.shape;
  p.joined_shape[p.axis] = 0;
  for (const std::string& name : parts) {
    const TensorSpec& t = ctx.in(name);
    if (t.dtype != first.dtype)
      ctx.fail("inputs '{}' ({}) and '{}' ({}) must have the same dtype", parts[0],
               dtype_text(first.dtype), name, dtype_text(t.dtype));
    bool same = rank_of(t) == rank;
    for (int64_t d = 0; same && d < rank; ++d)
      same = d == p.axis || t.shape[d] == first.shape[d];
    if (!same)
      ctx.fail("input '{}' has shape {} but '{}' has {}: they must agree except along axis {}",
               name, shape_text(t.shape), parts[0], shape_text(first.shape), p.axis);
    p.offsets.push_back(p.joined_shape[p.axis]);
    p.sizes.push_back(t.shape[p.axis]);
    p.joined_shape[p.axis] += t.shape[p.axis];
  }
  return p;
}

// `to[...] = ` the pieces `parts` joined along p.axis: a chain of selects on the axis
// index, each piece read guarded (the read is only taken where the select picks it).
void emit_join(OpContext& ctx, const std::vector<std::string>& parts, const Pieces& p,
               const std::string& to, DType dtype) {
  for (const std::string& name : parts)
    ctx.input(name);
  ctx.output(to, dtype, p.joined_shape);
  const int64_t rank = static_cast<int64_t>(p.joined_shape.size());
  const std::vector<std::string> idx = index_names(rank);
  const std::string a = idx[p.axis];
  auto piece = [&](size_t k) {
    std::vector<std::string> in = idx;
    // `0 + a`: a bare index would tie a's range to the piece's extent.
    in[p.axis] = p.offsets[k] == 0 ? "0 + " + a : a + " - " + std::to_string(p.offsets[k]);
    return maybe_guarded(access(parts[k], in), parts.size() > 1, dtype);
  };
  std::string value = piece(parts.size() - 1);
  for (size_t k = parts.size() - 1; k-- > 0;)
    value = a + " < " + std::to_string(p.offsets[k] + p.sizes[k]) + " ? " + piece(k) + " : (" +
            value + ")";
  ctx.stmt(access(to, idx) + " = " + value);
}

// `outs[k][...] = from[...]` shifted along the axis by the piece's offset.
void emit_cut(OpContext& ctx, const std::string& from, const Pieces& p,
              const std::vector<std::string>& outs) {
  const TensorSpec& src = ctx.in(from);
  ctx.input(from);
  const std::vector<std::string> idx = index_names(rank_of(src));
  for (size_t k = 0; k < outs.size(); ++k) {
    std::vector<int64_t> shape = src.shape;
    shape[p.axis] = p.sizes[k];
    ctx.output(outs[k], src.dtype, shape);
    std::vector<std::string> in = idx;
    if (p.offsets[k] != 0)
      in[p.axis] += " + " + std::to_string(p.offsets[k]);
    else if (p.sizes[k] != src.shape[p.axis])
      in[p.axis] = "0 + " + in[p.axis]; // not bare: the piece's extent is not X's
    ctx.stmt(access(outs[k], idx) + " = " + access(from, in));
  }
}

std::vector<std::string> numbered(const std::string& base, size_t n) {
  std::vector<std::string> v;
  for (size_t k = 0; k < n; ++k)
    v.push_back(base + std::to_string(k));
  return v;
}

void emit_concat(OpContext& ctx) {
  const std::vector<std::string> parts = ctx.variadic("X");
  const Pieces p = concat_pieces(ctx, parts);
  emit_join(ctx, parts, p, "Y", ctx.in(parts[0]).dtype);
}

void emit_concat_grad(OpContext& ctx) {
  const std::vector<std::string> parts = ctx.variadic("X");
  const Pieces p = concat_pieces(ctx, parts);
  ctx.require_same_dtype({parts[0], "dY"});
  require_dy_shape(ctx, p.joined_shape);
  emit_cut(ctx, "dY", p, numbered("dX", parts.size()));
}

// split's pieces of X: the `split` sizes, else `num_outputs` equal pieces (the last
// smaller when the axis does not divide evenly, as ONNX has it).
Pieces split_pieces(const OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  const int64_t rank = rank_of(x);
  if (rank == 0)
    ctx.fail("input 'X' is a scalar: split needs rank 1 or more");
  Pieces p;
  p.axis = ctx.axis(ctx.attr_int("axis"), rank);
  p.joined_shape = x.shape;
  const int64_t n = x.shape[p.axis];
  std::vector<int64_t> sizes = ctx.attr_ints("split");
  const int64_t parts = ctx.attr_int("num_outputs");
  if (!sizes.empty() && parts != 0 && parts != static_cast<int64_t>(sizes.size()))
    ctx.fail("split {} has {} sizes but num_outputs is {}", shape_text(sizes), sizes.size(),
             parts);
  if (sizes.empty()) {
    if (parts < 1)
      ctx.fail("give the piece sizes with 'split' or their number with 'num_outputs'");
    if (parts > n)
      ctx.fail("num_outputs {} is more than the {} elements along axis {}", parts, n, p.axis);
    const int64_t each = (n + parts - 1) / parts;
    for (int64_t left = n; left > 0; left -= each)
      sizes.push_back(std::min(each, left));
    if (static_cast<int64_t>(sizes.size()) != parts)
      ctx.fail("{} elements along axis {} do not split into {} pieces of {} (the last smaller)",
               n, p.axis, parts, each);
  }
  int64_t at = 0;
  for (int64_t s : sizes) {
    if (s < 1)
      ctx.fail("split {}: every size must be at least 1", shape_text(sizes));
    p.offsets.push_back(at);
    p.sizes.push_back(s);
    at += s;
  }
  if (at != n)
    ctx.fail("split {} adds up to {} but X {} has {} elements along axis {}", shape_text(sizes),
             at, shape_text(x.shape), n, p.axis);
  return p;
}

void emit_split(OpContext& ctx) {
  const Pieces p = split_pieces(ctx);
  emit_cut(ctx, "X", p, numbered("Y", p.sizes.size()));
}

void emit_split_grad(OpContext& ctx) {
  const Pieces p = split_pieces(ctx);
  const std::vector<std::string> parts = ctx.variadic("dY");
  if (parts.size() != p.sizes.size())
    ctx.fail("split makes {} pieces but {} gradients dY0.. are given", p.sizes.size(),
             parts.size());
  const TensorSpec& x = ctx.in("X");
  for (size_t k = 0; k < parts.size(); ++k) {
    std::vector<int64_t> shape = x.shape;
    shape[p.axis] = p.sizes[k];
    if (ctx.in(parts[k]).shape != shape || ctx.in(parts[k]).dtype != x.dtype)
      ctx.fail("'{}' is {} {} but piece {} of X is {} {}", parts[k],
               dtype_text(ctx.in(parts[k]).dtype), shape_text(ctx.in(parts[k]).shape), k,
               dtype_text(x.dtype), shape_text(shape));
  }
  emit_join(ctx, parts, p, "dX", x.dtype);
}

// --- slice ------------------------------------------------------------------------------

// One sliced axis: Y index j reads X at start + j * step, count elements.
struct SliceAxis {
  int64_t axis, start, step, count;
};

std::vector<SliceAxis> slice_axes(const OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  const int64_t rank = rank_of(x);
  const std::vector<int64_t> starts = ctx.attr_ints("starts"), ends = ctx.attr_ints("ends");
  std::vector<int64_t> axes = ctx.attr_ints("axes"), steps = ctx.attr_ints("steps");
  if (starts.size() != ends.size())
    ctx.fail("starts {} and ends {} must have the same length", shape_text(starts),
             shape_text(ends));
  if (axes.empty())
    for (size_t d = 0; d < starts.size(); ++d)
      axes.push_back(static_cast<int64_t>(d));
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    ctx.fail("starts, ends, axes and steps must have the same length (got {}, {}, {}, {})",
             starts.size(), ends.size(), axes.size(), steps.size());
  std::vector<SliceAxis> out;
  std::vector<bool> seen(rank, false);
  for (size_t k = 0; k < starts.size(); ++k) {
    const int64_t a = ctx.axis(axes[k], rank);
    if (seen[a])
      ctx.fail("axis {} is sliced twice", a);
    seen[a] = true;
    const int64_t n = x.shape[a], step = steps[k];
    if (step == 0)
      ctx.fail("steps must not be 0 (axis {})", a);
    // ONNX: negative positions count from the end, then clamp into the axis.
    int64_t s = starts[k], e = ends[k];
    if (s < 0)
      s = s < -n ? -1 : s + n;
    if (e < 0)
      e = e < -n ? -1 : e + n;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, n);
      e = std::clamp<int64_t>(e, 0, n);
    } else {
      s = std::clamp<int64_t>(s, 0, n - 1);
      e = std::clamp<int64_t>(e, -1, n - 1);
    }
    const int64_t span = step > 0 ? e - s : s - e, abs_step = step > 0 ? step : -step;
    const int64_t count = span <= 0 ? 0 : (span + abs_step - 1) / abs_step;
    if (count == 0)
      ctx.fail("the slice of axis {} (start {}, end {}, step {}) is empty: tensors have no "
               "zero-sized dimensions",
               a, starts[k], ends[k], step);
    out.push_back({a, s, step, count});
  }
  return out;
}

std::vector<int64_t> sliced_shape(const TensorSpec& x, const std::vector<SliceAxis>& axes) {
  std::vector<int64_t> shape = x.shape;
  for (const SliceAxis& s : axes)
    shape[s.axis] = s.count;
  return shape;
}

// `base + var * scale`, written with a minus for a negative scale.
std::string offset_text(const std::string& base, int64_t scale, const std::string& var) {
  return base + (scale < 0 ? " - " : " + ") + var +
         (scale == 1 || scale == -1 ? "" : " * " + std::to_string(scale < 0 ? -scale : scale));
}

void emit_slice(OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  const std::vector<SliceAxis> axes = slice_axes(ctx);
  const std::vector<std::string> idx = index_names(rank_of(x));
  std::vector<std::string> in = idx;
  for (const SliceAxis& s : axes)
    in[s.axis] = offset_text(std::to_string(s.start), s.step, idx[s.axis]);
  ctx.input("X");
  ctx.output("Y", x.dtype, sliced_shape(x, axes));
  ctx.stmt(access("Y", idx) + " = " + access("X", in));
}

// dX is dY where X's element was taken, else 0: on each sliced axis, element i came
// from j = (i - start) / step when that is a whole number in [0, count).
void emit_slice_grad(OpContext& ctx) {
  require_grad_dtype(ctx);
  const TensorSpec& x = ctx.in("X");
  const std::vector<SliceAxis> axes = slice_axes(ctx);
  require_dy_shape(ctx, sliced_shape(x, axes));
  const std::vector<std::string> idx = index_names(rank_of(x));
  std::vector<std::string> in = idx, conds;
  for (const SliceAxis& s : axes) {
    const std::string& i = idx[s.axis];
    const int64_t k = s.step > 0 ? s.step : -s.step;
    // The distance from start, counted in the step's direction.
    const std::string dist = s.step > 0 ? "(" + i + " - " + std::to_string(s.start) + ")"
                                        : "(" + std::to_string(s.start) + " - " + i + ")";
    in[s.axis] = k == 1 ? dist : dist + " // " + std::to_string(k);
    if (k != 1)
      conds.push_back(dist + " % " + std::to_string(k) + " == 0");
  }
  ctx.input("dY");
  ctx.output("dX", x.dtype, x.shape);
  std::string value = access("dY", in) + " ?? 0";
  if (!conds.empty())
    value = join(conds, " && ") + " ? " + value + " : 0";
  ctx.stmt(access("dX", idx) + " = " + value);
}

// --- expand, tile, flip ------------------------------------------------------------------

std::vector<int64_t> expand_shape(const OpContext& ctx) {
  std::vector<std::pair<std::string, TensorSpec>> ins = {
      {"X", ctx.in("X")}, {"shape", TensorSpec{ctx.in("X").dtype, ctx.attr_ints("shape")}}};
  for (int64_t d : ctx.attr_ints("shape"))
    if (d < 1)
      ctx.fail("shape {} has a dimension below 1", shape_text(ctx.attr_ints("shape")));
  return broadcast_shapes(ctx, ins);
}

void emit_expand(OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  const std::vector<int64_t> shape = expand_shape(ctx);
  const int64_t rank = static_cast<int64_t>(shape.size());
  ctx.input("X");
  ctx.output("Y", x.dtype, shape);
  ctx.stmt(access("Y", index_names(rank)) + " = " +
           access("X", broadcast_indices(x, rank, shape)));
}

// The sum of dY over the dimensions X was broadcast along: those dimensions get an
// index z<d> of extent 1 on the left, and the output's index becomes a reduction.
void emit_expand_grad(OpContext& ctx) {
  require_grad_dtype(ctx);
  const TensorSpec& x = ctx.in("X");
  const std::vector<int64_t> shape = expand_shape(ctx);
  require_dy_shape(ctx, shape);
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t off = rank - rank_of(x);
  std::vector<std::string> lhs;
  bool reduces = off > 0;
  for (int64_t d = 0; d < rank_of(x); ++d) {
    if (x.shape[d] == 1 && shape[off + d] != 1) {
      lhs.push_back("z" + std::to_string(off + d));
      reduces = true;
    } else {
      lhs.push_back("i" + std::to_string(off + d));
    }
  }
  ctx.input("dY");
  ctx.output("dX", x.dtype, x.shape);
  ctx.stmt(access("dX", lhs) + (reduces ? " += " : " = ") + access("dY", index_names(rank)));
}

std::vector<int64_t> tile_repeats(const OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  const std::vector<int64_t> reps = ctx.attr_ints("repeats");
  if (static_cast<int64_t>(reps.size()) != rank_of(x))
    ctx.fail("repeats {} has {} entries but X has rank {}", shape_text(reps), reps.size(),
             rank_of(x));
  for (int64_t r : reps)
    if (r < 1)
      ctx.fail("repeats {}: every entry must be at least 1", shape_text(reps));
  return reps;
}

void emit_tile(OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  const std::vector<int64_t> reps = tile_repeats(ctx);
  const std::vector<std::string> idx = index_names(rank_of(x));
  std::vector<int64_t> shape;
  std::vector<std::string> in;
  for (size_t d = 0; d < reps.size(); ++d) {
    shape.push_back(x.shape[d] * reps[d]);
    in.push_back(reps[d] == 1 ? idx[d] : idx[d] + " % " + std::to_string(x.shape[d]));
  }
  ctx.input("X");
  ctx.output("Y", x.dtype, shape);
  ctx.stmt(access("Y", idx) + " = " + access("X", in));
}

// dX sums the repeats: dY is first copied into a local that splits each repeated
// dimension into (repeat, element), then summed over the repeat indices.
void emit_tile_grad(OpContext& ctx) {
  require_grad_dtype(ctx);
  const TensorSpec& x = ctx.in("X");
  const std::vector<int64_t> reps = tile_repeats(ctx);
  std::vector<int64_t> yshape, split_shape;
  std::vector<std::string> split_idx, dy_idx;
  for (size_t d = 0; d < reps.size(); ++d) {
    const std::string i = "i" + std::to_string(d), r = "r" + std::to_string(d);
    yshape.push_back(x.shape[d] * reps[d]);
    if (reps[d] == 1) {
      split_shape.push_back(x.shape[d]);
      split_idx.push_back(i);
      dy_idx.push_back(i);
    } else {
      split_shape.push_back(reps[d]);
      split_shape.push_back(x.shape[d]);
      split_idx.push_back(r);
      split_idx.push_back(i);
      dy_idx.push_back(r + " * " + std::to_string(x.shape[d]) + " + " + i);
    }
  }
  require_dy_shape(ctx, yshape);
  ctx.input("dY");
  ctx.output("dX", x.dtype, x.shape);
  const std::vector<std::string> idx = index_names(rank_of(x));
  if (split_shape == x.shape) {
    ctx.stmt(access("dX", idx) + " = " + access("dY", idx));
    return;
  }
  ctx.local("parts", x.dtype, split_shape);
  ctx.stmt(access("parts", split_idx) + " = " + access("dY", dy_idx));
  ctx.stmt(access("dX", idx) + " += " + access("parts", split_idx));
}

void emit_flip_into(OpContext& ctx, const std::string& from, const std::string& to) {
  const TensorSpec& x = ctx.in(from);
  const std::vector<int64_t> axes = ctx.axes(ctx.attr_ints("axes"), rank_of(x), true);
  const std::vector<std::string> idx = index_names(rank_of(x));
  std::vector<std::string> in = idx;
  for (int64_t a : axes)
    if (x.shape[a] > 1)
      in[a] = std::to_string(x.shape[a] - 1) + " - " + idx[a];
  ctx.input(from);
  ctx.output(to, x.dtype, x.shape);
  ctx.stmt(access(to, idx) + " = " + access(from, in));
}

void emit_flip_grad(OpContext& ctx) {
  require_grad_dtype(ctx);
  require_dy_shape(ctx, ctx.in("X").shape);
  emit_flip_into(ctx, "dY", "dX");
}

// --- pad ------------------------------------------------------------------------------

enum class PadMode : uint8_t { Constant, Reflect, Edge };

struct PadSpec {
  PadMode mode = PadMode::Constant;
  std::vector<int64_t> before, after; // per dimension of X (0 where not padded)
  std::vector<int64_t> out_shape;
};

PadSpec pad_spec(const OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  const int64_t rank = rank_of(x);
  PadSpec p;
  const std::string mode = ctx.attr_string("mode");
  if (mode == "constant")
    p.mode = PadMode::Constant;
  else if (mode == "reflect")
    p.mode = PadMode::Reflect;
  else if (mode == "edge")
    p.mode = PadMode::Edge;
  else
    ctx.fail("mode '{}' is not one of constant, reflect, edge", mode);
  const std::vector<int64_t> pads = ctx.attr_ints("pads");
  std::vector<int64_t> axes;
  if (ctx.attr_ints("axes").empty())
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  else
    for (int64_t a : ctx.attr_ints("axes"))
      axes.push_back(ctx.axis(a, rank));
  if (pads.size() != 2 * axes.size())
    ctx.fail("pads {} must have 2 x {} entries (all begins, then all ends, ONNX order)",
             shape_text(pads), axes.size());
  p.before.assign(rank, 0);
  p.after.assign(rank, 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    p.before[axes[k]] = pads[k];
    p.after[axes[k]] = pads[k + axes.size()];
  }
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t n = x.shape[d];
    p.out_shape.push_back(n + p.before[d] + p.after[d]);
    if (p.out_shape[d] < 1)
      ctx.fail("pads {} leave nothing of axis {} (size {})", shape_text(pads), d, n);
    if (p.mode == PadMode::Reflect && (p.before[d] >= n || p.after[d] >= n))
      ctx.fail("reflect padding of axis {} by {} and {} needs both below its size {}", d,
               p.before[d], p.after[d], n);
  }
  return p;
}

// For reflect and edge: an i64 table per padded axis mapping the output index to the
// element it copies. Returns the index of each dimension of X in the output nest.
std::vector<std::string> pad_source_indices(OpContext& ctx, const PadSpec& p, bool& guarded) {
  const TensorSpec& x = ctx.in("X");
  const std::vector<std::string> idx = index_names(rank_of(x));
  std::vector<std::string> in = idx;
  guarded = false;
  for (int64_t d = 0; d < rank_of(x); ++d) {
    if (p.before[d] == 0 && p.after[d] == 0)
      continue;
    const int64_t n = x.shape[d], b = p.before[d];
    const std::string t = b == 0 ? "j" : "(j - " + std::to_string(b) + ")";
    if (p.mode == PadMode::Constant) {
      // `i + 0`, not a bare `i`: a bare index would tie Y's extent to X's.
      in[d] = b == 0 ? idx[d] + " + 0" : idx[d] + " - " + std::to_string(b);
      guarded |= p.before[d] > 0 || p.after[d] > 0;
      continue;
    }
    const std::string table = "src" + std::to_string(d);
    ctx.local(table, DType::I64, {p.out_shape[d]});
    if (p.mode == PadMode::Edge)
      ctx.stmt(table + "[j] = min(max(" + t + ", 0), " + std::to_string(n - 1) + ")");
    else
      ctx.stmt(table + "[j] = " + t + " < 0 ? -" + t + " : (" + t + " > " +
               std::to_string(n - 1) + " ? " + std::to_string(2 * (n - 1)) + " - " + t + " : " +
               t + ")");
    in[d] = table + "[" + idx[d] + "]";
  }
  return in;
}

std::string pad_value_literal(const OpContext& ctx, DType t) {
  const double v = ctx.attr_float("value");
  if (t == DType::Bool)
    return v != 0 ? "true" : "false";
  if (is_integer(t)) {
    if (v != static_cast<double>(static_cast<int64_t>(v)))
      ctx.fail("value {} is not a whole number, but X is {}", v, dtype_text(t));
    return "(" + std::to_string(static_cast<int64_t>(v)) + ")";
  }
  return float_literal(v);
}

void emit_pad(OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  const PadSpec p = pad_spec(ctx);
  ctx.input("X");
  ctx.output("Y", x.dtype, p.out_shape);
  bool guarded = false;
  const std::vector<std::string> in = pad_source_indices(ctx, p, guarded);
  std::string value = access("X", in);
  if (guarded)
    value += " ?? " + pad_value_literal(ctx, x.dtype);
  ctx.stmt(access("Y", index_names(rank_of(x))) + " = " + value);
}

// Constant mode: dX is dY at the shifted position. Reflect and edge: several outputs
// copy one element, so dY is scatter-added through the same index tables.
void emit_pad_grad(OpContext& ctx) {
  require_grad_dtype(ctx);
  ctx.require_float("X");
  const TensorSpec& x = ctx.in("X");
  const PadSpec p = pad_spec(ctx);
  require_dy_shape(ctx, p.out_shape);
  ctx.input("dY");
  ctx.output("dX", x.dtype, x.shape);
  const int64_t rank = rank_of(x);
  if (p.mode == PadMode::Constant) {
    const std::vector<std::string> idx = index_names(rank);
    std::vector<std::string> in = idx;
    bool guarded = false;
    for (int64_t d = 0; d < rank; ++d)
      if (p.before[d] != 0) {
        in[d] = idx[d] + (p.before[d] > 0 ? " + " : " - ") + std::to_string(std::abs(p.before[d]));
        guarded |= p.before[d] < 0 || p.after[d] < 0;
      } else if (p.after[d] != 0) {
        in[d] = idx[d] + " + 0"; // dY is longer or shorter: a bare index would tie their extents
        guarded |= p.after[d] < 0;
      }
    ctx.stmt(access("dX", idx) + " = " + maybe_guarded(access("dY", in), guarded, x.dtype));
    return;
  }
  ctx.stmt(access("dX", index_names(rank, "k")) + " = 0");
  bool unused = false;
  const std::vector<std::string> to = pad_source_indices(ctx, p, unused);
  ctx.stmt(access("dX", to) + " += " + access("dY", index_names(rank)));
}

// --- masks, space/depth, cast, range ------------------------------------------------------

// triu keeps j - i >= k of the last two axes, tril j - i <= k.
void emit_triangle_into(OpContext& ctx, const std::string& from, const std::string& to,
                        bool upper) {
  const TensorSpec& x = ctx.in(from);
  if (rank_of(x) < 2)
    ctx.fail("input '{}' must have rank 2 or more (the last two axes are the matrix), got {}",
             from, shape_text(x.shape));
  const int64_t k = ctx.attr_int("k"), r = rank_of(x);
  const std::vector<std::string> idx = index_names(r);
  const std::string diff = idx[r - 1] + " - " + idx[r - 2];
  const std::string keep = diff + (upper ? " >= " : " <= ") + "(" + std::to_string(k) + ")";
  ctx.input(from);
  ctx.output(to, x.dtype, x.shape);
  ctx.stmt(access(to, idx) + " = " + keep + " ? " + access(from, idx) + " : " + zero_of(x.dtype));
}

struct BlockSpec {
  int64_t b;
  bool crd;
};

BlockSpec block_spec(const OpContext& ctx, const std::string& port, bool has_mode) {
  ctx.require_rank(port, 4);
  const int64_t b = ctx.attr_int("blocksize");
  if (b < 1)
    ctx.fail("blocksize {} must be at least 1", b);
  bool crd = false;
  if (has_mode) {
    const std::string mode = ctx.attr_string("mode");
    if (mode != "DCR" && mode != "CRD")
      ctx.fail("mode '{}' is not DCR or CRD", mode);
    crd = mode == "CRD";
  }
  return {b, crd};
}

// [N, C, H, W] -> [N, C / b^2, H b, W b]. The channel read is (bh, bw, c) in DCR
// order, (c, bh, bw) in CRD order.
void emit_depth_to_space_into(OpContext& ctx, const std::string& from, const std::string& to,
                              BlockSpec s) {
  const TensorSpec& x = ctx.in(from);
  const int64_t b = s.b, bb = b * b;
  if (x.shape[1] % bb != 0)
    ctx.fail("'{}' has {} channels, not a multiple of blocksize^2 = {}", from, x.shape[1], bb);
  const int64_t c = x.shape[1] / bb;
  const std::string B = std::to_string(b);
  const std::string bh = "(i2 % " + B + ")", bw = "(i3 % " + B + ")";
  const std::string ch = s.crd ? "i1 * " + std::to_string(bb) + " + " + bh + " * " + B + " + " + bw
                               : bh + " * " + std::to_string(b * c) + " + " + bw + " * " +
                                     std::to_string(c) + " + i1";
  ctx.input(from);
  ctx.output(to, x.dtype, {x.shape[0], c, x.shape[2] * b, x.shape[3] * b});
  ctx.stmt(access(to, index_names(4)) + " = " +
           access(from, {"i0", ch, "i2 // " + B, "i3 // " + B}));
}

// [N, C, H, W] -> [N, C b^2, H / b, W / b], the inverse of depth_to_space in the same
// mode.
void emit_space_to_depth_into(OpContext& ctx, const std::string& from, const std::string& to,
                              BlockSpec s) {
  const TensorSpec& x = ctx.in(from);
  const int64_t b = s.b, bb = b * b, c = x.shape[1];
  if (x.shape[2] % b != 0 || x.shape[3] % b != 0)
    ctx.fail("'{}' {}: height and width must be multiples of blocksize {}", from,
             shape_text(x.shape), b);
  const std::string B = std::to_string(b);
  std::string ch, bh, bw;
  if (s.crd) { // channel k = c * b^2 + bh * b + bw
    ch = "i1 // " + std::to_string(bb);
    bh = "i1 // " + B + " % " + B;
    bw = "i1 % " + B;
  } else { // channel k = (bh * b + bw) * C + c
    ch = "i1 % " + std::to_string(c);
    bh = "i1 // " + std::to_string(c * b);
    bw = "i1 // " + std::to_string(c) + " % " + B;
  }
  if (c == 1 && !s.crd) {
    ch = "0";
    bh = "i1 // " + B;
    bw = "i1 % " + B;
  }
  ctx.input(from);
  ctx.output(to, x.dtype, {x.shape[0], c * bb, x.shape[2] / b, x.shape[3] / b});
  ctx.stmt(access(to, index_names(4)) + " = " +
           access(from, {"i0", ch, "i2 * " + B + " + " + bh, "i3 * " + B + " + " + bw}));
}

DType dtype_attr(const OpContext& ctx, const std::string& name) {
  const std::string text = ctx.attr_string(name);
  if (auto d = parse_dtype(text))
    return *d;
  ctx.fail("attribute '{}': unknown dtype '{}' (f16, bf16, f32, f64, i8, i16, i32, i64, u8, "
           "bool)",
           name, text);
}

// A value of dtype `from` converted to `to`: numbers with a cast (floats to integers
// truncate toward zero and saturate), to bool as x != 0, from bool as 0/1.
std::string convert(const std::string& v, DType from, DType to) {
  if (from == to)
    return v;
  if (to == DType::Bool)
    return v + " != 0";
  if (from == DType::Bool)
    return v + " ? " + dtype_text(to) + "(1) : " + dtype_text(to) + "(0)";
  return dtype_text(to) + "(" + v + ")";
}

void emit_cast(OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  const DType to = dtype_attr(ctx, "to");
  const std::vector<std::string> idx = index_names(rank_of(x));
  ctx.input("X");
  ctx.output("Y", to, x.shape);
  ctx.stmt(access("Y", idx) + " = " + convert(access("X", idx), x.dtype, to));
}

void emit_cast_grad(OpContext& ctx) {
  ctx.require_float("X");
  ctx.require_float("dY");
  const TensorSpec& x = ctx.in("X");
  require_dy_shape(ctx, x.shape);
  const std::vector<std::string> idx = index_names(rank_of(x));
  ctx.input("dY");
  ctx.output("dX", x.dtype, x.shape);
  ctx.stmt(access("dX", idx) + " = " + convert(access("dY", idx), ctx.in("dY").dtype, x.dtype));
}

// Y[i] = start + i * delta, ceil((limit - start) / delta) elements, computed in f64 (or
// exactly in i64 for integer dtypes) and stored in `dtype`.
void emit_range(OpContext& ctx) {
  const double start = ctx.attr_float("start"), limit = ctx.attr_float("limit"),
               delta = ctx.attr_float("delta");
  const DType t = dtype_attr(ctx, "dtype");
  if (t == DType::Bool)
    ctx.fail("dtype bool has no range");
  if (delta == 0)
    ctx.fail("delta must not be 0");
  const double count = std::ceil((limit - start) / delta);
  if (!(count >= 1))
    ctx.fail("start {}, limit {}, delta {} give no elements (tensors have no zero-sized "
             "dimensions)",
             start, limit, delta);
  if (count > 1e12)
    ctx.fail("start {}, limit {}, delta {} give {} elements", start, limit, delta, count);
  std::string value;
  if (is_integer(t)) {
    for (double v : {start, delta})
      if (v != std::floor(v))
        ctx.fail("dtype {} needs whole start and delta, got {} and {}", dtype_text(t), start,
                 delta);
    value = "i64(i0) * (" + std::to_string(static_cast<int64_t>(delta)) + ") + (" +
            std::to_string(static_cast<int64_t>(start)) + ")";
  } else {
    value = "f64(i0) * " + float_literal(delta) + " + " + float_literal(start);
  }
  ctx.output("Y", t, {static_cast<int64_t>(count)});
  ctx.stmt("Y[i0] = " + dtype_text(t) + "(" + value + ")");
}

// --- the op table -----------------------------------------------------------------------

AttrSpec attr(const char* name, AttrKind kind, std::optional<AttrValue> def, const char* doc) {
  return {name, kind, std::move(def), doc};
}
AttrValue ints(std::vector<int64_t> v) { return AttrValue{std::move(v)}; }
AttrValue integer(int64_t v) { return AttrValue{v}; }

struct Adder {
  std::vector<OpDef>& ops;

  // A forward op and, when `grad` is set, its backward op `<name>_grad` taking the
  // forward op's inputs plus dY (or the given ports) and writing dX.
  void add(const std::string& name, const std::string& summary, std::vector<Port> inputs,
           std::vector<Port> outputs, std::vector<AttrSpec> attrs,
           std::function<void(OpContext&)> emit, std::function<void(OpContext&)> grad = {},
           std::vector<Port> grad_inputs = {}, std::vector<Port> grad_outputs = {}) {
    OpDef op;
    op.name = name;
    op.category = "data-movement";
    op.summary = summary;
    op.inputs = std::move(inputs);
    op.outputs = std::move(outputs);
    op.attrs = std::move(attrs);
    op.emit = std::move(emit);
    if (grad) {
      OpDef g;
      g.name = name + "_grad";
      g.category = "data-movement-backward";
      g.summary = "gradient of " + name;
      g.inputs = grad_inputs.empty() ? std::vector<Port>{{"X"}, {"dY"}} : std::move(grad_inputs);
      g.outputs = grad_outputs.empty() ? std::vector<Port>{{"dX"}} : std::move(grad_outputs);
      g.attrs = op.attrs;
      // The forward inputs are declared even where only their shapes matter, so the
      // backward op takes exactly the tensors its ports name.
      std::vector<Port> forward_inputs = op.inputs;
      g.emit = [forward_inputs, grad = std::move(grad)](OpContext& ctx) {
        for (const Port& p : forward_inputs) {
          if (p.variadic)
            for (const std::string& name : ctx.variadic(p.name))
              ctx.input(name);
          else if (ctx.has(p.name) || !p.optional)
            ctx.input(p.name);
        }
        grad(ctx);
      };
      op.gradient = g.name;
      ops.push_back(std::move(g));
    }
    ops.push_back(std::move(op));
  }
};

} // namespace

void add_data_movement_ops(std::vector<OpDef>& ops) {
  Adder a{ops};
  const AttrSpec axis0 = attr("axis", AttrKind::Int, integer(0), "the axis, negative from the end");

  auto reshape_like = [&](const std::string& name, const std::string& summary,
                          std::vector<AttrSpec> attrs,
                          std::vector<int64_t> (*target)(const OpContext&)) {
    a.add(
        name, summary, {{"X"}}, {{"Y"}}, std::move(attrs),
        [target](OpContext& ctx) { emit_row_major_copy(ctx, "X", "Y", target(ctx)); },
        [target](OpContext& ctx) {
          require_dy_shape(ctx, target(ctx));
          emit_reshape_back(ctx);
        });
  };
  reshape_like("reshape", "the same elements in another shape (0 copies a dimension, -1 is inferred)",
               {attr("shape", AttrKind::Ints, std::nullopt, "the new shape; 0 copies X's, -1 inferred")},
               reshape_target);
  reshape_like("flatten", "to 2-D: the axes before `axis`, and the rest",
               {attr("axis", AttrKind::Int, integer(1), "first axis of the second dimension")},
               flatten_target);
  reshape_like("squeeze", "drop axes of size 1",
               {attr("axes", AttrKind::Ints, ints({}), "axes to drop (each of size 1); empty: every size-1 axis")},
               squeeze_target);
  reshape_like("unsqueeze", "insert axes of size 1",
               {attr("axes", AttrKind::Ints, std::nullopt, "positions of the new axes in the output")},
               unsqueeze_target);
  reshape_like("identity", "a copy of X", {},
               [](const OpContext& ctx) { return ctx.in("X").shape; });

  a.add("transpose", "permute the axes (default: reverse them)", {{"X"}}, {{"Y"}},
        {attr("perm", AttrKind::Ints, ints({}), "Y's axis k is X's axis perm[k]; empty: reversed")},
        emit_transpose, emit_transpose_grad);

  a.add("concat", "join X0, X1, ... along an axis", {{"X", PortKind::Data, false, true}}, {{"Y"}},
        {axis0}, emit_concat, emit_concat_grad,
        {{"X", PortKind::Data, false, true}, {"dY"}}, {{"dX", PortKind::Data, false, true}});

  a.add("split", "cut X along an axis into Y0, Y1, ... (sizes, or a number of equal pieces)",
        {{"X"}}, {{"Y", PortKind::Data, false, true}},
        {axis0, attr("split", AttrKind::Ints, ints({}), "the sizes of the pieces"),
         attr("num_outputs", AttrKind::Int, integer(0),
              "the number of equal pieces (the last smaller) when 'split' is empty")},
        emit_split, emit_split_grad, {{"X"}, {"dY", PortKind::Data, false, true}});

  a.add("slice", "elements start, start + step, ... before end, on some axes (ONNX clamping)",
        {{"X"}}, {{"Y"}},
        {attr("starts", AttrKind::Ints, std::nullopt, "first position per axis, negative from the end"),
         attr("ends", AttrKind::Ints, std::nullopt, "end (exclusive) per axis, negative from the end"),
         attr("axes", AttrKind::Ints, ints({}), "the axes sliced; empty: 0, 1, ..."),
         attr("steps", AttrKind::Ints, ints({}), "step per axis (negative runs backward); empty: 1s")},
        emit_slice, emit_slice_grad);

  a.add("expand", "broadcast X to a shape (NumPy rules, both ways)", {{"X"}}, {{"Y"}},
        {attr("shape", AttrKind::Ints, std::nullopt, "the shape X is broadcast with")},
        emit_expand, emit_expand_grad);

  a.add("tile", "repeat X along every axis", {{"X"}}, {{"Y"}},
        {attr("repeats", AttrKind::Ints, std::nullopt, "copies along each axis")}, emit_tile,
        emit_tile_grad);

  a.add("flip", "reverse the order of elements along axes", {{"X"}}, {{"Y"}},
        {attr("axes", AttrKind::Ints, ints({}), "axes to reverse; empty: all")},
        [](OpContext& ctx) { emit_flip_into(ctx, "X", "Y"); }, emit_flip_grad);

  a.add("pad", "pad with a constant, a reflection or the edge value (ONNX pads order)", {{"X"}},
        {{"Y"}},
        {attr("pads", AttrKind::Ints, std::nullopt,
              "begins of every padded axis, then ends; negative crops"),
         attr("mode", AttrKind::String, AttrValue{std::string("constant")}, "constant, reflect or edge"),
         attr("value", AttrKind::Float, AttrValue{0.0}, "the constant mode's value"),
         attr("axes", AttrKind::Ints, ints({}), "the axes pads refers to; empty: all")},
        emit_pad, emit_pad_grad);

  for (bool upper : {true, false}) {
    const std::string name = upper ? "triu" : "tril";
    a.add(name,
          upper ? "keep the upper triangle (j - i >= k) of the last two axes, zero the rest"
                : "keep the lower triangle (j - i <= k) of the last two axes, zero the rest",
          {{"X"}}, {{"Y"}}, {attr("k", AttrKind::Int, integer(0), "the diagonal (0 main, >0 above)")},
          [upper](OpContext& ctx) { emit_triangle_into(ctx, "X", "Y", upper); },
          [upper](OpContext& ctx) {
            require_grad_dtype(ctx);
            require_dy_shape(ctx, ctx.in("X").shape);
            emit_triangle_into(ctx, "dY", "dX", upper);
          });
  }

  const AttrSpec blocksize = attr("blocksize", AttrKind::Int, std::nullopt, "the block's side");
  const AttrSpec mode = attr("mode", AttrKind::String, AttrValue{std::string("DCR")},
                             "channel order: DCR (depth, column, row) or CRD");
  a.add("depth_to_space", "[N, C, H, W] -> [N, C/b^2, H b, W b] (DCR or CRD)", {{"X"}}, {{"Y"}},
        {blocksize, mode},
        [](OpContext& ctx) { emit_depth_to_space_into(ctx, "X", "Y", block_spec(ctx, "X", true)); },
        [](OpContext& ctx) {
          require_grad_dtype(ctx);
          const BlockSpec s = block_spec(ctx, "X", true);
          const TensorSpec& x = ctx.in("X");
          if (x.shape[1] % (s.b * s.b) != 0)
            ctx.fail("X has {} channels, not a multiple of blocksize^2", x.shape[1]);
          require_dy_shape(ctx, {x.shape[0], x.shape[1] / (s.b * s.b), x.shape[2] * s.b,
                                 x.shape[3] * s.b});
          emit_space_to_depth_into(ctx, "dY", "dX", s);
        });
  a.add("space_to_depth", "[N, C, H, W] -> [N, C b^2, H/b, W/b] (DCR order)", {{"X"}}, {{"Y"}},
        {blocksize},
        [](OpContext& ctx) { emit_space_to_depth_into(ctx, "X", "Y", block_spec(ctx, "X", false)); },
        [](OpContext& ctx) {
          require_grad_dtype(ctx);
          const BlockSpec s = block_spec(ctx, "X", false);
          const TensorSpec& x = ctx.in("X");
          if (x.shape[2] % s.b != 0 || x.shape[3] % s.b != 0)
            ctx.fail("X {}: height and width must be multiples of blocksize", shape_text(x.shape));
          require_dy_shape(ctx, {x.shape[0], x.shape[1] * s.b * s.b, x.shape[2] / s.b,
                                 x.shape[3] / s.b});
          emit_depth_to_space_into(ctx, "dY", "dX", s);
        });

  a.add("cast", "convert to another dtype (floats to integers truncate and saturate)", {{"X"}},
        {{"Y"}}, {attr("to", AttrKind::String, std::nullopt, "the dtype: f16, bf16, f32, f64, i8, i16, i32, i64, u8, bool")},
        emit_cast, emit_cast_grad);

  a.add("range", "start, start + delta, ... before limit", {}, {{"Y"}},
        {attr("start", AttrKind::Float, AttrValue{0.0}, "the first value"),
         attr("limit", AttrKind::Float, std::nullopt, "the end (exclusive)"),
         attr("delta", AttrKind::Float, AttrValue{1.0}, "the step (not 0)"),
         attr("dtype", AttrKind::String, AttrValue{std::string("f32")}, "the output's dtype")},
        emit_range);
}

} // namespace unitile::ops
