// flash_attention: matching attention chains and building their fused, online-softmax
// loop nest (see FlashAttention.h).
//
// The fused launch, per task = (leading indices, block of `rows` query rows):
//   m_run = -inf, l_run = 0, O_acc = 0
//   for each block of `keys` keys (causal: only up to the block's last row's diagonal)
//     S_tile = the scores of the block      (register tiles: mr rows x nr keys, sum over r)
//     m_new = max(m_run, masked row max);  rescale = m_run == m_new ? 1 : exp(m_run - m_new)
//     S_tile = masked exp(S_tile - m_new);  l_run = l_run * rescale + row sum of S_tile
//     O_acc = O_acc * rescale + S_tile x values   (register tiles: mr rows x nd columns)
//     m_run = m_new
//   O = O_acc / l_run   (masked: 0 for a row whose keys are all masked, as the reference)
// Operands whose reads move with the key and not with the query (K) are staged per key
// block (the `stage` primitive), which packs them as the register tile reads them.
// On blocks of SIMT threads (FlashThreads, flash_attention_simt below) the same arithmetic
// runs as phases of a thread block between barriers: cooperative copies of the Q, K and V
// tiles into shared memory, per-thread score tiles into a shared score tile, one thread
// per row for the online softmax, per-thread output tiles in registers.
// Partial blocks read clamped indices (valid elements, results never stored) and mask the
// keys past the end, so every block runs the same code.
#include "schedule/FlashAttention.h"

#include "schedule/IndexArith.h"
#include "schedule/LoopRewrite.h"
#include "schedule/Primitives.h"
#include "schedule/ShapeEval.h"
#include "schedule/Specialize.h"
#include "schedule/ThreadGemm.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>

