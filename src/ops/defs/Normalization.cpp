// Normalization ops: softmax and log_softmax along an axis, layernorm and rmsnorm over
// the trailing axes (ONNX semantics), batchnorm (inference and training), groupnorm and
// instancenorm, with the backward ops of each.
//
// Statistics are reductions into locals indexed by the dimensions they are kept per
// (the rows of a softmax, the leading axes of a layernorm, the channel of a batchnorm),
// read back at every element by the same indices: a row max, row sums, then one
// elementwise statement. Means and variances are two passes (sum, then the sum of
// squared deviations from the mean), never E[x^2] - E[x]^2, so they keep their precision.
// Groupnorm has no index for "the channels of group g", so it reduces per channel
// first and then sums the channels of each group with a select on `c//(C/G) == g`.
#include "ops/OpContext.h"
#include "ops/defs/Families.h"

#include <algorithm>

namespace unitile::ops {
namespace {

// Which dimensions of X the statistics are kept per; the others are reduced.
struct Stats {
  std::vector<std::string> all;  // i0.. over X
  std::vector<std::string> keep; // the kept indices, in order
  std::vector<int64_t> shape;    // the statistics' shape
  int64_t count = 1;             // elements per statistic
  std::string n;                 // count as a float literal
};

Stats stats_over(const TensorSpec& x, const std::vector<bool>& kept) {
  Stats s;
  s.all = index_names(static_cast<int64_t>(x.shape.size()));
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (kept[d]) {
      s.keep.push_back(s.all[d]);
      s.shape.push_back(x.shape[d]);
    } else {
      s.count *= x.shape[d];
    }
  }
  s.n = float_literal(static_cast<double>(s.count));
  return s;
}

// The dims before `axis` kept (layernorm, rmsnorm, softmax with only the axis reduced).
std::vector<bool> keep_before(size_t rank, int64_t axis) {
  std::vector<bool> k(rank, false);
  for (int64_t d = 0; d < axis; ++d)
    k[d] = true;
  return k;
}

// --- softmax and log_softmax -------------------------------------------------------------

std::vector<bool> all_but(size_t rank, int64_t axis) {
  std::vector<bool> k(rank, true);
  k[axis] = false;
  return k;
}

int64_t softmax_axis(const OpContext& ctx, const std::string& port) {
  ctx.require_float(port);
  ctx.require_rank_at_least(port, 1);
  return ctx.axis(ctx.attr_int("axis"), static_cast<int64_t>(ctx.in(port).shape.size()));
}

// m = row max, l = sum exp(x - m); softmax = exp(x - m) / l, log_softmax = x - m - log l.
void emit_softmax(OpContext& ctx, bool log) {
  const int64_t axis = softmax_axis(ctx, "X");
  const TensorSpec& x = ctx.in("X");
  const Stats s = stats_over(x, all_but(x.shape.size(), axis));
  const DType acc = compute_type(x.dtype);
  ctx.input("X");
  ctx.output("Y", x.dtype, x.shape);
  ctx.local("m", acc, s.shape);
  ctx.local("l", acc, s.shape);
  const std::string X = access("X", s.all), m = access("m", s.keep), l = access("l", s.keep);
  ctx.stmt(m + " max= " + X);
  ctx.stmt(l + " += exp(" + X + " - " + m + ")");
  if (log)
    ctx.stmt(access("Y", s.all) + " = " + X + " - " + m + " - log(" + l + ")");
  else
    ctx.stmt(access("Y", s.all) + " = exp(" + X + " - " + m + ") / " + l);
}

// From the forward output Y: softmax dX = Y (dY - sum(dY Y)); log_softmax
// dX = dY - exp(Y) sum(dY).
void emit_softmax_grad(OpContext& ctx, bool log) {
  const int64_t axis = softmax_axis(ctx, "Y");
  ctx.require_same_dtype({"Y", "dY"});
  const TensorSpec& y = ctx.in("Y");
  if (ctx.in("dY").shape != y.shape)
    ctx.fail("dY has shape {} but Y has shape {}: they must be equal",
             shape_text(ctx.in("dY").shape), shape_text(y.shape));
  const Stats s = stats_over(y, all_but(y.shape.size(), axis));
  ctx.input("Y");
  ctx.input("dY");
  ctx.output("dX", y.dtype, y.shape);
  ctx.local("t", compute_type(y.dtype), s.shape);
  const std::string Y = access("Y", s.all), G = access("dY", s.all), t = access("t", s.keep);
  if (log) {
    ctx.stmt(t + " += " + G);
    ctx.stmt(access("dX", s.all) + " = " + G + " - exp(" + Y + ") * " + t);
  } else {
    ctx.stmt(t + " += " + G + " * " + Y);
    ctx.stmt(access("dX", s.all) + " = " + Y + " * (" + G + " - " + t + ")");
  }
}

// --- shared pieces of the affine normalizations ------------------------------------------

// The gradient's left-hand side for an operand read with broadcasting inside X's nest:
// broadcast and missing dimensions are summed (extent-1 `z<d>` indices for the former).
std::pair<std::vector<std::string>, bool> reduce_lhs(const TensorSpec& operand,
                                                     const std::vector<int64_t>& x_shape,
                                                     const std::vector<std::string>& operand_idx) {
  const size_t off = x_shape.size() - operand.shape.size();
  bool reduces = off > 0;
  std::vector<std::string> lhs;
  for (size_t d = 0; d < operand.shape.size(); ++d) {
    if (operand_idx[d] == "0") {
      lhs.push_back("z" + std::to_string(off + d));
      reduces = true;
    } else {
      lhs.push_back(operand_idx[d]);
    }
  }
  return {lhs, reduces};
}

// An optional per-element parameter (Scale, B) read inside X's nest; `idx` gives its
// indices. "" when absent.
std::string param(OpContext& ctx, const std::string& port, const std::vector<std::string>& idx) {
  if (!ctx.has(port))
    return "";
  ctx.input(port);
  return access(port, idx);
}

// Y = (X - mean) * rstd * Scale + B, or X * rstd * Scale for rmsnorm.
void emit_normalized(OpContext& ctx, const Stats& s, bool centered, double eps,
                     const std::string& scale, const std::string& bias) {
  const TensorSpec& x = ctx.in("X");
  ctx.input("X");
  ctx.output("Y", x.dtype, x.shape);
  const DType acc = compute_type(x.dtype);
  const std::string X = access("X", s.all);
  std::string xc = X;
  ctx.local("s", acc, s.shape);
  const std::string sum = access("s", s.keep);
  if (centered) {
    ctx.local("mean", acc, s.shape);
    ctx.local("q", acc, s.shape);
    const std::string mean = access("mean", s.keep);
    ctx.stmt(sum + " += " + X);
    ctx.stmt(mean + " = " + sum + " / " + s.n);
    xc = "(" + X + " - " + mean + ")";
    ctx.stmt(access("q", s.keep) + " += " + xc + " * " + xc);
  } else {
    ctx.stmt(sum + " += " + X + " * " + X);
  }
  ctx.local("r", acc, s.shape);
  const std::string r = access("r", s.keep);
  ctx.stmt(r + " = rsqrt(" + access(centered ? "q" : "s", s.keep) + " / " + s.n + " + " +
           float_literal(eps) + ")");
  std::string y = xc + " * " + r;
  if (!scale.empty())
    y += " * " + scale;
  if (!bias.empty())
    y += " + " + bias;
  ctx.stmt(access("Y", s.all) + " = " + y);
}

// The backward of emit_normalized: with xhat = (x - mean) r and g = dY Scale,
// dX = r (g - mean(g) - xhat mean(g xhat)); without centering (rmsnorm)
// dX = r (g - xhat mean(g xhat)). dScale sums dY xhat and dB sums dY over the dimensions
// they were broadcast along.
void emit_normalized_grad(OpContext& ctx, const Stats& s, bool centered, double eps,
                          const std::vector<std::string>& scale_idx,
                          const std::vector<std::string>& bias_lhs,
                          const std::vector<int64_t>& bias_shape, bool bias_reduces) {
  const TensorSpec& x = ctx.in("X");
  if (ctx.in("dY").shape != x.shape)
    ctx.fail("dY has shape {} but X has shape {}: they must be equal",
             shape_text(ctx.in("dY").shape), shape_text(x.shape));
  ctx.require_same_dtype({"X", "Scale", "dY"});
  ctx.input("X");
  ctx.input("dY");
  const DType acc = compute_type(x.dtype);
  const std::string X = access("X", s.all), G = access("dY", s.all);
  const std::string scale = param(ctx, "Scale", scale_idx);
  ctx.output("dX", x.dtype, x.shape);
  ctx.local("s", acc, s.shape);
  ctx.local("r", acc, s.shape);
  const std::string sum = access("s", s.keep), r = access("r", s.keep);
  std::string xc = X;
  if (centered) {
    ctx.local("mean", acc, s.shape);
    ctx.local("q", acc, s.shape);
    const std::string mean = access("mean", s.keep);
    ctx.stmt(sum + " += " + X);
    ctx.stmt(mean + " = " + sum + " / " + s.n);
    xc = "(" + X + " - " + mean + ")";
    ctx.stmt(access("q", s.keep) + " += " + xc + " * " + xc);
  } else {
    ctx.stmt(sum + " += " + X + " * " + X);
  }
  ctx.stmt(r + " = rsqrt(" + access(centered ? "q" : "s", s.keep) + " / " + s.n + " + " +
           float_literal(eps) + ")");
  const std::string g = scale.empty() ? G : "(" + G + " * " + scale + ")";
  const std::string xhat = "(" + xc + " * " + r + ")";
  ctx.local("gx", acc, s.shape);
  const std::string gx = access("gx", s.keep);
  ctx.stmt(gx + " += " + g + " * " + xhat);
  std::string dx = g;
  if (centered) {
    ctx.local("gs", acc, s.shape);
    ctx.stmt(access("gs", s.keep) + " += " + g);
    dx += " - " + access("gs", s.keep) + " / " + s.n;
  }
  dx += " - " + xhat + " * " + gx + " / " + s.n;
  ctx.stmt(access("dX", s.all) + " = " + r + " * (" + dx + ")");
  if (!scale.empty()) {
    const TensorSpec& sc = ctx.in("Scale");
    ctx.output("dScale", sc.dtype, sc.shape);
    auto [lhs, reduces] = reduce_lhs(sc, x.shape, scale_idx);
    ctx.stmt(access("dScale", lhs) + (reduces ? " += " : " = ") + G + " * " + xhat);
  }
  if (centered) {
    ctx.output("dB", x.dtype, bias_shape);
    ctx.stmt(access("dB", bias_lhs) + (bias_reduces ? " += " : " = ") + G);
  }
}

// --- layernorm and rmsnorm ---------------------------------------------------------------

// Scale and B broadcast against the normalized shape X[axis:], right-aligned.
std::vector<std::string> trailing_param_idx(const OpContext& ctx, const std::string& port,
                                            int64_t axis) {
  if (!ctx.has(port))
    return {};
  const TensorSpec& x = ctx.in("X");
  const TensorSpec& p = ctx.in(port);
  const std::vector<int64_t> norm(x.shape.begin() + axis, x.shape.end());
  const size_t off = norm.size() >= p.shape.size() ? norm.size() - p.shape.size() : 0;
  bool ok = p.shape.size() <= norm.size();
  for (size_t d = 0; ok && d < p.shape.size(); ++d)
    ok = p.shape[d] == 1 || p.shape[d] == norm[off + d];
  if (!ok)
    ctx.fail("input '{}' {} does not broadcast to the normalized shape {} (X {} from axis {})",
             port, shape_text(p.shape), shape_text(norm), shape_text(x.shape), axis);
  return broadcast_indices(p, static_cast<int64_t>(x.shape.size()), x.shape);
}

int64_t norm_axis(const OpContext& ctx) {
  ctx.require_float("X");
  ctx.require_same_dtype({"X", "Scale", "B"});
  ctx.require_rank_at_least("X", 1);
  return ctx.axis(ctx.attr_int("axis"), static_cast<int64_t>(ctx.in("X").shape.size()));
}

void emit_layernorm(OpContext& ctx, bool centered) {
  const int64_t axis = norm_axis(ctx);
  const TensorSpec& x = ctx.in("X");
  const Stats s = stats_over(x, keep_before(x.shape.size(), axis));
  const std::string scale = param(ctx, "Scale", trailing_param_idx(ctx, "Scale", axis));
  const std::string bias = centered ? param(ctx, "B", trailing_param_idx(ctx, "B", axis)) : "";
  emit_normalized(ctx, s, centered, ctx.attr_float("epsilon"), scale, bias);
}

void emit_layernorm_grad(OpContext& ctx, bool centered) {
  const int64_t axis = norm_axis(ctx);
  const TensorSpec& x = ctx.in("X");
  const Stats s = stats_over(x, keep_before(x.shape.size(), axis));
  // dB has the normalized shape X[axis:], summed over the leading dimensions.
  const std::vector<std::string> bias_lhs(s.all.begin() + axis, s.all.end());
  const std::vector<int64_t> bias_shape(x.shape.begin() + axis, x.shape.end());
  emit_normalized_grad(ctx, s, centered, ctx.attr_float("epsilon"),
                       trailing_param_idx(ctx, "Scale", axis), bias_lhs, bias_shape, axis > 0);
}

// --- batchnorm, instancenorm: statistics per channel (dimension 1) -----------------------

// Per-channel parameter inputs [C] are read at the channel index i1.
void require_channels(const OpContext& ctx, const std::vector<std::string>& ports,
                      int64_t min_rank) {
  ctx.require_float("X");
  ctx.require_same_dtype(ports);
  ctx.require_rank_at_least("X", min_rank);
  const int64_t c = ctx.in("X").shape[1];
  for (const std::string& p : ports) {
    if (p == "X" || p == "dY" || !ctx.has(p))
      continue;
    if (ctx.in(p).shape != std::vector<int64_t>{c})
      ctx.fail("input '{}' {} must be [C] = [{}] (X {} is [N, C, ...])", p,
               shape_text(ctx.in(p).shape), c, shape_text(ctx.in("X").shape));
  }
}

std::vector<bool> keep_channel(size_t rank, bool per_sample) {
  std::vector<bool> k(rank, false);
  k[1] = true;
  if (per_sample)
    k[0] = true;
  return k;
}

// Inference: Y = (X - Mean[c]) rsqrt(Var[c] + eps) Scale[c] + B[c].
void emit_batchnorm(OpContext& ctx) {
  require_channels(ctx, {"X", "Scale", "B", "Mean", "Var"}, 2);
  const TensorSpec& x = ctx.in("X");
  const std::vector<std::string> all = index_names(static_cast<int64_t>(x.shape.size()));
  for (const char* p : {"X", "Mean", "Var"})
    ctx.input(p);
  const std::string scale = param(ctx, "Scale", {"i1"}), bias = param(ctx, "B", {"i1"});
  ctx.output("Y", x.dtype, x.shape);
  std::string y = "(" + access("X", all) + " - Mean[i1]) * rsqrt(Var[i1] + " +
                  float_literal(ctx.attr_float("epsilon")) + ")";
  if (!scale.empty())
    y += " * " + scale;
  if (!bias.empty())
    y += " + " + bias;
  ctx.stmt(access("Y", all) + " = " + y);
}

// The gradient of inference batchnorm: the statistics are constants (buffers, as in
// PyTorch's eval mode), so with r = rsqrt(Var[c] + eps): dX = dY Scale[c] r,
// dScale[c] = sum dY (X - Mean[c]) r, dB[c] = sum dY.
void emit_batchnorm_grad(OpContext& ctx) {
  require_channels(ctx, {"X", "Scale", "Mean", "Var", "dY"}, 2);
  const TensorSpec& x = ctx.in("X");
  if (ctx.in("dY").shape != x.shape)
    ctx.fail("dY has shape {} but X has shape {}: they must be equal",
             shape_text(ctx.in("dY").shape), shape_text(x.shape));
  const std::vector<std::string> all = index_names(static_cast<int64_t>(x.shape.size()));
  for (const char* p : {"X", "Mean", "Var", "dY"})
    ctx.input(p);
  const std::string scale = param(ctx, "Scale", {"i1"});
  const std::string r = "rsqrt(Var[i1] + " + float_literal(ctx.attr_float("epsilon")) + ")";
  const std::string G = access("dY", all);
  ctx.output("dX", x.dtype, x.shape);
  ctx.stmt(access("dX", all) + " = " + G + (scale.empty() ? "" : " * " + scale) + " * " + r);
  if (!scale.empty()) {
    ctx.output("dScale", x.dtype, {x.shape[1]});
    ctx.stmt("dScale[i1] += " + G + " * (" + access("X", all) + " - Mean[i1]) * " + r);
  }
  ctx.output("dB", x.dtype, {x.shape[1]});
  ctx.stmt("dB[i1] += " + G);
}

// Training: normalizes with the batch's statistics (biased variance), outputs them, and
// updates the running statistics as PyTorch does: running = (1 - momentum) running +
// momentum batch, with the unbiased variance for RunningVar.
void emit_batchnorm_training(OpContext& ctx) {
  require_channels(ctx, {"X", "Scale", "B", "RunningMean", "RunningVar"}, 2);
  const TensorSpec& x = ctx.in("X");
  const Stats s = stats_over(x, keep_channel(x.shape.size(), false));
  if (s.count < 2)
    ctx.fail("training needs more than one value per channel, X {} has {}", shape_text(x.shape),
             s.count);
  const std::string scale = param(ctx, "Scale", {"i1"}), bias = param(ctx, "B", {"i1"});
  emit_normalized(ctx, s, true, ctx.attr_float("epsilon"), scale, bias);
  const double mom = ctx.attr_float("momentum");
  const int64_t c = x.shape[1];
  ctx.input("RunningMean");
  ctx.input("RunningVar");
  ctx.output("BatchMean", x.dtype, {c});
  ctx.output("BatchVar", x.dtype, {c});
  ctx.output("RunningMeanOut", x.dtype, {c});
  ctx.output("RunningVarOut", x.dtype, {c});
  ctx.stmt("BatchMean[i1] = mean[i1]");
  ctx.stmt("BatchVar[i1] = q[i1] / " + s.n);
  ctx.stmt("RunningMeanOut[i1] = " + float_literal(1 - mom) + " * RunningMean[i1] + " +
           float_literal(mom) + " * mean[i1]");
  ctx.stmt("RunningVarOut[i1] = " + float_literal(1 - mom) + " * RunningVar[i1] + " +
           float_literal(mom) + " * q[i1] / " + float_literal(static_cast<double>(s.count - 1)));
}

// The gradient of training-mode batchnorm (batch statistics), or of instancenorm.
void emit_channel_norm_grad(OpContext& ctx, bool per_sample) {
  require_channels(ctx, {"X", "Scale", "dY"}, per_sample ? 3 : 2);
  const TensorSpec& x = ctx.in("X");
  const Stats s = stats_over(x, keep_channel(x.shape.size(), per_sample));
  emit_normalized_grad(ctx, s, true, ctx.attr_float("epsilon"), {"i1"}, {"i1"}, {x.shape[1]},
                       true);
}

void emit_instancenorm(OpContext& ctx) {
  require_channels(ctx, {"X", "Scale", "B"}, 3);
  const TensorSpec& x = ctx.in("X");
  const Stats s = stats_over(x, keep_channel(x.shape.size(), true));
  const std::string scale = param(ctx, "Scale", {"i1"}), bias = param(ctx, "B", {"i1"});
  emit_normalized(ctx, s, true, ctx.attr_float("epsilon"), scale, bias);
}

// --- groupnorm ---------------------------------------------------------------------------

struct Groups {
  int64_t groups, per_group;
  std::string grp;    // "i1 // per_group"
  std::string member; // "i1 // per_group == g"
  std::string n;      // elements per group
};

Groups group_shape(const OpContext& ctx, const std::vector<std::string>& ports) {
  require_channels(ctx, ports, 2);
  const TensorSpec& x = ctx.in("X");
  const int64_t c = x.shape[1], g = ctx.attr_int("num_groups");
  if (g < 1 || c % g != 0)
    ctx.fail("num_groups {} must be at least 1 and divide the {} channels of X {}", g, c,
             shape_text(x.shape));
  Groups gr{g, c / g, "", "", ""};
  gr.grp = "i1 // " + std::to_string(gr.per_group);
  // No spaces around `//` outside brackets, where ` //` would start a comment.
  gr.member = "i1//" + std::to_string(gr.per_group) + " == g";
  gr.n = float_literal(static_cast<double>(numel(x.shape) / x.shape[0] / g));
  return gr;
}

// Per-(sample, channel) partial sums `c<name>[i0, i1]` of `value`, then per-(sample,
// group) sums `<name>[i0, g]`; returns the group statistic read at every element.
std::string group_sum(OpContext& ctx, const std::string& name, const std::string& value,
                      const Groups& gr) {
  const TensorSpec& x = ctx.in("X");
  const DType acc = compute_type(x.dtype);
  const std::vector<std::string> all = index_names(static_cast<int64_t>(x.shape.size()));
  ctx.local("c" + name, acc, {x.shape[0], x.shape[1]});
  ctx.local(name, acc, {x.shape[0], gr.groups});
  ctx.stmt("c" + name + "[i0, i1] " + (x.shape.size() > 2 ? "+=" : "=") + " " + value);
  ctx.stmt(name + "[i0, g] += " + gr.member + " ? c" + name + "[i0, i1] : 0");
  return name + "[i0, " + gr.grp + "]";
}

void emit_groupnorm(OpContext& ctx) {
  const Groups gr = group_shape(ctx, {"X", "Scale", "B"});
  const TensorSpec& x = ctx.in("X");
  const std::vector<std::string> all = index_names(static_cast<int64_t>(x.shape.size()));
  const std::string X = access("X", all);
  ctx.input("X");
  const std::string scale = param(ctx, "Scale", {"i1"}), bias = param(ctx, "B", {"i1"});
  ctx.output("Y", x.dtype, x.shape);
  const std::string sum = group_sum(ctx, "s", X, gr);
  ctx.local("mean", compute_type(x.dtype), {x.shape[0], x.shape[1]});
  ctx.stmt("mean[i0, i1] = " + sum + " / " + gr.n);
  const std::string xc = "(" + X + " - mean[i0, i1])";
  const std::string q = group_sum(ctx, "q", xc + " * " + xc, gr);
  std::string y = xc + " * rsqrt(" + q + " / " + gr.n + " + " +
                  float_literal(ctx.attr_float("epsilon")) + ")";
  if (!scale.empty())
    y += " * " + scale;
  if (!bias.empty())
    y += " + " + bias;
  ctx.stmt(access("Y", all) + " = " + y);
}

void emit_groupnorm_grad(OpContext& ctx) {
  const Groups gr = group_shape(ctx, {"X", "Scale", "dY"});
  const TensorSpec& x = ctx.in("X");
  if (ctx.in("dY").shape != x.shape)
    ctx.fail("dY has shape {} but X has shape {}: they must be equal",
             shape_text(ctx.in("dY").shape), shape_text(x.shape));
  const std::vector<std::string> all = index_names(static_cast<int64_t>(x.shape.size()));
  const std::string X = access("X", all), G = access("dY", all);
  const DType acc = compute_type(x.dtype);
  ctx.input("X");
  ctx.input("dY");
  const std::string scale = param(ctx, "Scale", {"i1"});
  ctx.output("dX", x.dtype, x.shape);
  const std::string sum = group_sum(ctx, "s", X, gr);
  ctx.local("mean", acc, {x.shape[0], x.shape[1]});
  ctx.local("r", acc, {x.shape[0], x.shape[1]});
  ctx.stmt("mean[i0, i1] = " + sum + " / " + gr.n);
  const std::string xc = "(" + X + " - mean[i0, i1])";
  const std::string q = group_sum(ctx, "q", xc + " * " + xc, gr);
  ctx.stmt("r[i0, i1] = rsqrt(" + q + " / " + gr.n + " + " +
           float_literal(ctx.attr_float("epsilon")) + ")");
  const std::string xhat = "(" + xc + " * r[i0, i1])";
  const std::string g = scale.empty() ? G : "(" + G + " * " + scale + ")";
  const std::string gs = group_sum(ctx, "gs", g, gr);
  const std::string gx = group_sum(ctx, "gx", g + " * " + xhat, gr);
  ctx.stmt(access("dX", all) + " = r[i0, i1] * (" + g + " - " + gs + " / " + gr.n + " - " +
           xhat + " * " + gx + " / " + gr.n + ")");
  const int64_t c = x.shape[1];
  if (!scale.empty()) {
    ctx.output("dScale", x.dtype, {c});
    ctx.stmt("dScale[i1] += " + G + " * " + xhat);
  }
  ctx.output("dB", x.dtype, {c});
  ctx.stmt("dB[i1] += " + G);
}

// --- definitions -------------------------------------------------------------------------

AttrSpec eps_attr() {
  return {"epsilon", AttrKind::Float, AttrValue{1e-5}, "added to the variance"};
}
AttrSpec axis_attr(int64_t def, const char* doc) {
  return {"axis", AttrKind::Int, AttrValue{def}, doc};
}
Port opt(const char* name) { return {name, PortKind::Data, true}; }

// Adds `fwd` and its backward op `bwd` (named fwd.name + "_grad").
void add_pair(std::vector<OpDef>& ops, OpDef fwd, OpDef bwd) {
  fwd.gradient = bwd.name;
  ops.push_back(std::move(fwd));
  ops.push_back(std::move(bwd));
}

} // namespace

