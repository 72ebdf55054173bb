// Optimizer updates as ops that output the new parameter and state: sgd (momentum,
// dampening, weight decay, nesterov), adam and adamw (PyTorch's formulas, step count from
// an attribute or a scalar input), and clip_grad_norm over any number of gradients.
//
// The learning rate is the attribute `lr`, or the optional scalar input `Lr`, which
// replaces the attribute: a schedule then changes it every step without a new kernel.
//
// The formulas follow torch.optim's single-tensor code paths, so a training loop built on
// these ops reproduces PyTorch's numbers (g starts as G, or -G with maximize):
//   sgd:  g = g + wd*P;  M' = M*momentum + (1 - dampening)*g (M' = g on the first step,
//         when M is not given);  g = nesterov ? g + momentum*M' : M';  P' = P - lr*g
//   adam: g = g + wd*P;  M' = M + (g - M)*(1 - beta1);  V' = V*beta2 + (1 - beta2)*g*g;
//         P' = P - lr/(1 - beta1^t) * M' / (sqrt(V')/sqrt(1 - beta2^t) + eps)
//   adamw: as adam without the wd*P term, P scaled by (1 - lr*wd) first (decoupled decay).
//   amsgrad (adam, adamw): VMax' = max(VMax, V') (VMax absent: zeros, the first step)
//         takes V''s place in P's denominator.
#include "ops/OpContext.h"
#include "ops/defs/Families.h"

#include <cmath>

