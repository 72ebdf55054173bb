// ONNX's linear quantization ops: quantize_linear, dequantize_linear,
// dynamic_quantize_linear, matmul_integer and qlinear_matmul.
//
// The arithmetic follows the ONNX operator definitions (opset 13-21): a real value x maps to
// the integer q = saturate(round_half_even(x / scale) + zero_point) in the range of q's
// dtype (u8 [0, 255], i8 [-128, 127]), and back to (q - zero_point) * scale. The division
// and the rounding happen in f32 (the scale's type), so the kernels agree bit for bit with
// NumPy's `np.rint(np.float32(x) / np.float32(scale))` for f32 inputs. Integer matrix
// products accumulate in i32, as MatMulInteger's output and QLinearMatMul's definition
// ask; QLinearMatMul rescales the i32 accumulator by a_scale * b_scale / y_scale in f32.
//
// A scale (and a zero point) is a scalar (shape [] or [1]) or, for quantize_linear and
// dequantize_linear, a 1-D tensor along `axis` (per-channel quantization). Block-wise
// quantization (opset 21's block_size) and the float8 types are not supported; they are
// refused with an error that says so.
#include "ops/OpContext.h"
#include "ops/defs/Families.h"

#include <algorithm>

namespace unitile::ops {
namespace {

// The smallest and largest value of a quantized dtype.
std::pair<int64_t, int64_t> quantized_range(const OpContext& ctx, DType dt, const std::string& what) {
  switch (dt) {
  case DType::U8:
    return {0, 255};
  case DType::I8:
    return {-128, 127};
  default:
    ctx.fail("{} must be u8 or i8 (the quantized types this library has), got {}", what,
             dtype_text(dt));
  }
}

// `q` (an f32 expression, already rounded) plus nothing, clamped to dt's range and cast.
std::string saturate(const std::string& q, DType dt, std::pair<int64_t, int64_t> range) {
  return fmt::format("{}(min(max({}, {}.0), {}.0))", dtype_text(dt), q, range.first, range.second);
}

// How a scale-like input reads inside X's index nest: "S[]", "S[0]" or "S[i<axis>]".
// `per_axis_ok`: a 1-D input as long as X's `axis` dimension is allowed (per-channel).
std::string scale_read(const OpContext& ctx, const std::string& port, const TensorSpec& x,
                       int64_t axis, bool per_axis_ok) {
  const TensorSpec& s = ctx.in(port);
  if (s.shape.empty())
    return port + "[]";
  if (s.shape.size() == 1 && s.shape[0] == 1)
    return port + "[0]";
  if (per_axis_ok && s.shape.size() == 1 && axis >= 0 && s.shape[0] == x.shape[static_cast<size_t>(axis)])
    return fmt::format("{}[i{}]", port, axis);
  if (per_axis_ok)
    ctx.fail("input '{}' has shape {}: it must be a scalar ([] or [1]) or 1-D of length {} (X's "
             "axis {}, per-channel)",
             port, shape_text(s.shape), axis >= 0 ? x.shape[static_cast<size_t>(axis)] : 0, axis);
  ctx.fail("input '{}' has shape {}: it must be a scalar ([] or [1])", port, shape_text(s.shape));
}

// The axis per-channel inputs run along (only meaningful when X has rank >= 1).
int64_t channel_axis(const OpContext& ctx, const TensorSpec& x) {
  if (ctx.attr_int("block_size") != 0)
    ctx.fail("block_size {}: block-wise quantization is not supported (only per-tensor and "
             "per-axis scales)",
             ctx.attr_int("block_size"));
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank == 0)
    return -1;
  return ctx.axis(ctx.attr_int("axis"), rank);
}

void require_f32_scale(const OpContext& ctx, const std::string& port) {
  if (ctx.in(port).dtype != DType::F32)
    ctx.fail("input '{}' must be f32, got {}", port, dtype_text(ctx.in(port).dtype));
}

// The quantized output dtype: the zero point's when given, else the `dtype` attribute.
DType quantized_dtype(const OpContext& ctx, const std::string& zp_port) {
  if (ctx.has(zp_port))
    return ctx.in(zp_port).dtype;
  const std::string name = ctx.attr_string("dtype");
  const std::optional<DType> dt = parse_dtype(name);
  if (!dt)
    ctx.fail("attribute 'dtype': unknown dtype '{}' (u8 or i8)", name);
  return *dt;
}

// quantize_linear: Y = saturate(round(X / Scale) + ZeroPoint).
void emit_quantize_linear(OpContext& ctx) {
  ctx.require_float("X");
  require_f32_scale(ctx, "Scale");
  const TensorSpec& x = ctx.in("X");
  const int64_t axis = channel_axis(ctx, x);
  const DType qt = quantized_dtype(ctx, "ZeroPoint");
  const auto range = quantized_range(ctx, qt, "the output (ZeroPoint's dtype, or attribute dtype)");
  const std::vector<std::string> idx = index_names(static_cast<int64_t>(x.shape.size()));
  ctx.input("X");
  ctx.input("Scale");
  std::string q = fmt::format("round(f32({}) / {})", access("X", idx), scale_read(ctx, "Scale", x, axis, true));
  if (ctx.has("ZeroPoint")) {
    ctx.input("ZeroPoint");
    if (ctx.in("ZeroPoint").shape != ctx.in("Scale").shape)
      ctx.fail("ZeroPoint has shape {} but Scale has {}: they must match",
               shape_text(ctx.in("ZeroPoint").shape), shape_text(ctx.in("Scale").shape));
    q += " + f32(" + scale_read(ctx, "ZeroPoint", x, axis, true) + ")";
  }
  ctx.output("Y", qt, x.shape);
  ctx.stmt(access("Y", idx) + " = " + saturate(q, qt, range));
}

// dequantize_linear: Y = (X - ZeroPoint) * Scale, in f32.
void emit_dequantize_linear(OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  if (x.dtype != DType::U8 && x.dtype != DType::I8 && x.dtype != DType::I32)
    ctx.fail("input 'X' must be u8, i8 or i32, got {}", dtype_text(x.dtype));
  require_f32_scale(ctx, "Scale");
  const int64_t axis = channel_axis(ctx, x);
  const std::vector<std::string> idx = index_names(static_cast<int64_t>(x.shape.size()));
  ctx.input("X");
  ctx.input("Scale");
  std::string v = "f32(" + access("X", idx) + ")";
  if (ctx.has("ZeroPoint")) {
    ctx.require_same_dtype({"X", "ZeroPoint"});
    if (ctx.in("ZeroPoint").shape != ctx.in("Scale").shape)
      ctx.fail("ZeroPoint has shape {} but Scale has {}: they must match",
               shape_text(ctx.in("ZeroPoint").shape), shape_text(ctx.in("Scale").shape));
    ctx.input("ZeroPoint");
    v = "(" + v + " - f32(" + scale_read(ctx, "ZeroPoint", x, axis, true) + "))";
  }
  ctx.output("Y", DType::F32, x.shape);
  ctx.stmt(access("Y", idx) + " = " + v + " * " + scale_read(ctx, "Scale", x, axis, true));
}

// dynamic_quantize_linear: u8 quantization of X with a scale and zero point from X's own
// range, extended to include 0: scale = (max(0, max X) - min(0, min X)) / 255 and
// zero point = saturate(round(-min(0, min X) / scale)). An all-zero X has scale 0 and
// gives NaN-derived values, as ONNX's definition does.
void emit_dynamic_quantize_linear(OpContext& ctx) {
  if (ctx.in("X").dtype != DType::F32)
    ctx.fail("input 'X' must be f32, got {}", dtype_text(ctx.in("X").dtype));
  const TensorSpec& x = ctx.in("X");
  const std::vector<std::string> idx = index_names(static_cast<int64_t>(x.shape.size()));
  const std::string X = access("X", idx);
  ctx.input("X");
  ctx.output("Y", DType::U8, x.shape);
  ctx.output("YScale", DType::F32, {});
  ctx.output("YZeroPoint", DType::U8, {});
  ctx.local("lo", DType::F32, {});
  ctx.local("hi", DType::F32, {});
  ctx.stmt("lo[] min= " + X);
  ctx.stmt("hi[] max= " + X);
  ctx.stmt("YScale[] = (max(hi[], 0.0) - min(lo[], 0.0)) / 255.0");
  ctx.stmt("YZeroPoint[] = " + saturate("round((0.0 - min(lo[], 0.0)) / YScale[])", DType::U8, {0, 255}));
  ctx.stmt(access("Y", idx) + " = " + saturate("round(" + X + " / YScale[]) + f32(YZeroPoint[])", DType::U8, {0, 255}));
}

// The shape of an integer matrix product (NumPy matmul rules for rank >= 2 operands,
// batch dimensions broadcast): Y[batch, m, n].
struct IntMatmul {
  std::vector<int64_t> shape;
  std::vector<std::string> out_idx, a_idx, b_idx;
  int64_t m = 0, n = 0;
};

IntMatmul int_matmul(OpContext& ctx, const std::string& pa, const std::string& pb) {
  ctx.require_rank_at_least(pa, 2);
  ctx.require_rank_at_least(pb, 2);
  const TensorSpec &a = ctx.in(pa), &b = ctx.in(pb);
  quantized_range(ctx, a.dtype, "input '" + pa + "'");
  quantized_range(ctx, b.dtype, "input '" + pb + "'");
  const size_t ra = a.shape.size(), rb = b.shape.size();
  if (a.shape[ra - 1] != b.shape[rb - 2])
    ctx.fail("the contracted dimensions differ: '{}' {} has {} and '{}' {} has {}", pa,
             shape_text(a.shape), a.shape[ra - 1], pb, shape_text(b.shape), b.shape[rb - 2]);
  const TensorSpec ab{a.dtype, std::vector<int64_t>(a.shape.begin(), a.shape.end() - 2)};
  const TensorSpec bb{b.dtype, std::vector<int64_t>(b.shape.begin(), b.shape.end() - 2)};
  IntMatmul s;
  s.shape = broadcast_shapes(ctx, {{pa, ab}, {pb, bb}});
  const int64_t batch_rank = static_cast<int64_t>(s.shape.size());
  s.a_idx = broadcast_indices(ab, batch_rank, s.shape);
  s.b_idx = broadcast_indices(bb, batch_rank, s.shape);
  s.out_idx = index_names(batch_rank);
  s.m = a.shape[ra - 2];
  s.n = b.shape[rb - 1];
  s.shape.push_back(s.m);
  s.shape.push_back(s.n);
  s.out_idx.insert(s.out_idx.end(), {"m", "n"});
  s.a_idx.insert(s.a_idx.end(), {"m", "k"});
  s.b_idx.insert(s.b_idx.end(), {"k", "n"});
  return s;
}

// `Port - ZeroPort` as an i32 expression; a zero point is a scalar or, for A, one per row
// (1-D of length M) and, for B, one per column (1-D of length N), as MatMulInteger allows.
std::string centered(OpContext& ctx, const std::string& port, const std::vector<std::string>& idx,
                     const std::string& zp, const std::string& per, int64_t per_len,
                     bool guarded = false) {
  std::string v = "i32(" + access(port, idx) + (guarded ? " ?? 0" : "") + ")";
  if (!ctx.has(zp))
    return v;
  ctx.require_same_dtype({port, zp});
  const TensorSpec& z = ctx.in(zp);
  ctx.input(zp);
  if (z.shape.empty())
    return v + " - i32(" + zp + "[])";
  if (z.shape.size() == 1 && z.shape[0] == 1)
    return v + " - i32(" + zp + "[0])";
  if (z.shape.size() == 1 && z.shape[0] == per_len)
    return v + " - i32(" + zp + "[" + per + "])";
  ctx.fail("input '{}' has shape {}: it must be a scalar or 1-D of length {}", zp, shape_text(z.shape),
           per_len);
}

// `acc` (i32, s.shape) += the product of the centered 8-bit operands, on the f32 GEMM: a
// centered operand lies in [-255, 255], so a product is at most 65025 in magnitude and a
// sum of 256 of them stays below 2^24, where f32 holds every integer. The contraction is
// cut into blocks of 256: each block is an exact f32 GEMM (Af, Bf: the centered operands
// converted once, a last partial block padded with zeros), and the block sums add up in
// i32.
// The 8-bit operands have no vector multiply-add of their own in the C dialect, and the
// i32 product loop ran at about a sixth of PyTorch's speed.
void int_product(OpContext& ctx, const IntMatmul& s, const std::string& acc) {
  const std::vector<int64_t>& ash = ctx.in("A").shape;
  const int64_t kdim = ash[ash.size() - 1];
  const int64_t kBlock = std::min<int64_t>(kdim, 256);
  const int64_t nb = (kdim + kBlock - 1) / kBlock;
  const bool padded = nb * kBlock != kdim;
  const size_t batch = s.out_idx.size() - 2;
  std::vector<std::string> bi(s.out_idx.begin(), s.out_idx.begin() + static_cast<long>(batch));
  std::vector<int64_t> bshape(s.shape.begin(), s.shape.begin() + static_cast<long>(batch));
  auto with = [](std::vector<std::string> v, std::initializer_list<std::string> tail) {
    v.insert(v.end(), tail);
    return v;
  };
  auto shape_with = [](std::vector<int64_t> v, std::initializer_list<int64_t> tail) {
    v.insert(v.end(), tail);
    return v;
  };
  // The operands' own indices with k = kb * 256 + kk; padding past K reads as 0.
  const std::string kk = fmt::format("kb * {} + kk", kBlock);
  auto retarget = [&](std::vector<std::string> idx) {
    for (auto& x : idx)
      if (x == "k")
        x = kk;
    return idx;
  };
  ctx.input("A");
  ctx.input("B");
  const std::string a = centered(ctx, "A", retarget(s.a_idx), "AZeroPoint", "m", s.m, padded);
  const std::string b = centered(ctx, "B", retarget(s.b_idx), "BZeroPoint", "n", s.n, padded);
  ctx.local("Af", DType::F32, shape_with(bshape, {nb, s.m, kBlock}));
  ctx.local("Bf", DType::F32, shape_with(bshape, {nb, kBlock, s.n}));
  ctx.local("P", DType::F32, shape_with(bshape, {nb, s.m, s.n}));
  auto convert = [&](const std::string& v) {
    return padded ? fmt::format("{} < {} ? f32({}) : 0.0", kk, kdim, v) : "f32(" + v + ")";
  };
  ctx.stmt(access("Af", with(bi, {"kb", "m", "kk"})) + " = " + convert(a));
  ctx.stmt(access("Bf", with(bi, {"kb", "kk", "n"})) + " = " + convert(b));
  ctx.stmt(access("P", with(bi, {"kb", "m", "n"})) + " += " + access("Af", with(bi, {"kb", "m", "k"})) +
           " * " + access("Bf", with(bi, {"kb", "k", "n"})));
  ctx.stmt(access(acc, s.out_idx) + " += i32(" + access("P", with(bi, {"kb", "m", "n"})) + ")");
}

// matmul_integer: Y (i32) = (A - AZeroPoint) @ (B - BZeroPoint).
void emit_matmul_integer(OpContext& ctx) {
  const IntMatmul s = int_matmul(ctx, "A", "B");
  ctx.output("Y", DType::I32, s.shape);
  int_product(ctx, s, "Y");
}

// qlinear_matmul: Y = saturate(round(acc * AScale * BScale / YScale) + YZeroPoint), acc the
// i32 product of the centered operands.
void emit_qlinear_matmul(OpContext& ctx) {
  const IntMatmul s = int_matmul(ctx, "A", "B");
  for (const char* p : {"AScale", "BScale", "YScale"}) {
    require_f32_scale(ctx, p);
    const TensorSpec& t = ctx.in(p);
    if (!(t.shape.empty() || (t.shape.size() == 1 && t.shape[0] == 1)))
      ctx.fail("input '{}' has shape {}: it must be a scalar ([] or [1])", p, shape_text(t.shape));
  }
  const DType yt = ctx.in("YZeroPoint").dtype;
  const auto range = quantized_range(ctx, yt, "input 'YZeroPoint'");
  for (const char* p : {"AZeroPoint", "BZeroPoint", "YZeroPoint"}) {
    const TensorSpec& t = ctx.in(p);
    if (!(t.shape.empty() || (t.shape.size() == 1 && t.shape[0] == 1)))
      ctx.fail("input '{}' has shape {}: it must be a scalar ([] or [1])", p, shape_text(t.shape));
  }
  auto scalar = [&](const std::string& p) { return p + (ctx.in(p).shape.empty() ? "[]" : "[0]"); };
  ctx.input("AScale");
  ctx.input("BScale");
  ctx.input("YScale");
  ctx.input("YZeroPoint");
  ctx.output("Y", yt, s.shape);
  ctx.local("acc", DType::I32, s.shape);
  int_product(ctx, s, "acc");
  const std::string q = fmt::format("round(f32({}) * ({} * {} / {})) + f32({})", access("acc", s.out_idx),
                                    scalar("AScale"), scalar("BScale"), scalar("YScale"),
                                    scalar("YZeroPoint"));
  ctx.stmt(access("Y", s.out_idx) + " = " + saturate(q, yt, range));
}

} // namespace

