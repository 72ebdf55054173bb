// Elementwise ops with NumPy broadcasting: ONNX's arithmetic, comparison, logical,
// bitwise and math ops and the activations, each one expression over its operands, plus the
// backward op of every differentiable one.
//
// An op is a row of a table: an expression template over `$a`, `$b`, `$c` (the
// operands, read with broadcasting) and `$<attr>` (float attributes, substituted as
// literals), the dtypes it accepts and the dtype it produces. The backward op of a
// unary op is `<name>_grad(X, dY) -> dX` from the derivative's template (`$g` is dY);
// binary ops have `<name>_grad(A, B, dC) -> dA, dB`, summing over broadcast dimensions.
#include "ops/OpContext.h"
#include "ops/defs/Families.h"

#include <algorithm>

namespace unitile::ops {
namespace {

// Which operand dtypes an op accepts, and what it produces.
enum class Accepts : uint8_t {
  Float,   // floats only
  Numeric, // integers and floats
  Integer, // integers only
  Bool,    // bools only
  Any,     // any dtype (where's branches)
};
enum class Yields : uint8_t { Same, Bool };

struct Row {
  const char* name;
  int arity;
  const char* expr;
  Accepts accepts;
  Yields yields;
  const char* summary;
  std::vector<AttrSpec> attrs = {};
  // Derivative templates: unary `d/da` times `$g`; binary one per operand. Empty: no
  // gradient (comparisons, rounding, logic).
  const char* grad_a = "";
  const char* grad_b = "";
  // The expression for float operands when it differs (`%` is for integers only).
  const char* float_expr = "";
};

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// `$name` of every float attribute, then the operands.
std::string instantiate_expr(const OpContext& ctx, std::string expr,
                             const std::vector<std::string>& operands) {
  // Longer attribute names first, so `$alpha2` is not cut by `$alpha`.
  std::vector<const AttrSpec*> specs;
  for (const AttrSpec& a : ctx.op().attrs)
    specs.push_back(&a);
  std::sort(specs.begin(), specs.end(),
            [](const AttrSpec* x, const AttrSpec* y) { return x->name.size() > y->name.size(); });
  for (const AttrSpec* a : specs)
    if (a->kind == AttrKind::Float)
      expr = replace_all(expr, "$" + a->name, float_literal(ctx.attr_float(a->name)));
  static const char* const names[] = {"$a", "$b", "$c", "$g"};
  for (size_t i = 0; i < operands.size(); ++i)
    expr = replace_all(expr, names[i], "(" + operands[i] + ")");
  return expr;
}

void check_accepts(const OpContext& ctx, const std::string& port, Accepts accepts) {
  switch (accepts) {
  case Accepts::Float: ctx.require_float(port); break;
  case Accepts::Numeric:
    if (ctx.in(port).dtype == DType::Bool)
      ctx.fail("input '{}' must be numeric, got bool", port);
    break;
  case Accepts::Integer: ctx.require_integer(port); break;
  case Accepts::Bool: ctx.require_dtype_in(port, {DType::Bool}); break;
  case Accepts::Any: break;
  }
}

const char* const kPorts[] = {"A", "B", "C"};

std::vector<std::string> operand_ports(int arity) {
  if (arity == 1)
    return {"X"};
  return {kPorts, kPorts + arity};
}

// Y[i...] = expr(operands read with broadcasting).
void emit_forward(OpContext& ctx, const Row& row) {
  const std::vector<std::string> ports = operand_ports(row.arity);
  for (const std::string& p : ports)
    check_accepts(ctx, p, row.accepts);
  ctx.require_same_dtype(ports);
  std::vector<std::pair<std::string, TensorSpec>> ins;
  for (const std::string& p : ports)
    ins.emplace_back(p, ctx.in(p));
  const std::vector<int64_t> shape = broadcast_shapes(ctx, ins);
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<std::string> operands;
  for (const std::string& p : ports) {
    ctx.input(p);
    operands.push_back(access(p, broadcast_indices(ctx.in(p), rank, shape)));
  }
  const DType out = row.yields == Yields::Bool ? DType::Bool : ctx.in(ports[0]).dtype;
  const std::string y = row.arity == 1 ? "Y" : "C";
  ctx.output(y, out, shape);
  const bool floats = is_float(ctx.in(ports[0]).dtype);
  const char* expr = floats && *row.float_expr ? row.float_expr : row.expr;
  ctx.stmt(access(y, index_names(rank)) + " = " + instantiate_expr(ctx, expr, operands));
}

// where(Cond, A, B): the condition is bool, the branches any same dtype.
void emit_where(OpContext& ctx) {
  ctx.require_dtype_in("Cond", {DType::Bool});
  ctx.require_same_dtype({"A", "B"});
  std::vector<std::pair<std::string, TensorSpec>> ins = {
      {"Cond", ctx.in("Cond")}, {"A", ctx.in("A")}, {"B", ctx.in("B")}};
  const std::vector<int64_t> shape = broadcast_shapes(ctx, ins);
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<std::string> r;
  for (const auto& [p, t] : ins) {
    ctx.input(p);
    r.push_back(access(p, broadcast_indices(t, rank, shape)));
  }
  ctx.output("Y", ctx.in("A").dtype, shape);
  ctx.stmt(access("Y", index_names(rank)) + " = " + r[0] + " ? " + r[1] + " : " + r[2]);
}

// dX[i...] = dY[i...] * d/dx: X and dY have the same shape (the forward op's).
void emit_unary_grad(OpContext& ctx, const Row& row) {
  ctx.require_float("X");
  ctx.require_same_dtype({"X", "dY"});
  if (ctx.in("X").shape != ctx.in("dY").shape)
    ctx.fail("dY has shape {} but X has shape {}: they must be equal",
             shape_text(ctx.in("dY").shape), shape_text(ctx.in("X").shape));
  const int64_t rank = static_cast<int64_t>(ctx.in("X").shape.size());
  const std::vector<std::string> idx = index_names(rank);
  ctx.input("X");
  ctx.input("dY");
  ctx.output("dX", ctx.in("X").dtype, ctx.in("X").shape);
  ctx.stmt(access("dX", idx) + " = " +
           instantiate_expr(ctx, row.grad_a, {access("X", idx), "", "", access("dY", idx)}));
}

// The gradient into one broadcast operand: the output-shaped partial summed over the
// dimensions the operand was broadcast along. A size-1 dimension that was broadcast gets
// an index `z<d>` of extent 1 on the left; the output's index for it becomes a reduction.
std::string reduce_into(const std::string& grad, const TensorSpec& operand,
                        const std::vector<int64_t>& out_shape) {
  const int64_t out_rank = static_cast<int64_t>(out_shape.size());
  const int64_t off = out_rank - static_cast<int64_t>(operand.shape.size());
  std::vector<std::string> lhs;
  bool reduces = off > 0;
  for (size_t d = 0; d < operand.shape.size(); ++d) {
    const int64_t od = off + static_cast<int64_t>(d);
    if (operand.shape[d] == 1 && out_shape[od] != 1) {
      lhs.push_back("z" + std::to_string(od));
      reduces = true;
    } else {
      lhs.push_back("i" + std::to_string(od));
    }
  }
  return access(grad, lhs) + (reduces ? " += " : " = ");
}

// where's gradient: dY flows to A where Cond holds and to B elsewhere, each summed over
// the dimensions its operand was broadcast along. Cond itself has no gradient.
void emit_where_grad(OpContext& ctx) {
  ctx.require_dtype_in("Cond", {DType::Bool});
  ctx.require_float("A");
  ctx.require_same_dtype({"A", "B", "dY"});
  std::vector<std::pair<std::string, TensorSpec>> ins = {
      {"Cond", ctx.in("Cond")}, {"A", ctx.in("A")}, {"B", ctx.in("B")}};
  const std::vector<int64_t> shape = broadcast_shapes(ctx, ins);
  if (ctx.in("dY").shape != shape)
    ctx.fail("dY has shape {} but Cond, A and B broadcast to {}", shape_text(ctx.in("dY").shape),
             shape_text(shape));
  const int64_t rank = static_cast<int64_t>(shape.size());
  for (const char* p : {"Cond", "A", "B", "dY"}) // A and B only give shapes; read none
    ctx.input(p);
  const std::string cond = access("Cond", broadcast_indices(ctx.in("Cond"), rank, shape));
  const std::string g = access("dY", index_names(rank));
  ctx.output("dA", ctx.in("A").dtype, ctx.in("A").shape);
  ctx.output("dB", ctx.in("B").dtype, ctx.in("B").shape);
  ctx.stmt(reduce_into("dA", ctx.in("A"), shape) + cond + " ? " + g + " : 0");
  ctx.stmt(reduce_into("dB", ctx.in("B"), shape) + cond + " ? 0 : " + g);
}

void emit_binary_grad(OpContext& ctx, const Row& row) {
  ctx.require_float("A");
  ctx.require_same_dtype({"A", "B", "dC"});
  std::vector<std::pair<std::string, TensorSpec>> ins = {{"A", ctx.in("A")}, {"B", ctx.in("B")}};
  const std::vector<int64_t> shape = broadcast_shapes(ctx, ins);
  if (ctx.in("dC").shape != shape)
    ctx.fail("dC has shape {} but A and B broadcast to {}", shape_text(ctx.in("dC").shape),
             shape_text(shape));
  const int64_t rank = static_cast<int64_t>(shape.size());
  for (const char* p : {"A", "B", "dC"})
    ctx.input(p);
  const std::vector<std::string> operands = {
      access("A", broadcast_indices(ctx.in("A"), rank, shape)),
      access("B", broadcast_indices(ctx.in("B"), rank, shape)), "",
      access("dC", index_names(rank))};
  ctx.output("dA", ctx.in("A").dtype, ctx.in("A").shape);
  ctx.output("dB", ctx.in("B").dtype, ctx.in("B").shape);
  ctx.stmt(reduce_into("dA", ctx.in("A"), shape) + instantiate_expr(ctx, row.grad_a, operands));
  ctx.stmt(reduce_into("dB", ctx.in("B"), shape) + instantiate_expr(ctx, row.grad_b, operands));
}

AttrSpec float_attr(const char* name, double v, const char* doc) {
  return {name, AttrKind::Float, AttrValue{v}, doc};
}

// sqrt(2/pi) and 1/sqrt(2), 1/sqrt(2 pi): gelu's constants.
#define K_S2PI "0.79788456080286541"
#define K_RS2 "0.70710678118654752"
#define K_RS2PI "0.39894228040143268"

std::vector<Row> rows() {
  const auto F = Accepts::Float, N = Accepts::Numeric, I = Accepts::Integer, B = Accepts::Bool;
  const auto S = Yields::Same, Bo = Yields::Bool;
  return {
      // --- unary math ---------------------------------------------------------------
      {"abs", 1, "abs($a)", N, S, "|x|", {}, "$a >= 0 ? $g : -$g"},
      {"neg", 1, "-$a", N, S, "-x", {}, "-$g"},
      {"exp", 1, "exp($a)", F, S, "e^x", {}, "$g * exp($a)"},
      {"exp2", 1, "exp2($a)", F, S, "2^x", {}, "$g * exp2($a) * 0.69314718055994531"},
      {"expm1", 1, "expm1($a)", F, S, "e^x - 1", {}, "$g * exp($a)"},
      {"log", 1, "log($a)", F, S, "natural logarithm", {}, "$g / $a"},
      {"log2", 1, "log2($a)", F, S, "base-2 logarithm", {}, "$g / ($a * 0.69314718055994531)"},
      {"log1p", 1, "log1p($a)", F, S, "log(1 + x)", {}, "$g / (1 + $a)"},
      {"sqrt", 1, "sqrt($a)", F, S, "square root", {}, "$g * 0.5 / sqrt($a)"},
      {"rsqrt", 1, "rsqrt($a)", F, S, "1 / sqrt(x)", {}, "$g * -0.5 * rsqrt($a) / $a"},
      {"reciprocal", 1, "1 / $a", F, S, "1 / x", {}, "-$g / ($a * $a)"},
      {"square", 1, "$a * $a", N, S, "x^2", {}, "$g * 2 * $a"},
      {"sin", 1, "sin($a)", F, S, "sine", {}, "$g * cos($a)"},
      {"cos", 1, "cos($a)", F, S, "cosine", {}, "-$g * sin($a)"},
      {"tan", 1, "tan($a)", F, S, "tangent", {}, "$g / (cos($a) * cos($a))"},
      {"asin", 1, "asin($a)", F, S, "arcsine", {}, "$g * rsqrt(1 - $a * $a)"},
      {"acos", 1, "acos($a)", F, S, "arccosine", {}, "-$g * rsqrt(1 - $a * $a)"},
      {"atan", 1, "atan($a)", F, S, "arctangent", {}, "$g / (1 + $a * $a)"},
      {"sinh", 1, "sinh($a)", F, S, "hyperbolic sine", {}, "$g * cosh($a)"},
      {"cosh", 1, "cosh($a)", F, S, "hyperbolic cosine", {}, "$g * sinh($a)"},
      {"tanh", 1, "tanh($a)", F, S, "hyperbolic tangent", {}, "$g * (1 - tanh($a) * tanh($a))"},
      {"asinh", 1, "asinh($a)", F, S, "inverse hyperbolic sine", {}, "$g * rsqrt($a * $a + 1)"},
      {"acosh", 1, "acosh($a)", F, S, "inverse hyperbolic cosine", {}, "$g * rsqrt($a * $a - 1)"},
      {"atanh", 1, "atanh($a)", F, S, "inverse hyperbolic tangent", {}, "$g / (1 - $a * $a)"},
      {"erf", 1, "erf($a)", F, S, "error function", {}, "$g * 1.1283791670955126 * exp(-$a * $a)"},
      {"floor", 1, "floor($a)", N, S, "round down"},
      {"ceil", 1, "ceil($a)", N, S, "round up"},
      {"round", 1, "round($a)", N, S, "round half to even"},
      {"trunc", 1, "trunc($a)", N, S, "round toward zero"},
      {"sign", 1, "sign($a)", N, S, "-1, 0 or 1"},
      {"isnan", 1, "isnan($a)", F, Bo, "x is NaN"},
      {"isinf", 1, "isinf($a)", F, Bo, "x is +-inf"},
      {"isfinite", 1, "!isnan($a) && !isinf($a)", F, Bo, "x is finite"},
      {"not", 1, "!$a", B, Bo, "logical not"},
      // --- activations --------------------------------------------------------------
      {"relu", 1, "max($a, 0)", N, S, "max(x, 0)", {}, "$a > 0 ? $g : 0"},
      {"sigmoid", 1, "sigmoid($a)", F, S, "1 / (1 + e^-x)", {},
       "$g * sigmoid($a) * (1 - sigmoid($a))"},
      {"silu", 1, "$a * sigmoid($a)", F, S, "x * sigmoid(x) (swish)", {},
       "$g * sigmoid($a) * (1 + $a * (1 - sigmoid($a)))"},
      {"gelu", 1, "0.5 * $a * (1 + erf($a * " K_RS2 "))", F, S, "gelu, exact (erf)", {},
       "$g * (0.5 * (1 + erf($a * " K_RS2 ")) + $a * " K_RS2PI " * exp(-0.5 * $a * $a))"},
      {"gelu_tanh", 1, "0.5 * $a * (1 + tanh(" K_S2PI " * ($a + 0.044715 * $a * $a * $a)))", F, S,
       "gelu, tanh approximation", {},
       "$g * (0.5 * (1 + tanh(" K_S2PI " * ($a + 0.044715 * $a * $a * $a))) + 0.5 * $a * (1 - "
       "tanh(" K_S2PI " * ($a + 0.044715 * $a * $a * $a)) * tanh(" K_S2PI
       " * ($a + 0.044715 * $a * $a * $a))) * " K_S2PI " * (1 + 0.134145 * $a * $a))"},
      {"leaky_relu", 1, "$a >= 0 ? $a : $alpha * $a", F, S, "x, or alpha * x below 0",
       {float_attr("alpha", 0.01, "slope below zero")}, "$a > 0 ? $g : $alpha * $g"},
      {"elu", 1, "$a > 0 ? $a : $alpha * expm1($a)", F, S, "x, or alpha (e^x - 1) below 0",
       {float_attr("alpha", 1.0, "scale below zero")}, "$a > 0 ? $g : $g * $alpha * exp($a)"},
      {"selu", 1, "$gamma * ($a > 0 ? $a : $alpha * expm1($a))", F, S, "scaled elu",
       {float_attr("alpha", 1.6732632423543772, "scale below zero"),
        float_attr("gamma", 1.0507009873554805, "overall scale")},
       "$a > 0 ? $gamma * $g : $g * $gamma * $alpha * exp($a)"},
      {"celu", 1, "max($a, 0) + min(0, $alpha * expm1($a / $alpha))", F, S,
       "continuously differentiable elu", {float_attr("alpha", 1.0, "scale")},
       "$a > 0 ? $g : $g * exp($a / $alpha)"},
      {"softplus", 1, "max($a, 0) + log1p(exp(-abs($a)))", F, S, "log(1 + e^x)", {},
       "$g * sigmoid($a)"},
      {"softsign", 1, "$a / (1 + abs($a))", F, S, "x / (1 + |x|)", {},
       "$g / ((1 + abs($a)) * (1 + abs($a)))"},
      {"hard_sigmoid", 1, "max(0, min(1, $alpha * $a + $beta))", F, S,
       "max(0, min(1, alpha x + beta))",
       {float_attr("alpha", 0.2, "slope"), float_attr("beta", 0.5, "offset")},
       "$alpha * $a + $beta > 0 && $alpha * $a + $beta < 1 ? $g * $alpha : 0"},
      {"hardswish", 1, "$a * max(0, min(1, $a / 6 + 0.5))", F, S, "x * hard_sigmoid(x; 1/6, 1/2)",
       {}, "$a < -3 ? 0 : ($a > 3 ? $g : $g * ($a / 3 + 0.5))"},
      {"mish", 1, "$a * tanh(max($a, 0) + log1p(exp(-abs($a))))", F, S, "x * tanh(softplus(x))",
       {},
       "$g * (tanh(max($a, 0) + log1p(exp(-abs($a)))) + $a * sigmoid($a) * (1 - tanh(max($a, 0) + "
       "log1p(exp(-abs($a)))) * tanh(max($a, 0) + log1p(exp(-abs($a))))))"},
      {"thresholded_relu", 1, "$a > $alpha ? $a : 0", F, S, "x above alpha, else 0",
       {float_attr("alpha", 1.0, "threshold")}, "$a > $alpha ? $g : 0"},
      {"shrink", 1, "$a < -$lambd ? $a + $bias : ($a > $lambd ? $a - $bias : 0)", F, S,
       "soft/hard shrinkage",
       {float_attr("bias", 0.0, "shift toward zero"), float_attr("lambd", 0.5, "dead zone")},
       "$a < -$lambd || $a > $lambd ? $g : 0"},
      {"clip", 1, "min(max($a, $min), $max)", F, S, "clamp into [min, max]",
       {float_attr("min", -3.4028234663852886e38, "lower bound"),
        float_attr("max", 3.4028234663852886e38, "upper bound")},
       "$a >= $min && $a <= $max ? $g : 0"},
      // --- binary arithmetic ----------------------------------------------------------
      {"add", 2, "$a + $b", N, S, "a + b", {}, "$g", "$g"},
      {"sub", 2, "$a - $b", N, S, "a - b", {}, "$g", "-$g"},
      {"mul", 2, "$a * $b", N, S, "a * b", {}, "$g * $b", "$g * $a"},
      {"div", 2, "$a / $b", N, S, "a / b (integers truncate toward zero)", {}, "$g / $b",
       "-$g * $a / ($b * $b)"},
      {"pow", 2, "pow($a, $b)", F, S, "a^b", {}, "$g * $b * pow($a, $b - 1)",
       "$g * pow($a, $b) * log($a)"},
      {"mod", 2, "$a % $b", N, S, "remainder with the divisor's sign (Python's %)", {}, "$g",
       "-$g * floor($a / $b)", "$a - floor($a / $b) * $b"},
      {"fmod", 2, "$a - trunc($a / $b) * $b", F, S, "remainder with the dividend's sign (C fmod)",
       {}, "$g", "-$g * trunc($a / $b)"},
      {"max", 2, "max($a, $b)", N, S, "elementwise maximum", {}, "$a >= $b ? $g : 0",
       "$a >= $b ? 0 : $g"},
      {"min", 2, "min($a, $b)", N, S, "elementwise minimum", {}, "$a <= $b ? $g : 0",
       "$a <= $b ? 0 : $g"},
      {"atan2", 2, "atan2($a, $b)", F, S, "angle of (b, a)", {}, "$g * $b / ($a * $a + $b * $b)",
       "-$g * $a / ($a * $a + $b * $b)"},
      {"prelu", 2, "$a >= 0 ? $a : $b * $a", F, S, "x, or slope * x below 0 (slope broadcast)", {},
       "$a > 0 ? $g : $g * $b", "$a > 0 ? 0 : $g * $a"},
      // --- comparison and logic -----------------------------------------------------
      {"equal", 2, "$a == $b", Accepts::Any, Bo, "a == b"},
      {"not_equal", 2, "$a != $b", Accepts::Any, Bo, "a != b"},
      {"less", 2, "$a < $b", N, Bo, "a < b"},
      {"less_equal", 2, "$a <= $b", N, Bo, "a <= b"},
      {"greater", 2, "$a > $b", N, Bo, "a > b"},
      {"greater_equal", 2, "$a >= $b", N, Bo, "a >= b"},
      {"and", 2, "$a && $b", B, Bo, "logical and"},
      {"or", 2, "$a || $b", B, Bo, "logical or"},
      {"xor", 2, "$a != $b", B, Bo, "logical exclusive or"},
      // --- bitwise (integers) -------------------------------------------------------
      {"bitwise_and", 2, "$a & $b", I, S, "bitwise and"},
      {"bitwise_or", 2, "$a | $b", I, S, "bitwise or"},
      {"bitwise_xor", 2, "$a ^ $b", I, S, "bitwise exclusive or"},
      {"bitwise_not", 1, "~$a", I, S, "bitwise not"},
  };
}

// bit_shift(A, B): A shifted by B bits, LEFT or RIGHT (arithmetic on signed dtypes); a
// count outside [0, bits) gives 0, or the sign fill shifting right (the IR's rule).
void emit_bit_shift(OpContext& ctx) {
  const std::string direction = ctx.attr_string("direction");
  if (direction != "LEFT" && direction != "RIGHT")
    ctx.fail("direction '{}' is not LEFT or RIGHT", direction);
  const Row row{"bit_shift", 2, direction == "LEFT" ? "$a << $b" : "$a >> $b", Accepts::Integer,
                Yields::Same, ""};
  emit_forward(ctx, row);
}

} // namespace

void add_elementwise_ops(std::vector<OpDef>& ops) {
  for (const Row& r : rows()) {
    OpDef op;
    op.name = r.name;
    op.category = "elementwise";
    op.summary = r.summary;
    op.attrs = r.attrs;
    for (const std::string& p : operand_ports(r.arity))
      op.inputs.push_back({p});
    op.outputs = {{r.arity == 1 ? "Y" : "C"}};
    op.emit = [r](OpContext& ctx) { emit_forward(ctx, r); };
    if (*r.grad_a) {
      op.gradient = std::string(r.name) + "_grad";
      OpDef g;
      g.name = op.gradient;
      g.category = "elementwise-backward";
      g.summary = fmt::format("gradient of {}", r.name);
      g.attrs = r.attrs;
      if (r.arity == 1) {
        g.inputs = {{"X"}, {"dY"}};
        g.outputs = {{"dX"}};
        g.emit = [r](OpContext& ctx) { emit_unary_grad(ctx, r); };
      } else {
        g.inputs = {{"A"}, {"B"}, {"dC"}};
        g.outputs = {{"dA"}, {"dB"}};
        g.emit = [r](OpContext& ctx) { emit_binary_grad(ctx, r); };
      }
      ops.push_back(std::move(g));
    }
    ops.push_back(std::move(op));
  }
  OpDef shift;
  shift.name = "bit_shift";
  shift.category = "elementwise";
  shift.summary = "A shifted left or right by B bits (integers)";
  shift.inputs = {{"A"}, {"B"}};
  shift.outputs = {{"C"}};
  shift.attrs = {{"direction", AttrKind::String, std::nullopt, "LEFT or RIGHT"}};
  shift.emit = emit_bit_shift;
  ops.push_back(std::move(shift));
  OpDef where;
  where.name = "where";
  where.category = "elementwise";
  where.summary = "Cond ? A : B, with broadcasting";
  where.inputs = {{"Cond", PortKind::Mask}, {"A"}, {"B"}};
  where.outputs = {{"Y"}};
  where.emit = emit_where;
  where.gradient = "where_grad";
  ops.push_back(std::move(where));
  OpDef where_grad;
  where_grad.name = "where_grad";
  where_grad.category = "elementwise-backward";
  where_grad.summary = "gradient of where (dA, dB; Cond has none)";
  where_grad.inputs = {{"Cond", PortKind::Mask}, {"A"}, {"B"}, {"dY"}};
  where_grad.outputs = {{"dA"}, {"dB"}};
  where_grad.emit = emit_where_grad;
  ops.push_back(std::move(where_grad));
}

} // namespace unitile::ops