namespace unitile::ops {
namespace {

std::vector<std::string> same_shape_ports(const OpContext& ctx,
                                          const std::vector<std::string>& ports) {
  ctx.require_float(ports[0]);
  ctx.require_same_dtype(ports);
  for (const std::string& p : ports)
    if (ctx.has(p) && ctx.in(p).shape != ctx.in(ports[0]).shape)
      ctx.fail("input '{}' has shape {} but {} has shape {}: they must be equal", p,
               shape_text(ctx.in(p).shape), ports[0], shape_text(ctx.in(ports[0]).shape));
  return index_names(static_cast<int64_t>(ctx.in(ports[0]).shape.size()));
}

std::string lit(double v) { return float_literal(v); }

// The learning rate as an expression in the compute type of `dtype`: the scalar input Lr
// when given (any float dtype, converted), else the attribute lr as a literal.
std::string learning_rate(OpContext& ctx, DType dtype) {
  if (!ctx.has("Lr"))
    return lit(ctx.attr_float("lr"));
  const TensorSpec& lr = ctx.in("Lr");
  if (!lr.shape.empty() || !is_float(lr.dtype))
    ctx.fail("input 'Lr' must be a float scalar (shape []), got {} {}", dtype_text(lr.dtype),
             shape_text(lr.shape));
  ctx.input("Lr");
  const DType ct = compute_type(dtype);
  return lr.dtype == ct ? "Lr[]" : dtype_text(ct) + "(Lr[])";
}

void emit_sgd(OpContext& ctx) {
  const std::vector<std::string> idx = same_shape_ports(ctx, {"P", "G", "M"});
  const double lr = ctx.attr_float("lr"), momentum = ctx.attr_float("momentum");
  const double dampening = ctx.attr_float("dampening"), wd = ctx.attr_float("weight_decay");
  const bool nesterov = ctx.attr_bool("nesterov");
  if (lr < 0 || momentum < 0 || wd < 0)
    ctx.fail("lr, momentum and weight_decay must not be negative (got {}, {}, {})", lr, momentum,
             wd);
  if (nesterov && (momentum <= 0 || dampening != 0))
    ctx.fail("nesterov needs a momentum above 0 and zero dampening (got momentum {}, "
             "dampening {})",
             momentum, dampening);
  if (ctx.has("M") && momentum == 0)
    ctx.fail("a momentum buffer M is given but momentum is 0");
  const TensorSpec& p = ctx.in("P");
  const std::string P = access("P", idx), G = access("G", idx);
  ctx.input("P");
  ctx.input("G");
  const std::string rate = learning_rate(ctx, p.dtype);
  std::string g = ctx.attr_bool("maximize") ? "(-" + G + ")" : G;
  if (wd != 0)
    g = "(" + g + " + " + lit(wd) + " * " + P + ")";
  if (momentum != 0) {
    const std::string M = access("M_new", idx);
    ctx.output("M_new", p.dtype, p.shape);
    if (ctx.has("M")) {
      ctx.input("M");
      ctx.stmt(M + " = " + access("M", idx) + " * " + lit(momentum) + " + " +
               lit(1 - dampening) + " * " + g);
    } else {
      ctx.stmt(M + " = " + g);
    }
    g = nesterov ? "(" + g + " + " + lit(momentum) + " * " + M + ")" : M;
  }
  ctx.output("P_new", p.dtype, p.shape);
  ctx.stmt(access("P_new", idx) + " = " + P + " - " + rate + " * " + g);
}

void emit_adam(OpContext& ctx, bool decoupled) {
  const std::vector<std::string> idx = same_shape_ports(ctx, {"P", "G", "M", "V", "VMax"});
  const bool amsgrad = ctx.attr_bool("amsgrad");
  if (ctx.has("VMax") && !amsgrad)
    ctx.fail("input 'VMax' is given but amsgrad is 0");
  const double lr = ctx.attr_float("lr"), beta1 = ctx.attr_float("beta1");
  const double beta2 = ctx.attr_float("beta2"), eps = ctx.attr_float("eps");
  const double wd = ctx.attr_float("weight_decay");
  if (lr < 0 || eps < 0 || wd < 0)
    ctx.fail("lr, eps and weight_decay must not be negative (got {}, {}, {})", lr, eps, wd);
  if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1))
    ctx.fail("beta1 and beta2 must be in [0, 1) (got {}, {})", beta1, beta2);
  const TensorSpec& p = ctx.in("P");
  const DType ct = compute_type(p.dtype);
  const std::string rate = learning_rate(ctx, p.dtype);
  // The bias corrections: literals from the attribute t, or computed from the scalar
  // input Step (so one compiled kernel serves every step).
  std::string step_size, bc2_sqrt; // lr / (1 - beta1^t), sqrt(1 - beta2^t)
  if (ctx.has("Step")) {
    const TensorSpec& step = ctx.in("Step");
    if (!step.shape.empty() || step.dtype == DType::Bool)
      ctx.fail("input 'Step' must be a numeric scalar (shape []), got {} {}",
               dtype_text(step.dtype), shape_text(step.shape));
    ctx.input("Step");
    const std::string t = dtype_text(ct) + "(Step[])";
    step_size = "(" + rate + " / (1 - pow(" + lit(beta1) + ", " + t + ")))";
    bc2_sqrt = "sqrt(1 - pow(" + lit(beta2) + ", " + t + "))";
  } else {
    const int64_t t = ctx.attr_int("t");
    if (t < 1)
      ctx.fail("the step count t must be at least 1, got {}", t);
    // Folded here: `lr / bc1` of two literals would be computed in f32.
    const double bc1 = 1 - std::pow(beta1, static_cast<double>(t));
    step_size = ctx.has("Lr") ? "(" + rate + " / " + lit(bc1) + ")" : lit(lr / bc1);
    bc2_sqrt = lit(std::sqrt(1 - std::pow(beta2, static_cast<double>(t))));
  }
  for (const char* port : {"P", "G", "M", "V"})
    ctx.input(port);
  const std::string P = access("P", idx), G = access("G", idx);
  std::string g = G;
  if (ctx.attr_bool("maximize"))
    g = "(-" + g + ")";
  std::string param = P;
  if (wd != 0) {
    if (decoupled)
      param = ctx.has("Lr") ? "(" + P + " * (1 - " + rate + " * " + lit(wd) + "))"
                            : "(" + P + " * " + lit(1 - lr * wd) + ")";
    else
      g = "(" + g + " + " + lit(wd) + " * " + P + ")";
  }
  const std::string M = access("M_new", idx), V = access("V_new", idx);
  ctx.output("M_new", p.dtype, p.shape);
  ctx.output("V_new", p.dtype, p.shape);
  ctx.output("P_new", p.dtype, p.shape);
  ctx.stmt(M + " = " + access("M", idx) + " + (" + g + " - " + access("M", idx) + ") * " +
           lit(1 - beta1));
  ctx.stmt(V + " = " + access("V", idx) + " * " + lit(beta2) + " + " + lit(1 - beta2) + " * " +
           g + " * " + g);
  std::string denom = V;
  if (amsgrad) {
    denom = access("VMax_new", idx);
    ctx.output("VMax_new", p.dtype, p.shape);
    if (ctx.has("VMax")) {
      ctx.input("VMax");
      ctx.stmt(denom + " = max(" + access("VMax", idx) + ", " + V + ")");
    } else {
      ctx.stmt(denom + " = " + V);
    }
  }
  ctx.stmt(access("P_new", idx) + " = " + param + " - " + step_size + " * " + M +
           " / (sqrt(" + denom + ") / " + bc2_sqrt + " + " + lit(eps) + ")");
}