void add_quantization_ops(std::vector<OpDef>& ops) {
  const std::vector<AttrSpec> axis_attrs = {
      {"axis", AttrKind::Int, AttrValue{int64_t{1}}, "the axis a 1-D (per-channel) Scale runs along"},
      {"block_size", AttrKind::Int, AttrValue{int64_t{0}}, "block-wise quantization (only 0: not supported)"}};
  std::vector<AttrSpec> q_attrs = axis_attrs;
  q_attrs.push_back({"dtype", AttrKind::String, AttrValue{std::string("u8")},
                     "the output dtype when ZeroPoint is absent: u8 or i8"});
  ops.push_back(make_op("quantize_linear", "quantization",
                        "saturate(round(X / Scale) + ZeroPoint) to u8 or i8 (ONNX QuantizeLinear)",
                        {{"X"}, {"Scale"}, {"ZeroPoint", PortKind::Data, true}}, {{"Y"}}, q_attrs,
                        emit_quantize_linear));
  ops.push_back(make_op("dequantize_linear", "quantization",
                        "(X - ZeroPoint) * Scale in f32 (ONNX DequantizeLinear)",
                        {{"X"}, {"Scale"}, {"ZeroPoint", PortKind::Data, true}}, {{"Y"}}, axis_attrs,
                        emit_dequantize_linear));
  ops.push_back(make_op("dynamic_quantize_linear", "quantization",
                        "u8 quantization with a scale and zero point from X's range (ONNX "
                        "DynamicQuantizeLinear)",
                        {{"X"}}, {{"Y"}, {"YScale"}, {"YZeroPoint"}}, {}, emit_dynamic_quantize_linear));
  ops.push_back(make_op("matmul_integer", "quantization",
                        "(A - AZeroPoint) @ (B - BZeroPoint) in i32 (ONNX MatMulInteger)",
                        {{"A"}, {"B"}, {"AZeroPoint", PortKind::Data, true}, {"BZeroPoint", PortKind::Data, true}},
                        {{"Y"}}, {}, emit_matmul_integer));
  ops.push_back(make_op("qlinear_matmul", "quantization",
                        "quantized matmul: the i32 product rescaled to YScale and YZeroPoint (ONNX "
                        "QLinearMatMul)",
                        {{"A"}, {"AScale"}, {"AZeroPoint"}, {"B"}, {"BScale"}, {"BZeroPoint"}, {"YScale"},
                         {"YZeroPoint"}},
                        {{"Y"}}, {}, emit_qlinear_matmul));
}

} // namespace unitile::ops
