// resize (ONNX Resize): nearest, linear (bilinear, trilinear, ... per resized axis) or
// cubic (bicubic, ...) interpolation of any axes, to `sizes` or by `scales`, with the
// coordinate transformation and nearest rounding modes.
//
// Each resized axis gets index tables in small locals of the output extent, computed in
// f64 from the output index: the source coordinate (half_pixel: (o + 0.5) / scale - 0.5,
// align_corners: o * (in - 1) / (out - 1), asymmetric: o / scale, pytorch_half_pixel),
// then for nearest the rounded index, for linear the two neighbours and the weight of
// the upper one (the coordinate clamped into [0, in - 1], which is what ONNX's edge
// handling and PyTorch's clamping both give), for cubic the four neighbours floor(c) - 1
// .. floor(c) + 2 of the unclamped coordinate, each clamped to the edge (ONNX pads with
// edge values; PyTorch clamps), and Keys' weights with cubic_coeff_a (-0.75, as ONNX and
// PyTorch; exclude_outside zeroes the taps outside the input and renormalises). The
// output is one comprehension gathering through the tables: nearest `Y[.., y, x] =
// X[.., ry[y], rx[x]]`, linear and cubic the weighted sum over the 2^r or 4^r taps. Axes
// whose extent and scale stay 1:1 are read directly. resize_grad scatters dY back
// through the same tables.
#include "ops/OpContext.h"
#include "ops/defs/Families.h"

#include <cmath>

namespace unitile::ops {
namespace {

// The index tables of an instance: per axis the taps it reads, each an index text and a
// weight text (empty: weight 1), read at output index i<d>.
struct Tap {
  std::string index, weight;
};
struct ResizePlan {
  std::vector<int64_t> out;
  std::vector<std::vector<Tap>> taps; // per axis: one (nearest, unresized), 2 or 4
  std::vector<int64_t> resized;       // the axes that change
  bool weighted = false;              // linear or cubic
};

// Keys' cubic convolution weight at distance x (text) from the tap, for |x| <= 1 (near)
// or 1 < |x| < 2 (far).
std::string keys_weight(const std::string& x, double a, bool near) {
  if (near)
    return fmt::format("(({} * {} - {}) * {} * {} + 1)", float_literal(a + 2), x,
                       float_literal(a + 3), x, x);
  return fmt::format("((({} * {} - {}) * {} + {}) * {} - {})", float_literal(a), x,
                     float_literal(5 * a), x, float_literal(8 * a), x, float_literal(4 * a));
}

ResizePlan plan_resize(OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank == 0)
    ctx.fail("input 'X' must have rank 1 or more");
  const std::string mode = ctx.attr_string("mode");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    ctx.fail("mode must be nearest, linear or cubic, got '{}'", mode);
  if (mode != "nearest")
    ctx.require_float("X");
  else if (x.dtype == DType::Bool)
    ctx.fail("input 'X' must be numeric, got bool");
  const std::string ctm = ctx.attr_string("coordinate_transformation_mode");
  if (ctm != "half_pixel" && ctm != "align_corners" && ctm != "asymmetric" &&
      ctm != "pytorch_half_pixel")
    ctx.fail("coordinate_transformation_mode must be half_pixel, align_corners, asymmetric or "
             "pytorch_half_pixel, got '{}'",
             ctm);
  const std::string nearest = ctx.attr_string("nearest_mode");
  if (nearest != "round_prefer_floor" && nearest != "round_prefer_ceil" && nearest != "floor" &&
      nearest != "ceil")
    ctx.fail("nearest_mode must be round_prefer_floor, round_prefer_ceil, floor or ceil, got "
             "'{}'",
             nearest);
  const double cubic_a = ctx.attr_float("cubic_coeff_a");
  const bool exclude_outside = ctx.attr_bool("exclude_outside");
  const std::vector<double> scales_attr = ctx.attr_floats("scales");
  const std::vector<int64_t> sizes_attr = ctx.attr_ints("sizes");
  if (scales_attr.empty() == sizes_attr.empty())
    ctx.fail("give exactly one of 'scales' and 'sizes'");
  if (!scales_attr.empty() && static_cast<int64_t>(scales_attr.size()) != rank)
    ctx.fail("attribute 'scales' has {} values but X has rank {}", scales_attr.size(), rank);
  if (!sizes_attr.empty() && static_cast<int64_t>(sizes_attr.size()) != rank)
    ctx.fail("attribute 'sizes' has {} values but X has rank {}", sizes_attr.size(), rank);

