// Convolution and transposed convolution in NCHW-style layout for any number of spatial
// dimensions (conv 1-D, 2-D, 3-D, ...), with groups, strides, pads, dilations and an
// optional bias, and their backward ops.
//
// Every form is written as GEMMs, so the auto-scheduler's register-blocked GEMM schedule
// does the arithmetic (a direct 7-deep reduction nest ran at 0.03x of PyTorch):
//   direct     col = im2col(in)                  [n, g, (c, k..), y]   (window reads, 0 in padding)
//              acc[n, g, o, y] += W[o, (c, k..)] * col            then out = acc (+ B)
//   transposed dcol[n, g, y, (m, k..)] += in[n, c, y] * W[c, (m, k..)]
//              out[n, m, h] = sum of dcol at the (y, k) with y*s + k*dil - pad = h (col2im)
//   weight     colT = im2col(in) transposed      [g, (n, y), (c, k..)]
//              dW[o, (c, k..)] += a[n, o, y] * colT
// conv is `direct`; its input gradient is `transposed` over dY and its weight gradient is
// `weight`. conv_transpose is `transposed` over X; its input gradient is `direct` over
// dY and its weight gradient is `weight` with the roles of X and dY swapped. The flat
// (c, k..) and y indices are written as digits (`(r // 16) % 16`) of one GEMM index.

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

// Digit d of the row-major flat index `v` over extents `ext`, as index text; `v` is
// below the product of `ext`, so the leading digit needs no `%`.
std::string digit(const std::string& v, const std::vector<int64_t>& ext, size_t d) {
  if (ext[d] == 1)
    return "0";
  int64_t stride = 1;
  for (size_t e = d + 1; e < ext.size(); ++e)
    stride *= ext[e];
  const std::string q = stride == 1 ? v : fmt::format("{} // {}", v, stride);
  if (d == 0)
    return "(" + q + ")";
  return fmt::format("(({}) % {})", q, ext[d]);
}

std::vector<std::string> digits(const std::string& v, const std::vector<int64_t>& ext,
                                size_t first) {
  std::vector<std::string> out;
  for (size_t d = first; d < ext.size(); ++d)
    out.push_back(digit(v, ext, d));
  return out;
}

// The row-major flat index of `parts` (index texts) over extents `ext`.
std::string flat(const std::vector<std::string>& parts, const std::vector<int64_t>& ext) {
  std::vector<std::pair<std::string, int64_t>> terms;
  int64_t stride = 1;
  for (size_t d = ext.size(); d-- > 0;) {
    if (parts[d] != "0")
      terms.insert(terms.begin(), {parts[d], stride});
    stride *= ext[d];
  }
  return affine(terms, 0);
}

std::string cast_to(DType dt, const std::string& x) {
  return compute_type(dt) == dt ? x : dtype_text(dt) + "(" + x + ")";
}

// One convolution's window geometry as the GEMMs see it: window position y (extents
// `ysp`, flattened to p) reads position y*s + k*dil - pad of a tensor with spatial extents
// `hsp`. conv: y = Y's positions, h = X's; conv_transpose: y = X's, h = Y's.
struct Gemm {
  Window w;
  int64_t batch = 0, group = 1;
  std::vector<int64_t> ysp, hsp;
  // W is [rows * group, inner, k..]; a GEMM's reduction or output index r runs over
  // (inner, k..) flattened, which is W's own memory order.
  int64_t rows = 0, inner = 0;
  int64_t kk() const { return numel(w.kernel); }
  int64_t positions() const { return numel(ysp); }
  std::vector<int64_t> r_extents() const {
    std::vector<int64_t> e = {inner};
    e.insert(e.end(), w.kernel.begin(), w.kernel.end());
    return e;
  }
  // The leading indices of a per-group local: `n, g` or `n`.
  std::vector<std::string> lead(bool with_n = true) const {
    std::vector<std::string> v;
    if (with_n)
      v.push_back("n");
    if (group > 1)
      v.push_back("g");
    return v;
  }
  std::vector<int64_t> lead_shape(bool with_n = true) const {
    std::vector<int64_t> v;
    if (with_n)
      v.push_back(batch);
    if (group > 1)
      v.push_back(group);
    return v;
  }
  // Channel `c` of group g of a tensor with `per_group` channels per group.
  std::string channel(const std::string& c, int64_t per_group) const {
    return group > 1 ? fmt::format("g * {} + {}", per_group, c) : c;
  }
  // Of channel `ch` of a tensor with `per_group` channels per group: the group and the
  // in-group channel, as leading indices of a per-group local.
  std::vector<std::string> split_channel(const std::string& ch, int64_t per_group) const {
    if (group == 1)
      return {ch};
    return {fmt::format("{} // {}", ch, per_group), fmt::format("{} % {}", ch, per_group)};
  }
};