void add_normalization_ops(std::vector<OpDef>& ops) {
  const char* N = "normalization";
  const char* NB = "normalization-backward";
  for (bool log : {false, true}) {
    const std::vector<AttrSpec> a = {axis_attr(-1, "the axis normalized over")};
    add_pair(ops,
             make_op(log ? "log_softmax" : "softmax", N,
                  log ? "log of softmax along an axis (stable)"
                      : "exp(x - max) / sum exp(x - max) along an axis",
                  {{"X"}}, {{"Y"}}, a, [log](OpContext& ctx) { emit_softmax(ctx, log); }),
             make_op(log ? "log_softmax_grad" : "softmax_grad", NB,
                  log ? "gradient of log_softmax from its output Y and dY"
                      : "gradient of softmax from its output Y and dY",
                  {{"Y"}, {"dY"}}, {{"dX"}}, a,
                  [log](OpContext& ctx) { emit_softmax_grad(ctx, log); }));
  }
  const std::vector<AttrSpec> ln = {axis_attr(-1, "first normalized axis (through the last)"),
                                    eps_attr()};
  add_pair(ops,
           make_op("layernorm", N,
                "(x - mean) / sqrt(var + eps) * Scale + B over axes axis.. (ONNX "
                "LayerNormalization)",
                {{"X"}, opt("Scale"), opt("B")}, {{"Y"}}, ln,
                [](OpContext& ctx) { emit_layernorm(ctx, true); }),
           make_op("layernorm_grad", NB,
                "gradient of layernorm (dX; dScale when Scale is given; dB over X[axis:])",
                {{"X"}, opt("Scale"), {"dY"}}, {{"dX"}, opt("dScale"), {"dB"}}, ln,
                [](OpContext& ctx) { emit_layernorm_grad(ctx, true); }));
  add_pair(ops,
           make_op("rmsnorm", N, "x / sqrt(mean(x^2) + eps) * Scale over axes axis..",
                {{"X"}, opt("Scale")}, {{"Y"}}, ln,
                [](OpContext& ctx) { emit_layernorm(ctx, false); }),
           make_op("rmsnorm_grad", NB, "gradient of rmsnorm (dX; dScale when Scale is given)",
                {{"X"}, opt("Scale"), {"dY"}}, {{"dX"}, opt("dScale")}, ln,
                [](OpContext& ctx) { emit_layernorm_grad(ctx, false); }));
  add_pair(ops,
           make_op("batchnorm", N,
                "inference: (x - Mean[c]) / sqrt(Var[c] + eps) * Scale[c] + B[c], X "
                "[N, C, ...]",
                {{"X"}, opt("Scale"), opt("B"), {"Mean"}, {"Var"}}, {{"Y"}}, {eps_attr()},
                emit_batchnorm),
           make_op("batchnorm_grad", NB,
                "gradient of inference batchnorm with fixed Mean and Var (dX, dScale when "
                "Scale is given, dB)",
                {{"X"}, opt("Scale"), {"Mean"}, {"Var"}, {"dY"}}, {{"dX"}, opt("dScale"), {"dB"}},
                {eps_attr()}, emit_batchnorm_grad));
  const std::vector<AttrSpec> bt = {
      eps_attr(), {"momentum", AttrKind::Float, AttrValue{0.1},
                   "running = (1 - momentum) running + momentum batch (PyTorch)"}};
  add_pair(ops,
           make_op("batchnorm_training", N,
                "training: normalize with the batch's statistics, output them and the "
                "updated running statistics",
                {{"X"}, opt("Scale"), opt("B"), {"RunningMean"}, {"RunningVar"}},
                {{"Y"}, {"BatchMean"}, {"BatchVar"}, {"RunningMeanOut"}, {"RunningVarOut"}}, bt,
                emit_batchnorm_training),
           make_op("batchnorm_training_grad", NB,
                "gradient of training batchnorm (dX, dScale when Scale is given, dB)",
                {{"X"}, opt("Scale"), {"dY"}}, {{"dX"}, opt("dScale"), {"dB"}}, {eps_attr()},
                [](OpContext& ctx) { emit_channel_norm_grad(ctx, false); }));
  add_pair(ops,
           make_op("instancenorm", N,
                "per sample and channel over the spatial axes, X [N, C, D1, ...]",
                {{"X"}, opt("Scale"), opt("B")}, {{"Y"}}, {eps_attr()}, emit_instancenorm),
           make_op("instancenorm_grad", NB, "gradient of instancenorm (dX, dScale, dB)",
                {{"X"}, opt("Scale"), {"dY"}}, {{"dX"}, opt("dScale"), {"dB"}}, {eps_attr()},
                [](OpContext& ctx) { emit_channel_norm_grad(ctx, true); }));
  const std::vector<AttrSpec> gn = {
      {"num_groups", AttrKind::Int, std::nullopt, "groups of channels (divides C)"}, eps_attr()};
  add_pair(ops,
           make_op("groupnorm", N,
                "per sample and group of C / num_groups channels, Scale and B per channel",
                {{"X"}, opt("Scale"), opt("B")}, {{"Y"}}, gn, emit_groupnorm),
           make_op("groupnorm_grad", NB, "gradient of groupnorm (dX, dScale, dB)",
                {{"X"}, opt("Scale"), {"dY"}}, {{"dX"}, opt("dScale"), {"dB"}}, gn,
                emit_groupnorm_grad));
}

} // namespace unitile::ops