  std::vector<int64_t> out(static_cast<size_t>(rank));
  std::vector<double> scale(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) {
    const double in = static_cast<double>(x.shape[d]);
    if (!scales_attr.empty()) {
      if (!(scales_attr[d] > 0))
        ctx.fail("scales must be above 0, got {} for axis {}", scales_attr[d], d);
      scale[d] = scales_attr[d];
      out[d] = static_cast<int64_t>(std::floor(in * scale[d]));
      if (out[d] < 1)
        ctx.fail("axis {}: extent {} times scale {} leaves no output element", d, x.shape[d],
                 scale[d]);
    } else {
      if (sizes_attr[d] < 1)
        ctx.fail("sizes must be at least 1, got {} for axis {}", sizes_attr[d], d);
      out[d] = sizes_attr[d];
      scale[d] = static_cast<double>(out[d]) / in;
    }
  }

  ResizePlan p;
  p.out = out;
  p.weighted = mode != "nearest";
  p.taps.resize(static_cast<size_t>(rank));
  const std::string wt = dtype_text(compute_type(x.dtype));
  for (int64_t d = 0; d < rank; ++d) {
    const std::string o = "i" + std::to_string(d);
    if (out[d] == x.shape[d] && scale[d] == 1.0) {
      p.taps[d] = {{o, ""}};
      continue;
    }
    p.resized.push_back(d);
    const std::string fo = "f64(" + o + ")", s = float_literal(scale[d]);
    std::string coord;
    if (ctm == "half_pixel")
      coord = "(" + fo + " + 0.5) / " + s + " - 0.5";
    else if (ctm == "pytorch_half_pixel")
      coord = out[d] > 1 ? "(" + fo + " + 0.5) / " + s + " - 0.5" : fo + " * 0.0";
    else if (ctm == "asymmetric")
      coord = fo + " / " + s;
    else
      coord = out[d] > 1 ? fo + " * " + float_literal(static_cast<double>(x.shape[d] - 1)) +
                               " / " + float_literal(static_cast<double>(out[d] - 1))
                         : fo + " * 0.0";
    const int64_t last_i = x.shape[d] - 1;
    const std::string last = float_literal(static_cast<double>(last_i));
    const std::string table = "r" + std::to_string(d);
    auto at = [&](const std::string& t) { return t + "[" + o + "]"; };
    if (mode == "nearest") {
      std::string rounded;
      if (nearest == "round_prefer_floor")
        rounded = "ceil(" + coord + " - 0.5)";
      else if (nearest == "round_prefer_ceil")
        rounded = "floor(" + coord + " + 0.5)";
      else
        rounded = nearest + "(" + coord + ")";
      ctx.local(table, DType::I64, {out[d]});
      ctx.stmtf("{}[{}] = i64(min(max({}, 0), {}))", table, o, rounded, last);
      p.taps[d] = {{at(table), ""}};
      continue;
    }
    if (mode == "linear") {
      const std::string c = table + "c", l = table + "lo", h = table + "hi", w = table + "w";
      ctx.local(c, DType::F64, {out[d]});
      ctx.local(l, DType::I64, {out[d]});
      ctx.local(h, DType::I64, {out[d]});
      ctx.local(w, compute_type(x.dtype), {out[d]});
      ctx.stmtf("{}[{}] = min(max({}, 0), {})", c, o, coord, last);
      ctx.stmtf("{}[{}] = i64(floor({}[{}]))", l, o, c, o);
      ctx.stmtf("{}[{}] = min({}[{}] + 1, {})", h, o, l, o, last_i);
      ctx.stmtf("{}[{}] = {}({}[{}] - floor({}[{}]))", w, o, wt, c, o, c, o);
      p.taps[d] = {{at(l), "(1 - " + at(w) + ")"}, {at(h), at(w)}};
      continue;
    }
    // cubic: t = c - floor(c); taps floor(c) - 1 + j at distances 1 + t, t, 1 - t, 2 - t.
    const std::string c = table + "c", b = table + "b";
    ctx.local(c, DType::F64, {out[d]});
    ctx.local(b, DType::I64, {out[d]});
    ctx.stmtf("{}[{}] = {}", c, o, coord);
    ctx.stmtf("{}[{}] = i64(floor({}[{}]))", b, o, c, o);
    const std::string t = "(" + at(c) + " - floor(" + at(c) + "))";
    const std::string dist[4] = {"(1 + " + t + ")", t, "(1 - " + t + ")", "(2 - " + t + ")"};
    std::vector<std::string> ws;
    for (int j = 0; j < 4; ++j) {
      const std::string ij = table + "i" + std::to_string(j), wj = table + "w" + std::to_string(j);
      const std::string tap = j == 0 ? at(b) + " - 1" : j == 1 ? at(b) : fmt::format("{} + {}", at(b), j - 1);
      ctx.local(ij, DType::I64, {out[d]});
      ctx.stmtf("{}[{}] = min(max({}, 0), {})", ij, o, tap, last_i);
      ctx.local(wj, compute_type(x.dtype), {out[d]});
      std::string weight = keys_weight(dist[j], cubic_a, j == 1 || j == 2);
      if (exclude_outside)
        weight = fmt::format("{} >= 0 && {} <= {} ? {} : 0", tap, tap, last_i, weight);
      ctx.stmtf("{}[{}] = {}({})", wj, o, wt, weight);
      ws.push_back(at(wj));
      p.taps[d].push_back({at(ij), at(wj)});
    }
    if (exclude_outside) {
      const std::string sum = table + "s";
      ctx.local(sum, compute_type(x.dtype), {out[d]});
      ctx.stmtf("{}[{}] = {}", sum, o, join(ws, " + "));
      for (Tap& tp : p.taps[d])
        tp.weight = "(" + tp.weight + " / " + at(sum) + ")";
    }
  }
  return p;
}

// Every combination of one tap per resized axis: its indices and its weight text.
std::vector<std::pair<std::vector<std::string>, std::string>> corners(const ResizePlan& p) {
  std::vector<std::pair<std::vector<std::string>, std::string>> cs = {{{}, ""}};
  for (size_t d = 0; d < p.taps.size(); ++d) {
    std::vector<std::pair<std::vector<std::string>, std::string>> next;
    for (const auto& [idx, w] : cs)
      for (const Tap& tap : p.taps[d]) {
        std::vector<std::string> at = idx;
        at.push_back(tap.index);
        const std::string weight = w.empty() ? tap.weight : tap.weight.empty() ? w : w + " * " + tap.weight;
        next.emplace_back(std::move(at), weight);
      }
    cs = std::move(next);
  }
  return cs;
}

std::string cast_to(DType dt, const std::string& e) {
  return compute_type(dt) == dt ? e : dtype_text(dt) + "(" + e + ")";
}

void emit_resize(OpContext& ctx) {
  const ResizePlan p = plan_resize(ctx);
  const TensorSpec& x = ctx.in("X");
  ctx.input("X");
  ctx.output("Y", x.dtype, p.out);
  const std::string y = access("Y", index_names(static_cast<int64_t>(x.shape.size())));
  if (!p.weighted || p.resized.empty()) {
    ctx.stmt(y + " = " + access("X", corners(p).front().first));
    return;
  }
  std::vector<std::string> terms;
  for (const auto& [at, w] : corners(p))
    terms.push_back(w + " * " + access("X", at));
  ctx.stmt(y + " = " + cast_to(x.dtype, join(terms, " + ")));
}

// The gradient scatters dY back through the same tables: nearest adds each dY element to
// the element it read, linear adds it times each corner's weight to that corner. Points
// that hit one element add up (the lowering runs such scatters serially).
void emit_resize_grad(OpContext& ctx) {
  const TensorSpec& x = ctx.in("X");
  ctx.require_float("X");
  ctx.require_same_dtype({"X", "dY"});
  const ResizePlan p = plan_resize(ctx);
  if (ctx.in("dY").shape != p.out)
    ctx.fail("dY has shape {} but resize's output has shape {}", shape_text(ctx.in("dY").shape),
             shape_text(p.out));
  const std::vector<std::string> idx = index_names(static_cast<int64_t>(x.shape.size()));
  ctx.input("X"); // for its shape
  ctx.input("dY");
  ctx.output("dX", x.dtype, x.shape);
  const std::string dy = access("dY", idx);
  if (p.resized.empty()) {
    ctx.stmt(access("dX", idx) + " = " + dy);
    return;
  }
  ctx.stmt(access("dX", idx) + " = 0");
  if (!p.weighted) {
    ctx.stmt(access("dX", corners(p).front().first) + " += " + dy);
    return;
  }
  for (const auto& [at, w] : corners(p))
    ctx.stmt(access("dX", at) + " += " + cast_to(x.dtype, w + " * " + dy));
}

} // namespace