// The window reads of `src` (channels per group `inner`, spatial extents hsp) laid out as
// a GEMM operand, with r = (c, k..) and p = y flattened:
//   col[n, g, r, p] = src[n, g*inner + c, y*s + k*dil - pad]   (rows r, unit stride in p)
//   col[g, q, r]    = the same with q = (n, p)                  (transposed: unit stride in r)
void im2col(OpContext& ctx, const std::string& col, const std::string& src, const Gemm& m,
            bool transposed) {
  const std::vector<int64_t> rext = m.r_extents();
  const int64_t R = numel(rext), P = m.positions();
  std::vector<int64_t> pext = m.ysp;
  std::string pv = "p", n = "n";
  std::vector<std::string> lhs;
  std::vector<int64_t> shape;
  if (transposed) {
    pext.insert(pext.begin(), m.batch);
    pv = "q";
    n = digit("q", pext, 0);
    lhs = concat(m.lead(false), {"q", "r"});
    shape = m.lead_shape(false);
    shape.insert(shape.end(), {m.batch * P, R});
  } else {
    lhs = concat(m.lead(), {"r", "p"});
    shape = m.lead_shape();
    shape.insert(shape.end(), {R, P});
  }
  const size_t off = transposed ? 1 : 0;
  std::vector<std::string> idx = {n, m.channel(digit("r", rext, 0), m.inner)};
  bool guard = false;
  for (int64_t d = 0; d < m.w.rank; ++d) {
    auto [text, g] = forward_index(m.w, d, digit(pv, pext, d + off), digit("r", rext, d + 1),
                                   m.ysp[d], m.hsp[d]);
    idx.push_back(text);
    guard = guard || g;
  }
  ctx.local(col, ctx.in(src).dtype, shape);
  ctx.stmt(access(col, lhs) + " = " + guarded(src, idx, guard, "0"));
}

// The direct form as a batched GEMM over r: acc[n, g, o, p] += W[g*rows + o, r..] *
// col[n, g, r, p], then out[n, ch, y..] = acc (+ B[ch]). Without a bias, groups or a
// second spatial dimension the GEMM writes `out` itself.
void direct(OpContext& ctx, const std::string& out, const std::string& src, const Gemm& m,
            const std::string& bias) {
  const DType dt = ctx.in(src).dtype;
  im2col(ctx, "col", src, m, false);
  const std::vector<int64_t> rext = m.r_extents();
  std::vector<std::string> widx = {m.channel("o", m.rows)};
  for (size_t d = 0; d < rext.size(); ++d)
    widx.push_back(digit("r", rext, d));
  const std::string prod =
      access("W", widx) + " * " + access("col", concat(m.lead(), {"r", "p"}));
  std::vector<int64_t> shape = {m.batch, m.rows * m.group};
  shape.insert(shape.end(), m.ysp.begin(), m.ysp.end());
  ctx.output(out, dt, shape);
  if (m.group == 1 && m.w.rank == 1 && bias.empty() && compute_type(dt) == dt) {
    ctx.stmt(access(out, {"n", "o", "p"}) + " += " + prod);
    return;
  }
  std::vector<int64_t> acc_shape = m.lead_shape();
  acc_shape.insert(acc_shape.end(), {m.rows, m.positions()});
  ctx.local("acc", compute_type(dt), acc_shape);
  ctx.stmt(access("acc", concat(m.lead(), {"o", "p"})) + " += " + prod);
  const std::vector<std::string> y = names("y", m.w.rank);
  std::vector<std::string> aidx = concat({"n"}, m.split_channel("ch", m.rows));
  aidx.push_back(flat(y, m.ysp));
  std::string value = access("acc", aidx);
  if (!bias.empty())
    value += " + " + access(bias, {"ch"});
  ctx.stmt(access(out, concat({"n", "ch"}, y)) + " = " + cast_to(dt, value));
}