// Y_i = G_i * min(max_norm / (total + 1e-6), 1), total = the p-norm of all elements of
// all G_i together (torch.nn.utils.clip_grad_norm_).
void emit_clip_grad_norm(OpContext& ctx) {
  const std::vector<std::string> gs = ctx.variadic("G");
  for (const std::string& g : gs)
    ctx.require_float(g);
  ctx.require_same_dtype(gs);
  const double max_norm = ctx.attr_float("max_norm"), p = ctx.attr_float("norm_type");
  if (!(max_norm >= 0))
    ctx.fail("max_norm must not be negative, got {}", max_norm);
  if (!(p > 0))
    ctx.fail("norm_type must be above 0 (or inf), got {}", p);
  const DType dt = ctx.in(gs[0]).dtype, ct = compute_type(dt);
  const bool inf = std::isinf(p);
  std::vector<std::string> partials;
  for (size_t i = 0; i < gs.size(); ++i) {
    const std::vector<std::string> idx =
        index_names(static_cast<int64_t>(ctx.in(gs[i]).shape.size()));
    const std::string g = access(gs[i], idx), part = "part" + std::to_string(i);
    ctx.input(gs[i]);
    ctx.local(part, ct, {});
    std::string term = inf ? "abs(" + g + ")"
                       : p == 2 ? g + " * " + g
                       : p == 1 ? "abs(" + g + ")"
                                : "pow(abs(" + g + "), " + lit(p) + ")";
    const std::string op = inf ? " max= " : " += ";
    // Two levels (per leading index, then over those), so no running sum sees more than
    // a row's or a column's worth of terms: one f32 accumulator over a 3072x768
    // gradient was 6e-4 relative off the f64 norm. The rows also run in parallel.
    const std::vector<int64_t>& shape = ctx.in(gs[i]).shape;
    if (shape.size() >= 2 && shape[0] > 1) {
      const std::string rows = "rows" + std::to_string(i);
      ctx.local(rows, ct, {shape[0]});
      ctx.stmt(rows + "[i0]" + op + term);
      term = rows + "[i0]";
    }
    ctx.stmt(part + "[]" + op + term);
    partials.push_back(part + "[]");
  }
  std::string total;
  if (inf) {
    total = partials[0];
    for (size_t i = 1; i < partials.size(); ++i)
      total = "max(" + total + ", " + partials[i] + ")";
  } else {
    total = join(partials, " + ");
    if (p == 2)
      total = "sqrt(" + total + ")";
    else if (p != 1)
      total = "pow(" + total + ", " + lit(1 / p) + ")";
  }
  ctx.output("TotalNorm", dt, {});
  ctx.local("coef", ct, {});
  ctx.stmt("TotalNorm[] = " + (ct == dt ? total : dtype_text(dt) + "(" + total + ")"));
  ctx.stmt("coef[] = min(" + lit(max_norm) + " / (TotalNorm[] + " + lit(1e-6) + "), 1)");
  for (size_t i = 0; i < gs.size(); ++i) {
    const std::vector<std::string> idx =
        index_names(static_cast<int64_t>(ctx.in(gs[i]).shape.size()));
    const std::string y = "Y" + std::to_string(i);
    ctx.output(y, dt, ctx.in(gs[i]).shape);
    const std::string v = access(gs[i], idx) + " * coef[]";
    ctx.stmt(access(y, idx) + " = " + (ct == dt ? v : dtype_text(dt) + "(" + v + ")"));
  }
}