void add_resize_ops(std::vector<OpDef>& ops) {
  OpDef op;
  op.name = "resize";
  op.category = "convolution";
  op.summary = "nearest, linear or cubic resize of any axes, to sizes or by scales (ONNX Resize)";
  op.inputs = {{"X"}};
  op.outputs = {{"Y"}};
  const AttrValue none_i{std::vector<int64_t>{}};
  const AttrValue none_f{std::vector<double>{}};
  op.attrs.push_back({"mode", AttrKind::String, AttrValue{std::string("nearest")},
                      "nearest, linear or cubic"});
  op.attrs.push_back({"scales", AttrKind::Floats, none_f,
                      "scale per axis (output extent floor(in * scale)); or give sizes"});
  op.attrs.push_back({"sizes", AttrKind::Ints, none_i, "output extent per axis; or give scales"});
  op.attrs.push_back({"coordinate_transformation_mode", AttrKind::String,
                      AttrValue{std::string("half_pixel")},
                      "half_pixel, align_corners, asymmetric or pytorch_half_pixel"});
  op.attrs.push_back({"nearest_mode", AttrKind::String,
                      AttrValue{std::string("round_prefer_floor")},
                      "round_prefer_floor, round_prefer_ceil, floor or ceil"});
  op.attrs.push_back({"cubic_coeff_a", AttrKind::Float, AttrValue{-0.75},
                      "cubic: Keys' coefficient a (-0.75 as ONNX and PyTorch; -0.5 is Keys')"});
  op.attrs.push_back({"exclude_outside", AttrKind::Bool, AttrValue{int64_t{0}},
                      "cubic: weigh taps outside X 0 and renormalise (else they read the edge)"});
  op.emit = emit_resize;
  op.gradient = "resize_grad";
  OpDef g;
  g.name = "resize_grad";
  g.category = "convolution-backward";
  g.summary = "gradient of resize: dX from X (its shape) and dY";
  g.inputs = {{"X"}, {"dY"}};
  g.outputs = {{"dX"}};
  g.attrs = op.attrs;
  g.emit = emit_resize_grad;
  ops.push_back(std::move(op));
  ops.push_back(std::move(g));
}

} // namespace unitile::ops
