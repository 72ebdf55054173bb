// Losses: cross_entropy (from logits) and nll_loss (from log-probabilities) with class
// weights, ignore_index, label smoothing and reduction none/mean/sum, as PyTorch defines
// them; mse_loss; and their backward ops.
//
// The class axis is axis 1 (X is [N, C] or [N, C, d...], T is [N] or [N, d...] of
// integer class indices). Per element, with logp the log-probabilities, t the target,
// w the class weights (all 1 without W) and e the label smoothing:
//   loss = (1 - e) * -w[t] * logp[t] + (e / C) * -sum_c w[c] * logp[c]   (0 where t is ignored)
// `mean` divides the sum by the sum of w[t] over the elements not ignored (PyTorch's rule,
// also for the smoothing term). A target outside [0, C) that is not ignore_index reads
// as NaN (the guarded gather), so a bad label shows in the loss instead of reading
// memory out of range.
#include "ops/OpContext.h"
#include "ops/defs/Families.h"

namespace unitile::ops {
namespace {

enum class Reduction : uint8_t { None, Mean, Sum };

Reduction reduction(const OpContext& ctx) {
  const std::string r = ctx.attr_string("reduction");
  if (r == "none")
    return Reduction::None;
  if (r == "mean")
    return Reduction::Mean;
  if (r == "sum")
    return Reduction::Sum;
  ctx.fail("reduction must be none, mean or sum, got '{}'", r);
}

std::string cast_to(DType dt, const std::string& e) {
  return compute_type(dt) == dt ? e : dtype_text(dt) + "(" + e + ")";
}

// The index texts of a classification loss instance.
struct ClassShape {
  int64_t classes = 0;
  std::vector<int64_t> t_shape;   // T's shape: X's without axis 1
  std::vector<std::string> tt;    // T's indices: i0, i2, i3, ...
  std::vector<std::string> xc;    // X's indices with the class index c
  std::string t, x_t, w_t, w_c, ignored; // T[tt], X at the target, w[t], w[c], T == ignore
};

ClassShape class_shape(const OpContext& ctx) {
  ctx.require_float("X");
  ctx.require_integer("T");
  ctx.require_same_dtype({"X", "W", "dY"});
  const TensorSpec& x = ctx.in("X");
  if (x.shape.size() < 2)
    ctx.fail("input 'X' must be [N, C] or [N, C, d...], got shape {}", shape_text(x.shape));
  ClassShape s;
  s.classes = x.shape[1];
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  for (int64_t d = 0; d < rank; ++d) {
    if (d == 1)
      continue;
    s.t_shape.push_back(x.shape[d]);
    s.tt.push_back("i" + std::to_string(d));
  }
  if (ctx.in("T").shape != s.t_shape)
    ctx.fail("input 'T' has shape {} but X {} needs targets of shape {} (X's shape without the "
             "class axis 1)",
             shape_text(ctx.in("T").shape), shape_text(x.shape), shape_text(s.t_shape));
  if (ctx.has("W") && ctx.in("W").shape != std::vector<int64_t>{s.classes})
    ctx.fail("input 'W' has shape {} but must be [{}] (one weight per class)",
             shape_text(ctx.in("W").shape), s.classes);
  const double smoothing = ctx.attr_float("label_smoothing");
  if (!(smoothing >= 0.0 && smoothing <= 1.0))
    ctx.fail("label_smoothing must be in [0, 1], got {}", smoothing);
  s.t = access("T", s.tt);
  s.xc = index_names(rank);
  s.xc[1] = "c";
  std::vector<std::string> xt = index_names(rank);
  xt[1] = s.t;
  s.x_t = "(" + access("X", xt) + " ?? nan)";
  s.w_t = ctx.has("W") ? "(W[" + s.t + "] ?? nan)" : "1";
  s.w_c = ctx.has("W") ? "W[c]" : "1";
  s.ignored = s.t + " == " + std::to_string(ctx.attr_int("ignore_index"));
  return s;
}

// Locals every classification loss (and its gradient) needs: lse[tt] (the log of the sum
// of exp over the classes, from logits only), wsum[] (the weight of the elements not
// ignored, for mean). Returns logp at class c and at the target.
std::pair<std::string, std::string> log_probs(OpContext& ctx, const ClassShape& s,
                                              bool from_logits) {
  const DType ct = compute_type(ctx.in("X").dtype);
  const std::string xc = access("X", s.xc);
  if (!from_logits)
    return {xc, s.x_t};
  ctx.local("mx", ct, s.t_shape);
  ctx.local("se", ct, s.t_shape);
  ctx.local("lse", ct, s.t_shape);
  const std::string mx = access("mx", s.tt), se = access("se", s.tt), lse = access("lse", s.tt);
  ctx.stmt(mx + " max= " + xc);
  ctx.stmt(se + " += exp(" + xc + " - " + mx + ")");
  ctx.stmt(lse + " = " + mx + " + log(" + se + ")");
  return {"(" + xc + " - " + lse + ")", "(" + s.x_t + " - " + lse + ")"};
}

void weight_sum(OpContext& ctx, const ClassShape& s) {
  ctx.local("wsum", compute_type(ctx.in("X").dtype), {});
  ctx.stmt("wsum[] += " + s.ignored + " ? 0 : " + s.w_t);
}

void emit_class_loss(OpContext& ctx, bool from_logits) {
  const ClassShape s = class_shape(ctx);
  const Reduction red = reduction(ctx);
  const DType dt = ctx.in("X").dtype, ct = compute_type(dt);
  const double eps = ctx.attr_float("label_smoothing");
  ctx.input("X");
  ctx.input("T");
  if (ctx.has("W"))
    ctx.input("W");
  const auto [logp_c, logp_t] = log_probs(ctx, s, from_logits);
  // Constants are folded here: two literals side by side would be typed f32 (literals
  // are weak and take their partner's type, f32 when the partner is a literal too).
  std::string loss = float_literal(-(1 - eps)) + " * " +
                     (ctx.has("W") ? s.w_t + " * " + logp_t : logp_t);
  if (eps > 0) {
    ctx.local("sm", ct, s.t_shape);
    ctx.stmt(access("sm", s.tt) + " += " + (ctx.has("W") ? s.w_c + " * " + logp_c : logp_c));
    loss += " - " + float_literal(eps / static_cast<double>(s.classes)) + " * " +
            access("sm", s.tt);
  }
  loss = s.ignored + " ? 0 : " + loss;
  if (red == Reduction::None) {
    ctx.output("Y", dt, s.t_shape);
    ctx.stmt(access("Y", s.tt) + " = " + cast_to(dt, loss));
    return;
  }
  ctx.output("Y", dt, {});
  if (red == Reduction::Sum) {
    ctx.stmt("Y[] += " + loss);
    return;
  }
  weight_sum(ctx, s);
  ctx.local("total", ct, {});
  ctx.stmt("total[] += " + loss);
  ctx.stmt("Y[] = " + cast_to(dt, "total[] / wsum[]"));
}

// dX[.., c, ..] = g * d loss / d X[.., c, ..] with g the incoming gradient of the element
// (dY[tt], dY[] or dY[] / wsum[]). From logits, with p = softmax:
//   (1 - e) * w[t] * (p[c] - [c == t]) + (e / C) * (p[c] * sum_c' w[c'] - w[c]);
// from log-probabilities: -(1 - e) * w[t] * [c == t] - (e / C) * w[c].
void emit_class_loss_grad(OpContext& ctx, bool from_logits) {
  const ClassShape s = class_shape(ctx);
  const Reduction red = reduction(ctx);
  const DType dt = ctx.in("X").dtype, ct = compute_type(dt);
  const double eps = ctx.attr_float("label_smoothing");
  const std::vector<int64_t> dy_shape = red == Reduction::None ? s.t_shape : std::vector<int64_t>{};
  if (ctx.in("dY").shape != dy_shape)
    ctx.fail("dY has shape {} but the loss has shape {}", shape_text(ctx.in("dY").shape),
             shape_text(dy_shape));
  ctx.input("X");
  ctx.input("T");
  if (ctx.has("W"))
    ctx.input("W");
  ctx.input("dY");
  ctx.output("dX", dt, ctx.in("X").shape);
  std::string g = red == Reduction::None ? access("dY", s.tt) : "dY[]";
  if (red == Reduction::Mean) {
    weight_sum(ctx, s);
    g += " / wsum[]";
  }
  // d loss / d X[c] is D_t at the target class and D_o elsewhere; every literal stands
  // next to a typed operand (two literals together would be typed f32), so the
  // constants of the unweighted case are folded here.
  const double a = 1 - eps, b = eps / static_cast<double>(s.classes);
  const bool weighted = ctx.has("W");
  std::string d_t, d_o;
  if (from_logits) {
    const std::string p = "exp" + log_probs(ctx, s, true).first;
    std::string k = "1";
    if (weighted) {
      k = "(" + float_literal(a) + " * " + s.w_t;
      if (eps > 0) {
        ctx.local("sw", ct, {});
        ctx.stmt("sw[] += W[c]");
        k += " + " + float_literal(b) + " * sw[]";
      }
      k += ")";
      d_t = p + " * " + k + " - " + float_literal(a) + " * " + s.w_t;
      d_o = p + " * " + k;
      if (eps > 0) {
        d_t += " - " + float_literal(b) + " * W[c]";
        d_o += " - " + float_literal(b) + " * W[c]";
      }
    } else {
      d_t = p + " - " + float_literal(a + b);
      d_o = eps > 0 ? p + " - " + float_literal(b) : p;
    }
  } else if (weighted) {
    d_t = float_literal(-a) + " * " + s.w_t;
    d_o = "0";
    if (eps > 0) {
      d_t += " - " + float_literal(b) + " * W[c]";
      d_o = float_literal(-b) + " * W[c]";
    }
  } else {
    d_t = float_literal(-(a + b));
    d_o = float_literal(-b);
  }
  const std::string d = "c == " + s.t + " ? " + "(" + g + ") * (" + d_t + ") : (" + g + ") * (" + d_o + ")";
  ctx.stmt(access("dX", s.xc) + " = " + s.ignored + " ? 0 : " + cast_to(dt, "(" + d + ")"));
}

// mse_loss: A and B broadcast to one shape (NumPy's rules, as torch's mse_loss does);
// mean divides by that shape's element count. The gradient into an operand sums over
// the dimensions it was broadcast along (z<d>: an extent-1 index on the left).
std::vector<int64_t> mse_shape(const OpContext& ctx) {
  ctx.require_float("A");
  ctx.require_same_dtype({"A", "B", "dY"});
  return broadcast_shapes(ctx, {{"A", ctx.in("A")}, {"B", ctx.in("B")}});
}

std::string mse_diff(const OpContext& ctx, const std::vector<int64_t>& shape) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  return "(" + access("A", broadcast_indices(ctx.in("A"), rank, shape)) + " - " +
         access("B", broadcast_indices(ctx.in("B"), rank, shape)) + ")";
}

// `d<port>[...] = ` or `+= ` when the operand was broadcast (the sum over those dims).
std::string mse_grad_lhs(const OpContext& ctx, const std::string& port,
                         const std::vector<int64_t>& shape) {
  const std::vector<int64_t>& s = ctx.in(port).shape;
  const int64_t off = static_cast<int64_t>(shape.size() - s.size());
  bool reduces = off > 0;
  std::vector<std::string> lhs;
  for (size_t d = 0; d < s.size(); ++d) {
    const int64_t od = off + static_cast<int64_t>(d);
    const bool broadcast = s[d] == 1 && shape[od] != 1;
    reduces = reduces || broadcast;
    lhs.push_back((broadcast ? "z" : "i") + std::to_string(od));
  }
  return access("d" + port, lhs) + (reduces ? " += " : " = ");
}

void emit_mse(OpContext& ctx) {
  const std::vector<int64_t> shape = mse_shape(ctx);
  const Reduction red = reduction(ctx);
  const DType dt = ctx.in("A").dtype;
  const std::vector<std::string> idx = index_names(static_cast<int64_t>(shape.size()));
  ctx.input("A");
  ctx.input("B");
  const std::string diff = mse_diff(ctx, shape);
  const std::string sq = diff + " * " + diff;
  if (red == Reduction::None) {
    ctx.output("Y", dt, shape);
    ctx.stmt(access("Y", idx) + " = " + sq);
    return;
  }
  ctx.output("Y", dt, {});
  // Summed in two levels, per leading index and then over those, so each running sum
  // sees at most a row's or a column's worth of terms: one f32 accumulator for 3.1M
  // terms drifted by more than 1e-4 relative from PyTorch's (blocked) sum. The rows
  // also run in parallel.
  std::string term = sq;
  if (shape.size() >= 2 && shape[0] > 1) {
    ctx.local("part", compute_type(dt), {shape[0]});
    ctx.stmt("part[i0] += " + sq);
    term = "part[i0]";
  }
  if (red == Reduction::Sum) {
    ctx.stmt("Y[] += " + term);
    return;
  }
  ctx.local("total", compute_type(dt), {});
  ctx.stmt("total[] += " + term);
  ctx.stmt("Y[] = " + cast_to(dt, "total[] / " + float_literal(static_cast<double>(numel(shape)))));
}

void emit_mse_grad(OpContext& ctx) {
  const std::vector<int64_t> shape = mse_shape(ctx);
  const Reduction red = reduction(ctx);
  const DType dt = ctx.in("A").dtype;
  const std::vector<std::string> idx = index_names(static_cast<int64_t>(shape.size()));
  const std::vector<int64_t> dy_shape = red == Reduction::None ? shape : std::vector<int64_t>{};
  if (ctx.in("dY").shape != dy_shape)
    ctx.fail("dY has shape {} but the loss has shape {}", shape_text(ctx.in("dY").shape),
             shape_text(dy_shape));
  ctx.input("A");
  ctx.input("B");
  ctx.input("dY");
  std::string g = red == Reduction::None ? access("dY", idx) : "dY[]";
  if (red == Reduction::Mean)
    g += " / " + float_literal(static_cast<double>(numel(shape)));
  const std::string diff = mse_diff(ctx, shape);
  ctx.output("dA", dt, ctx.in("A").shape);
  ctx.output("dB", dt, ctx.in("B").shape);
  ctx.stmt(mse_grad_lhs(ctx, "A", shape) + "2 * " + diff + " * " + g);
  ctx.stmt(mse_grad_lhs(ctx, "B", shape) + "-2 * " + diff + " * " + g);
}

std::vector<AttrSpec> class_attrs() {
  return {{"reduction", AttrKind::String, AttrValue{std::string("mean")}, "none, mean or sum"},
          {"ignore_index", AttrKind::Int, AttrValue{int64_t{-100}},
           "targets with this value add nothing (nor to mean's divisor)"},
          {"label_smoothing", AttrKind::Float, AttrValue{0.0},
           "mix of the target with the uniform distribution, in [0, 1]"}};
}

void add_with_grad(std::vector<OpDef>& ops, OpDef op, std::vector<Port> grad_inputs,
                   std::vector<Port> grad_outputs, std::function<void(OpContext&)> grad_emit) {
  OpDef g;
  g.name = op.name + "_grad";
  g.category = "loss-backward";
  g.summary = "gradient of " + op.name;
  g.inputs = std::move(grad_inputs);
  g.outputs = std::move(grad_outputs);
  g.attrs = op.attrs;
  g.emit = std::move(grad_emit);
  op.gradient = g.name;
  ops.push_back(std::move(op));
  ops.push_back(std::move(g));
}

} // namespace

