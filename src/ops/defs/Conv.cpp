// Convolution and transposed convolution in NCHW-style layout for any number of spatial
// dimensions (conv 1-D, 2-D, 3-D, ...), with groups, strides, pads, dilations and an
// optional bias, and their backward ops.
//
// Everything is written with three comprehension forms over one window geometry:
//   direct     out[n, o, y..] += in[n, ch(o, c), y*s + k*dil - pad] * wt[o, c, k..]
//   transposed out[n, i, h..] += in[n, ch(i, m), (h + pad - k*dil) / s] * wt[ch(i, m), i % Ig, k..]
//                               (only where the division is exact)
//   weight     dw[o, c, k..]  += g[n, o, y..] * in[n, ch(o, c), y*s + k*dil - pad]
// conv is `direct`; its input gradient is `transposed` over dY and its weight gradient is
// `weight`. conv_transpose is `transposed` over X; its input gradient is `direct` over
// dY and its weight gradient is `weight` with the roles of X and dY swapped. Reads that
// can fall into the padding are guarded (`?? 0`); the others are plain.
#include "ops/defs/Families.h"
#include "ops/defs/Window.h"

namespace unitile::ops {
namespace {

std::vector<int64_t> spatial(const std::vector<int64_t>& shape) {
  return {shape.begin() + 2, shape.end()};
}

std::vector<std::string> names(const std::string& prefix, int64_t rank) {
  return index_names(rank, prefix);
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The input channel read for output channel `o` and in-group channel `c`.
std::string group_channel(const std::string& o, const std::string& c, int64_t out_per_group,
                          int64_t in_per_group, int64_t group) {
  if (group == 1)
    return c;
  return fmt::format("({} // {}) * {} + {}", o, out_per_group, in_per_group, c);
}

// out[n, o, y..] (+)= this: the direct form. `wt` is [out channels, in_per_group, k..].
std::string direct_rhs(const Window& w, const std::string& in, const std::vector<int64_t>& in_sp,
                       const std::string& wt, int64_t out_per_group, int64_t in_per_group,
                       int64_t group, const std::vector<int64_t>& out_sp) {
  std::vector<std::string> idx = {"n", group_channel("o", "c", out_per_group, in_per_group, group)};
  bool guard = false;
  for (int64_t d = 0; d < w.rank; ++d) {
    auto [text, g] = forward_index(w, d, "y" + std::to_string(d), "k" + std::to_string(d),
                                   out_sp[d], in_sp[d]);
    idx.push_back(text);
    guard = guard || g;
  }
  return guarded(in, idx, guard, "0") + " * " +
         access(wt, concat({"o", "c"}, names("k", w.rank)));
}

// out[n, i, h..] += this: the transposed form. `in` has `in_per_group * group` channels
// (per group `in_per_group`, the range of m), `wt` is [in channels, out_per_group, k..].
// With several groups, the in-group channel m gets its range from the local `gm`.
std::string transposed_rhs(OpContext& ctx, const Window& w, const std::string& in,
                           const std::vector<int64_t>& in_sp, const std::string& wt,
                           int64_t out_per_group, int64_t in_per_group, int64_t group,
                           const std::vector<int64_t>& out_sp) {
  const std::string ch = group_channel("i", "m", out_per_group, in_per_group, group);
  std::vector<std::string> idx = {"n", ch}, conds;
  bool guard = false;
  for (int64_t d = 0; d < w.rank; ++d) {
    BackIndex b = backward_index(w, d, "h" + std::to_string(d), "k" + std::to_string(d),
                                 out_sp[d], in_sp[d]);
    idx.push_back(b.index);
    conds.push_back(b.exact);
    guard = guard || b.needs_guard;
  }
  if (group > 1) {
    ctx.local("gm", DType::Bool, {in_per_group});
    ctx.stmt("gm[m] = true");
    conds.insert(conds.begin(), "gm[m]");
  }
  const std::string wch = group == 1 ? "i" : fmt::format("i % {}", out_per_group);
  const std::string prod = guarded(in, idx, guard, "0") + " * " +
                           access(wt, concat({ch, wch}, names("k", w.rank)));
  const std::string cond = conjunction(conds);
  return cond.empty() ? prod : cond + " ? " + prod + " : 0";
}

// dw[o, c, k..] += this: the weight-gradient form. `g` is [N, o channels, y..] and `in`
// is read at the window of each y.
std::string weight_rhs(const Window& w, const std::string& g, const std::vector<int64_t>& g_sp,
                       const std::string& in, const std::vector<int64_t>& in_sp,
                       int64_t out_per_group, int64_t in_per_group, int64_t group) {
  std::vector<std::string> idx = {"n", group_channel("o", "c", out_per_group, in_per_group, group)};
  bool guard = false;
  for (int64_t d = 0; d < w.rank; ++d) {
    auto [text, gd] = forward_index(w, d, "y" + std::to_string(d), "k" + std::to_string(d),
                                    g_sp[d], in_sp[d]);
    idx.push_back(text);
    guard = guard || gd;
  }
  return access(g, concat({"n", "o"}, names("y", w.rank))) + " * " + guarded(in, idx, guard, "0");
}

// The checked shapes of a conv or conv_transpose instance.
struct ConvShape {
  int64_t batch = 0, in_ch = 0, out_ch = 0, group = 1;
  std::vector<int64_t> in_sp, out_sp, kernel;
  Window w;
};

void check_common(const OpContext& ctx, ConvShape& s) {
  ctx.require_float("X");
  ctx.require_same_dtype({"X", "W", "B", "dY"});
  const TensorSpec& x = ctx.in("X");
  const TensorSpec& wt = ctx.in("W");
  if (x.shape.size() < 3)
    ctx.fail("input 'X' must be [N, C, spatial...] with at least one spatial dimension, got "
             "shape {}",
             shape_text(x.shape));
  if (wt.shape.size() != x.shape.size())
    ctx.fail("input 'W' has shape {} but X has shape {}: W must have X's rank ({})",
             shape_text(wt.shape), shape_text(x.shape), x.shape.size());
  s.batch = x.shape[0];
  s.in_ch = x.shape[1];
  s.in_sp = spatial(x.shape);
  s.kernel = spatial(wt.shape);
  s.group = ctx.attr_int("group");
  if (s.group < 1)
    ctx.fail("attribute 'group' must be at least 1, got {}", s.group);
  std::vector<int64_t> ks = ctx.attr_ints("kernel_shape");
  if (!ks.empty() && ks != s.kernel)
    ctx.fail("attribute 'kernel_shape' = {} does not match W's spatial shape {}",
             attr_value_text(AttrValue{ks}), shape_text(s.kernel));
  if (s.in_ch % s.group != 0)
    ctx.fail("X has {} channels, which the {} groups do not divide", s.in_ch, s.group);
}

ConvShape conv_shape(const OpContext& ctx) {
  ConvShape s;
  check_common(ctx, s);
  const TensorSpec& wt = ctx.in("W");
  s.out_ch = wt.shape[0];
  if (wt.shape[1] * s.group != s.in_ch)
    ctx.fail("W has shape {}: with {} channels in X and group {}, W's dimension 1 must be {}",
             shape_text(wt.shape), s.in_ch, s.group, s.in_ch / s.group);
  if (s.out_ch % s.group != 0)
    ctx.fail("W has {} output channels, which the {} groups do not divide", s.out_ch, s.group);
  s.w = read_window(ctx, s.kernel, s.in_sp, true, true);
  for (int64_t d = 0; d < s.w.rank; ++d)
    s.out_sp.push_back(window_out_extent(ctx, s.w, d, s.in_sp[d], false));
  return s;
}

ConvShape conv_transpose_shape(const OpContext& ctx) {
  ConvShape s;
  check_common(ctx, s);
  const TensorSpec& wt = ctx.in("W");
  if (wt.shape[0] != s.in_ch)
    ctx.fail("W has shape {}: its dimension 0 must be X's {} channels", shape_text(wt.shape),
             s.in_ch);
  s.out_ch = wt.shape[1] * s.group;
  s.w = read_window(ctx, s.kernel, s.in_sp, true, false);
  const std::vector<int64_t> op = spatial_attr(ctx, "output_padding", s.w.rank, 0, 0);
  for (int64_t d = 0; d < s.w.rank; ++d) {
    if (op[d] >= s.w.strides[d] && op[d] >= s.w.dilations[d])
      ctx.fail("output_padding {} in spatial dimension {} must be smaller than the stride ({}) "
               "or the dilation ({})",
               op[d], d, s.w.strides[d], s.w.dilations[d]);
    const int64_t out = s.w.strides[d] * (s.in_sp[d] - 1) + op[d] + s.w.span(d) -
                        s.w.pads_begin[d] - s.w.pads_end[d];
    if (out < 1)
      ctx.fail("spatial dimension {}: the pads ({} + {}) leave an output of extent {}", d,
               s.w.pads_begin[d], s.w.pads_end[d], out);
    s.out_sp.push_back(out);
  }
  return s;
}

void check_bias(const OpContext& ctx, int64_t out_ch) {
  if (ctx.has("B") && ctx.in("B").shape != std::vector<int64_t>{out_ch})
    ctx.fail("input 'B' has shape {} but must be [{}] (one value per output channel)",
             shape_text(ctx.in("B").shape), out_ch);
}

void check_dy(const OpContext& ctx, const std::vector<int64_t>& want) {
  if (ctx.in("dY").shape != want)
    ctx.fail("dY has shape {} but the forward op's output has shape {}",
             shape_text(ctx.in("dY").shape), shape_text(want));
}

// Y = rhs summed over the reduction indices, plus B[channel] when there is a bias.
void write_output(OpContext& ctx, const std::vector<int64_t>& shape, const std::string& ch,
                  const std::vector<std::string>& lhs, const std::string& rhs) {
  const DType dt = ctx.in("X").dtype;
  ctx.output("Y", dt, shape);
  if (!ctx.has("B")) {
    ctx.stmt(access("Y", lhs) + " += " + rhs);
    return;
  }
  ctx.input("B");
  ctx.local("acc", compute_type(dt), shape);
  ctx.stmt(access("acc", lhs) + " += " + rhs);
  const std::string sum = access("acc", lhs) + " + " + access("B", {ch});
  ctx.stmt(access("Y", lhs) + " = " + (compute_type(dt) == dt ? sum : dtype_text(dt) + "(" + sum + ")"));
}

// dB[o] = the sum of dY over the batch and every spatial position.
void write_bias_grad(OpContext& ctx, int64_t out_ch, int64_t rank) {
  ctx.output("dB", ctx.in("X").dtype, {out_ch});
  ctx.stmt("dB[o] += " + access("dY", concat({"n", "o"}, names("y", rank))));
}

void emit_conv(OpContext& ctx) {
  const ConvShape s = conv_shape(ctx);
  check_bias(ctx, s.out_ch);
  ctx.input("X");
  ctx.input("W");
  const std::string rhs = direct_rhs(s.w, "X", s.in_sp, "W", s.out_ch / s.group,
                                     s.in_ch / s.group, s.group, s.out_sp);
  std::vector<int64_t> shape = {s.batch, s.out_ch};
  shape.insert(shape.end(), s.out_sp.begin(), s.out_sp.end());
  write_output(ctx, shape, "o", concat({"n", "o"}, names("y", s.w.rank)), rhs);
}

void emit_conv_grad(OpContext& ctx) {
  const ConvShape s = conv_shape(ctx);
  std::vector<int64_t> y_shape = {s.batch, s.out_ch};
  y_shape.insert(y_shape.end(), s.out_sp.begin(), s.out_sp.end());
  check_dy(ctx, y_shape);
  ctx.input("X");
  ctx.input("W");
  ctx.input("dY");
  const DType dt = ctx.in("X").dtype;
  const int64_t opg = s.out_ch / s.group, ipg = s.in_ch / s.group;
  ctx.output("dX", dt, ctx.in("X").shape);
  ctx.stmt(access("dX", concat({"n", "i"}, names("h", s.w.rank))) + " += " +
           transposed_rhs(ctx, s.w, "dY", s.out_sp, "W", ipg, opg, s.group, s.in_sp));
  ctx.output("dW", dt, ctx.in("W").shape);
  ctx.stmt(access("dW", concat({"o", "c"}, names("k", s.w.rank))) + " += " +
           weight_rhs(s.w, "dY", s.out_sp, "X", s.in_sp, opg, ipg, s.group));
  write_bias_grad(ctx, s.out_ch, s.w.rank);
}

void emit_conv_transpose(OpContext& ctx) {
  const ConvShape s = conv_transpose_shape(ctx);
  check_bias(ctx, s.out_ch);
  ctx.input("X");
  ctx.input("W");
  const std::string rhs = transposed_rhs(ctx, s.w, "X", s.in_sp, "W", s.out_ch / s.group,
                                         s.in_ch / s.group, s.group, s.out_sp);
  std::vector<int64_t> shape = {s.batch, s.out_ch};
  shape.insert(shape.end(), s.out_sp.begin(), s.out_sp.end());
  write_output(ctx, shape, "i", concat({"n", "i"}, names("h", s.w.rank)), rhs);
}

void emit_conv_transpose_grad(OpContext& ctx) {
  const ConvShape s = conv_transpose_shape(ctx);
  std::vector<int64_t> y_shape = {s.batch, s.out_ch};
  y_shape.insert(y_shape.end(), s.out_sp.begin(), s.out_sp.end());
  check_dy(ctx, y_shape);
  ctx.input("X");
  ctx.input("W");
  ctx.input("dY");
  const DType dt = ctx.in("X").dtype;
  const int64_t cpg = s.in_ch / s.group, mpg = s.out_ch / s.group;
  // The forward op reads X[h] into Y[h*s + k*dil - pad]: the input gradient is the direct
  // form over dY, and the weight gradient pairs X[h] with dY at that position.
  ctx.output("dX", dt, ctx.in("X").shape);
  ctx.stmt(access("dX", concat({"n", "o"}, names("y", s.w.rank))) + " += " +
           direct_rhs(s.w, "dY", s.out_sp, "W", cpg, mpg, s.group, s.in_sp));
  ctx.output("dW", dt, ctx.in("W").shape);
  ctx.stmt(access("dW", concat({"o", "c"}, names("k", s.w.rank))) + " += " +
           weight_rhs(s.w, "X", s.in_sp, "dY", s.out_sp, cpg, mpg, s.group));
  write_bias_grad(ctx, s.out_ch, s.w.rank);
}

std::vector<AttrSpec> conv_attrs(bool transpose) {
  const AttrValue none{std::vector<int64_t>{}};
  std::vector<AttrSpec> a = {
      {"strides", AttrKind::Ints, none, "stride per spatial dimension; empty: all 1"},
      {"pads", AttrKind::Ints, none,
       "padding: begin of each spatial dimension, then end of each; empty: none"},
      {"dilations", AttrKind::Ints, none, "kernel dilation per spatial dimension; empty: all 1"},
      {"group", AttrKind::Int, AttrValue{int64_t{1}}, "number of channel groups"},
      {"kernel_shape", AttrKind::Ints, none, "optional; must match W's spatial shape"},
  };
  if (transpose)
    a.push_back({"output_padding", AttrKind::Ints, none,
                 "extra extent added at the end of each spatial output dimension"});
  else
    a.push_back({"auto_pad", AttrKind::String, AttrValue{std::string("NOTSET")},
                 "NOTSET (use pads), SAME_UPPER, SAME_LOWER or VALID"});
  return a;
}

} // namespace

void add_conv_ops(std::vector<OpDef>& ops) {
  for (bool transpose : {false, true}) {
    OpDef op;
    op.name = transpose ? "conv_transpose" : "conv";
    op.category = "convolution";
    op.summary = transpose ? "transposed convolution (N, C, spatial...), W [C, M/group, k...]"
                           : "convolution (N, C, spatial...), W [M, C/group, k...], bias B [M]";
    op.inputs = {{"X"}, {"W"}, {"B", PortKind::Data, true}};
    op.outputs = {{"Y"}};
    op.attrs = conv_attrs(transpose);
    op.emit = transpose ? emit_conv_transpose : emit_conv;
    OpDef g;
    g.name = op.name + "_grad";
    g.category = "convolution-backward";
    g.summary = "gradient of " + op.name + ": dX, dW and dB from X, W and dY";
    g.inputs = {{"X"}, {"W"}, {"dY"}};
    g.outputs = {{"dX"}, {"dW"}, {"dB"}};
    g.attrs = op.attrs;
    g.emit = transpose ? emit_conv_transpose_grad : emit_conv_grad;
    op.gradient = g.name;
    ops.push_back(std::move(op));
    ops.push_back(std::move(g));
  }
}

} // namespace unitile::ops
