// Pooling in NCHW-style layout for any number of spatial dimensions: max_pool and
// average_pool (kernel_shape, strides, pads, dilations, ceil_mode, auto_pad,
// count_include_pad), global_average_pool and global_max_pool, and their backward ops;
// lp_pool and global_lp_pool (ONNX LpPool, GlobalLpPool) and theirs.
//
// Kernel IR infers an index's range from a tensor it indexes bare, and a pooling window
// has no weight tensor to give the window offsets k0.. theirs. So each window op writes a
// small i64 local `kflat` of the kernel's shape holding each offset's flat number
// (`kflat[k0, k1] = k0 * K1 + k1`) and reads it in every window comprehension: it gives
// the k's their ranges, and max_pool_grad uses the numbers to find each window's
// first maximum (the element PyTorch routes the gradient to). With return_indices,
// max_pool also outputs that element's position, flattened over all of X as ONNX's
// MaxPool Indices are (storage order 0: ((n * C + c) * H + h) * W + w).
#include "ops/defs/Families.h"
#include "ops/defs/Window.h"

namespace unitile::ops {
namespace {

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct PoolShape {
  int64_t rank = 0; // spatial
  std::vector<int64_t> in_sp, out_sp, out_shape;
  Window w;
  bool full = true; // every window lies inside the input (no padding read)
};

PoolShape pool_shape(const OpContext& ctx, bool has_dilations) {
  ctx.require_float("X");
  const TensorSpec& x = ctx.in("X");
  if (x.shape.size() < 3)
    ctx.fail("input 'X' must be [N, C, spatial...] with at least one spatial dimension, got "
             "shape {}",
             shape_text(x.shape));
  PoolShape p;
  p.rank = static_cast<int64_t>(x.shape.size()) - 2;
  p.in_sp.assign(x.shape.begin() + 2, x.shape.end());
  const std::vector<int64_t> kernel = ctx.attr_ints("kernel_shape");
  if (static_cast<int64_t>(kernel.size()) != p.rank)
    ctx.fail("attribute 'kernel_shape' has {} values but X has {} spatial dimensions",
             kernel.size(), p.rank);
  for (int64_t k : kernel)
    if (k < 1)
      ctx.fail("attribute 'kernel_shape' = {}: every value must be at least 1",
               attr_value_text(AttrValue{kernel}));
  p.w = read_window(ctx, kernel, p.in_sp, has_dilations, true);
  for (int64_t d = 0; d < p.rank; ++d)
    if (p.w.pads_begin[d] >= p.w.span(d) || p.w.pads_end[d] >= p.w.span(d))
      ctx.fail("spatial dimension {}: pads ({}, {}) must be smaller than the window's span {}", d,
               p.w.pads_begin[d], p.w.pads_end[d], p.w.span(d));
  const bool ceil_mode = ctx.attr_bool("ceil_mode");
  p.out_shape = {x.shape[0], x.shape[1]};
  for (int64_t d = 0; d < p.rank; ++d) {
    const int64_t out = window_out_extent(ctx, p.w, d, p.in_sp[d], ceil_mode);
    p.out_sp.push_back(out);
    p.out_shape.push_back(out);
    p.full = p.full && !forward_index(p.w, d, "y", "k", out, p.in_sp[d]).second;
  }
  return p;
}

std::vector<std::string> ks(int64_t rank) { return index_names(rank, "k"); }

// The window local: kflat[k..] = the offset's flat number in the window.
std::string declare_window(OpContext& ctx, const Window& w) {
  ctx.local("kflat", DType::I64, w.kernel);
  std::vector<std::pair<std::string, int64_t>> terms;
  int64_t stride = 1;
  for (int64_t d = w.rank - 1; d >= 0; --d) {
    terms.insert(terms.begin(), {"k" + std::to_string(d), stride});
    stride *= w.kernel[d];
  }
  ctx.stmt(access("kflat", ks(w.rank)) + " = " + affine(terms, 0));
  return access("kflat", ks(w.rank));
}

// X read at output position y.. and window offset k.. (padding reads give `pad`).
std::string window_read(const PoolShape& p, const std::string& tensor, const std::string& pad) {
  std::vector<std::string> idx = {"n", "c"};
  bool guard = false;
  for (int64_t d = 0; d < p.rank; ++d) {
    auto [text, g] = forward_index(p.w, d, "y" + std::to_string(d), "k" + std::to_string(d),
                                   p.out_sp[d], p.in_sp[d]);
    idx.push_back(text);
    guard = guard || g;
  }
  return guarded(tensor, idx, guard, pad);
}

// The window positions that read input position h..: per dimension the offsets of the
// right residue (residue_taps), their count ranged by a bool table tr<d>[t<d>]; the
// output index text per dimension, the offset's flat number, the conditions, and
// whether a read at idx can leave the output. `reduces`: some position has several.
struct BackRead {
  std::vector<std::string> idx, conds;
  std::string kflat;
  bool guard = false, reduces = false;
};
BackRead back_read(OpContext& ctx, const PoolShape& p) {
  BackRead b;
  std::vector<std::pair<std::string, int64_t>> terms;
  int64_t stride = numel(p.w.kernel);
  for (int64_t d = 0; d < p.rank; ++d) {
    const std::string t = "t" + std::to_string(d);
    const ResidueTaps r = residue_taps(p.w, d, "h" + std::to_string(d), t, p.in_sp[d], p.out_sp[d]);
    if (r.taps > 1) {
      b.reduces = true;
      const std::string tr = "tr" + std::to_string(d);
      ctx.local(tr, DType::Bool, {r.taps});
      ctx.stmt(access(tr, {t}) + " = true");
      b.conds.push_back(access(tr, {t}));
    }
    b.conds.insert(b.conds.end(), r.conds.begin(), r.conds.end());
    b.guard = b.guard || !r.conds.empty();
    b.idx.push_back(r.y);
    stride /= p.w.kernel[d];
    if (r.k != "0")
      terms.push_back({r.k, stride});
  }
  b.kflat = affine(terms, 0);
  return b;
}

// The divisor of each average window: a constant when every window is full, else the
// local cnt[y..] counting the positions inside the input (or inside the padded input
// with count_include_pad; a ceil_mode window's overhang past the end padding is never
// counted, as in PyTorch). Returns the text read at `idx` (guarded when asked).
std::string average_divisor(OpContext& ctx, const PoolShape& p, const std::string& kflat,
                            const std::vector<std::string>& idx, bool guard) {
  if (p.full)
    return float_literal(static_cast<double>(numel(p.w.kernel)));
  const bool include_pad = ctx.attr_bool("count_include_pad");
  std::vector<std::string> conds = {kflat + " >= 0"};
  for (int64_t d = 0; d < p.rank; ++d) {
    const std::string at =
        forward_index(p.w, d, "y" + std::to_string(d), "k" + std::to_string(d), p.out_sp[d],
                      p.in_sp[d]).first;
    const int64_t lo = include_pad ? -p.w.pads_begin[d] : 0;
    const int64_t hi = include_pad ? p.in_sp[d] + p.w.pads_end[d] : p.in_sp[d];
    conds.push_back(fmt::format("{} >= {} && {} < {}", at, lo, at, hi));
  }
  ctx.local("cnt", compute_type(ctx.in("X").dtype), p.out_sp);
  ctx.stmt(access("cnt", index_names(p.rank, "y")) + " += " + conjunction(conds) + " ? 1 : 0");
  return guarded("cnt", idx, guard, "1");
}

std::string cast_to(DType dt, const std::string& e) {
  return compute_type(dt) == dt ? e : dtype_text(dt) + "(" + e + ")";
}

void emit_max_pool(OpContext& ctx) {
  const PoolShape p = pool_shape(ctx, true);
  ctx.input("X");
  ctx.output("Y", ctx.in("X").dtype, p.out_shape);
  const std::string kflat = declare_window(ctx, p.w);
  const std::vector<std::string> y = concat({"n", "c"}, index_names(p.rank, "y"));
  ctx.stmt(access("Y", y) + " max= " + kflat + " >= 0 ? " + window_read(p, "X", "-inf") +
           " : -inf");
  if (!ctx.attr_bool("return_indices"))
    return;
  // a: the window's first offset (row-major) inside X that holds the maximum; then its
  // coordinates in X, flattened.
  std::vector<std::string> inside;
  for (int64_t d = 0; d < p.rank; ++d) {
    const std::string at = forward_index(p.w, d, "y" + std::to_string(d), "k" + std::to_string(d),
                                         p.out_sp[d], p.in_sp[d]).first;
    inside.push_back(fmt::format("{} >= 0 && {} < {}", at, at, p.in_sp[d]));
  }
  ctx.local("a", DType::I64, p.out_shape);
  ctx.stmt(access("a", y) + " min= " + conjunction(inside) + " && " + window_read(p, "X", "-inf") +
           " == " + access("Y", y) + " ? " + kflat + " : " + std::to_string(numel(p.w.kernel)));
  const std::vector<int64_t>& xs = ctx.in("X").shape;
  std::vector<std::pair<std::string, int64_t>> terms;
  int64_t stride = 1, window_stride = 1;
  for (int64_t d = p.rank - 1; d >= 0; --d) {
    const std::string k = fmt::format("({} // {} % {})", access("a", y), window_stride, p.w.kernel[d]);
    const std::string h = forward_index(p.w, d, "y" + std::to_string(d), k, p.out_sp[d], p.in_sp[d]).first;
    terms.insert(terms.begin(), {"(" + h + ")", stride});
    stride *= p.in_sp[d];
    window_stride *= p.w.kernel[d];
  }
  terms.insert(terms.begin(), {"c", stride});
  terms.insert(terms.begin(), {"n", stride * xs[1]});
  ctx.output("Indices", DType::I64, p.out_shape);
  ctx.stmt(access("Indices", y) + " = " + affine(terms, 0));
}

void emit_average_pool(OpContext& ctx) {
  const PoolShape p = pool_shape(ctx, true);
  const DType dt = ctx.in("X").dtype;
  ctx.input("X");
  ctx.output("Y", dt, p.out_shape);
  const std::string kflat = declare_window(ctx, p.w);
  const std::vector<std::string> lhs = concat({"n", "c"}, index_names(p.rank, "y"));
  ctx.local("s", compute_type(dt), p.out_shape);
  ctx.stmt(access("s", lhs) + " += " + kflat + " >= 0 ? " + window_read(p, "X", "0") + " : 0");
  const std::string div = average_divisor(ctx, p, kflat, index_names(p.rank, "y"), false);
  ctx.stmt(access("Y", lhs) + " = " + cast_to(dt, access("s", lhs) + " / " + div));
}

void check_dy(const OpContext& ctx, const std::vector<int64_t>& want) {
  ctx.require_same_dtype({"X", "dY"});
  if (ctx.in("dY").shape != want)
    ctx.fail("dY has shape {} but the forward op's output has shape {}",
             shape_text(ctx.in("dY").shape), shape_text(want));
}

void emit_max_pool_grad(OpContext& ctx) {
  const PoolShape p = pool_shape(ctx, true);
  check_dy(ctx, p.out_shape);
  const DType dt = ctx.in("X").dtype;
  ctx.input("X");
  ctx.input("dY");
  ctx.output("dX", dt, ctx.in("X").shape);
  const std::string kflat = declare_window(ctx, p.w);
  const std::vector<std::string> lhs = concat({"n", "c"}, index_names(p.rank, "y"));
  // m: each window's maximum; a: the flat offset of its first occurrence.
  ctx.local("m", compute_type(dt), p.out_shape);
  ctx.local("a", DType::I64, p.out_shape);
  ctx.stmt(access("m", lhs) + " max= " + kflat + " >= 0 ? " + window_read(p, "X", "-inf") +
           " : -inf");
  ctx.stmt(access("a", lhs) + " min= " + window_read(p, "X", "-inf") + " == " + access("m", lhs) +
           " ? " + kflat + " : " + std::to_string(numel(p.w.kernel)));
  const BackRead b = back_read(ctx, p);
  std::vector<std::string> conds = b.conds;
  conds.push_back(guarded("a", concat({"n", "c"}, b.idx), b.guard, "-1") + " == " + b.kflat);
  ctx.stmt(access("dX", concat({"n", "c"}, index_names(p.rank, "h"))) +
           (b.reduces ? " += " : " = ") + conjunction(conds) + " ? " +
           guarded("dY", concat({"n", "c"}, b.idx), b.guard, "0") + " : 0");
}

void emit_average_pool_grad(OpContext& ctx) {
  const PoolShape p = pool_shape(ctx, true);
  check_dy(ctx, p.out_shape);
  const DType dt = ctx.in("X").dtype;
  ctx.input("X"); // for its shape: the ports are the same as max_pool_grad's
  ctx.input("dY");
  ctx.output("dX", dt, ctx.in("X").shape);
  const std::string kflat = declare_window(ctx, p.w);
  const BackRead b = back_read(ctx, p);
  const std::string div = average_divisor(ctx, p, kflat, b.idx, b.guard);
  const std::string value = guarded("dY", concat({"n", "c"}, b.idx), b.guard, "0") + " / " + div;
  const std::string cond = conjunction(b.conds);
  ctx.stmt(access("dX", concat({"n", "c"}, index_names(p.rank, "h"))) +
           (b.reduces ? " += " : " = ") + (cond.empty() ? value : cond + " ? " + value + " : 0"));
}

// Global pooling: every spatial dimension reduced, kept with extent 1.
struct GlobalShape {
  int64_t rank = 0;
  int64_t count = 1;
  std::vector<int64_t> out_shape;
  std::vector<std::string> lhs, in, at0;
};

GlobalShape global_shape(const OpContext& ctx) {
  ctx.require_float("X");
  const TensorSpec& x = ctx.in("X");
  if (x.shape.size() < 3)
    ctx.fail("input 'X' must be [N, C, spatial...] with at least one spatial dimension, got "
             "shape {}",
             shape_text(x.shape));
  GlobalShape g;
  g.rank = static_cast<int64_t>(x.shape.size()) - 2;
  g.out_shape = {x.shape[0], x.shape[1]};
  g.lhs = g.in = g.at0 = {"n", "c"};
  for (int64_t d = 0; d < g.rank; ++d) {
    g.out_shape.push_back(1);
    g.lhs.push_back("z" + std::to_string(d));
    g.in.push_back("h" + std::to_string(d));
    g.at0.push_back("0");
    g.count *= x.shape[d + 2];
  }
  return g;
}

void emit_global_pool(OpContext& ctx, bool is_max) {
  const GlobalShape g = global_shape(ctx);
  const DType dt = ctx.in("X").dtype;
  ctx.input("X");
  ctx.output("Y", dt, g.out_shape);
  if (is_max) {
    ctx.stmt(access("Y", g.lhs) + " max= " + access("X", g.in));
    return;
  }
  ctx.local("s", compute_type(dt), g.out_shape);
  ctx.stmt(access("s", g.lhs) + " += " + access("X", g.in));
  ctx.stmt(access("Y", g.lhs) + " = " +
           cast_to(dt, access("s", g.lhs) + " / " + float_literal(static_cast<double>(g.count))));
}

void emit_global_pool_grad(OpContext& ctx, bool is_max) {
  const GlobalShape g = global_shape(ctx);
  check_dy(ctx, g.out_shape);
  const DType dt = ctx.in("X").dtype;
  ctx.input("X");
  ctx.input("dY");
  ctx.output("dX", dt, ctx.in("X").shape);
  const std::string dy = access("dY", g.at0), dx = access("dX", g.in);
  if (!is_max) {
    ctx.stmt(dx + " = " + cast_to(dt, dy + " / " + float_literal(static_cast<double>(g.count))));
    return;
  }
  // The whole gradient goes to the first maximum in row-major order (as PyTorch's
  // adaptive_max_pool with output size 1 does).
  std::vector<std::pair<std::string, int64_t>> terms;
  int64_t stride = 1;
  for (int64_t d = g.rank - 1; d >= 0; --d) {
    terms.insert(terms.begin(), {"h" + std::to_string(d), stride});
    stride *= ctx.in("X").shape[d + 2];
  }
  const std::string flat = affine(terms, 0);
  ctx.local("m", compute_type(dt), g.out_shape);
  ctx.local("a", DType::I64, g.out_shape);
  ctx.stmt(access("m", g.lhs) + " max= " + access("X", g.in));
  ctx.stmt(access("a", g.lhs) + " min= " + access("X", g.in) + " == " + access("m", g.lhs) +
           " ? " + flat + " : " + std::to_string(g.count));
  ctx.stmt(dx + " = " + access("a", g.at0) + " == " + flat + " ? " + dy + " : 0");
}

// The ONNX LpPool exponent: an integer p >= 1.
int64_t lp_exponent(const OpContext& ctx) {
  const int64_t p = ctx.attr_int("p");
  if (p < 1)
    ctx.fail("attribute 'p' = {}: it must be at least 1", p);
  return p;
}

// |x|^p and its inverse root as Kernel IR text (plain products and sqrt for p = 1, 2).
std::string lp_power(const std::string& x, int64_t p) {
  if (p == 1)
    return "abs(" + x + ")";
  if (p == 2)
    return x + " * " + x;
  return fmt::format("pow(abs({}), {})", x, float_literal(static_cast<double>(p)));
}
std::string lp_root(const std::string& s, int64_t p) {
  if (p == 1)
    return s;
  if (p == 2)
    return "sqrt(" + s + ")";
  return fmt::format("pow({}, {})", s, float_literal(1.0 / static_cast<double>(p)));
}

// lp_pool: (sum over the window of |x|^p)^(1/p); padding adds nothing (ONNX LpPool).
void emit_lp_pool(OpContext& ctx) {
  const PoolShape p = pool_shape(ctx, true);
  const int64_t e = lp_exponent(ctx);
  const DType dt = ctx.in("X").dtype;
  ctx.input("X");
  ctx.output("Y", dt, p.out_shape);
  const std::string kflat = declare_window(ctx, p.w);
  const std::vector<std::string> lhs = concat({"n", "c"}, index_names(p.rank, "y"));
  ctx.local("s", compute_type(dt), p.out_shape);
  const std::string x = window_read(p, "X", "0");
  ctx.stmt(access("s", lhs) + " += " + kflat + " >= 0 ? " + lp_power(x, e) + " : 0");
  ctx.stmt(access("Y", lhs) + " = " + cast_to(dt, lp_root(access("s", lhs), e)));
}

// global_lp_pool: the same over every spatial position.
void emit_global_lp_pool(OpContext& ctx) {
  const GlobalShape g = global_shape(ctx);
  const int64_t e = lp_exponent(ctx);
  const DType dt = ctx.in("X").dtype;
  ctx.input("X");
  ctx.output("Y", dt, g.out_shape);
  ctx.local("s", compute_type(dt), g.out_shape);
  ctx.stmt(access("s", g.lhs) + " += " + lp_power(access("X", g.in), e));
  ctx.stmt(access("Y", g.lhs) + " = " + cast_to(dt, lp_root(access("s", g.lhs), e)));
}

// lp_pool_grad: dX = sign(x) |x|^(p-1) * (sum over the windows holding x of dY / Y^(p-1)),
// Y recomputed from X; a window whose Y is 0 passes no gradient.
void emit_lp_pool_grad(OpContext& ctx) {
  const PoolShape p = pool_shape(ctx, true);
  check_dy(ctx, p.out_shape);
  const int64_t e = lp_exponent(ctx);
  const DType dt = ctx.in("X").dtype, acc = compute_type(dt);
  ctx.input("X");
  ctx.input("dY");
  ctx.output("dX", dt, ctx.in("X").shape);
  const std::string kflat = declare_window(ctx, p.w);
  const std::vector<std::string> lhs = concat({"n", "c"}, index_names(p.rank, "y"));
  ctx.local("s", acc, p.out_shape);
  ctx.stmt(access("s", lhs) + " += " + kflat + " >= 0 ? " + lp_power(window_read(p, "X", "0"), e) + " : 0");
  ctx.local("g", acc, p.out_shape);
  const std::string y = lp_root(access("s", lhs), e);
  ctx.stmt(access("g", lhs) + " = " + access("s", lhs) + " > 0 ? " + access("dY", lhs) +
           (e == 1 ? "" : fmt::format(" / pow({}, {})", y, float_literal(static_cast<double>(e - 1)))) + " : 0");
  const BackRead b = back_read(ctx, p);
  const std::vector<std::string> h = concat({"n", "c"}, index_names(p.rank, "h"));
  const std::string value = guarded("g", concat({"n", "c"}, b.idx), b.guard, "0");
  const std::string cond = conjunction(b.conds);
  ctx.local("gsum", acc, ctx.in("X").shape);
  ctx.stmt(access("gsum", h) + (b.reduces ? " += " : " = ") + (cond.empty() ? value : cond + " ? " + value + " : 0"));
  const std::string x = access("X", h);
  const std::string slope = e == 1 ? "sign(" + x + ")"
                                   : fmt::format("sign({}) * pow(abs({}), {})", x, x, float_literal(static_cast<double>(e - 1)));
  ctx.stmt(access("dX", h) + " = " + cast_to(dt, slope + " * " + access("gsum", h)));
}

void emit_global_lp_pool_grad(OpContext& ctx) {
  const GlobalShape g = global_shape(ctx);
  check_dy(ctx, g.out_shape);
  const int64_t e = lp_exponent(ctx);
  const DType dt = ctx.in("X").dtype, acc = compute_type(dt);
  ctx.input("X");
  ctx.input("dY");
  ctx.output("dX", dt, ctx.in("X").shape);
  ctx.local("s", acc, g.out_shape);
  ctx.stmt(access("s", g.lhs) + " += " + lp_power(access("X", g.in), e));
  const std::string x = access("X", g.in), s0 = access("s", g.at0), dy = access("dY", g.at0);
  const std::string slope = e == 1 ? "sign(" + x + ")"
                                   : fmt::format("sign({}) * pow(abs({}), {})", x, x, float_literal(static_cast<double>(e - 1)));
  const std::string scale = e == 1 ? dy : fmt::format("{} / pow({}, {})", dy, lp_root(s0, e), float_literal(static_cast<double>(e - 1)));
  ctx.stmt(access("dX", g.in) + " = " + cast_to(dt, s0 + " > 0 ? " + slope + " * " + scale + " : 0"));
}

std::vector<AttrSpec> pool_attrs(bool average) {
  const AttrValue none{std::vector<int64_t>{}};
  std::vector<AttrSpec> a = {
      {"kernel_shape", AttrKind::Ints, std::nullopt, "window size per spatial dimension"},
      {"strides", AttrKind::Ints, none, "stride per spatial dimension; empty: all 1"},
      {"pads", AttrKind::Ints, none,
       "padding: begin of each spatial dimension, then end of each; empty: none"},
      {"dilations", AttrKind::Ints, none, "window dilation per spatial dimension; empty: all 1"},
      {"ceil_mode", AttrKind::Bool, AttrValue{int64_t{0}},
       "round the output size up (a last window must start inside the input or begin pad)"},
      {"auto_pad", AttrKind::String, AttrValue{std::string("NOTSET")},
       "NOTSET (use pads), SAME_UPPER, SAME_LOWER or VALID"},
  };
  if (average)
    a.push_back({"count_include_pad", AttrKind::Bool, AttrValue{int64_t{0}},
                 "divide by the window size including padding"});
  return a;
}

void add_pair(std::vector<OpDef>& ops, OpDef op, std::function<void(OpContext&)> grad_emit) {
  OpDef g;
  g.name = op.name + "_grad";
  g.category = "pooling-backward";
  g.summary = "gradient of " + op.name + ": dX from X and dY";
  g.inputs = {{"X"}, {"dY"}};
  g.outputs = {{"dX"}};
  for (const AttrSpec& a : op.attrs)
    if (a.name != "return_indices")
      g.attrs.push_back(a);
  g.emit = std::move(grad_emit);
  op.gradient = g.name;
  ops.push_back(std::move(op));
  ops.push_back(std::move(g));
}

} // namespace

void add_pool_ops(std::vector<OpDef>& ops) {
  for (bool average : {false, true}) {
    OpDef op;
    op.name = average ? "average_pool" : "max_pool";
    op.category = "pooling";
    op.summary = average ? "average over sliding windows (N, C, spatial...)"
                         : "maximum over sliding windows (N, C, spatial...)";
    op.inputs = {{"X"}};
    op.outputs = {{"Y"}};
    op.attrs = pool_attrs(average);
    if (!average) {
      op.outputs.push_back({"Indices", PortKind::Data, true});
      op.attrs.push_back({"return_indices", AttrKind::Bool, AttrValue{int64_t{0}},
                          "also output Indices: each maximum's position, flat over all of X "
                          "(ONNX MaxPool's second output)"});
    }
    op.emit = average ? emit_average_pool : emit_max_pool;
    add_pair(ops, std::move(op), average ? emit_average_pool_grad : emit_max_pool_grad);
  }
  for (bool is_max : {false, true}) {
    OpDef op;
    op.name = is_max ? "global_max_pool" : "global_average_pool";
    op.category = "pooling";
    op.summary = is_max ? "maximum over all spatial positions (keeps extent-1 dims)"
                        : "mean over all spatial positions (keeps extent-1 dims)";
    op.inputs = {{"X"}};
    op.outputs = {{"Y"}};
    op.emit = [is_max](OpContext& ctx) { emit_global_pool(ctx, is_max); };
    add_pair(ops, std::move(op),
             [is_max](OpContext& ctx) { emit_global_pool_grad(ctx, is_max); });
  }
  const AttrSpec p_attr{"p", AttrKind::Int, AttrValue{int64_t{2}}, "the norm's exponent (an integer >= 1)"};
  std::vector<AttrSpec> lp_attrs = pool_attrs(false);
  lp_attrs.push_back(p_attr);
  add_pair(ops,
           make_op("lp_pool", "pooling",
                   "(sum of |x|^p over sliding windows)^(1/p) (N, C, spatial...; ONNX LpPool)", {{"X"}},
                   {{"Y"}}, lp_attrs, emit_lp_pool),
           emit_lp_pool_grad);
  add_pair(ops,
           make_op("global_lp_pool", "pooling",
                   "(sum of |x|^p over all spatial positions)^(1/p) (ONNX GlobalLpPool)", {{"X"}}, {{"Y"}},
                   {p_attr}, emit_global_lp_pool),
           emit_global_lp_pool_grad);
}

} // namespace unitile::ops