// The transposed form as a GEMM and a gather:
//   Wl[g, c, r] = W[g*rows + c, r..]                       (W flattened: unit stride in r)
//   dcol[n, g, p, r] += src[n, g*rows + c, y..] * Wl[g, c, r]
//   out[n, g*inner + m, h..] = sum over the (k, y) with y*s + k*dil - pad = h of
//                              dcol[n, g, y, (m, k)] (+ B)
// The sum visits only the offsets k of the right residue (residue_taps, Window.h).
void transposed(OpContext& ctx, const std::string& out, const std::string& src, const Gemm& m,
                const std::string& bias) {
  const DType dt = ctx.in(src).dtype;
  const std::vector<int64_t> rext = m.r_extents();
  const int64_t R = numel(rext), P = m.positions();
  std::vector<std::string> widx = {m.channel("c", m.rows)};
  for (size_t d = 0; d < rext.size(); ++d)
    widx.push_back(digit("r", rext, d));
  std::vector<int64_t> wl_shape = m.lead_shape(false);
  wl_shape.insert(wl_shape.end(), {m.rows, R});
  ctx.local("Wl", ctx.in("W").dtype, wl_shape);
  ctx.stmt(access("Wl", concat(m.lead(false), {"c", "r"})) + " = " + access("W", widx));
  std::vector<int64_t> dcol_shape = m.lead_shape();
  dcol_shape.insert(dcol_shape.end(), {P, R});
  ctx.local("dcol", compute_type(dt), dcol_shape);
  std::vector<std::string> sidx = {"n", m.channel("c", m.rows)};
  for (const std::string& y : digits("p", m.ysp, 0))
    sidx.push_back(y);
  ctx.stmt(access("dcol", concat(m.lead(), {"p", "r"})) + " += " + access(src, sidx) + " * " +
           access("Wl", concat(m.lead(false), {"c", "r"})));

  std::vector<std::string> conds, ys, ks;
  bool reduces = false;
  for (int64_t d = 0; d < m.w.rank; ++d) {
    const std::string t = "t" + std::to_string(d);
    const ResidueTaps r = residue_taps(m.w, d, "h" + std::to_string(d), t, m.hsp[d], m.ysp[d]);
    if (r.taps > 1) {
      reduces = true;
      const std::string tr = "tr" + std::to_string(d);
      ctx.local(tr, DType::Bool, {r.taps});
      ctx.stmt(access(tr, {t}) + " = true");
      conds.push_back(access(tr, {t}));
    }
    conds.insert(conds.end(), r.conds.begin(), r.conds.end());
    ys.push_back(r.y);
    ks.push_back(r.k);
  }
  // The tr tables only range t; they are not conditions that can fail.
  bool guard = false;
  for (const std::string& c : conds)
    guard = guard || c.rfind("tr", 0) != 0;
  std::vector<std::string> didx = {"n"};
  if (m.group > 1)
    didx.push_back(fmt::format("ch // {}", m.inner));
  const std::string mch = m.group == 1 ? "ch" : fmt::format("ch % {}", m.inner);
  didx.push_back(flat(ys, m.ysp));
  std::vector<int64_t> kext = m.w.kernel;
  std::string rtext = affine({{"(" + mch + ")", m.kk()}}, 0);
  const std::string kflat = flat(ks, kext);
  if (kflat != "0")
    rtext += " + " + kflat;
  didx.push_back(rtext);
  std::string value = guarded("dcol", didx, guard, "0");
  const std::string cond = conjunction(conds);
  if (!cond.empty())
    value = "(" + cond + " ? " + value + " : 0)";
  std::vector<int64_t> shape = {m.batch, m.inner * m.group};
  shape.insert(shape.end(), m.hsp.begin(), m.hsp.end());
  ctx.output(out, dt, shape);
  const std::vector<std::string> lhs = concat({"n", "ch"}, names("h", m.w.rank));
  const std::string b = bias.empty() ? "" : " + " + access(bias, {"ch"});
  if (!reduces) {
    ctx.stmt(access(out, lhs) + " = " + cast_to(dt, value + b));
  } else if (bias.empty() && compute_type(dt) == dt) {
    ctx.stmt(access(out, lhs) + " += " + value);
  } else {
    ctx.local("sum", compute_type(dt), shape);
    ctx.stmt(access("sum", lhs) + " += " + value);
    ctx.stmt(access(out, lhs) + " = " + cast_to(dt, access("sum", lhs) + b));
  }
}

