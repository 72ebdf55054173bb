// dropout with a counter-based hash of (seed, element index), so the mask is the same on
// every device and every run, and its backward op; the random ops built on the same hash
// (random_uniform_like, random_normal_like, bernoulli).
//
// The hash uses only i64 arithmetic that never overflows (it predates Kernel IR's bitwise
// operators, and signed overflow is undefined in C): values stay in [0, 2^32), shifts are
// floor divisions by powers of two, and every multiplier is below 2^31, so a product is
// below 2^63. With mix(x; a) = the steps
//   x = (x + x // 2^16) % 2^32;  x = (x * a) % 2^32;
//   x = (x + x // 2^15) % 2^32;  x = (x * 0x6b43a9b5) % 2^32;  x = (x + x // 2^16) % 2^32
// (each step a bijection of [0, 2^32)), the seed gives key = mix(seed % 2^32; 0x7feb352d)
// and an odd multiplier a = 2^30 + 1 + 2 * (mix((key + 0x9e3779b9) % 2^32; 0x7feb352d) % 2^29),
// and element i (row-major flat index) gets h = mix((i + key) % 2^32; a). It is kept when
// h >= floor(ratio * 2^32), so it is dropped with probability ratio (to 2^-32); kept
// elements are scaled by 1 / (1 - ratio) as in PyTorch. docs/ARCHITECTURE.md repeats
// this definition; tests/ops/cases_losses.py recomputes it in NumPy.
#include "ops/OpContext.h"
#include "ops/defs/Families.h"

#include <cmath>

namespace unitile::ops {
namespace {

constexpr uint64_t kTwo32 = uint64_t{1} << 32;
constexpr uint64_t kMul1 = 0x7feb352d, kMul2 = 0x6b43a9b5, kGolden = 0x9e3779b9;

uint64_t mix(uint64_t x, uint64_t a) {
  x = (x + x / 65536) % kTwo32;
  x = (x * a) % kTwo32;
  x = (x + x / 32768) % kTwo32;
  x = (x * kMul2) % kTwo32;
  return (x + x / 65536) % kTwo32;
}

struct DropoutKey {
  uint64_t key = 0, mul = 0, threshold = 0;
  double scale = 0; // 1 / (1 - ratio), 0 when everything is dropped
};

// The hash's key and odd multiplier for `seed` and stream number `stream` (stream 0 is
// dropout's; random_normal_like draws its second uniform from stream 1).
struct HashKey {
  uint64_t key = 0, mul = 0;
};
HashKey hash_key(int64_t seed, uint64_t stream) {
  const uint64_t s = (static_cast<uint64_t>(seed) + stream * kGolden) % kTwo32; // seed mod 2^32
  HashKey h;
  h.key = mix(s, kMul1);
  h.mul = (uint64_t{1} << 30) + 1 + 2 * (mix((h.key + kGolden) % kTwo32, kMul1) % (uint64_t{1} << 29));
  return h;
}

DropoutKey dropout_key(const OpContext& ctx) {
  const double ratio = ctx.attr_float("ratio");
  if (!(ratio >= 0.0 && ratio <= 1.0))
    ctx.fail("ratio must be in [0, 1], got {}", ratio);
  DropoutKey k;
  const HashKey h = hash_key(ctx.attr_int("seed"), 0);
  k.key = h.key;
  k.mul = h.mul;
  k.threshold = static_cast<uint64_t>(std::floor(ratio * static_cast<double>(kTwo32)));
  k.scale = ratio < 1.0 ? 1.0 / (1.0 - ratio) : 0.0;
  return k;
}

// One mix step's text over the i64 expression `x` (read twice for the shift steps).
std::string add_shift(const std::string& x, int shift) {
  return fmt::format("({} + {} // {}) % {}", x, x, int64_t{1} << shift, kTwo32);
}
std::string times(const std::string& x, uint64_t a) {
  return fmt::format("({} * {}) % {}", x, a, kTwo32);
}

// The hash of each element of a `shape` tensor under (key, mul) as i64 text in [0, 2^32):
// the flat index plus the key, then the mix in three stages held in i64 locals
// `<prefix>1`, `<prefix>2` (each add-shift reads its operand twice, so nesting the whole
// mix would repeat it 8 times). Indices are the usual i0, i1, ...
std::string element_hash(OpContext& ctx, const std::vector<int64_t>& shape, uint64_t key, uint64_t mul,
                         const std::string& prefix) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  const std::vector<std::string> idx = index_names(rank);
  std::string flat = "0";
  int64_t stride = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    flat = d == rank - 1 ? "i" + std::to_string(d)
                         : fmt::format("i{} * {} + {}", d, stride, flat);
    stride *= shape[d];
  }
  const std::string start = fmt::format("(i64({}) + {}) % {}", flat, key, kTwo32);
  ctx.local(prefix + "1", DType::I64, shape);
  ctx.local(prefix + "2", DType::I64, shape);
  const std::string h1 = access(prefix + "1", idx), h2 = access(prefix + "2", idx);
  ctx.stmt(h1 + " = " + times(add_shift(start, 16), mul));
  ctx.stmt(h2 + " = " + times(add_shift(h1, 15), kMul2));
  return add_shift(h2, 16);
}