void add_loss_ops(std::vector<OpDef>& ops) {
  for (bool from_logits : {true, false}) {
    OpDef op;
    op.name = from_logits ? "cross_entropy" : "nll_loss";
    op.category = "loss";
    op.summary = from_logits
                     ? "cross entropy of logits X [N, C, d...] against class indices T [N, d...]"
                     : "negative log-likelihood of log-probabilities X [N, C, d...] at targets T";
    op.inputs = {{"X"}, {"T", PortKind::Index}, {"W", PortKind::Data, true}};
    op.outputs = {{"Y"}};
    op.attrs = class_attrs();
    op.emit = [from_logits](OpContext& ctx) { emit_class_loss(ctx, from_logits); };
    add_with_grad(ops, std::move(op),
                  {{"X"}, {"T", PortKind::Index}, {"W", PortKind::Data, true}, {"dY"}}, {{"dX"}},
                  [from_logits](OpContext& ctx) { emit_class_loss_grad(ctx, from_logits); });
  }
  OpDef mse;
  mse.name = "mse_loss";
  mse.category = "loss";
  mse.summary = "squared difference of A and B (broadcast), reduced";
  mse.inputs = {{"A"}, {"B"}};
  mse.outputs = {{"Y"}};
  mse.attrs = {{"reduction", AttrKind::String, AttrValue{std::string("mean")}, "none, mean or sum"}};
  mse.emit = emit_mse;
  add_with_grad(ops, std::move(mse), {{"A"}, {"B"}, {"dY"}}, {{"dA"}, {"dB"}}, emit_mse_grad);
}

} // namespace unitile::ops