// The weight gradient as one GEMM over q = (n, y) per group:
//   colT[g, q, r] = the window reads of `src` (im2col, transposed)
//   dWl[g, o, r] += a[n, g*rows + o, y..] * colT[g, q, r]
//   dW[o', c, k..] = dWl[g, o, (c, k..)]
// `a` has spatial extents ysp (dY for conv, X for conv_transpose).
void weight_grad(OpContext& ctx, const std::string& a, const std::string& src, const Gemm& m) {
  const DType dt = ctx.in("X").dtype;
  im2col(ctx, "colT", src, m, true);
  const std::vector<int64_t> rext = m.r_extents();
  std::vector<int64_t> qext = m.ysp;
  qext.insert(qext.begin(), m.batch);
  std::vector<std::string> aidx = {digit("q", qext, 0), m.channel("o", m.rows)};
  for (const std::string& y : digits("q", qext, 1))
    aidx.push_back(y);
  std::vector<int64_t> shape = m.lead_shape(false);
  shape.insert(shape.end(), {m.rows, numel(rext)});
  ctx.local("dWl", compute_type(dt), shape);
  ctx.stmt(access("dWl", concat(m.lead(false), {"o", "r"})) + " += " + access(a, aidx) + " * " +
           access("colT", concat(m.lead(false), {"q", "r"})));
  ctx.output("dW", dt, ctx.in("W").shape);
  const std::vector<std::string> k = names("k", m.w.rank);
  std::vector<std::string> didx = m.split_channel("o", m.rows);
  didx.push_back(flat(concat({"c"}, k), rext));
  ctx.stmt(access("dW", concat({"o", "c"}, k)) + " = " + cast_to(dt, access("dWl", didx)));
}

// dB[o] = the sum of dY over the batch and every spatial position.
void write_bias_grad(OpContext& ctx, int64_t out_ch, int64_t rank) {
  ctx.output("dB", ctx.in("X").dtype, {out_ch});
  ctx.stmt("dB[o] += " + access("dY", concat({"n", "o"}, names("y", rank))));
}

Gemm conv_gemm(const ConvShape& s) {
  Gemm m;
  m.w = s.w;
  m.batch = s.batch;
  m.group = s.group;
  m.ysp = s.out_sp;
  m.hsp = s.in_sp;
  m.rows = s.out_ch / s.group;
  m.inner = s.in_ch / s.group;
  return m;
}

Gemm conv_transpose_gemm(const ConvShape& s) {
  Gemm m;
  m.w = s.w;
  m.batch = s.batch;
  m.group = s.group;
  m.ysp = s.in_sp;
  m.hsp = s.out_sp;
  m.rows = s.in_ch / s.group;
  m.inner = s.out_ch / s.group;
  return m;
}

void emit_conv(OpContext& ctx) {
  const ConvShape s = conv_shape(ctx);
  check_bias(ctx, s.out_ch);
  ctx.input("X");
  ctx.input("W");
  if (ctx.has("B"))
    ctx.input("B");
  direct(ctx, "Y", "X", conv_gemm(s), ctx.has("B") ? "B" : "");
}

void emit_conv_grad(OpContext& ctx) {
  const ConvShape s = conv_shape(ctx);
  std::vector<int64_t> y_shape = {s.batch, s.out_ch};
  y_shape.insert(y_shape.end(), s.out_sp.begin(), s.out_sp.end());
  check_dy(ctx, y_shape);
  ctx.input("X");
  ctx.input("W");
  ctx.input("dY");
  const Gemm m = conv_gemm(s);
  // dX: the transposed form over dY, whose channels are W's rows.
  transposed(ctx, "dX", "dY", m, "");
  weight_grad(ctx, "dY", "X", m);
  write_bias_grad(ctx, s.out_ch, s.w.rank);
}

void emit_conv_transpose(OpContext& ctx) {
  const ConvShape s = conv_transpose_shape(ctx);
  check_bias(ctx, s.out_ch);
  ctx.input("X");
  ctx.input("W");
  if (ctx.has("B"))
    ctx.input("B");
  transposed(ctx, "Y", "X", conv_transpose_gemm(s), ctx.has("B") ? "B" : "");
}

void emit_conv_transpose_grad(OpContext& ctx) {
  const ConvShape s = conv_transpose_shape(ctx);
  std::vector<int64_t> y_shape = {s.batch, s.out_ch};
  y_shape.insert(y_shape.end(), s.out_sp.begin(), s.out_sp.end());
  check_dy(ctx, y_shape);
  ctx.input("X");
  ctx.input("W");
  ctx.input("dY");
  const Gemm m = conv_transpose_gemm(s);
  // The forward op reads X[y] into Y[y*s + k*dil - pad]: the input gradient is the
  // direct form over dY, and the weight gradient pairs X[y] with dY at that position.
  direct(ctx, "dX", "dY", m, "");
  weight_grad(ctx, "X", "dY", m);
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
