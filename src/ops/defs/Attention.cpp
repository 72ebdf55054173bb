// Attention ops: scaled dot-product attention (causal, boolean or additive masks,
// grouped-query heads) in the [B, H, N, D] layout and in the [B, N, H*D] layout of
// multi-head attention, rotary position embeddings, and the backward ops of SDPA and RoPE.
//
// Attention is written as the four comprehensions of examples/attention.ut (scores, row
// max, row sum, weighted sum of V), with masks as selects on the scores, and is not fused
// by hand: the scheduler's attention fusion recognises exactly that shape. A key/value
// head serves H / Hkv query heads, read as K[b, h // (H / Hkv), j, d].
#include "ops/OpContext.h"
#include "ops/defs/Families.h"

#include <cmath>

namespace unitile::ops {
namespace {

// --- scaled dot-product attention --------------------------------------------------------

struct AttnShape {
  int64_t b, h, hkv, n, m, d, dv;
  double scale;
  std::string kv_head; // index of the K/V head for query head h
};

// Checks Q [B, H, N, D], K [B, Hkv, M, D], V [B, Hkv, M, Dv] (or the shapes the caller
// passes for another layout) and the mask.
AttnShape attn_shape(const OpContext& ctx, const std::vector<int64_t>& q,
                     const std::vector<int64_t>& k, const std::vector<int64_t>& v) {
  ctx.require_float("Q");
  ctx.require_same_dtype({"Q", "K", "V"});
  AttnShape s{q[0], q[1], k[1], q[2], k[2], q[3], v[3], 0.0, ""};
  if (k[0] != s.b || v[0] != s.b)
    ctx.fail("Q, K and V must have the same batch size, got {}, {} and {}", s.b, k[0], v[0]);
  if (k[3] != s.d)
    ctx.fail("K's head size {} differs from Q's {}", k[3], s.d);
  if (v[1] != s.hkv || v[2] != s.m)
    ctx.fail("V has {} heads of {} positions but K has {} of {}: they must match", v[1], v[2],
             s.hkv, s.m);
  if (s.h % s.hkv != 0)
    ctx.fail("Q's {} heads are not a multiple of K and V's {} heads (grouped-query attention "
             "shares each K/V head among H / Hkv query heads)",
             s.h, s.hkv);
  const int64_t group = s.h / s.hkv;
  s.kv_head = group == 1 ? "h" : "h // " + std::to_string(group);
  s.scale = ctx.attr_float("scale");
  if (s.scale == 0.0)
    s.scale = 1.0 / std::sqrt(static_cast<double>(s.d));
  if (ctx.has("Mask")) {
    const TensorSpec& mask = ctx.in("Mask");
    if (mask.dtype != DType::Bool && mask.dtype != ctx.in("Q").dtype)
      ctx.fail("input 'Mask' must be bool (true: attend) or additive with Q's dtype {}, got {}",
               dtype_text(ctx.in("Q").dtype), dtype_text(mask.dtype));
    const std::vector<int64_t> full = {s.b, s.h, s.n, s.m};
    bool ok = mask.shape.size() <= 4;
    const size_t off = ok ? 4 - mask.shape.size() : 0;
    for (size_t d = 0; ok && d < mask.shape.size(); ++d)
      ok = mask.shape[d] == 1 || mask.shape[d] == full[off + d];
    if (!ok)
      ctx.fail("input 'Mask' {} does not broadcast to [B, H, N, M] = {}", shape_text(mask.shape),
               shape_text(full));
  }
  return s;
}

// The score read at [b, h, i, j] and the condition under which it counts ("" if always).
struct Scores {
  std::string score, cond;
};

Scores masked_scores(OpContext& ctx, const AttnShape& s) {
  Scores r{"S[b, h, i, j]", ""};
  std::vector<std::string> conds;
  if (ctx.attr_bool("causal"))
    conds.push_back("j <= i");
  if (ctx.has("Mask")) {
    ctx.input("Mask");
    const TensorSpec& mask = ctx.in("Mask");
    const std::vector<int64_t> full = {s.b, s.h, s.n, s.m};
    const std::vector<std::string> names = {"b", "h", "i", "j"};
    std::vector<std::string> idx;
    const size_t off = 4 - mask.shape.size();
    for (size_t d = 0; d < mask.shape.size(); ++d)
      idx.push_back(mask.shape[d] == 1 && full[off + d] != 1 ? "0" : names[off + d]);
    if (mask.dtype == DType::Bool)
      conds.push_back(access("Mask", idx));
    else
      r.score = "(S[b, h, i, j] + " + access("Mask", idx) + ")";
  }
  r.cond = join(conds, " && ");
  return r;
}

std::string when(const std::string& cond, const std::string& value, const std::string& other) {
  return cond.empty() ? value : cond + " ? " + value + " : " + other;
}

// S = Q K^T scale; m = row max; l = row sum of exp(S - m); the probabilities
// exp(S - m) / l (0 where masked). A row with every key masked gets zero weights.
std::string emit_probabilities(OpContext& ctx, const AttnShape& s, const std::string& q,
                               const std::string& k, DType acc) {
  ctx.local("S", acc, {s.b, s.h, s.n, s.m});
  ctx.local("m", acc, {s.b, s.h, s.n});
  ctx.local("l", acc, {s.b, s.h, s.n});
  const Scores sc = masked_scores(ctx, s);
  ctx.stmt("S[b, h, i, j] += " + q + " * " + k + " * " + float_literal(s.scale));
  ctx.stmt("m[b, h, i] max= " + when(sc.cond, sc.score, "(-inf)"));
  ctx.stmt("l[b, h, i] += " + when(sc.cond, "exp(" + sc.score + " - m[b, h, i])", "0"));
  return when(sc.cond, "exp(" + sc.score + " - m[b, h, i]) / l[b, h, i]", "0");
}

void emit_sdpa(OpContext& ctx) {
  for (const char* p : {"Q", "K", "V"})
    ctx.require_rank(p, 4);
  const AttnShape s = attn_shape(ctx, ctx.in("Q").shape, ctx.in("K").shape, ctx.in("V").shape);
  const DType dt = ctx.in("Q").dtype;
  for (const char* p : {"Q", "K", "V"})
    ctx.input(p);
  ctx.output("Y", dt, {s.b, s.h, s.n, s.dv});
  const std::string p = emit_probabilities(ctx, s, "Q[b, h, i, d]",
                                           "K[b, " + s.kv_head + ", j, d]", compute_type(dt));
  ctx.stmt("Y[b, h, i, e] += (" + p + ") * V[b, " + s.kv_head + ", j, e]");
}

// The heads of multi-head attention's [B, N, H*D] tensors, checked.
AttnShape mha_shape(const OpContext& ctx) {
  for (const char* p : {"Q", "K", "V"})
    ctx.require_rank(p, 3);
  const int64_t heads = ctx.attr_int("num_heads");
  const int64_t kv_heads = ctx.attr_int("num_kv_heads") == 0 ? heads : ctx.attr_int("num_kv_heads");
  if (heads < 1 || kv_heads < 1)
    ctx.fail("num_heads {} and num_kv_heads {} must be at least 1", heads, kv_heads);
  const auto &q = ctx.in("Q").shape, &k = ctx.in("K").shape, &v = ctx.in("V").shape;
  if (q[2] % heads != 0)
    ctx.fail("Q's hidden size {} is not a multiple of num_heads {}", q[2], heads);
  if (k[2] % kv_heads != 0 || v[2] % kv_heads != 0)
    ctx.fail("K's and V's hidden sizes {} and {} must be multiples of the {} key/value heads",
             k[2], v[2], kv_heads);
  return attn_shape(ctx, {q[0], heads, q[1], q[2] / heads}, {k[0], kv_heads, k[1], k[2] / kv_heads},
                    {v[0], kv_heads, v[1], v[2] / kv_heads});
}

// Copies Q, K, V into [B, H, N, D]-layout locals Qh, Kh, Vh.
void split_heads(OpContext& ctx, const AttnShape& s) {
  const DType dt = ctx.in("Q").dtype;
  ctx.local("Qh", dt, {s.b, s.h, s.n, s.d});
  ctx.local("Kh", dt, {s.b, s.hkv, s.m, s.d});
  ctx.local("Vh", dt, {s.b, s.hkv, s.m, s.dv});
  ctx.stmtf("Qh[b, h, i, d] = Q[b, i, h * {} + d]", s.d);
  ctx.stmtf("Kh[b, g, j, d] = K[b, j, g * {} + d]", s.d);
  ctx.stmtf("Vh[b, g, j, e] = V[b, j, g * {} + e]", s.dv);
}

// Multi-head attention on [B, N, H*D] tensors: the heads are split into [B, H, N, D]
// locals, attended as above, and merged back.
void emit_mha(OpContext& ctx) {
  const AttnShape s = mha_shape(ctx);
  const DType dt = ctx.in("Q").dtype;
  for (const char* p : {"Q", "K", "V"})
    ctx.input(p);
  split_heads(ctx, s);
  ctx.local("Yh", compute_type(dt), {s.b, s.h, s.n, s.dv});
  ctx.output("Y", dt, {s.b, s.n, s.h * s.dv});
  const std::string p = emit_probabilities(ctx, s, "Qh[b, h, i, d]",
                                           "Kh[b, " + s.kv_head + ", j, d]", compute_type(dt));
  ctx.stmt("Yh[b, h, i, e] += (" + p + ") * Vh[b, " + s.kv_head + ", j, e]");
  ctx.stmtf("Y[b, i, c] = Yh[b, c // {}, i, c % {}]", s.dv, s.dv);
}

// The [B, H, N, D]-layout tensors (inputs or locals) an attention backward reads and
// writes.
struct HeadTensors {
  std::string q, k, v, dy, dq, dk, dv;
};

// With P the probabilities: dV = P^T dY, dP = dY V^T, dS = P (dP - rowsum(P dP)),
// dQ = dS K scale, dK = dS^T Q scale. dK and dV of a shared K/V head sum over its group of
// query heads.
void emit_attention_backward(OpContext& ctx, const AttnShape& s, const HeadTensors& t,
                             DType acc) {
  const std::string kvh = s.kv_head;
  const std::string p = emit_probabilities(ctx, s, t.q + "[b, h, i, d]",
                                           t.k + "[b, " + kvh + ", j, d]", acc);
  ctx.local("P", acc, {s.b, s.h, s.n, s.m});
  ctx.local("dP", acc, {s.b, s.h, s.n, s.m});
  ctx.local("t", acc, {s.b, s.h, s.n});
  ctx.local("dS", acc, {s.b, s.h, s.n, s.m});
  ctx.stmt("P[b, h, i, j] = " + p);
  ctx.stmt("dP[b, h, i, j] += " + t.dy + "[b, h, i, e] * " + t.v + "[b, " + kvh + ", j, e]");
  ctx.stmt("t[b, h, i] += P[b, h, i, j] * dP[b, h, i, j]");
  ctx.stmt("dS[b, h, i, j] = P[b, h, i, j] * (dP[b, h, i, j] - t[b, h, i]) * " +
           float_literal(s.scale));
  ctx.stmt(t.dq + "[b, h, i, d] += dS[b, h, i, j] * " + t.k + "[b, " + kvh + ", j, d]");
  if (s.h == s.hkv) {
    ctx.stmt(t.dk + "[b, h, j, d] += dS[b, h, i, j] * " + t.q + "[b, h, i, d]");
    ctx.stmt(t.dv + "[b, h, j, e] += P[b, h, i, j] * " + t.dy + "[b, h, i, e]");
    return;
  }
  // Per query head first, then each K/V head sums its group.
  ctx.local("dKq", acc, {s.b, s.h, s.m, s.d});
  ctx.local("dVq", acc, {s.b, s.h, s.m, s.dv});
  ctx.stmt("dKq[b, h, j, d] += dS[b, h, i, j] * " + t.q + "[b, h, i, d]");
  ctx.stmt("dVq[b, h, j, e] += P[b, h, i, j] * " + t.dy + "[b, h, i, e]");
  // No spaces around `//` outside brackets, where ` //` would start a comment.
  const std::string in_group = "h//" + std::to_string(s.h / s.hkv) + " == g";
  ctx.stmt(t.dk + "[b, g, j, d] += " + in_group + " ? dKq[b, h, j, d] : 0");
  ctx.stmt(t.dv + "[b, g, j, e] += " + in_group + " ? dVq[b, h, j, e] : 0");
}

void emit_sdpa_grad(OpContext& ctx) {
  for (const char* p : {"Q", "K", "V", "dY"})
    ctx.require_rank(p, 4);
  const AttnShape s = attn_shape(ctx, ctx.in("Q").shape, ctx.in("K").shape, ctx.in("V").shape);
  ctx.require_same_dtype({"Q", "dY"});
  if (ctx.in("dY").shape != std::vector<int64_t>{s.b, s.h, s.n, s.dv})
    ctx.fail("dY has shape {} but attention gives {}", shape_text(ctx.in("dY").shape),
             shape_text({s.b, s.h, s.n, s.dv}));
  const DType dt = ctx.in("Q").dtype;
  for (const char* p : {"Q", "K", "V", "dY"})
    ctx.input(p);
  ctx.output("dQ", dt, ctx.in("Q").shape);
  ctx.output("dK", dt, ctx.in("K").shape);
  ctx.output("dV", dt, ctx.in("V").shape);
  emit_attention_backward(ctx, s, {"Q", "K", "V", "dY", "dQ", "dK", "dV"}, compute_type(dt));
}

// multi_head_attention's backward: the heads of Q, K, V and dY split as in the forward,
// the attention backward on them, and dQ, dK, dV merged back into [B, N, H*D].
void emit_mha_grad(OpContext& ctx) {
  ctx.require_rank("dY", 3);
  const AttnShape s = mha_shape(ctx);
  ctx.require_same_dtype({"Q", "dY"});
  if (ctx.in("dY").shape != std::vector<int64_t>{s.b, s.n, s.h * s.dv})
    ctx.fail("dY has shape {} but attention gives {}", shape_text(ctx.in("dY").shape),
             shape_text({s.b, s.n, s.h * s.dv}));
  const DType dt = ctx.in("Q").dtype, acc = compute_type(dt);
  for (const char* p : {"Q", "K", "V", "dY"})
    ctx.input(p);
  ctx.output("dQ", dt, ctx.in("Q").shape);
  ctx.output("dK", dt, ctx.in("K").shape);
  ctx.output("dV", dt, ctx.in("V").shape);
  split_heads(ctx, s);
  ctx.local("dYh", dt, {s.b, s.h, s.n, s.dv});
  ctx.stmtf("dYh[b, h, i, e] = dY[b, i, h * {} + e]", s.dv);
  ctx.local("dQh", acc, {s.b, s.h, s.n, s.d});
  ctx.local("dKh", acc, {s.b, s.hkv, s.m, s.d});
  ctx.local("dVh", acc, {s.b, s.hkv, s.m, s.dv});
  emit_attention_backward(ctx, s, {"Qh", "Kh", "Vh", "dYh", "dQh", "dKh", "dVh"}, acc);
  ctx.stmtf("dQ[b, i, c] = dQh[b, c // {}, i, c % {}]", s.d, s.d);
  ctx.stmtf("dK[b, j, c] = dKh[b, c // {}, j, c % {}]", s.d, s.d);
  ctx.stmtf("dV[b, j, c] = dVh[b, c // {}, j, c % {}]", s.dv, s.dv);
}

// --- rotary embedding --------------------------------------------------------------------

// Rotates pairs of X's last dimension by angle pos * base^(-2k / R) (R = rotary_dim, the
// first R features; the rest pass through). Pairs are (k, k + R/2) in the half-split
// layout (GPT-NeoX, Llama) or (2k, 2k + 1) interleaved (GPT-J). The backward op rotates
// by the negative angle.
void emit_rope(OpContext& ctx, bool inverse) {
  const std::string port = inverse ? "dY" : "X";
  ctx.require_float(port);
  ctx.require_rank(port, 4);
  const TensorSpec& x = ctx.in(port);
  const std::string layout = ctx.attr_string("layout");
  if (layout != "bhnd" && layout != "bnhd")
    ctx.fail("layout '{}' must be 'bhnd' ([B, H, N, D]) or 'bnhd' ([B, N, H, D])", layout);
  const int64_t pos_dim = layout == "bhnd" ? 2 : 1;
  const int64_t bsz = x.shape[0], n = x.shape[pos_dim], d = x.shape[3];
  const int64_t rd = ctx.attr_int("rotary_dim") == 0 ? d : ctx.attr_int("rotary_dim");
  if (rd < 2 || rd > d || rd % 2 != 0)
    ctx.fail("rotary_dim {} must be even and between 2 and the head size {}", rd, d);
  const double base = ctx.attr_float("base");
  if (!(base > 0))
    ctx.fail("base {} must be positive", base);
  const bool interleaved = ctx.attr_bool("interleaved");
  const int64_t half = rd / 2;
  const std::vector<std::string> idx = {"i0", "i1", "i2", "i3"};
  const std::string b = "i0", t = "i" + std::to_string(pos_dim), f = "i3";
  // The angle table A[pos-key, k] holds cos and sin of pos * inv_freq[k].
  std::string pos = "f64(" + t + ")";
  std::vector<std::string> key = {t};
  std::vector<int64_t> table = {n};
  ctx.input(port);
  if (ctx.has("PositionIds")) {
    ctx.require_integer("PositionIds");
    const TensorSpec& pid = ctx.in("PositionIds");
    if (pid.shape != std::vector<int64_t>{n} && pid.shape != std::vector<int64_t>{bsz, n})
      ctx.fail("input 'PositionIds' {} must be [N] = [{}] or [B, N] = [{}, {}]",
               shape_text(pid.shape), n, bsz, n);
    ctx.input("PositionIds");
    if (pid.shape.size() == 2) {
      key = {b, t};
      table = {bsz, n};
      pos = "f64(PositionIds[" + b + ", " + t + "])";
    } else {
      pos = "f64(PositionIds[" + t + "])";
    }
  }
  const DType acc = compute_type(x.dtype);
  std::vector<std::string> tkey = key;
  tkey.push_back("k");
  std::vector<int64_t> tshape = table;
  tshape.push_back(half);
  ctx.local("cos_t", acc, tshape);
  ctx.local("sin_t", acc, tshape);
  const std::string angle = pos + " * exp(f64(k) * " +
                            float_literal(-2.0 * std::log(base) / static_cast<double>(rd)) + ")";
  ctx.stmt(access("cos_t", tkey) + " = cos(" + angle + ")");
  ctx.stmt(access("sin_t", tkey) + " = sin(" + angle + ")");
  const std::string pair = interleaved ? f + " // 2" : f + " % " + std::to_string(half);
  std::vector<std::string> rkey = key;
  rkey.push_back(pair);
  std::vector<std::string> partner = idx;
  partner[3] = interleaved ? "(" + f + " // 2) * 2 + 1 - " + f + " % 2"
                           : "(" + f + " + " + std::to_string(half) + ") % " + std::to_string(rd);
  // The partner's sign: -1 for the first of a pair, +1 for the second (negated backward).
  const std::string first = interleaved ? f + " % 2 == 0" : f + " < " + std::to_string(half);
  const std::string X = access(port, idx);
  const std::string sign_first = inverse ? " + " : " - ", sign_second = inverse ? " - " : " + ";
  // Features past rotary_dim pass through; the select does not stop the static bounds
  // check, so their table reads are guarded.
  const std::string guard = rd < d ? " ?? 0)" : ")";
  const std::string c = "(" + access("cos_t", rkey) + guard,
                    sn = "(" + access("sin_t", rkey) + guard;
  const std::string P = access(port, partner) + " ?? 0";
  std::string rotated = "(" + first + " ? " + X + " * " + c + sign_first + "(" + P + ") * " + sn +
                        " : " + X + " * " + c + sign_second + "(" + P + ") * " + sn + ")";
  const std::string out = inverse ? "dX" : "Y";
  ctx.output(out, x.dtype, x.shape);
  if (rd < d)
    rotated = f + " < " + std::to_string(rd) + " ? " + rotated + " : " + X;
  ctx.stmt(access(out, idx) + " = " + rotated);
}

// --- definitions -------------------------------------------------------------------------

std::vector<AttrSpec> sdpa_attrs() {
  return {{"causal", AttrKind::Bool, AttrValue{int64_t{0}},
           "query i attends to keys j <= i only (top-left aligned, as PyTorch's is_causal)"},
          {"scale", AttrKind::Float, AttrValue{0.0}, "score scale; 0: 1 / sqrt(D)"}};
}

} // namespace

void add_attention_ops(std::vector<OpDef>& ops) {
  OpDef sdpa;
  sdpa.name = "scaled_dot_product_attention";
  sdpa.category = "attention";
  sdpa.summary = "softmax(Q K^T scale + mask) V; Q [B, H, N, D], K and V [B, Hkv, M, D] "
                 "(grouped-query when Hkv < H)";
  sdpa.inputs = {{"Q"}, {"K"}, {"V"}, {"Mask", PortKind::Mask, true}};
  sdpa.outputs = {{"Y"}};
  sdpa.attrs = sdpa_attrs();
  sdpa.emit = emit_sdpa;
  sdpa.gradient = "scaled_dot_product_attention_grad";
  OpDef sg;
  sg.name = sdpa.gradient;
  sg.category = "attention-backward";
  sg.summary = "gradient of scaled_dot_product_attention (dQ, dK, dV; none for the mask)";
  sg.inputs = {{"Q"}, {"K"}, {"V"}, {"Mask", PortKind::Mask, true}, {"dY"}};
  sg.outputs = {{"dQ"}, {"dK"}, {"dV"}};
  sg.attrs = sdpa_attrs();
  sg.emit = emit_sdpa_grad;
  ops.push_back(std::move(sdpa));
  ops.push_back(std::move(sg));

  OpDef mha;
  mha.name = "multi_head_attention";
  mha.category = "attention";
  mha.summary = "attention on [B, N, H*D] tensors split into num_heads heads (no projections)";
  mha.inputs = {{"Q"}, {"K"}, {"V"}, {"Mask", PortKind::Mask, true}};
  mha.outputs = {{"Y"}};
  mha.attrs = sdpa_attrs();
  mha.attrs.push_back({"num_heads", AttrKind::Int, std::nullopt, "query heads"});
  mha.attrs.push_back(
      {"num_kv_heads", AttrKind::Int, AttrValue{int64_t{0}}, "key/value heads; 0: num_heads"});
  mha.emit = emit_mha;
  mha.gradient = "multi_head_attention_grad";
  OpDef mg;
  mg.name = mha.gradient;
  mg.category = "attention-backward";
  mg.summary = "gradient of multi_head_attention (dQ, dK, dV; none for the mask)";
  mg.inputs = {{"Q"}, {"K"}, {"V"}, {"Mask", PortKind::Mask, true}, {"dY"}};
  mg.outputs = {{"dQ"}, {"dK"}, {"dV"}};
  mg.attrs = mha.attrs;
  mg.emit = emit_mha_grad;
  ops.push_back(std::move(mha));
  ops.push_back(std::move(mg));

  const std::vector<AttrSpec> rope_attrs = {
      {"interleaved", AttrKind::Bool, AttrValue{int64_t{0}},
       "pairs (2k, 2k+1) instead of (k, k + R/2)"},
      {"base", AttrKind::Float, AttrValue{10000.0}, "angle base: theta_k = base^(-2k / R)"},
      {"rotary_dim", AttrKind::Int, AttrValue{int64_t{0}},
       "features rotated (R, even); 0: the whole head"},
      {"layout", AttrKind::String, AttrValue{std::string("bhnd")}, "bhnd or bnhd"}};
  OpDef rope;
  rope.name = "rotary_embedding";
  rope.category = "attention";
  rope.summary = "rotary position embedding (RoPE) on [B, H, N, D] or [B, N, H, D]";
  rope.inputs = {{"X"}, {"PositionIds", PortKind::Index, true}};
  rope.outputs = {{"Y"}};
  rope.attrs = rope_attrs;
  rope.emit = [](OpContext& ctx) { emit_rope(ctx, false); };
  rope.gradient = "rotary_embedding_grad";
  OpDef rg;
  rg.name = rope.gradient;
  rg.category = "attention-backward";
  rg.summary = "gradient of rotary_embedding (the inverse rotation of dY)";
  rg.inputs = {{"dY"}, {"PositionIds", PortKind::Index, true}};
  rg.outputs = {{"dX"}};
  rg.attrs = rope_attrs;
  rg.emit = [](OpContext& ctx) { emit_rope(ctx, true); };
  ops.push_back(std::move(rope));
  ops.push_back(std::move(rg));
}

} // namespace unitile::ops