void emit_dropout(OpContext& ctx) {
  ctx.require_float("X");
  const TensorSpec& x = ctx.in("X");
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const std::vector<std::string> idx = index_names(rank);
  const std::string X = access("X", idx), Y = access("Y", idx), M = access("Mask", idx);
  const DropoutKey k = dropout_key(ctx);
  ctx.input("X");
  ctx.output("Y", x.dtype, x.shape);
  ctx.output("Mask", DType::Bool, x.shape);
  if (!ctx.attr_bool("training_mode")) {
    ctx.stmt(Y + " = " + X);
    ctx.stmt(M + " = true");
    return;
  }
  ctx.stmt(M + " = " + element_hash(ctx, x.shape, k.key, k.mul, "h") + " >= " + std::to_string(k.threshold));
  ctx.stmt(Y + " = " + M + " ? " + X + " * " + float_literal(k.scale) + " : 0");
}

void emit_dropout_grad(OpContext& ctx) {
  ctx.require_float("dY");
  ctx.require_dtype_in("Mask", {DType::Bool});
  const TensorSpec& dy = ctx.in("dY");
  if (ctx.in("Mask").shape != dy.shape)
    ctx.fail("Mask has shape {} but dY has shape {}: they must be equal",
             shape_text(ctx.in("Mask").shape), shape_text(dy.shape));
  const DropoutKey k = dropout_key(ctx);
  const std::vector<std::string> idx = index_names(static_cast<int64_t>(dy.shape.size()));
  ctx.input("dY");
  ctx.input("Mask");
  ctx.output("dX", dy.dtype, dy.shape);
  const std::string scale = ctx.attr_bool("training_mode") ? float_literal(k.scale) : "1";
  ctx.stmt(access("dX", idx) + " = " + access("Mask", idx) + " ? " + access("dY", idx) + " * " +
           scale + " : 0");
}


// A uniform f64 in (0, 1) per element: (h + 0.5) / 2^32 of the hash of stream `stream`.
std::string uniform_text(OpContext& ctx, const std::vector<int64_t>& shape, uint64_t stream,
                         const std::string& prefix) {
  const HashKey h = hash_key(ctx.attr_int("seed"), stream);
  return fmt::format("((f64({}) + 0.5) * {})", element_hash(ctx, shape, h.key, h.mul, prefix),
                     float_literal(1.0 / static_cast<double>(kTwo32)));
}

// The output dtype of a random op: attribute dtype, else X's; it must be a float type
// unless `any_numeric`.
DType random_dtype(const OpContext& ctx, bool any_numeric) {
  const std::string name = ctx.attr_string("dtype");
  DType dt = ctx.in("X").dtype;
  if (!name.empty()) {
    const std::optional<DType> parsed = parse_dtype(name);
    if (!parsed)
      ctx.fail("attribute 'dtype': unknown dtype '{}'", name);
    dt = *parsed;
  }
  if (!any_numeric && !is_float(dt))
    ctx.fail("the output dtype must be a float type, got {}", dtype_text(dt));
  return dt;
}