namespace unitile {

namespace {

// Canonical index names (not valid identifiers, so they never meet a user's name).
const std::string kI = "%i", kJ = "%j", kD = "%d";
std::string batch_var(size_t n) { return fmt::format("%b{}", n); }
std::string reduction_var(size_t n) { return fmt::format("%r{}", n); }

// A matched chain with its expressions over the canonical names.
struct Chain {
  AttentionSite site;
  Expr score;  // summed over %r0.. into S[%b.., %i, %j]
  Expr mask;   // over %b.., %i, %j; null when unmasked
  bool mask_is_causal_bound = false; // the mask is exactly `j <= i + offset` (or <, >=, >)
  Expr weight; // over %b.., %j, %d (and maybe %i)
  std::vector<std::string> reduction_names; // the scores' own reduction variables
  std::vector<int64_t> reduction_extents;
  DType max_type = DType::F32, sum_type = DType::F32, out_type = DType::F32;
};

Expr rename(const Expr& e, const std::map<std::string, std::string>& names) {
  return rewrite(e, [&](const Expr& x) -> Expr {
    if (x->kind != ExprKind::Var) return x;
    auto it = names.find(x->name);
    return it == names.end() ? x : var(it->second, x->type, x->loc);
  });
}

Expr instantiate(const Expr& e, const std::map<std::string, Expr>& at) {
  return rewrite(e, [&](const Expr& x) -> Expr {
    if (x->kind != ExprKind::Var) return x;
    auto it = at.find(x->name);
    return it == at.end() ? x : it->second;
  });
}

bool reads_any(const Expr& e, const std::set<std::string>& tensors) {
  bool found = false;
  visit(e, [&](const Expr& x) { found |= x->kind == ExprKind::Access && tensors.count(x->name); });
  return found;
}

bool uses_any(const Expr& e, const std::set<std::string>& vars) {
  bool found = false;
  visit(e, [&](const Expr& x) { found |= x->kind == ExprKind::Var && vars.count(x->name); });
  return found;
}

bool is_access(const Expr& e, const std::string& tensor, const std::vector<std::string>& vars) {
  if (e->kind != ExprKind::Access || e->name != tensor || e->guard || e->operands.size() != vars.size()) return false;
  for (size_t n = 0; n < vars.size(); ++n)
    if (e->operands[n]->kind != ExprKind::Var || e->operands[n]->name != vars[n]) return false;
  return true;
}

bool is_neg_inf(const Expr& e) {
  return e->kind == ExprKind::FloatImm && std::isinf(e->float_value) && e->float_value < 0;
}

bool is_zero(const Expr& e) {
  return (e->kind == ExprKind::FloatImm && e->float_value == 0) || (e->kind == ExprKind::IntImm && e->int_value == 0);
}

bool is_binary(const Expr& e, BinaryOp op) { return e->kind == ExprKind::Binary && e->binary_op == op; }

// The other factor of a product one of whose factors satisfies `is_factor`.
template <typename F> Expr other_factor(const Expr& product, F&& is_factor) {
  if (!is_binary(product, BinaryOp::Mul)) return nullptr;
  if (is_factor(product->operands[0])) return product->operands[1];
  if (is_factor(product->operands[1])) return product->operands[0];
  return nullptr;
}

// `j <= i + offset` implied by `mask` (one of its conjuncts), over the canonical names.
std::optional<int64_t> causal_offset(const Expr& mask) {
  if (!mask || mask->kind != ExprKind::Binary) return std::nullopt;
  if (mask->binary_op == BinaryOp::And) {
    auto a = causal_offset(mask->operands[0]), b = causal_offset(mask->operands[1]);
    if (a && b) return std::min(*a, *b);
    return a ? a : b;
  }
  Expr lo, hi;
  bool strict = false;
  switch (mask->binary_op) {
  case BinaryOp::Le: lo = mask->operands[0], hi = mask->operands[1]; break;
  case BinaryOp::Lt: lo = mask->operands[0], hi = mask->operands[1], strict = true; break;
  case BinaryOp::Ge: lo = mask->operands[1], hi = mask->operands[0]; break;
  case BinaryOp::Gt: lo = mask->operands[1], hi = mask->operands[0], strict = true; break;
  default: return std::nullopt;
  }
  if (!is_integer(lo->type) || !is_integer(hi->type)) return std::nullopt;
  // lo <= hi (or <) with hi - lo = i - j + c: j <= i + c (or c - 1).
  auto lin = linearize(binary(BinaryOp::Sub, hi, lo));
  if (!lin || lin->coef.size() != 2 || lin->coefficient(kI) != 1 || lin->coefficient(kJ) != -1) return std::nullopt;
  return lin->constant - (strict ? 1 : 0);
}

std::optional<Chain> match_chain(const Kernel& k, size_t n, const ShapeBindings& b, std::string* why) {
  auto no = [&](std::string w) -> std::optional<Chain> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  if (n + 3 >= k.body.size()) return no("it is not followed by three statements (row max, row sum, output)");
  const Comprehension &cs = k.body[n], &cm = k.body[n + 1], &cl = k.body[n + 2], &co = k.body[n + 3];
  for (const Comprehension* c : {&cs, &cm, &cl, &co})
    if (c->is_indirect_store()) return no("a statement of the chain is a scatter");
  if (cs.reduce != ReduceKind::Add || cm.reduce != ReduceKind::Max || cl.reduce != ReduceKind::Add ||
      co.reduce != ReduceKind::Add)
    return no("the statements are not `S +=`, `m max=`, `l +=`, `O +=` in this order");
  const std::string &S = cs.output, &m = cm.output, &l = cl.output, &O = co.output;
  if (std::set<std::string>{S, m, l, O}.size() != 4) return no("the four statements must write four tensors");
  const TensorDecl *ts = k.find_tensor(S), *tm = k.find_tensor(m), *tl = k.find_tensor(l), *to = k.find_tensor(O);
  for (const TensorDecl* t : {ts, tm, tl}) {
    if (t->role != TensorRole::Local) return no(fmt::format("'{}' is not a local", t->name));
    if (t->dtype != DType::F32 && t->dtype != DType::F64)
      return no(fmt::format("local '{}' is {}, not f32 or f64", t->name, dtype_name(t->dtype)));
  }
  if (!is_float(to->dtype)) return no(fmt::format("output '{}' is not a float tensor", O));
  const size_t rank = cs.indices.size();
  if (rank < 2) return no(fmt::format("'{}' has rank {}, not batch.., rows, keys", S, rank));
  const size_t nb = rank - 2;
  if (cm.indices.size() != nb + 1 || cl.indices.size() != nb + 1 || co.indices.size() != nb + 2)
    return no("the row max and sum must have one index fewer than the scores, the output as many");
  if (cs.reduction_vars.empty() || cm.reduction_vars.size() != 1 || cl.reduction_vars.size() != 1 ||
      co.reduction_vars.size() != 1)
    return no("the max, sum and output statements must reduce over the keys alone");
  const std::set<std::string> chain_locals{S, m, l};
  for (size_t t = 0; t < k.body.size(); ++t) {
    if (t >= n && t <= n + 3) continue;
    const Comprehension& c = k.body[t];
    bool touches = chain_locals.count(c.output) || reads_any(c.value, chain_locals);
    for (const Expr& i : c.store_indices) touches |= reads_any(i, chain_locals);
    if (touches) return no(fmt::format("statement {} also uses '{}', '{}' or '{}'", t, S, m, l));
  }

  std::map<std::string, std::string> rs, rm, rl, ro;
  std::vector<std::string> bvars;
  for (size_t q = 0; q < nb; ++q) {
    bvars.push_back(batch_var(q));
    rs[cs.indices[q]] = rm[cm.indices[q]] = rl[cl.indices[q]] = ro[co.indices[q]] = batch_var(q);
  }
  rs[cs.indices[nb]] = rm[cm.indices[nb]] = rl[cl.indices[nb]] = ro[co.indices[nb]] = kI;
  rs[cs.indices[nb + 1]] = kJ;
  rm[cm.reduction_vars[0]] = rl[cl.reduction_vars[0]] = ro[co.reduction_vars[0]] = kJ;
  ro[co.indices[nb + 1]] = kD;
  for (size_t r = 0; r < cs.reduction_vars.size(); ++r) rs[cs.reduction_vars[r]] = reduction_var(r);
  const std::set<std::string> names = bound_names(k);
  auto canonical = [&](const Comprehension& c, const std::map<std::string, std::string>& r) {
    return rename(specialize(c.value, names, b), r);
  };
  const Expr vs = canonical(cs, rs), vm = canonical(cm, rm), vl = canonical(cl, rl), vo = canonical(co, ro);

  std::vector<std::string> s_index = bvars, m_index = bvars;
  s_index.push_back(kI);
  s_index.push_back(kJ);
  m_index.push_back(kI);
  auto is_score = [&](const Expr& e) { return is_access(e, S, s_index); };
  auto is_exp = [&](const Expr& e) {
    return e->kind == ExprKind::Call && e->math_fn == MathFn::Exp && is_binary(e->operands[0], BinaryOp::Sub) &&
           is_score(e->operands[0]->operands[0]) && is_access(e->operands[0]->operands[1], m, m_index);
  };
  auto is_weight = [&](const Expr& e) {
    return is_binary(e, BinaryOp::Div) && is_exp(e->operands[0]) && is_access(e->operands[1], l, m_index);
  };
  auto is_masked_weight = [&](const Expr& e) {
    return e->kind == ExprKind::Select && is_weight(e->operands[1]) && is_zero(e->operands[2]);
  };

  if (reads_any(vs, {S, m, l, O})) return no(fmt::format("the scores read '{}', '{}', '{}' or '{}'", S, m, l, O));
  Expr mask_m, mask_l, mask_o, weight;
  if (vm->kind == ExprKind::Select && is_score(vm->operands[1]) && is_neg_inf(vm->operands[2]))
    mask_m = vm->operands[0];
  else if (!is_score(vm))
    return no(fmt::format("the row max is not `{0}[..] max= {1}[..]` or `max= c ? {1}[..] : -inf`", m, S));
  if (vl->kind == ExprKind::Select && is_exp(vl->operands[1]) && is_zero(vl->operands[2]))
    mask_l = vl->operands[0];
  else if (!is_exp(vl))
    return no(fmt::format("the row sum is not `{0}[..] += exp({1}[..] - {2}[..])` or its masked form (`c ? .. : 0`)",
                          l, S, m));
  Expr body = vo->kind == ExprKind::Cast ? vo->operands[0] : vo;
  if (Expr g = other_factor(body, is_weight)) {
    weight = g;
  } else if (Expr g2 = other_factor(body, is_masked_weight)) {
    weight = g2;
    mask_o = is_masked_weight(body->operands[0]) ? body->operands[0]->operands[0] : body->operands[1]->operands[0];
  } else if (body->kind == ExprKind::Select && is_zero(body->operands[2])) {
    if (Expr g3 = other_factor(body->operands[1], is_weight)) {
      weight = g3;
      mask_o = body->operands[0];
    }
  } else if (is_binary(body, BinaryOp::Div) && is_access(body->operands[1], l, m_index)) {
    weight = other_factor(body->operands[0], is_exp);
  }
  if (!weight)
    return no(fmt::format("the output is not `{0}[..] += exp({1} - {2}) / {3} * g` (or `(c ? exp({1} - {2}) / {3} : 0) * g`)",
                          O, S, m, l));
  if (reads_any(weight, {S, m, l, O}))
    return no(fmt::format("the output's weight reads '{}', '{}', '{}' or '{}'", S, m, l, O));
  if (!mask_m != !mask_l || !mask_m != !mask_o)
    return no("the row max, row sum and output are not masked alike");
  if (mask_m && (!equal(mask_m, mask_l) || !equal(mask_m, mask_o)))
    return no("the row max, row sum and output use different masks");
  if (mask_m && reads_any(mask_m, {S, m, l, O})) return no("the mask reads the chain's own tensors");

  Chain ch;
  AttentionSite& site = ch.site;
  site.first = n;
  site.scores = S;
  site.row_max = m;
  site.row_sum = l;
  site.output = O;
  auto extent = [&](const Comprehension& c, const std::string& v) {
    return eval_int(c.ranges.at(v), b, fmt::format("the range of '{}' in kernel '{}'", v, k.name));
  };
  for (size_t q = 0; q < nb; ++q) site.batch.push_back(extent(cs, cs.indices[q]));
  site.queries = extent(cs, cs.indices[nb]);
  site.keys = extent(cs, cs.indices[nb + 1]);
  site.head_dim = extent(co, co.indices[nb + 1]);
  site.masked = mask_m != nullptr;
  site.causal_offset = causal_offset(mask_m);
  site.score_type = ts->dtype;
  site.accumulator = compute_type(to->dtype);
  ch.score = vs;
  ch.mask = mask_m;
  ch.mask_is_causal_bound = site.causal_offset && mask_m->kind == ExprKind::Binary && mask_m->binary_op != BinaryOp::And;
  ch.weight = weight;
  ch.reduction_names = cs.reduction_vars;
  for (const std::string& r : cs.reduction_vars) ch.reduction_extents.push_back(extent(cs, r));
  ch.max_type = tm->dtype;
  ch.sum_type = tl->dtype;
  ch.out_type = to->dtype;
  return ch;
}

// The chain writing `output`, or a UserError saying why there is none.
Chain find_chain(const Kernel& k, const ShapeBindings& b, const std::string& output) {
  std::string why = fmt::format("no statement writes '{}'", output);
  for (size_t n = 0; n < k.body.size(); ++n) {
    if (k.body[n].output != output) continue;
    if (n < 3) {
      why = fmt::format("'{}' is written by statement {}; an attention chain has three statements before it", output, n);
      continue;
    }
    std::string w;
    if (auto ch = match_chain(k, n - 3, b, &w)) return *ch;
    why = w;
  }
  throw UserError(fmt::format("error: schedule: flash_attention {}: not an attention chain: {}", output, why));
}

std::pair<int64_t, int64_t> data_caches(const hcd::Hcd& h) {
  std::vector<int64_t> sizes;
  for (const hcd::MemoryLevel& l : h.memory)
    if (l.scope != "register" && l.scope != "global" && l.size_bytes > 0) sizes.push_back(l.size_bytes);
  const int64_t l1 = sizes.empty() ? 32 * 1024 : sizes[0];
  return {l1, sizes.size() > 1 ? sizes[1] : 8 * l1};
}

std::string kib(int64_t bytes) {
  return bytes % 1024 == 0 ? fmt::format("{} KiB", bytes / 1024) : fmt::format("{:.1f} KiB", bytes / 1024.0);
}

// The register tiles inside the blocks: scores mr x nr, output mr x nd.
struct RegisterTiles {
  int64_t mr = 1, nr = 1, nd = 1;
  int64_t registers = 0; // vector registers the larger tile needs (accumulators + operands)
};

// `fb.rows` 0: mr is the most rows the register file allows.
RegisterTiles register_tiles(const AttentionSite& s, const FlashBlocks& fb, const hcd::Hcd& h) {
  RegisterTiles t;
  const int64_t ls = std::max(1, h.lanes_for(s.score_type)), la = std::max(1, h.lanes_for(s.accumulator));
  for (int64_t c : {2 * ls, ls, int64_t{8}, int64_t{4}, int64_t{2}, int64_t{1}})
    if (fb.keys % c == 0) {
      t.nr = c;
      break;
    }
  t.nd = s.head_dim >= 2 * la ? 2 * la : s.head_dim >= la ? la : s.head_dim;
  const int64_t vs = (t.nr + ls - 1) / ls, va = (t.nd + la - 1) / la, v = std::max(vs, va);
  const int64_t mr_max = std::clamp<int64_t>((h.vector_registers - v - 1) / v, 1, 8);
  for (int64_t c = mr_max; c >= 1; --c)
    if (fb.rows % c == 0) { // also when rows is 0
      t.mr = c;
      break;
    }
  t.registers = t.mr * v + v + 1;
  return t;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

Expr cast_to(DType t, const Expr& e) { return e->type == t ? e : cast(t, e); }
Expr add(Expr a, Expr b) { return binary(BinaryOp::Add, std::move(a), std::move(b)); }
Expr mul(Expr a, Expr b) { return binary(BinaryOp::Mul, std::move(a), std::move(b)); }
Expr imm(int64_t v) { return int_imm(v); }
Expr floor_div(Expr a, int64_t b) { return binary(BinaryOp::FloorDiv, std::move(a), imm(b)); }
Expr mod(Expr a, int64_t b) { return binary(BinaryOp::Mod, std::move(a), imm(b)); }

// Subexpressions that call a math function but move with none of `moving` (rsqrt(D) in a
// scaled score) become let variables, so the loops that use them stay vector code.
Expr hoist_invariants(const Expr& e, const std::set<std::string>& moving, NameSet& names,
                      std::vector<std::pair<std::string, Expr>>& lets) {
  bool calls = false, reads = false;
  visit(e, [&](const Expr& x) {
    calls |= x->kind == ExprKind::Call;
    reads |= x->kind == ExprKind::Access;
  });
  if (!calls) return e;
  if (!reads && !uses_any(e, moving)) {
    for (const auto& [name, value] : lets)
      if (equal(value, e)) return var(name, e->type);
    lets.emplace_back(names.fresh("scale"), e);
    return var(lets.back().first, e->type);
  }
  std::vector<Expr> ops;
  for (const Expr& o : e->operands) ops.push_back(hoist_invariants(o, moving, names, lets));
  return with_operands(e, std::move(ops), e->guard);
}

// f = x * a / b ... with float factors a, b that do not move with the reduction axes: the
// tile sums x and applies the factors once per score (a scaled dot product then costs one
// fused multiply-add per step, not two operations). `outside` lists the factors from the
// outermost in.
struct Factored {
  Expr summed;
  std::vector<std::pair<BinaryOp, Expr>> outside;
};

Factored factor_out(const Expr& f, const std::set<std::string>& reduction) {
  Factored r{f, {}};
  for (;;) {
    const Expr e = r.summed;
    if (!is_float(e->type)) break;
    if (is_binary(e, BinaryOp::Mul) && !uses_any(e->operands[1], reduction)) {
      r.outside.emplace_back(BinaryOp::Mul, e->operands[1]);
      r.summed = e->operands[0];
    } else if (is_binary(e, BinaryOp::Mul) && !uses_any(e->operands[0], reduction)) {
      r.outside.emplace_back(BinaryOp::Mul, e->operands[0]);
      r.summed = e->operands[1];
    } else if (is_binary(e, BinaryOp::Div) && !uses_any(e->operands[1], reduction)) {
      r.outside.emplace_back(BinaryOp::Div, e->operands[1]);
      r.summed = e->operands[0];
    } else {
      break;
    }
  }
  return r;
}

// ----- the launch on blocks of SIMT threads (FlashThreads) -----

// A read of the scores or the weights that the block copies into shared memory: it moves
// with the rows (Q: copied once) or with the keys (K, V: per key block) and with one inner
// variable (a reduction variable of the scores, or %d of the weights), besides the leading
// indices. Staged as [rows or keys, width + 1] (the pad puts a column's elements, one row
// apart, in different banks).
struct StagedRead {
  Expr read;                 // over the canonical names
  bool keys = false;         // moves with %j (else with %i)
  std::string inner;         // the canonical inner variable
  int64_t extent = 0;        // its extent: the valid columns
  bool rows_fastest = false; // the tensor's last index moves with the row or key: the copy walks it fastest
  std::string name;          // the shared tile
};

struct SimtPlan {
  FlashThreads t;
  int64_t tm = 1, tn = 1, td = 1; // rows, keys and output columns per thread
  std::vector<StagedRead> staged;
  int64_t shared = 0;    // bytes
  int64_t registers = 0; // 32-bit registers of a thread's tiles
  MemScope scope = MemScope::Shared;
  int64_t budget = 0; // shared bytes the sizing aims for
};

// The staging memory: the first level after the registers and the bytes one block may use.
std::pair<MemScope, int64_t> staging_level(const hcd::Hcd& h) {
  for (const hcd::MemoryLevel& l : h.memory) {
    if (l.scope == "register") continue;
    MemScope s = l.scope == "shared" ? MemScope::Shared : l.scope == "local" ? MemScope::Local : MemScope::Global;
    int64_t bytes = l.size_bytes;
    if (h.shared_memory_per_block > 0) bytes = std::min(bytes, h.shared_memory_per_block);
    return {s, bytes};
  }
  return {MemScope::Shared, h.shared_memory_per_block};
}

int64_t words(DType t) { return std::max<int64_t>(1, dtype_bytes(t) / 4); }

// Bytes of one element of a shared tile: the printers hold 16-bit floats in their compute
// type (f32) there, except in a matrix unit's operand tiles.
int64_t shared_bytes(DType t) { return t == DType::F16 || t == DType::BF16 ? 4 : dtype_bytes(t); }

// The reads of the chain that can be staged (see StagedRead), each once.
// The lets of a flash-attention task `tv`: its leading (batch) indices, the query block
// (causal: short and long blocks interleaved, so contiguous chunks of tasks carry equal
// work) and the block's first row (`rows` per block); `at` maps the batch variables to
// their lets.
void task_lets(const AttentionSite& s, const Expr& tv, int64_t nqb, int64_t rows, const std::string& qb,
               const std::string& i0, NameSet& names, std::vector<std::pair<std::string, Expr>>& lets,
               std::map<std::string, Expr>& at) {
  int64_t stride = nqb;
  std::vector<Expr> bexpr(s.batch.size());
  for (size_t q = s.batch.size(); q-- > 0;) {
    Expr e = floor_div(tv, stride);
    bexpr[q] = q == 0 ? e : mod(e, s.batch[q]);
    stride *= s.batch[q];
  }
  for (size_t q = 0; q < s.batch.size(); ++q) {
    std::string name = names.fresh(fmt::format("b{}", q));
    lets.emplace_back(name, simplify(bexpr[q]));
    at[batch_var(q)] = var(name);
  }
  Expr qt = s.batch.empty() ? tv : mod(tv, nqb);
  if (s.causal_offset && nqb > 1) {
    Expr half = floor_div(qt, 2);
    qt = add(half, mul(mod(qt, 2), binary(BinaryOp::Sub, imm(nqb - 1), mul(imm(2), half))));
  }
  lets.emplace_back(qb, simplify(nqb == 1 ? imm(0) : qt));
  lets.emplace_back(i0, mul(var(qb), imm(rows)));
}

std::vector<StagedRead> stageable_reads(const Chain& ch) {
  std::set<std::string> batch;
  for (size_t q = 0; q < ch.site.batch.size(); ++q) batch.insert(batch_var(q));
  std::map<std::string, int64_t> reductions;
  for (size_t n = 0; n < ch.reduction_extents.size(); ++n) reductions[reduction_var(n)] = ch.reduction_extents[n];
  std::vector<StagedRead> out;
  auto consider = [&](const Expr& e, bool weight) {
    if (e->kind != ExprKind::Access || e->guard || e->operands.empty()) return;
    std::set<std::string> vars;
    bool nested = false;
    for (const Expr& i : e->operands)
      visit(i, [&](const Expr& x) {
        if (x->kind == ExprKind::Var) vars.insert(x->name);
        nested |= x->kind == ExprKind::Access;
      });
    if (nested) return;
    StagedRead r;
    r.read = e;
    std::string row;
    for (const std::string& v : vars) {
      if (batch.count(v)) continue;
      if (v == kI || v == kJ) {
        if (!row.empty()) return;
        row = v;
        continue;
      }
      const bool inner = weight ? v == kD : reductions.count(v) > 0;
      if (!inner || !r.inner.empty()) return;
      r.inner = v;
    }
    if (row.empty() || r.inner.empty() || (weight && row != kJ)) return;
    r.keys = row == kJ;
    r.extent = weight ? ch.site.head_dim : reductions.at(r.inner);
    r.rows_fastest = depends_on(e->operands.back(), row) && !depends_on(e->operands.back(), r.inner);
    for (const StagedRead& o : out)
      if (equal(o.read, e)) return;
    out.push_back(r);
  };
  visit(ch.score, [&](const Expr& e) { consider(e, false); });
  visit(ch.weight, [&](const Expr& e) { consider(e, true); });
  return out;
}

// Columns of a staged tile: the output's columns are padded to the threads' columns.
int64_t staged_width(const StagedRead& r, const SimtPlan& p) {
  return r.inner == kD ? p.td * p.t.threads_x : r.extent;
}

void size_plan(const Chain& ch, SimtPlan& p) {
  const AttentionSite& s = ch.site;
  p.tm = p.t.rows / p.t.threads_y;
  p.tn = p.t.keys / p.t.threads_x;
  p.td = ceil_div(s.head_dim, p.t.threads_x);
  p.shared = 0;
  for (const StagedRead& r : p.staged)
    p.shared += (r.keys ? p.t.keys : p.t.rows) * (staged_width(r, p) + 1) * shared_bytes(r.read->type);
  p.shared += p.t.rows * (p.t.keys + 1) * shared_bytes(s.score_type);
  p.shared += p.t.rows * (2 * shared_bytes(ch.max_type) + shared_bytes(ch.sum_type));
  p.registers = p.tm * p.td * words(s.accumulator) + p.tm * p.tn * words(s.score_type) + p.tm + p.tn;
}

std::string simt_fail(const std::string& what, const std::string& why) {
  return fmt::format("error: schedule: {}: {}", what, why);
}

// The plan for `ch` on `h`: the given blocks {rows, keys, threads_y, threads_x}, else the
// analytic ones; nullopt (with why) where it does not fit.
std::optional<SimtPlan> simt_plan(const Chain& ch, const hcd::Hcd& h, const std::vector<int64_t>& given,
                                  std::string* why) {
  auto no = [&](std::string w) -> std::optional<SimtPlan> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  const AttentionSite& s = ch.site;
  SimtPlan p;
  p.staged = stageable_reads(ch);
  auto [scope, bytes] = staging_level(h);
  p.scope = scope;
  // A quarter of the staging memory (several blocks per compute unit), and at most 48 KiB:
  // the launch declares its shared tiles statically, and a block may declare no more
  // without the opt-in that the HCD's larger shared_memory_per_block needs.
  p.budget = std::min<int64_t>(bytes / 4, 48 * 1024);
  const int64_t max_y = h.max_block.size() > 1 ? h.max_block[1] : 1;
  if (!given.empty()) {
    p.t = FlashThreads{given[0], given[1], given[2], given[3]};
    if (p.t.threads_y < 1 || p.t.threads_x < 1 || p.t.rows % p.t.threads_y || p.t.keys % p.t.threads_x)
      return no(fmt::format("{} rows x {} keys do not split over {} x {} threads", p.t.rows, p.t.keys, p.t.threads_y,
                            p.t.threads_x));
    if (p.t.threads_x * p.t.threads_y > h.max_threads_per_block || h.max_block.empty() ||
        p.t.threads_x > h.max_block[0] || p.t.threads_y > max_y)
      return no(fmt::format("{} x {} threads exceed a block of the HCD ({} threads, {} x {})", p.t.threads_y,
                            p.t.threads_x, h.max_threads_per_block, h.max_block.empty() ? 0 : h.max_block[0], max_y));
    size_plan(ch, p);
    return p;
  }
  if (!simt_blocks(h))
    return no(fmt::format("HCD '{}' does not run blocks of SIMT threads with shared memory", h.name));
  const int64_t warp = h.warp_size;
  const int64_t threads = std::max<int64_t>(warp, h.max_threads_per_block / 4 / warp * warp);
  int64_t tx = 1;
  while (tx * tx < threads) tx *= 2;
  tx = std::min(tx, h.max_block[0]);
  int64_t ty = std::max<int64_t>(1, std::min(threads / tx, max_y));
  int64_t tm = 4, tn = 2;
  const int64_t Nq = s.queries, Nk = s.keys, batch = product(s.batch);
  while (tm > 1 && tm / 2 * ty >= Nq) tm /= 2;
  while (ty > 1 && ty / 2 * tm >= Nq && tx * ty / 2 >= warp) ty /= 2;
  while (tn > 1 && tn / 2 * tx >= Nk) tn /= 2;
  // Fewer rows per block while there are fewer blocks than compute units: fewer rows per
  // thread first, then fewer threads, down to 4 warps (as thread_gemm).
  while (tm > 1 && batch * ceil_div(Nq, tm * ty) < h.units) tm /= 2;
  while (ty > 1 && tx * ty / 2 >= 4 * warp && batch * ceil_div(Nq, tm * ty) < h.units) ty /= 2;
  for (;;) {
    p.t = FlashThreads{tm * ty, tn * tx, ty, tx};
    size_plan(ch, p);
    if (p.shared <= p.budget && p.registers * 2 <= h.vector_registers) return p;
    if (tn > 1) tn /= 2;
    else if (tm > 1) tm /= 2;
    else
      return no(fmt::format("even {} rows x {} keys on {} x {} threads take {} bytes of shared memory (budget {}) "
                            "and {} registers per thread (half of {})",
                            p.t.rows, p.t.keys, ty, tx, p.shared, p.budget, p.registers, h.vector_registers));
  }
}

LoopProgram flash_attention_simt(const Kernel& k, const LoopProgram& p, const Chain& ch, SimtPlan plan,
                                 const std::vector<size_t>& replaced) {
  const AttentionSite& s = ch.site;
  const int64_t Bq = plan.t.rows, Bk = plan.t.keys, TY = plan.t.threads_y, TX = plan.t.threads_x;
  const int64_t T = TY * TX, tm = plan.tm, tn = plan.tn, td = plan.td;
  const int64_t Nq = s.queries, Nk = s.keys, D = s.head_dim;
  const int64_t nqb = ceil_div(Nq, Bq), nkb = ceil_div(Nk, Bk), tasks = product(s.batch) * nqb;
  const DType Ts = s.score_type, Tm = ch.max_type, Tl = ch.sum_type, Ta = s.accumulator;
  const double inf = std::numeric_limits<double>::infinity();
  const MemScope sh = plan.scope;

  NameSet names(p);
  const std::string task = names.fresh("task"), qb = names.fresh("q_block"), i0 = names.fresh("i0"),
                    kb = names.fresh("k_block");
  const std::string p_tile = names.fresh(s.scores + "_" + mem_scope_name(sh)), m_run = names.fresh(s.row_max + "_run"),
                    l_run = names.fresh(s.row_sum + "_run"), rescale = names.fresh(s.row_max + "_rescale"),
                    o_acc = names.fresh(s.output + "_acc"), s_acc = names.fresh(s.scores + "_acc"),
                    mx = names.fresh(s.row_max + "_new"), sm = names.fresh(s.row_sum + "_block");
  for (StagedRead& r : plan.staged) r.name = names.fresh(r.read->name + "_" + mem_scope_name(sh));
  std::vector<std::string> red;
  for (const std::string& v : ch.reduction_names) red.push_back(names.fresh(v));

  // Lets of the task, as the one-thread launch has them.
  std::vector<std::pair<std::string, Expr>> lets;
  std::map<std::string, Expr> at;
  const Expr tv = var(task);
  task_lets(s, tv, nqb, Bq, qb, i0, names, lets, at);
  std::set<std::string> moving{kI, kJ, kD};
  for (size_t n = 0; n < red.size(); ++n) moving.insert(reduction_var(n));
  std::vector<std::pair<std::string, Expr>> hoisted;
  Expr score = hoist_invariants(ch.score, moving, names, hoisted);
  Expr weight = hoist_invariants(ch.weight, moving, names, hoisted);
  for (auto& [name, value] : hoisted) lets.emplace_back(name, instantiate(value, at));

  // Staged reads read their tile: [%q or %c, inner] (row or key within the block).
  const std::string kQ = "%q", kC = "%c";
  auto use_tiles = [&](const Expr& e) {
    return rewrite(e, [&](const Expr& x) -> Expr {
      if (x->kind != ExprKind::Access) return x;
      for (const StagedRead& r : plan.staged)
        if (equal(r.read, x)) return access(r.name, {var(r.keys ? kC : kQ), var(r.inner)}, x->type);
      return x;
    });
  };
  score = use_tiles(score);
  weight = use_tiles(weight);

  auto row_of = [&](const Expr& row) {
    Expr i = add(var(i0), row);
    return Nq % Bq ? call(MathFn::Min, {i, imm(Nq - 1)}) : i;
  };
  auto key_of = [&](const Expr& col) {
    Expr j = add(mul(var(kb), imm(Bk)), col);
    return Nk % Bk ? call(MathFn::Min, {j, imm(Nk - 1)}) : j;
  };
  auto rd = [](const std::string& buffer, std::vector<Expr> idx, DType type) {
    return access(buffer, std::move(idx), type);
  };
  // A nest over the block's threads (thread.y outside thread.x), with fresh names.
  auto threads = [&](const std::function<Stmt(const Expr& y, const Expr& x)>& body) {
    const std::string y = names.fresh("ty"), x = names.fresh("tx");
    return for_loop(y, imm(0), imm(TY), ForKind::ThreadY,
                    for_loop(x, imm(0), imm(TX), ForKind::ThreadX, body(var(y), var(x))));
  };
  auto unrolled = [&](const std::string& v, int64_t n, Stmt body) {
    return for_loop(v, imm(0), imm(n), n > 1 ? ForKind::Unrolled : ForKind::Serial, std::move(body));
  };

  // Every thread copies elements q, q + T, ... of a staged tile (consecutive threads on
  // consecutive elements of the tensor); zeros outside it.
  auto copy = [&](const StagedRead& r, const Expr& y, const Expr& x) {
    const int64_t rows = r.keys ? Bk : Bq, width = staged_width(r, plan), total = rows * width;
    const int64_t steps = ceil_div(total, T);
    const std::string e = names.fresh("e"), q = names.fresh("q"), rr = names.fresh("row"), cc = names.fresh("col");
    const Expr qv = add(mul(add(mul(var(e), imm(TY)), y), imm(TX)), x);
    const Expr rv = r.rows_fastest ? mod(var(q), rows) : floor_div(var(q), width);
    const Expr cv = r.rows_fastest ? floor_div(var(q), rows) : mod(var(q), width);
    std::map<std::string, Expr> m = at;
    const Expr global = r.keys ? add(mul(var(kb), imm(Bk)), var(rr)) : add(var(i0), var(rr));
    m[r.keys ? kJ : kI] = global;
    m[r.inner] = var(cc);
    const Expr value = simplify(instantiate(r.read, m));
    Expr inside;
    auto conj = [&](Expr c) { inside = inside ? binary(BinaryOp::And, inside, c) : c; };
    if ((r.keys ? Nk % Bk : Nq % Bq) != 0) conj(binary(BinaryOp::Lt, simplify(global), imm(r.keys ? Nk : Nq)));
    if (width != r.extent) conj(binary(BinaryOp::Lt, var(cc), imm(r.extent)));
    const std::vector<Expr> dst{var(rr), var(cc)};
    Stmt st = inside ? if_then(inside, store(r.name, dst, value), store(r.name, dst, float_imm(0.0, r.read->type)))
                     : store(r.name, dst, value);
    st = let_stmt(rr, simplify(rv), let_stmt(cc, simplify(cv), st));
    if (total % T) st = if_then(binary(BinaryOp::Lt, var(q), imm(total)), st);
    st = let_stmt(q, simplify(qv), st);
    return for_loop(e, imm(0), imm(steps), steps > 1 && steps <= 8 ? ForKind::Unrolled : ForKind::Serial, st);
  };
  auto copies = [&](bool keys) {
    std::vector<const StagedRead*> mine;
    for (const StagedRead& r : plan.staged)
      if (r.keys == keys) mine.push_back(&r);
    if (mine.empty()) return Stmt();
    return threads([&](const Expr& y, const Expr& x) {
      std::vector<Stmt> b;
      for (const StagedRead* r : mine) b.push_back(copy(*r, y, x));
      return block(b);
    });
  };

  // Thread tiles: thread (y, x) takes rows y + a*TY and keys (or output columns) x + c*TX.
  const Expr one = float_imm(1.0, Tm);

  // 1. The state: every row's max and sum (one thread per row), every thread's output tile.
  // One thread per row: thread (y, x) takes rows y*TX + x, + T, ... of the block.
  auto per_row = [&](const Expr& y, const Expr& x, const std::function<Stmt(const Expr& row)>& body) {
    const std::string n = names.fresh("n"), row = names.fresh("row");
    const int64_t rounds = ceil_div(Bq, T);
    Stmt st = body(var(row));
    if (Bq % T) st = if_then(binary(BinaryOp::Lt, var(row), imm(Bq)), st);
    st = let_stmt(row, simplify(add(add(mul(y, imm(TX)), x), mul(var(n), imm(T)))), st);
    return for_loop(n, imm(0), imm(rounds), ForKind::Serial, st);
  };
  Stmt init = threads([&](const Expr& y, const Expr& x) {
    const std::string a = names.fresh("a"), c = names.fresh("c");
    return block({per_row(y, x,
                          [&](const Expr& row) {
                            return block({store(m_run, {row}, float_imm(-inf, Tm)),
                                          store(l_run, {row}, float_imm(0.0, Tl))});
                          }),
                  unrolled(a, tm, unrolled(c, td, store(o_acc, {y, x, var(a), var(c)}, float_imm(0.0, Ta))))});
  });

  // 2. Scores of the key block: each thread its tm x tn tile, summed over r.. in registers,
  //    into the shared score tile.
  Stmt scores = threads([&](const Expr& y, const Expr& x) {
    const std::string a = names.fresh("a"), c = names.fresh("c");
    const Expr lr = simplify(add(y, mul(var(a), imm(TY)))), lc = simplify(add(x, mul(var(c), imm(TX))));
    std::map<std::string, Expr> m = at;
    m[kI] = row_of(lr);
    m[kJ] = key_of(lc);
    m[kQ] = lr;
    m[kC] = lc;
    for (size_t n = 0; n < red.size(); ++n) m[reduction_var(n)] = var(red[n]);
    std::set<std::string> reductions;
    for (size_t n = 0; n < red.size(); ++n) reductions.insert(reduction_var(n));
    const Factored parts = factor_out(score, reductions);
    const Expr f = simplify(instantiate(parts.summed, m));
    const std::vector<Expr> reg{y, x, var(a), var(c)};
    Stmt update = unrolled(a, tm, unrolled(c, tn, store(s_acc, reg, add(rd(s_acc, reg, Ts), cast_to(Ts, f)))));
    for (size_t n = red.size(); n-- > 0;)
      update = for_loop(red[n], imm(0), imm(ch.reduction_extents[n]), ForKind::Serial, update);
    Expr value = rd(s_acc, reg, Ts);
    for (size_t n = parts.outside.size(); n-- > 0;)
      value = binary(parts.outside[n].first, value, simplify(instantiate(parts.outside[n].second, m)));
    return block({unrolled(a, tm, unrolled(c, tn, store(s_acc, reg, float_imm(0.0, Ts)))), update,
                  unrolled(a, tm, unrolled(c, tn, store(p_tile, {lr, lc}, cast_to(Ts, value))))});
  });

  // 3. The online softmax of the block, one thread per row: the new max, the rescale
  //    factor of what was accumulated, the probabilities (in place of the scores), the sum.
  auto valid = [&](const Expr& row, const Expr& col) -> Expr {
    Expr ok;
    if (Nk % Bk) ok = binary(BinaryOp::Lt, add(mul(var(kb), imm(Bk)), col), imm(Nk));
    if (ch.mask) {
      std::map<std::string, Expr> m = at;
      m[kI] = row_of(row);
      m[kJ] = key_of(col);
      Expr c2 = instantiate(ch.mask, m);
      ok = ok ? binary(BinaryOp::And, ok, c2) : c2;
    }
    return ok ? simplify(ok) : nullptr;
  };
  auto row_softmax = [&](const Expr& row, bool masked) {
    const std::string c = names.fresh("c");
    const Expr ok = masked ? valid(row, var(c)) : nullptr;
    const Expr sv = rd(p_tile, {row, var(c)}, Ts), mr = rd(m_run, {row}, Tm), m0 = rd(mx, {imm(0)}, Tm),
               s0 = rd(sm, {imm(0)}, Tl);
    Expr masked_score = cast_to(Tm, sv);
    if (ok) masked_score = select(ok, masked_score, float_imm(-inf, Tm));
    Expr pv = cast_to(Ts, call(MathFn::Exp, {binary(BinaryOp::Sub, sv, cast_to(Ts, m0))}));
    if (ok) pv = select(ok, pv, float_imm(0.0, Ts));
    const std::string pn = names.fresh("p");
    Stmt body = block(
        {store(mx, {imm(0)}, mr),
         for_loop(c, imm(0), imm(Bk), ForKind::Serial, store(mx, {imm(0)}, call(MathFn::Max, {m0, masked_score}))),
         store(rescale, {row},
               select(binary(BinaryOp::Eq, mr, m0), one, call(MathFn::Exp, {binary(BinaryOp::Sub, mr, m0)}))),
         store(sm, {imm(0)}, float_imm(0.0, Tl)),
         for_loop(c, imm(0), imm(Bk), ForKind::Serial,
                  let_stmt(pn, pv,
                           block({store(p_tile, {row, var(c)}, var(pn, Ts)),
                                  store(sm, {imm(0)}, add(s0, cast_to(Tl, var(pn, Ts))))}))),
         store(l_run, {row}, add(mul(rd(l_run, {row}, Tl), cast_to(Tl, rd(rescale, {row}, Tm))), s0)),
         store(m_run, {row}, m0)});
    return allocate(mx, Tm, {1}, MemScope::Register, allocate(sm, Tl, {1}, MemScope::Register, body));
  };
  Stmt softmax = threads([&](const Expr& y, const Expr& x) {
    return per_row(y, x, [&](const Expr& row) {
      if (!valid(row, imm(0))) return row_softmax(row, false);
      // A key block that every row of the query block sees whole needs no mask.
      Expr whole;
      const Expr block_end = mul(add(var(kb), imm(1)), imm(Bk));
      if (!ch.mask || ch.mask_is_causal_bound) {
        if (Nk % Bk) whole = binary(BinaryOp::Le, block_end, imm(Nk));
        if (ch.mask) {
          Expr below = binary(BinaryOp::Le, binary(BinaryOp::Sub, block_end, imm(1)),
                              add(var(i0), imm(*s.causal_offset)));
          whole = whole ? binary(BinaryOp::And, whole, below) : below;
        }
      }
      return whole ? if_then(simplify(whole), row_softmax(row, false), row_softmax(row, true))
                   : row_softmax(row, true);
    });
  });

  // 4. Each thread its output tile: rescaled, plus the probabilities times the values.
  Stmt values = threads([&](const Expr& y, const Expr& x) {
    const std::string a = names.fresh("a"), c = names.fresh("c"), kk = names.fresh("kk");
    const Expr lr = simplify(add(y, mul(var(a), imm(TY)))), dc = simplify(add(x, mul(var(c), imm(TX))));
    std::map<std::string, Expr> m = at;
    m[kI] = row_of(lr);
    m[kJ] = key_of(var(kk));
    m[kQ] = lr;
    m[kC] = var(kk);
    m[kD] = td * TX != D ? call(MathFn::Min, {dc, imm(D - 1)}) : dc;
    const Expr g = simplify(instantiate(weight, m));
    // The staged tiles are read at the padded column itself (zeros past D).
    const std::vector<Expr> reg{y, x, var(a), var(c)};
    return block({unrolled(a, tm, unrolled(c, td, store(o_acc, reg, cast_to(Ta, mul(rd(o_acc, reg, Ta),
                                                                                   rd(rescale, {lr}, Tm)))))),
                  for_loop(kk, imm(0), imm(Bk), ForKind::Serial,
                           unrolled(a, tm, unrolled(c, td, store(o_acc, reg, add(rd(o_acc, reg, Ta),
                                                                               cast_to(Ta, mul(rd(p_tile, {lr, var(kk)}, Ts), g)))))))});
  });

  // Key blocks: all of them, or (causal) up to the diagonal of the block's last row.
  Expr key_blocks = imm(nkb);
  if (s.causal_offset) {
    Expr last = Nq % Bq ? call(MathFn::Min, {add(var(i0), imm(Bq)), imm(Nq)}) : add(var(i0), imm(Bq));
    last = add(last, imm(*s.causal_offset - 1));
    Expr reach = call(MathFn::Max, {add(floor_div(last, Bk), imm(1)), imm(0)});
    key_blocks = call(MathFn::Min, {reach, imm(nkb)});
  }
  std::vector<Stmt> step;
  if (Stmt kc = copies(true)) step.insert(step.end(), {kc, barrier()});
  step.insert(step.end(), {scores, barrier(), softmax, barrier(), values, barrier()});
  Stmt key_loop = for_loop(kb, imm(0), key_blocks, ForKind::Serial, block(step));

  // 5. Each thread stores its output tile (consecutive threads: consecutive columns).
  Stmt result = threads([&](const Expr& y, const Expr& x) {
    const std::string a = names.fresh("a"), c = names.fresh("c");
    const Expr lr = simplify(add(y, mul(var(a), imm(TY)))), dc = simplify(add(x, mul(var(c), imm(TX))));
    std::vector<Expr> out_index;
    for (size_t q = 0; q < s.batch.size(); ++q) out_index.push_back(at[batch_var(q)]);
    out_index.push_back(simplify(add(var(i0), lr)));
    out_index.push_back(dc);
    const Expr lv = rd(l_run, {lr}, Tl);
    Expr v = binary(BinaryOp::Div, rd(o_acc, {y, x, var(a), var(c)}, Ta), lv);
    if (s.masked) v = select(binary(BinaryOp::Eq, lv, float_imm(0.0, Tl)), float_imm(0.0, v->type), v);
    Stmt st = store(s.output, out_index, cast_to(ch.out_type, v));
    Expr inside;
    auto conj = [&](Expr cnd) { inside = inside ? binary(BinaryOp::And, inside, cnd) : cnd; };
    if (Nq % Bq) conj(binary(BinaryOp::Lt, simplify(add(var(i0), lr)), imm(Nq)));
    if (td * TX != D) conj(binary(BinaryOp::Lt, dc, imm(D)));
    if (inside) st = if_then(inside, st);
    return unrolled(a, tm, unrolled(c, td, st));
  });

  std::vector<Stmt> body_stmts{init};
  if (Stmt qc = copies(false)) body_stmts.push_back(qc);
  body_stmts.insert(body_stmts.end(), {barrier(), key_loop, result});
  Stmt body = block(body_stmts);
  body = allocate(s_acc, Ts, {TY, TX, tm, tn}, MemScope::Register, body);
  body = allocate(o_acc, Ta, {TY, TX, tm, td}, MemScope::Register, body);
  body = allocate(rescale, Tm, {Bq}, sh, body);
  body = allocate(l_run, Tl, {Bq}, sh, body);
  body = allocate(m_run, Tm, {Bq}, sh, body);
  body = allocate(p_tile, Ts, {Bq, Bk + 1}, sh, body);
  for (size_t n = plan.staged.size(); n-- > 0;) {
    const StagedRead& r = plan.staged[n];
    body = allocate(r.name, r.read->type, {r.keys ? Bk : Bq, staged_width(r, plan) + 1}, sh, body);
  }
  for (size_t n = lets.size(); n-- > 0;) body = let_stmt(lets[n].first, lets[n].second, body);

  LoopProgram out = p;
  const std::string func_name = fmt::format("{}_{}", k.name, s.first + 3);
  for (size_t n = replaced.size(); n-- > 0;) out.funcs.erase(out.funcs.begin() + static_cast<std::ptrdiff_t>(replaced[n]));
  out.funcs.insert(out.funcs.begin() + static_cast<std::ptrdiff_t>(replaced.front()),
                   LoopFunc{func_name, for_loop(task, imm(0), imm(tasks), ForKind::GridX, body)});
  std::erase_if(out.buffers, [&](const LoopBuffer& x) {
    return x.name == s.scores || x.name == s.row_max || x.name == s.row_sum;
  });
  return out;
}

} // namespace

std::vector<AttentionSite> attention_sites(const Kernel& k, const ShapeBindings& b) {
  std::vector<AttentionSite> out;
  for (size_t n = 0; n + 3 < k.body.size(); ++n)
    if (auto ch = match_chain(k, n, b, nullptr)) {
      out.push_back(ch->site);
      n += 3;
    }
  return out;
}

FlashBlocks flash_blocks(const AttentionSite& s, const hcd::Hcd& h) {
  auto [l1, l2] = data_caches(h);
  (void)l2;
  const int64_t bytes = dtype_bytes(s.score_type), acc_bytes = dtype_bytes(s.accumulator);
  const int64_t lanes = std::max(1, h.lanes_for(s.score_type)), nr = 2 * lanes;
  FlashBlocks fb;
  // K and V tiles of the key block in half of L1.
  fb.keys = std::max(nr, l1 / 4 / (s.head_dim * bytes) / nr * nr);
  fb.keys = std::min(fb.keys, ceil_div(s.keys, nr) * nr);
  // Q rows, output accumulators and the score tile of the query rows in the other half.
  const int64_t mr = register_tiles(s, FlashBlocks{0, fb.keys}, h).mr;
  const int64_t per_row = s.head_dim * bytes + s.head_dim * acc_bytes + fb.keys * bytes;
  fb.rows = std::max(mr, l1 / 2 / per_row / mr * mr);
  fb.rows = std::min(fb.rows, ceil_div(s.queries, mr) * mr);
  // When the most rows that fit would pad the queries by more than 1/64, the row count
  // down to two thirds of it that pads them least (the larger on a tie): 256 queries take
  // 16 rows, not 24 (11 blocks, the last a third empty, and tiles filling 31 of Zen 4's
  // 32 KiB L1, whose speed then moved by 15% with where the stack began). One Zen 4
  // core, attention 256 x 64: 0.215-0.247 -> 0.212 ms on cpu, 0.233 -> 0.204 on PoCL.
  {
    const auto pad = [&](int64_t r) { return ceil_div(s.queries, r) * r - s.queries; };
    int64_t best = fb.rows;
    if (64 * pad(best) > s.queries)
      for (int64_t r = fb.rows - mr; r >= mr && 3 * r >= 2 * fb.rows; r -= mr)
        if (pad(r) < pad(best)) best = r;
    fb.rows = best;
  }
  while (product(s.batch) * ceil_div(s.queries, fb.rows) < 2 * h.units && fb.rows > mr) fb.rows -= mr;
  return fb;
}

std::vector<std::string> flash_reasons(const AttentionSite& s, const FlashBlocks& fb, const hcd::Hcd& h) {
  std::vector<std::string> r;
  auto [l1, l2] = data_caches(h);
  (void)l2;
  std::string shape;
  for (int64_t x : s.batch) shape += fmt::format("{}x", x);
  const int64_t bytes = dtype_bytes(s.score_type), acc_bytes = dtype_bytes(s.accumulator);
  r.push_back(fmt::format("{} (statements {}-{}): attention fused into one flash-attention launch (online softmax); "
                          "{} ({}{}x{} {}, {}), {} and {} are never written to memory",
                          s.output, s.first, s.first + 3, s.scores, shape, s.queries, s.keys,
                          dtype_name(s.score_type),
                          kib(product(s.batch) * s.queries * s.keys * bytes), s.row_max, s.row_sum));
  if (s.causal_offset)
    r.push_back(fmt::format("  causal mask (keys j <= i{:+}): key blocks past the diagonal are skipped, not masked",
                            *s.causal_offset));
  else if (s.masked)
    r.push_back("  masked: the mask is applied per element in every key block");
  const RegisterTiles t = register_tiles(s, fb, h);
  r.push_back(fmt::format("  blocks: {} query rows x {} keys; K and V tiles {} against half of L1 ({}); Q, output and "
                          "score tiles {}",
                          fb.rows, fb.keys, kib(2 * fb.keys * s.head_dim * bytes), kib(l1),
                          kib(fb.rows * (s.head_dim * bytes + s.head_dim * acc_bytes + fb.keys * bytes))));
  r.push_back(fmt::format("  registers: score tile {}x{} and output tile {}x{}: {} of {} vector registers ({}-bit)",
                          t.mr, t.nr, t.mr, t.nd, t.registers, h.vector_registers, h.vector_bits));
  const int64_t blocks = ceil_div(s.queries, fb.rows);
  r.push_back(fmt::format("  threads: {} tasks ({}{} row blocks) over {} compute units", product(s.batch) * blocks,
                          shape, blocks, h.units));
  return r;
}

std::optional<FlashThreads> flash_threads(const Kernel& k, const ShapeBindings& b, const std::string& output,
                                          const hcd::Hcd& h, std::string* why) {
  std::optional<SimtPlan> plan = simt_plan(find_chain(k, b, output), h, {}, why);
  if (!plan) return std::nullopt;
  return plan->t;
}

std::vector<std::string> flash_thread_reasons(const Kernel& k, const ShapeBindings& b, const std::string& output,
                                              const FlashThreads& t, const hcd::Hcd& h) {
  const Chain ch = find_chain(k, b, output);
  const AttentionSite& s = ch.site;
  std::string why;
  std::optional<SimtPlan> plan = simt_plan(ch, h, {t.rows, t.keys, t.threads_y, t.threads_x}, &why);
  if (!plan) return {why};
  const SimtPlan& p = *plan;
  std::vector<std::string> r;
  std::string shape;
  for (int64_t x : s.batch) shape += fmt::format("{}x", x);
  const int64_t threads = t.threads_x * t.threads_y, warp = std::max(1, h.warp_size);
  r.push_back(fmt::format("{} (statements {}-{}): attention fused into one flash-attention launch (online softmax) on "
                          "blocks of SIMT threads; {} ({}{}x{} {}), {} and {} are never written to memory",
                          s.output, s.first, s.first + 3, s.scores, shape, s.queries, s.keys,
                          dtype_name(s.score_type), s.row_max, s.row_sum));
  if (s.causal_offset)
    r.push_back(fmt::format("  causal mask (keys j <= i{:+}): key blocks past the diagonal are skipped, not masked",
                            *s.causal_offset));
  else if (s.masked)
    r.push_back("  masked: the mask is applied per element in every key block");
  r.push_back(fmt::format("  threads: {} x {} = {} per block ({} warp{} of {}); {} query rows x {} keys per key block; "
                          "each thread {}x{} scores (rows y + a*{}, keys x + c*{}) and {}x{} outputs, one thread per "
                          "row for the softmax",
                          t.threads_y, t.threads_x, threads, ceil_div(threads, warp), threads > warp ? "s" : "", warp,
                          t.rows, t.keys, p.tm, p.tn, t.threads_y, t.threads_x, p.tm, p.td));
  std::string staged;
  for (const StagedRead& x : p.staged)
    staged += fmt::format("{}{} [{}, {}+1]{}", staged.empty() ? "" : ", ", x.read->name, x.keys ? t.keys : t.rows,
                          staged_width(x, p), x.keys ? " per key block" : " once");
  r.push_back(fmt::format("  {} memory: {}{}score tile [{}, {}+1] and the row state: {} of {} per block (budget {}); "
                          "copies by all threads, barriers between the phases",
                          mem_scope_name(p.scope), staged, staged.empty() ? "" : ", ", t.rows, t.keys, kib(p.shared),
                          kib(h.shared_memory_per_block), kib(p.budget)));
  r.push_back(fmt::format("  registers: {} score + {} output accumulators + {} operands = {} of {} 32-bit registers "
                          "per thread",
                          p.tm * p.tn, p.tm * p.td, p.tm + p.tn, p.registers, h.vector_registers));
  const int64_t blocks = ceil_div(s.queries, t.rows);
  r.push_back(fmt::format("  grid: {} blocks ({}{} row blocks) over {} compute units", product(s.batch) * blocks,
                          shape, blocks, h.units));
  return r;
}

LoopProgram flash_attention(const Kernel& k, const LoopProgram& p, const ShapeBindings& b, const hcd::Hcd& h,
                            const std::string& output, const std::vector<int64_t>& blocks) {
  const std::string what = fmt::format("flash_attention {}", output);
  const Chain ch = find_chain(k, b, output);
  const AttentionSite& s = ch.site;
  FlashBlocks fb = flash_blocks(s, h);
  if (!blocks.empty()) {
    if ((blocks.size() != 2 && blocks.size() != 4) ||
        std::any_of(blocks.begin(), blocks.end(), [](int64_t x) { return x < 1; }))
      throw UserError(fmt::format("error: schedule: {}: expected positive block sizes (rows, keys[, threads y x])",
                                  what));
    fb = FlashBlocks{blocks[0], blocks[1]};
  }
  // The chain's launches, as lowering made them.
  std::vector<size_t> replaced;
  for (size_t n = s.first; n <= s.first + 3; ++n) {
    bool found = false;
    for (size_t f = 0; f < p.funcs.size(); ++f) {
      const std::string& name = p.funcs[f].name;
      if (name == fmt::format("{}_{}", k.name, n)) found = true;
      if (name == fmt::format("{}_{}", k.name, n) || name == fmt::format("{}_{}_init", k.name, n))
        replaced.push_back(f);
    }
    if (!found)
      throw UserError(fmt::format("error: schedule: {}: the launch of statement {} was already changed by an "
                                  "earlier primitive; put flash_attention first",
                                  what, n));
  }
  std::sort(replaced.begin(), replaced.end());
  if (blocks.size() == 4) {
    std::string why;
    std::optional<SimtPlan> plan = simt_plan(ch, h, blocks, &why);
    if (!plan) throw UserError(simt_fail(what, why));
    return flash_attention_simt(k, p, ch, *plan, replaced);
  }

  const RegisterTiles t = register_tiles(s, fb, h);
  const int64_t br = fb.rows, bj = fb.keys, Nq = s.queries, Nk = s.keys, D = s.head_dim;
  const int64_t mr = t.mr, nr = t.nr, nd = t.nd;
  const int64_t nqb = ceil_div(Nq, br), nkb = ceil_div(Nk, bj), tasks = product(s.batch) * nqb;
  const DType Ts = s.score_type, Tm = ch.max_type, Tl = ch.sum_type, Ta = s.accumulator;
  const double inf = std::numeric_limits<double>::infinity();

  NameSet names(p);
  const std::string task = names.fresh("task"), qb = names.fresh("q_block"), i0 = names.fresh("i0"),
                    kb = names.fresh("k_block"), r_o = names.fresh("r_o"), r_i = names.fresh("r_i"),
                    c_o = names.fresh("c_o"), c_i = names.fresh("c_i"), d_o = names.fresh("d_o"),
                    d_i = names.fresh("d_i"), r = names.fresh("r"), c = names.fresh("c"), d = names.fresh("d");
  const std::string s_tile = names.fresh(s.scores + "_tile"), s_reg = names.fresh(s.scores + "_reg"),
                    m_run = names.fresh(s.row_max + "_run"), m_new = names.fresh(s.row_max + "_new"),
                    rescale = names.fresh(s.row_max + "_rescale"), l_run = names.fresh(s.row_sum + "_run"),
                    o_acc = names.fresh(s.output + "_acc"), o_reg = names.fresh(s.output + "_reg"),
                    mx = names.fresh(s.row_max + "_acc"), sm = names.fresh(s.row_sum + "_acc");
  std::vector<std::string> red;
  for (const std::string& v : ch.reduction_names) red.push_back(names.fresh(v));

  // Lets of the task: leading indices, the query block (causal: interleaved short and long
  // blocks, so that contiguous chunks of tasks carry equal work), its first row.
  std::vector<std::pair<std::string, Expr>> lets;
  std::map<std::string, Expr> at;
  const Expr tv = var(task);
  task_lets(s, tv, nqb, br, qb, i0, names, lets, at);
  std::set<std::string> moving{kI, kJ, kD};
  for (size_t n = 0; n < red.size(); ++n) moving.insert(reduction_var(n));
  std::vector<std::pair<std::string, Expr>> hoisted;
  const Expr score = hoist_invariants(ch.score, moving, names, hoisted);
  const Expr weight = hoist_invariants(ch.weight, moving, names, hoisted);
  for (auto& [name, value] : hoisted) lets.emplace_back(name, instantiate(value, at));

  auto row_of = [&](const Expr& row) {
    Expr i = add(var(i0), row);
    return Nq % br ? call(MathFn::Min, {i, imm(Nq - 1)}) : i;
  };
  auto key_of = [&](const Expr& col) {
    Expr j = add(mul(var(kb), imm(bj)), col);
    return Nk % bj ? call(MathFn::Min, {j, imm(Nk - 1)}) : j;
  };
  // The element (row, col) of the key block takes part: inside the keys, and unmasked.
  auto valid = [&](const Expr& row, const Expr& col) -> Expr {
    Expr ok;
    if (Nk % bj) ok = binary(BinaryOp::Lt, add(mul(var(kb), imm(bj)), col), imm(Nk));
    if (ch.mask) {
      std::map<std::string, Expr> m = at;
      m[kI] = row_of(row);
      m[kJ] = key_of(col);
      Expr c2 = instantiate(ch.mask, m);
      ok = ok ? binary(BinaryOp::And, ok, c2) : c2;
    }
    return ok ? simplify(ok) : nullptr;
  };
  auto tile = [&](const std::string& row, int64_t rows, const std::string& col, const Expr& cols, Stmt body) {
    return for_loop(row, imm(0), imm(rows), ForKind::Unrolled,
                    for_loop(col, imm(0), cols, ForKind::Vectorized, std::move(body)));
  };
  const Expr tile_row = add(mul(var(r_o), imm(mr)), var(r_i));
  auto rd = [](const std::string& buffer, std::vector<Expr> idx, DType type) {
    return access(buffer, std::move(idx), type);
  };

  // Scores of the block: S_tile[r][c] = sum over r.. of f, an mr x nr register tile at a time.
  Stmt scores;
  {
    const Expr col = add(mul(var(c_o), imm(nr)), var(c_i));
    std::map<std::string, Expr> m = at;
    m[kI] = row_of(tile_row);
    m[kJ] = key_of(col);
    for (size_t n = 0; n < red.size(); ++n) m[reduction_var(n)] = var(red[n]);
    std::set<std::string> reductions;
    for (size_t n = 0; n < red.size(); ++n) reductions.insert(reduction_var(n));
    const Factored parts = factor_out(score, reductions);
    const Expr f = simplify(instantiate(parts.summed, m));
    const std::vector<Expr> reg{var(r_i), var(c_i)};
    Stmt update = tile(r_i, mr, c_i, imm(nr),
                       store(s_reg, reg, add(rd(s_reg, reg, Ts), cast_to(Ts, f))));
    Expr tile_value = rd(s_reg, reg, Ts);
    for (size_t n = parts.outside.size(); n-- > 0;)
      tile_value = binary(parts.outside[n].first, tile_value, simplify(instantiate(parts.outside[n].second, m)));
    for (size_t n = red.size(); n-- > 0;)
      update = for_loop(red[n], imm(0), imm(ch.reduction_extents[n]), ForKind::Serial, update);
    Stmt body = allocate(
        s_reg, Ts, {mr, nr}, MemScope::Register,
        block({tile(r_i, mr, c_i, imm(nr), store(s_reg, reg, float_imm(0.0, Ts))), update,
               tile(r_i, mr, c_i, imm(nr), store(s_tile, {simplify(tile_row), simplify(col)}, cast_to(Ts, tile_value)))}));
    scores = for_loop(r_o, imm(0), imm(br / mr), ForKind::Serial,
                      for_loop(c_o, imm(0), imm(bj / nr), ForKind::Serial, body));
  }

  // Online softmax of the block, row by row. `ok` (null: every element counts) masks
  // the max and the probabilities; the exps run as their own loop so that, unmasked, it
  // is vector code.
  auto row_softmax = [&](const Expr& ok) {
    const Expr sv = rd(s_tile, {var(r), var(c)}, Ts);
    const Expr mr_run = rd(m_run, {var(r)}, Tm), mr_new = rd(m_new, {var(r)}, Tm), lr = rd(l_run, {var(r)}, Tl);
    Expr masked_score = cast_to(Tm, sv);
    if (ok) masked_score = select(ok, masked_score, float_imm(-inf, Tm));
    Expr p = cast_to(Ts, call(MathFn::Exp, {binary(BinaryOp::Sub, sv, cast_to(Ts, mr_new))}));
    if (ok) p = select(ok, p, float_imm(0.0, Ts));
    // The row max and the row sum reduce into one-slot register accumulators, which
    // vectorize_reduction gives one slot per lane: a serial chain of bj NaN-checked
    // maxes (or adds) per row was the longest dependency of the block, and LLVM (PoCL)
    // kept it as a chain of selects. The rescale factors of all rows are one vector
    // loop (a vector exp, not a scalar exp call per row) between the loop of row maxes
    // and the loop that uses them.
    const Expr mx0 = rd(mx, {imm(0)}, Tm), sm0 = rd(sm, {imm(0)}, Tl);
    Stmt max_row = allocate(mx, Tm, {1}, MemScope::Register,
                            block({store(mx, {imm(0)}, mr_run),
                                   for_loop(c, imm(0), imm(bj), ForKind::Serial,
                                            store(mx, {imm(0)}, call(MathFn::Max, {mx0, masked_score}))),
                                   store(m_new, {var(r)}, mx0)}));
    Stmt rescales = for_loop(r, imm(0), imm(br), ForKind::Vectorized,
                             store(rescale, {var(r)},
                                   select(binary(BinaryOp::Eq, mr_run, mr_new), float_imm(1.0, Tm),
                                          call(MathFn::Exp, {binary(BinaryOp::Sub, mr_run, mr_new)}))));
    Stmt row = block(
        {for_loop(c, imm(0), imm(bj), ForKind::Vectorized, store(s_tile, {var(r), var(c)}, p)),
         allocate(sm, Tl, {1}, MemScope::Register,
                  block({store(sm, {imm(0)}, float_imm(0.0, Tl)),
                         for_loop(c, imm(0), imm(bj), ForKind::Serial, store(sm, {imm(0)}, add(sm0, cast_to(Tl, sv)))),
                         store(l_run, {var(r)}, add(mul(lr, cast_to(Tl, rd(rescale, {var(r)}, Tm))), sm0))})),
         store(m_run, {var(r)}, mr_new)});
    int vectorized = 0;
    const auto lanes = [&](DType t) { return std::max(1, h.lanes_for(t)); };
    max_row = vectorize_reduction(max_row, c, lanes, &vectorized);
    row = vectorize_reduction(row, c, lanes, &vectorized);
    return block({for_loop(r, imm(0), imm(br), ForKind::Serial, max_row), rescales,
                  for_loop(r, imm(0), imm(br), ForKind::Serial, row)});
  };
  Stmt softmax;
  {
    const Expr ok = valid(var(r), var(c));
    // A key block that every row of the query block sees whole (inside the keys, and below
    // a causal mask's diagonal for the first row) needs no mask at all.
    Expr whole;
    const Expr block_end = mul(add(var(kb), imm(1)), imm(bj)); // one past its last key
    if (ok && (!ch.mask || ch.mask_is_causal_bound)) {
      if (Nk % bj) whole = binary(BinaryOp::Le, block_end, imm(Nk));
      if (ch.mask) {
        Expr below = binary(BinaryOp::Le, binary(BinaryOp::Sub, block_end, imm(1)),
                            add(var(i0), imm(*s.causal_offset)));
        whole = whole ? binary(BinaryOp::And, whole, below) : below;
      }
    }
    softmax = whole ? if_then(simplify(whole), row_softmax(nullptr), row_softmax(ok)) : row_softmax(ok);
  }

  // O_acc = O_acc * rescale + S_tile x weights, an mr x nd register tile at a time.
  Stmt values;
  {
    const Expr dcol = add(mul(var(d_o), imm(nd)), var(d_i));
    const Expr dext = D % nd ? call(MathFn::Min, {imm(nd), binary(BinaryOp::Sub, imm(D), mul(var(d_o), imm(nd)))})
                             : imm(nd);
    std::map<std::string, Expr> m = at;
    m[kI] = row_of(tile_row);
    m[kJ] = key_of(var(c));
    m[kD] = dcol;
    const Expr g = simplify(instantiate(weight, m));
    const std::vector<Expr> reg{var(r_i), var(d_i)}, acc{simplify(tile_row), simplify(dcol)};
    Stmt body = allocate(
        o_reg, Ta, {mr, nd}, MemScope::Register,
        block({tile(r_i, mr, d_i, dext,
                    store(o_reg, reg, cast_to(Ta, mul(rd(o_acc, acc, Ta), rd(rescale, {simplify(tile_row)}, Tm))))),
               for_loop(c, imm(0), imm(bj), ForKind::Serial,
                        tile(r_i, mr, d_i, dext,
                             store(o_reg, reg,
                                   add(rd(o_reg, reg, Ta),
                                       cast_to(Ta, mul(rd(s_tile, {simplify(tile_row), var(c)}, Ts), g)))))),
               tile(r_i, mr, d_i, dext, store(o_acc, acc, rd(o_reg, reg, Ta)))}));
    values = for_loop(r_o, imm(0), imm(br / mr), ForKind::Serial,
                      for_loop(d_o, imm(0), imm(ceil_div(D, nd)), ForKind::Serial, body));
  }

  // Key blocks: all of them, or (causal) up to the diagonal of the block's last row.
  Expr key_blocks = imm(nkb);
  if (s.causal_offset) {
    Expr last = Nq % br ? call(MathFn::Min, {add(var(i0), imm(br)), imm(Nq)}) : add(var(i0), imm(br));
    last = add(last, imm(*s.causal_offset - 1));
    Expr reach = call(MathFn::Max, {add(floor_div(last, bj), imm(1)), imm(0)});
    key_blocks = call(MathFn::Min, {reach, imm(nkb)});
  }
  Stmt key_loop = for_loop(kb, imm(0), key_blocks, ForKind::Serial, block({scores, softmax, values}));

  // The result, and the state it starts from.
  Stmt init = block({for_loop(r, imm(0), imm(br), ForKind::Serial,
                              block({store(m_run, {var(r)}, float_imm(-inf, Tm)),
                                     store(l_run, {var(r)}, float_imm(0.0, Tl))})),
                     for_loop(r, imm(0), imm(br), ForKind::Serial,
                              for_loop(d, imm(0), imm(D), ForKind::Vectorized,
                                       store(o_acc, {var(r), var(d)}, float_imm(0.0, Ta))))});
  Stmt result;
  {
    std::vector<Expr> out_index;
    for (size_t q = 0; q < s.batch.size(); ++q) out_index.push_back(at[batch_var(q)]);
    out_index.push_back(add(var(i0), var(r)));
    out_index.push_back(var(d));
    const Expr lr = rd(l_run, {var(r)}, Tl);
    Expr v = binary(BinaryOp::Div, rd(o_acc, {var(r), var(d)}, Ta), lr);
    if (s.masked) v = select(binary(BinaryOp::Eq, lr, float_imm(0.0, Tl)), float_imm(0.0, v->type), v);
    Stmt st = for_loop(d, imm(0), imm(D), ForKind::Vectorized, store(s.output, out_index, cast_to(ch.out_type, v)));
    if (Nq % br) st = if_then(binary(BinaryOp::Lt, add(var(i0), var(r)), imm(Nq)), st);
    result = for_loop(r, imm(0), imm(br), ForKind::Serial, st);
  }

  Stmt body = allocate(s_tile, Ts, {br, bj}, MemScope::Local,
                       allocate(m_new, Tm, {br}, MemScope::Local,
                                allocate(rescale, Tm, {br}, MemScope::Local, key_loop)));
  body = block({init, body, result});
  body = allocate(m_run, Tm, {br}, MemScope::Local,
                  allocate(l_run, Tl, {br}, MemScope::Local, allocate(o_acc, Ta, {br, D}, MemScope::Local, body)));
  for (size_t n = lets.size(); n-- > 0;) body = let_stmt(lets[n].first, lets[n].second, body);

  LoopProgram out = p;
  const std::string func_name = fmt::format("{}_{}", k.name, s.first + 3);
  for (size_t n = replaced.size(); n-- > 0;) out.funcs.erase(out.funcs.begin() + static_cast<std::ptrdiff_t>(replaced[n]));
  const auto pos = out.funcs.begin() + static_cast<std::ptrdiff_t>(replaced.front());
  const size_t index = static_cast<size_t>(pos - out.funcs.begin());
  out.funcs.insert(pos, LoopFunc{func_name, for_loop(task, imm(0), imm(tasks), ForKind::GridX, body)});
  std::erase_if(out.buffers, [&](const LoopBuffer& x) {
    return x.name == s.scores || x.name == s.row_max || x.name == s.row_sum;
  });

  // Stage what the scores read per key (K) at the key block: packed as the tile reads it.
  std::set<std::string> key_side;
  visit(ch.score, [&](const Expr& x) {
    if (x->kind != ExprKind::Access) return;
    bool keys = false, rows = false;
    for (const Expr& i : x->operands) {
      keys |= depends_on(i, kJ);
      rows |= depends_on(i, kI);
    }
    if (keys && !rows) key_side.insert(x->name);
  });
  for (const std::string& tensor : key_side) {
    try {
      out.funcs[index].body = stage_buffer(out, out.funcs[index].body, tensor, MemScope::Local, kb);
    } catch (const UserError&) {
      // Not stageable here (read at two patterns, ...): the tile reads it in place.
    }
  }
  return out;
}

} // namespace unitile