AttrSpec maximize_attr() {
  return {"maximize", AttrKind::Bool, AttrValue{int64_t{0}}, "ascend instead of descend"};
}

// One float attribute (a function, so the attribute lists below stay plain pushes).
AttrSpec float_attr(const char* name, double value, const char* doc) {
  AttrSpec a;
  a.name = name;
  a.kind = AttrKind::Float;
  a.default_value = AttrValue{value};
  a.doc = doc;
  return a;
}

} // namespace

void add_optimizer_ops(std::vector<OpDef>& ops) {
  OpDef sgd;
  sgd.name = "sgd";
  sgd.category = "optimizer";
  sgd.summary = "SGD step (torch.optim.SGD): P_new and, with momentum, M_new";
  sgd.inputs = {{"P"}, {"G"}, {"M", PortKind::Data, true}, {"Lr", PortKind::Data, true}};
  sgd.outputs = {{"P_new"}, {"M_new"}};
  sgd.attrs.push_back(float_attr("lr", 1e-3, "learning rate (unused when the input Lr is given)"));
  sgd.attrs.push_back(float_attr("momentum", 0.0, "momentum factor"));
  sgd.attrs.push_back(float_attr("dampening", 0.0, "dampening of the momentum"));
  sgd.attrs.push_back(float_attr("weight_decay", 0.0, "L2 penalty"));
  sgd.attrs.push_back({"nesterov", AttrKind::Bool, AttrValue{int64_t{0}}, "Nesterov momentum"});
  sgd.attrs.push_back(maximize_attr());
  sgd.emit = emit_sgd;
  ops.push_back(std::move(sgd));
  for (bool decoupled : {false, true}) {
    OpDef op;
    op.name = decoupled ? "adamw" : "adam";
    op.category = "optimizer";
    op.summary = decoupled ? "AdamW step (torch.optim.AdamW): P_new, M_new, V_new"
                           : "Adam step (torch.optim.Adam): P_new, M_new, V_new";
    op.inputs = {{"P"}, {"G"}, {"M"}, {"V"}, {"Step", PortKind::Data, true},
                 {"Lr", PortKind::Data, true}};
    op.inputs.push_back({"VMax", PortKind::Data, true}); // amsgrad's running maximum of V
    op.outputs = {{"P_new"}, {"M_new"}, {"V_new"}, {"VMax_new", PortKind::Data, true}};
    op.attrs.push_back(
        float_attr("lr", 1e-3, "learning rate (unused when the input Lr is given)"));
    op.attrs.push_back(float_attr("beta1", 0.9, "decay of the first moment"));
    op.attrs.push_back(float_attr("beta2", 0.999, "decay of the second moment"));
    op.attrs.push_back(float_attr("eps", 1e-8, "added to the denominator"));
    op.attrs.push_back(float_attr("weight_decay", decoupled ? 1e-2 : 0.0,
                                  decoupled ? "decoupled weight decay"
                                            : "L2 penalty added to the gradient"));
    op.attrs.push_back({"t", AttrKind::Int, AttrValue{int64_t{1}},
                        "step count (from 1) when the scalar input Step is not given"});
    op.attrs.push_back(maximize_attr());
    op.attrs.push_back({"amsgrad", AttrKind::Bool, AttrValue{int64_t{0}},
                        "divide by the running maximum of V (VMax in, VMax_new out)"});
    op.emit = [decoupled](OpContext& ctx) { emit_adam(ctx, decoupled); };
    ops.push_back(std::move(op));
  }
  OpDef clip;
  clip.name = "clip_grad_norm";
  clip.category = "optimizer";
  clip.summary = "scale gradients G0.. so their joint norm is at most max_norm; Y0.., TotalNorm";
  clip.inputs = {{"G", PortKind::Data, false, true}};
  clip.outputs = {{"Y", PortKind::Data, false, true}, {"TotalNorm"}};
  clip.attrs.push_back({"max_norm", AttrKind::Float, std::nullopt, "the largest norm allowed"});
  clip.attrs.push_back(float_attr("norm_type", 2.0, "p of the p-norm (inf: max)"));
  clip.emit = emit_clip_grad_norm;
  ops.push_back(std::move(clip));
}

} // namespace unitile::ops