// random_uniform_like, random_normal_like and bernoulli: X gives the shape (and, for
// bernoulli, each element's probability of a 1). Normal values come from the Box-Muller
// transform of two uniforms drawn from streams 0 and 1.
void emit_random(OpContext& ctx, const std::string& kind) {
  const TensorSpec& x = ctx.in("X");
  const std::vector<std::string> idx = index_names(static_cast<int64_t>(x.shape.size()));
  const DType dt = random_dtype(ctx, kind == "bernoulli");
  ctx.input("X");
  ctx.output("Y", dt, x.shape);
  const std::string u = uniform_text(ctx, x.shape, 0, "h");
  std::string v;
  if (kind == "uniform") {
    const double lo = ctx.attr_float("low"), hi = ctx.attr_float("high");
    if (!(lo <= hi))
      ctx.fail("low {} must not exceed high {}", lo, hi);
    v = fmt::format("{} + {} * {}", float_literal(lo), float_literal(hi - lo), u);
  } else if (kind == "normal") {
    ctx.local("u", DType::F64, x.shape);
    ctx.stmt(access("u", idx) + " = " + u);
    const std::string u2 = uniform_text(ctx, x.shape, 1, "g");
    v = fmt::format("{} + {} * sqrt(-2.0 * log({})) * cos({} * {})", float_literal(ctx.attr_float("mean")),
                    float_literal(ctx.attr_float("scale")), access("u", idx), float_literal(2.0 * M_PI), u2);
  } else {
    ctx.require_float("X");
    v = u + " < f64(" + access("X", idx) + ") ? 1 : 0";
  }
  ctx.stmt(access("Y", idx) + " = " + dtype_text(dt) + "(" + v + ")");
}
} // namespace

void add_dropout_ops(std::vector<OpDef>& ops) {
  const std::vector<AttrSpec> attrs = {
      {"ratio", AttrKind::Float, AttrValue{0.5}, "probability of dropping an element"},
      {"seed", AttrKind::Int, AttrValue{int64_t{0}}, "seed of the counter-based hash"},
      {"training_mode", AttrKind::Bool, AttrValue{int64_t{0}},
       "drop elements (otherwise Y = X and Mask is all true, as ONNX's default)"}};
  OpDef op;
  op.name = "dropout";
  op.category = "training";
  op.summary = "zero elements with probability ratio (seeded, reproducible); Y and the bool Mask";
  op.inputs = {{"X"}};
  op.outputs = {{"Y"}, {"Mask"}};
  op.attrs = attrs;
  op.emit = emit_dropout;
  op.gradient = "dropout_grad";
  OpDef g;
  g.name = "dropout_grad";
  g.category = "training-backward";
  g.summary = "gradient of dropout: dY * Mask / (1 - ratio)";
  g.inputs = {{"dY"}, {"Mask", PortKind::Mask}};
  g.outputs = {{"dX"}};
  g.attrs = attrs;
  g.emit = emit_dropout_grad;
  ops.push_back(std::move(op));
  ops.push_back(std::move(g));

  const AttrSpec seed{"seed", AttrKind::Int, AttrValue{int64_t{0}}, "seed of the counter-based hash"};
  const AttrSpec dtype{"dtype", AttrKind::String, AttrValue{std::string()}, "the output dtype (default: X's)"};
  ops.push_back(make_op("random_uniform_like", "random",
                        "seeded uniform values in [low, high) shaped like X (ONNX RandomUniformLike)",
                        {{"X"}}, {{"Y"}},
                        {{"low", AttrKind::Float, AttrValue{0.0}, "lower bound"},
                         {"high", AttrKind::Float, AttrValue{1.0}, "upper bound"}, seed, dtype},
                        [](OpContext& ctx) { emit_random(ctx, "uniform"); }));
  ops.push_back(make_op("random_normal_like", "random",
                        "seeded normal values shaped like X (ONNX RandomNormalLike)", {{"X"}}, {{"Y"}},
                        {{"mean", AttrKind::Float, AttrValue{0.0}, "the mean"},
                         {"scale", AttrKind::Float, AttrValue{1.0}, "the standard deviation"}, seed, dtype},
                        [](OpContext& ctx) { emit_random(ctx, "normal"); }));
  ops.push_back(make_op("bernoulli", "random",
                        "1 with probability X, else 0, seeded (ONNX Bernoulli)", {{"X"}}, {{"Y"}},
                        {seed, dtype}, [](OpContext& ctx) { emit_random(ctx, "bernoulli"); }));
}

} // namespace unitile::ops
