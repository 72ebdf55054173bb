// The auto-scheduler (see AutoSchedule.h).
//
// Decisions, all from the HCD:
// - Contractions written as an in-place reduction over a unit-stride output row
//   (`C[.., i, j] += A[.., i, k] * B[.., k, j]`) get a register-blocked GEMM schedule:
//   an mr x nr output tile in vector registers (nr a multiple of the lanes, mr as many
//   rows as the register file holds next to one B row and one A broadcast), a reduction
//   block kc whose A and B micro-panels fit in L1, an output block mc x nc whose packed
//   panels fit in L2, A and B packed per block, blocks spread over the compute units.
// - Attention written as comprehensions (scores, row max, row sum, output) becomes one
//   flash-attention launch (FlashAttention.cpp); its statements are then no GEMM sites.
//   On blocks of SIMT threads (simt_blocks) that launch is a block of threads per query
//   block with its tiles in shared memory (FlashThreads), where they fit.
// - Every other launch whose outermost loop is spatial runs it in parallel.
// - A per-slice statement chain (softmax's max, sum, normalise) runs as one launch:
//   each local that the next statement reads at the same outer index is computed there.
#include "schedule/AutoSchedule.h"

#include "schedule/AutoInline.h"

#include "schedule/ApplySchedule.h"
#include "schedule/FlashAttention.h"
#include "schedule/MatrixUnit.h"
#include "schedule/Primitives.h"
#include "schedule/BlockRows.h"
#include "schedule/ThreadGemm.h"
#include "schedule/Threads.h"
#include "schedule/Lower.h"
#include "schedule/LoopRewrite.h"

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <functional>
#include <cmath>
#include <set>

namespace unitile {

namespace {

int64_t round_down(int64_t x, int64_t m) { return std::max(m, x / m * m); }
int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
int64_t pow2_floor(int64_t x) {
  int64_t p = 1;
  while (p * 2 <= x) p *= 2;
  return p;
}

// Data cache sizes for tiling: the first two non-register levels (L1, L2 on a CPU).
std::pair<int64_t, int64_t> cache_sizes(const hcd::Hcd& h) {
  std::vector<int64_t> sizes;
  for (const hcd::MemoryLevel& l : h.memory)
    if (l.scope != "register" && l.scope != "global" && l.size_bytes > 0) sizes.push_back(l.size_bytes);
  int64_t l1 = sizes.size() > 0 ? sizes[0] : 32 * 1024;
  int64_t l2 = sizes.size() > 1 ? sizes[1] : 8 * l1;
  return {l1, l2};
}

// The last cache level's size, or 0 when the HCD lists no third level.
int64_t last_level_cache(const hcd::Hcd& h) {
  std::vector<int64_t> sizes;
  for (const hcd::MemoryLevel& l : h.memory)
    if (l.scope != "register" && l.scope != "global" && l.size_bytes > 0) sizes.push_back(l.size_bytes);
  return sizes.size() > 2 ? sizes.back() : 0;
}

// A primitive of kind `k` on the loops of `vars`, restricted to the statements writing `on`.
Primitive loop_prim(PrimitiveKind k, std::vector<std::string> vars, const std::string& on) {
  Primitive p;
  p.kind = k;
  p.vars = std::move(vars);
  p.on = on;
  return p;
}

// `split v f as v_o, v_i on on`.
Primitive split_in_two(const std::string& v, int64_t f, const std::string& on) {
  Primitive p = loop_prim(PrimitiveKind::Split, {v}, on);
  p.factors = {f};
  p.outer = v + "_o";
  p.inner = v + "_i";
  return p;
}

std::string kib(int64_t bytes) {
  return bytes % 1024 == 0 ? fmt::format("{} KiB", bytes / 1024) : fmt::format("{:.1f} KiB", bytes / 1024.0);
}

std::vector<std::string> read_tensors(const Expr& value) {
  std::vector<std::string> out;
  visit(value, [&](const Expr& e) {
    if (e->kind == ExprKind::Access && std::find(out.begin(), out.end(), e->name) == out.end()) out.push_back(e->name);
  });
  return out;
}

// The chunk of a 1-D map: a multiple of the vector lanes whose data (every array the
// store touches) fits in L1, halved until there are a few chunks per compute unit.
// elements == 0: leave the map alone (too short for one vector).
struct MapChunk {
  int64_t elements = 0;
  int64_t bytes_per_element = 0;
};

MapChunk map_chunk(const Stmt& store, const LoopProgram& p, int64_t extent, const hcd::Hcd& h) {
  MapChunk c;
  std::set<std::string> arrays{store->buffer};
  visit(store->value, [&](const Expr& e) {
    if (e->kind == ExprKind::Access) arrays.insert(e->name);
  });
  for (const std::string& name : arrays)
    if (const LoopBuffer* buf = p.find_buffer(name)) c.bytes_per_element += dtype_bytes(buf->dtype);
  const LoopBuffer* out = p.find_buffer(store->buffer);
  const int64_t lanes = std::max(1, h.lanes_for(out->dtype));
  if (lanes < 2 || extent < 2 * lanes || c.bytes_per_element == 0) return c;
  const int64_t l1 = cache_sizes(h).first;
  int64_t chunk = std::max<int64_t>(lanes, pow2_floor(l1 / c.bytes_per_element));
  while (chunk > 4 * lanes && extent / chunk < 4 * h.units) chunk /= 2;
  c.elements = std::min(chunk, extent);
  return c;
}

} // namespace

// The BLIS tiling of a GEMM site, from the HCD (nr == 0: the site is too narrow).
//
// Loop order (gemm_schedule): parallel blocks of mg x ng outputs; in each, B is packed
// per nc columns x kc (the block that stays in L3, or in L2 when there is only one A
// block) and A per mc rows x kc (in L2); then nr-column micro-panels of B (in L1), each
// met by every mr-row micro-panel of A. So B is packed once per row of parallel blocks
// and A once per nc columns.
GemmTiling analytic_gemm_tiling(const GemmSite& site, int64_t batch, const hcd::Hcd& h) {
  GemmTiling t;
  const int lanes = std::max(1, h.lanes_for(site.dtype));
  const int64_t bytes = dtype_bytes(site.dtype);
  if (site.N < lanes) return t;
  int64_t nv = site.N >= 2 * lanes ? 2 : 1;
  // A short, wide product (an LM head: M = 128, N = 50257, K = 768) reads all of B from
  // memory and meets each B micro-panel with few A micro-panels: a three-vector row
  // (8 x 48 on AVX-512, 24 accumulators) needs 11 loads per 24 FMAs instead of 10 per 16.
  // One thread through `unitile run` on the AVX-512 Xeon: 85-86 -> 72-75 ms; two threads
  // 42 -> 38.5-39 (docs/PERFORMANCE.md). Where 32 registers hold it, M <= 256, N >= 8192.
  if (h.kind == hcd::DeviceKind::Cpu && h.vector_registers >= 32 && site.M <= 256 && site.N >= 8192) nv = 3;
  t.nr = nv * lanes;
  t.mr = std::max<int64_t>(1, std::min<int64_t>((h.vector_registers - nv - 1) / nv, 8));
  t.mr = std::min(t.mr, site.M);
  auto [l1, l2] = cache_sizes(h);
  const int64_t l3 = last_level_cache(h);
  // kc: the B micro-panel (kc x nr), which every A micro-panel of the block meets, fills
  // L1; the A micro-panels stream from L2. Twice the kc at which both micro-panels fit L1
  // at most. A long kc means fewer C tile loads from memory (once per kc block) and
  // fewer A blocks per B block: on the Zen 3 host kc 512 against 256 measured 5-20%
  // faster at K >= 768 (docs/PERFORMANCE.md). Measured on CPUs only: other devices keep
  // the both-in-L1 kc.
  const int64_t kc_both = std::max<int64_t>(8, pow2_floor(l1 * 3 / 4 / ((t.mr + t.nr) * bytes)));
  t.kc = h.kind != hcd::DeviceKind::Cpu ? kc_both
                                        : std::max(kc_both, std::min(2 * kc_both, pow2_floor(l1 / (t.nr * bytes))));
  // Where L1 holds a B micro-panel of fewer than 512 steps (the 8 x 32 tile in the
  // Xeon's 48 KiB: 256), a CPU takes kc up to 512 with the micro-panel streaming from
  // L2, as long as it is at most a 32nd of L2: C's tile is reloaded half as often, and the
  // L2 stream keeps up (one 64-byte B row per 16 FMAs). Through `unitile run` on the
  // AVX-512 Xeon, kc 512 with mc 256 against kc 256 with mc 1024: 4096^3 770-790 against
  // 845-885 ms, 2048^3 100-102 against 106-107, 1024^3 13.2-13.6 against 14.2-14.5,
  // 2048 x 768 x 3072 52-54 against 57 (docs/PERFORMANCE.md). From K = 1024 on: 512^3 as
  // one block of 512 measured 3% slower than two of 256 (1.66 against 1.61 ms), and K =
  // 768 (two blocks of 384 against three of 256) no different.
  const bool b_from_l2 = h.kind == hcd::DeviceKind::Cpu && t.kc < 512 && site.K >= 1024 &&
                         512 * t.nr * bytes <= l2 / 32 && 512 * t.nr * bytes > l1;
  if (b_from_l2) t.kc = 512;
  // A short K is one block only up to kc (or 3/2 of it when kc is the both-in-L1 size).
  if (site.K <= (t.kc > kc_both ? t.kc : t.kc * 3 / 2)) t.kc = site.K;
  // Equal blocks: as many as the cache sizes ask for, then as even as the tile allows.
  auto balance = [](int64_t total, int64_t block, int64_t multiple) {
    int64_t n = (total + block - 1) / block;
    return round_up((total + n - 1) / n, multiple);
  };
  if (t.kc < site.K) t.kc = balance(site.K, t.kc, 4);
  // The packed A block takes half of L2, or a quarter when B's micro-panels stream from
  // L2 beside it (4096^3 at kc 512: mc 256 789-815 ms, mc 512 831-835).
  t.mc = std::min(round_down(l2 / (b_from_l2 && t.kc > kc_both ? 4 : 2) / (t.kc * bytes), t.mr),
                  round_up(site.M, t.mr));
  // B's block is read once per A block: with several A blocks it is worth a large block
  // in the last level (A is then packed once per nc columns); with one A block (small M)
  // it is read once, and is best kept in L2.
  const int64_t b_budget = site.M <= t.mc || l3 <= l2 ? l2 / 2 : std::min(l3 / 16, 4 * l2);
  t.nc = std::min(round_down(b_budget / (t.kc * bytes), t.nr), round_up(site.N, t.nr));
  // Parallel blocks: two per compute unit where the shape allows (with several), split so
  // that packing is repeated least. A row of blocks packs B again (K x N elements per
  // row); a column packs A again for every nc columns, plus one more where its columns
  // do not fill whole nc blocks (M x K per pack; A's copy transposes 6-row micro-panels,
  // scalar loads, so it costs about four times B's vector copy per element).
  // One compute unit: one block (a second would pack B again for nothing; 256^3 to
  // 1024^3 on one thread 2-4% faster as one block).
  const int64_t want = h.units > 1 ? 2 * h.units : 1;
  const int64_t max_gm = (site.M + t.mr - 1) / t.mr, max_gn = (site.N + t.nr - 1) / t.nr;
  int64_t best_gm = 1, best_gn = 1;
  double best_cost = -1;
  for (int64_t gm = 1; gm <= std::min(want, max_gm); ++gm) {
    const int64_t gn = batch >= want ? 1 : std::min(max_gn, (want / batch + gm - 1) / gm);
    if (batch < want && batch * gm * gn < want && gm < std::min(want, max_gm)) continue;
    const int64_t ng = round_up((site.N + gn - 1) / gn, t.nr);
    const int64_t a_packs = gn * ((ng + t.nc - 1) / t.nc);
    const double cost = double(gm) * site.K * site.N + 4.0 * double(a_packs) * site.M * site.K;
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      best_gm = gm;
      best_gn = gn;
    }
    if (batch >= want) break;
  }
  t.mg = balance(site.M, round_up((site.M + best_gm - 1) / best_gm, t.mr), t.mr);
  t.ng = balance(site.N, round_up((site.N + best_gn - 1) / best_gn, t.nr), t.nr);
  t.mc = balance(t.mg, std::min(t.mc, t.mg), t.mr);
  t.nc = balance(t.ng, std::min(t.nc, t.ng), t.nr);
  // One A block per parallel block: its C block (mc x nc) is revisited once per kc
  // block, so the B block, the A block and the C block together stay in 3/4 of L2; a
  // larger B block pushes C out between its kc visits (128 x 50257 x 768 at kc 256: nc
  // 256 -> 80, 2-10% faster by thread CPU time).
  if (t.mg <= t.mc) {
    const int64_t rest = std::max<int64_t>(0, l2 * 3 / 4 / bytes - t.mc * t.kc);
    const int64_t fit = round_down(rest / (t.kc + t.mc), t.nr);
    if (fit < t.nc) t.nc = balance(t.ng, fit, t.nr);
  }
  // A packed once per parallel block where BLIS's order would pack it again for each nc
  // columns and the whole mg x K panel stays in this core's share of the last cache
  // level (or in L2 when there is none).
  const int64_t a_budget = l3 > l2 ? l3 / (2 * std::max(1, h.units)) : l2;
  t.a_whole = t.ng > t.nc && t.mg * site.K * bytes <= a_budget;
  return t;
}

bool gemm_tiling_fits(const GemmSite& s, const GemmTiling& t, const hcd::Hcd& h, std::string* why) {
  const int lanes = std::max(1, h.lanes_for(s.dtype));
  const int64_t bytes = dtype_bytes(s.dtype);
  const int64_t vectors = (t.nr + lanes - 1) / lanes;
  auto [l1, l2] = cache_sizes(h);
  auto fail = [&](std::string w) {
    if (why) *why = std::move(w);
    return false;
  };
  if (t.mr < 1 || t.nr < 1 || t.kc < 1 || t.mc < t.mr || t.nc < t.nr || t.mc % t.mr || t.nc % t.nr ||
      t.mg < t.mc || t.ng < t.nc || t.mg % t.mr || t.ng % t.nr)
    return fail("tile sizes must be positive, mc, nc, mg, ng multiples of mr, nr, and mc <= mg, nc <= ng");
  if (t.mr * vectors + vectors + 1 > h.vector_registers)
    return fail(fmt::format("a {}x{} register tile needs {} vector registers, the HCD has {}", t.mr, t.nr,
                            t.mr * vectors + vectors + 1, h.vector_registers));
  // Larger than L1, the B micro-panel streams from L2 (the auto-scheduler's kc 512 on a
  // 48 KiB L1): up to a 16th of it.
  if (t.nr * t.kc * bytes > std::max(l1, l2 / 16))
    return fail(fmt::format("the B micro-panel of {} exceeds L1 ({}) and a 16th of L2 ({})", kib(t.nr * t.kc * bytes),
                            kib(l1), kib(l2 / 16)));
  if (t.mc * t.kc * bytes > l2)
    return fail(fmt::format("the packed A block of {} exceeds L2 ({})", kib(t.mc * t.kc * bytes), kib(l2)));
  const int64_t b_limit = std::max(l2, last_level_cache(h) / 4);
  if (t.nc * t.kc * bytes > b_limit)
    return fail(fmt::format("the packed B block of {} exceeds {}", kib(t.nc * t.kc * bytes), kib(b_limit)));
  return true;
}

std::vector<GemmSite> gemm_sites(const Kernel& k, const ShapeBindings& b, const hcd::Hcd& h) {
  std::vector<GemmSite> sites;
  LoopProgram p = lower_to_loops(k, b, h, LowerOptions{true});
  std::set<size_t> attention; // statements the flash-attention fusion takes
  for (const AttentionSite& a : attention_sites(k, b))
    for (size_t n = a.first; n <= a.first + 3; ++n) attention.insert(n);
  for (size_t n = 0; n < k.body.size(); ++n) {
    if (attention.count(n)) continue;
    const std::string name = fmt::format("{}_{}", k.name, n);
    bool has_init = false;
    const LoopFunc* f = nullptr;
    for (const LoopFunc& x : p.funcs) {
      has_init |= x.name == name + "_init";
      if (x.name == name) f = &x;
    }
    if (!has_init || !f) continue;
    std::vector<const StmtNode*> chain;
    const StmtNode* s = f->body.get();
    while (s->kind == StmtKind::For && s->body.size() == 1) {
      chain.push_back(s);
      s = s->body[0].get();
    }
    if (s->kind != StmtKind::Store || chain.size() < 3) continue;
    const LoopBuffer* out = p.find_buffer(s->buffer);
    if (!out || (out->dtype != DType::F32 && out->dtype != DType::F64)) continue;
    if (s->value->kind != ExprKind::Binary || s->value->binary_op != BinaryOp::Add) continue;
    const StmtNode* inner = chain.back();
    if (inner->for_kind != ForKind::Vectorized || s->indices.size() < 2) continue;
    const Expr& last = s->indices.back();
    const Expr& row = s->indices[s->indices.size() - 2];
    if (last->kind != ExprKind::Var || last->name != inner->var || row->kind != ExprKind::Var) continue;
    GemmSite site;
    site.statement = n;
    site.output = s->buffer;
    site.j = inner->var;
    site.i = row->name;
    site.dtype = out->dtype;
    std::set<std::string> spatial;
    for (const Expr& i : s->indices)
      if (i->kind == ExprKind::Var) spatial.insert(i->name);
    bool ok = spatial.size() == s->indices.size();
    std::vector<std::string> reductions;
    for (const StmtNode* l : chain) {
      auto ext = const_int_value(l->extent);
      ok &= ext.has_value();
      if (!spatial.count(l->var)) reductions.push_back(l->var);
      else if (l->var != site.i && l->var != site.j) site.batch.push_back(l->var);
      if (ext && l->var == site.i) site.M = *ext;
      if (ext && l->var == site.j) site.N = *ext;
    }
    if (!ok || reductions.size() != 1) continue;
    site.k = reductions[0];
    // A contraction sums products whose two factors both read tensors (a factor may be
    // an expression, like attention's masked exp times V): not a sum of some other
    // function of one tensor (a softmax denominator's exps).
    {
      int reading_factors = 0;
      std::function<void(const Expr&)> factors = [&](const Expr& e) {
        if (e->kind == ExprKind::Binary && e->binary_op == BinaryOp::Mul) {
          factors(e->operands[0]);
          factors(e->operands[1]);
        } else if (!read_tensors(e).empty()) {
          ++reading_factors;
        }
      };
      factors(s->value->operands[1]);
      if (reading_factors < 2) continue;
    }
    site.operands = read_tensors(s->value->operands[1]);
    for (const StmtNode* l : chain)
      if (l->var == site.k) site.K = *const_int_value(l->extent);
    // Reads: unguarded; each either unit-stride in j or independent of it.
    const Expr& addend = s->value->operands[1];
    bool reads_ok = true;
    visit(addend, [&](const Expr& e) {
      if (e->kind != ExprKind::Access) return;
      if (e->guard || e->name == site.output) reads_ok = false;
      bool moves = false;
      for (const Expr& i : e->operands) moves |= depends_on(i, site.j);
      if (moves && !unit_stride_in(e, site.j)) reads_ok = false;
    });
    if (!reads_ok) continue;
    for (const std::string& name : site.operands) {
      bool on_i = false, on_j = false;
      visit(addend, [&](const Expr& e) {
        if (e->kind != ExprKind::Access || e->name != name) return;
        for (const Expr& x : e->operands) {
          on_i |= depends_on(x, site.i);
          on_j |= depends_on(x, site.j);
        }
      });
      site.roles.push_back(on_i && !on_j ? 'a' : on_j && !on_i ? 'b' : 0);
    }

    int64_t batch = 1;
    for (const StmtNode* l : chain)
      if (std::find(site.batch.begin(), site.batch.end(), l->var) != site.batch.end()) batch *= *const_int_value(l->extent);
    site.tiling = analytic_gemm_tiling(site, batch, h);
    if (site.tiling.nr == 0) continue;
    sites.push_back(site);
  }
  return sites;
}

std::vector<Primitive> gemm_schedule(const GemmSite& s, const GemmTiling& t) {
  std::vector<Primitive> out;
  auto prim = [&](PrimitiveKind k) {
    Primitive p;
    p.kind = k;
    p.on = s.output;
    return p;
  };
  auto split = [&](const std::string& v, int64_t f, const std::string& o, const std::string& i) {
    Primitive p = prim(PrimitiveKind::Split);
    p.vars = {v};
    p.factors = {f};
    p.outer = o;
    p.inner = i;
    out.push_back(p);
  };
  const std::string &i = s.i, &j = s.j, &k = s.k;
  // BLIS order: parallel blocks (i_g, j_g); per block, nc columns (j_o), kc (k_o: B
  // packed here), mc rows (i_o: A packed here), then micro-panels.
  split(i, t.mg, i + "_g", i + "_b");
  split(i + "_b", t.mc, i + "_o", i + "_t");
  split(j, t.ng, j + "_g", j + "_b");
  split(j + "_b", t.nc, j + "_o", j + "_t");
  split(k, t.kc, k + "_o", k + "_i");
  split(i + "_t", t.mr, i + "_m", i + "_r");
  split(j + "_t", t.nr, j + "_m", j + "_r");
  Primitive order = prim(PrimitiveKind::Reorder);
  order.vars = s.batch;
  for (const char* v : {"i_g", "j_g", "j_o", "k_o", "i_o", "j_m", "i_m", "k_i", "i_r", "j_r"}) {
    std::string name = v;
    char which = name[0];
    std::string base = which == 'i' ? i : which == 'j' ? j : k;
    order.vars.push_back(base + name.substr(1));
  }
  out.push_back(order);
  Primitive fuse = prim(PrimitiveKind::Fuse);
  fuse.vars = {i + "_g", j + "_g"};
  fuse.outer = i + "_" + j + "_g";
  out.push_back(fuse);
  std::string task = fuse.outer;
  for (size_t n = s.batch.size(); n-- > 0;) {
    Primitive f = prim(PrimitiveKind::Fuse);
    f.vars = {s.batch[n], task};
    f.outer = s.batch[n] + "_" + task;
    out.push_back(f);
    task = f.outer;
  }
  Primitive par = prim(PrimitiveKind::Parallel);
  par.vars = {task};
  out.push_back(par);
  // B at k_o (once per kc x nc block), then A at i_o (once per mc x kc block), or A at
  // the parallel block's loop (once per block, a_whole).
  for (char role : {'b', 'a'})
    for (size_t n = 0; n < s.operands.size(); ++n) {
      if (n >= s.roles.size() || s.roles[n] != role || !(role == 'a' ? t.pack_a : t.pack_b)) continue;
      Primitive st = prim(PrimitiveKind::Stage);
      st.buffer = s.operands[n];
      st.scope = MemScope::Local;
      st.at = role == 'a' ? (t.a_whole ? task : i + "_o") : k + "_o";
      out.push_back(st);
    }
  Primitive mk = prim(PrimitiveKind::MicroKernel);
  mk.at = i + "_m";
  out.push_back(mk);
  if (t.ku > 1) {
    Primitive un = prim(PrimitiveKind::Unroll);
    un.vars = {k + "_i"};
    un.factors = {t.ku};
    out.push_back(un);
  }
  // No init launch: the register tile starts as zeros on the first reduction block.
  Primitive fold;
  fold.kind = PrimitiveKind::FoldInit;
  fold.buffer = s.output;
  out.push_back(fold);
  return out;
}

// The loop of a launch whose body is the slice's passes: the launch's outermost loop, or
// the innermost of the loops nested directly in it (a rank-3 row chain: i1 inside i0).
static const Stmt& slice_loop(const Stmt& loop) {
  const Stmt* l = &loop;
  while ((*l)->kind == StmtKind::For) {
    const Stmt& b = (*l)->body[0];
    if (b->kind == StmtKind::For)
      l = &b;
    else if (b->kind == StmtKind::Block && b->body.size() == 1 && b->body[0]->kind == StmtKind::For)
      l = &b->body[0];
    else
      break;
  }
  return *l;
}

AutoSchedule auto_schedule(const Kernel& given, const ShapeBindings& b, const hcd::Hcd& h) {
  AutoSchedule a;
  Schedule& s = a.schedule;
  // The last schedule lowered and its program: a step that changed nothing since is
  // not lowered again (lowering a GEMM takes about a millisecond, and a cache hit's
  // whole cost is this scheduler's).
  std::string last_json;
  std::optional<LoopProgram> last;
  auto lower = [&](const Schedule& x) -> LoopProgram {
    std::string json = to_json(x);
    if (last && json == last_json) return *last;
    LoopProgram p = lower_scheduled(given, b, h, x); // a refused trial keeps the memo
    last = p;
    last_json = std::move(json);
    return p;
  };
  auto try_add = [&](const std::vector<Primitive>& prims) {
    Schedule trial = s;
    trial.primitives.insert(trial.primitives.end(), prims.begin(), prims.end());
    try {
      lower(trial);
    } catch (const UserError&) {
      return false;
    }
    s = trial;
    return true;
  };
  // Contractions into bf16/f16 accumulate in f32 locals (Widen.cpp), so that they block
  // like f32 GEMMs; the decisions below are made on the widened kernel `k`. Other
  // reductions keep their one-element f32 register (widening would only add a launch).
  Kernel k = given;
  // Elementwise locals are substituted into their elementwise readers (AutoInline.cpp).
  for (std::set<std::string> refused;;) {
    const std::optional<std::string> local = next_inline_candidate(k, b, refused);
    if (!local) break;
    Primitive in;
    in.kind = PrimitiveKind::Inline;
    in.buffer = *local;
    try {
      Kernel inlined = inline_local(k, *local);
      if (!try_add({in})) throw UserError("the inlined kernel does not lower");
      k = std::move(inlined);
      a.reasons.push_back(fmt::format("{}: an elementwise local, computed inside its reader (inline)", *local));
    } catch (const UserError&) {
      refused.insert(*local);
    }
  }
  // Contractions the HCD's matrix unit takes at their inputs' precision (f16/bf16 on
  // tensor cores, an NPU's matrix engine) run there (MatrixUnit.cpp); f32 stays on the
  // vector units unless a schedule asks for tf32.
  std::set<std::string> matrix_outputs;
  std::set<size_t> in_attention; // flash attention takes these
  for (const AttentionSite& site : attention_sites(k, b))
    for (size_t n = site.first; n <= site.first + 3; ++n) in_attention.insert(n);
  auto has_contraction = [&] {
    for (const Comprehension& c : k.body) {
      try {
        if (auto site = contraction_site(k, b, c.output))
          for (const hcd::MatrixUnit& u : h.matrix_units)
            if (std::find(u.input_dtypes.begin(), u.input_dtypes.end(), site->input) != u.input_dtypes.end())
              return true;
      } catch (const UserError&) {
        // an unbound range: not a site
      }
    }
    return false;
  };
  if (!h.matrix_units.empty() && !dialect_issues_matrix_units(h) && has_contraction())
    a.reasons.push_back(fmt::format("matrix unit: HCD '{}' lists one, but the {} dialect has no matrix-unit "
                                    "instructions{}; contractions stay on the vector units",
                                    h.name, h.dialect, h.dialect == "c" ? " (AMX's 16x16x32 needs amx-tile and amx-bf16 in the isa, a 1x16x2 unit avx512_bf16)" : ""));
  for (const MatrixSite& site : matrix_sites(k, b, h)) {
    if (in_attention.count(site.statement)) continue;
    Primitive mu;
    mu.kind = PrimitiveKind::MatrixUnit;
    mu.buffer = site.output;
    if (!try_add({mu})) continue;
    matrix_outputs.insert(site.output);
    for (std::string& r : matrix_reasons(site, matrix_tiles(site, h), h)) a.reasons.push_back(std::move(r));
  }
  // On blocks of SIMT threads, the other f32/f64 contractions are thread-tiled GEMMs:
  // operand tiles staged in shared memory, a register tile per thread (ThreadGemm.cpp).
  if (simt_blocks(h)) {
    std::set<std::string> seen;
    for (size_t n = 0; n < k.body.size(); ++n) {
      const std::string& out = k.body[n].output;
      if (in_attention.count(n) || matrix_outputs.count(out) || !seen.insert(out).second) continue;
      std::optional<MatrixSite> site;
      try {
        site = thread_gemm_site(k, b, h, out);
      } catch (const UserError&) {
        continue; // an unbound range
      }
      if (!site) continue;
      Primitive tg;
      tg.kind = PrimitiveKind::ThreadGemm;
      tg.buffer = out;
      if (!try_add({tg})) continue;
      matrix_outputs.insert(out);
      for (std::string& r : thread_gemm_reasons(*site, thread_gemm_tiles(k, *site, h), h))
        a.reasons.push_back(std::move(r));
    }
  }
  for (const Comprehension& c : given.body) {
    const TensorDecl* t = given.find_tensor(c.output);
    if (!t || (t->dtype != DType::BF16 && t->dtype != DType::F16) || c.reduce == ReduceKind::Assign ||
        c.reduction_vars.empty() || c.is_indirect_store() || matrix_outputs.count(c.output))
      continue;
    Primitive w;
    w.kind = PrimitiveKind::Widen;
    w.buffer = c.output;
    std::string local;
    try {
      Kernel widened = widen_accumulator(k, c.output, &local);
      bool blocks = false;
      for (const GemmSite& site : gemm_sites(widened, b, h)) blocks |= site.output == local;
      if (!blocks || !try_add({w})) continue;
      k = std::move(widened);
    } catch (const UserError&) {
      continue;
    }
    a.reasons.push_back(fmt::format("{}: accumulated in the f32 local {} and rounded to {} once (widen)", c.output,
                                    local, dtype_name(t->dtype)));
  }
  // Contractions reading an operand across the output's unit-stride axis (`W[n, k]` in
  // `Y[m, n] += X[m, k] * W[n, k]`) read a transposed copy of it (Pretranspose.cpp),
  // when that makes them GEMM sites. Attention chains are left to flash attention.
  {
    std::set<std::string> attention_outputs;
    for (const AttentionSite& site : attention_sites(k, b))
      for (size_t n = site.first; n <= site.first + 3 && n < k.body.size(); ++n)
        attention_outputs.insert(k.body[n].output);
    std::vector<std::pair<std::string, std::string>> candidates; // (operand, statement output)
    for (const Comprehension& c : k.body) {
      if (c.reduce != ReduceKind::Add || c.reduction_vars.size() != 1 || c.is_indirect_store() ||
          c.indices.empty() || attention_outputs.count(c.output) || matrix_outputs.count(c.output))
        continue;
      const std::string& j = c.indices.back();
      std::set<std::string> seen;
      visit(c.value, [&](const Expr& e) {
        if (e->kind != ExprKind::Access || seen.count(e->name) || e->operands.empty()) return;
        bool plain = true, moves = false;
        for (const Expr& i : e->operands) {
          plain &= i->kind == ExprKind::Var;
          moves |= i->kind == ExprKind::Var && i->name == j;
        }
        const Expr& last = e->operands.back();
        if (plain && moves && !(last->kind == ExprKind::Var && last->name == j)) {
          seen.insert(e->name);
          candidates.emplace_back(e->name, c.output);
        }
      });
    }
    for (const auto& [operand, on] : candidates) {
      bool already = false;
      for (const GemmSite& site : gemm_sites(k, b, h)) already |= site.output == on;
      if (already) continue;
      std::string local;
      try {
        Kernel moved = pretranspose_operand(k, operand, on, &local);
        bool blocks = false;
        for (const GemmSite& site : gemm_sites(moved, b, h)) blocks |= site.output == on;
        Primitive pt;
        pt.kind = PrimitiveKind::Pretranspose;
        pt.buffer = operand;
        pt.on = on;
        if (!blocks || !try_add({pt})) continue;
        k = std::move(moved);
      } catch (const UserError&) {
        continue;
      }
      a.reasons.push_back(fmt::format("{}: reads {} across its last index; {} holds it transposed so the "
                                      "contraction is a GEMM (pretranspose)",
                                      on, operand, local));
    }
  }
  auto [l1, l2] = cache_sizes(h);
  std::set<size_t> gemm_statements; // and fused attention statements
  for (const AttentionSite& site : attention_sites(k, b)) {
    // On blocks of SIMT threads: a block of threads per query block, the tiles staged in
    // shared memory (FlashThreads); else, or where those tiles do not fit, the CPU shape.
    if (simt_blocks(h)) {
      std::string why;
      if (std::optional<FlashThreads> ft = flash_threads(k, b, site.output, h, &why)) {
        Primitive fa;
        fa.kind = PrimitiveKind::FlashAttention;
        fa.buffer = site.output;
        fa.factors = {ft->rows, ft->keys, ft->threads_y, ft->threads_x};
        if (try_add({fa})) {
          for (size_t n = site.first; n <= site.first + 3; ++n) gemm_statements.insert(n);
          for (std::string& r : flash_thread_reasons(k, b, site.output, *ft, h)) a.reasons.push_back(std::move(r));
          continue;
        }
      } else {
        a.reasons.push_back(fmt::format("{}: no flash attention on blocks of threads: {}", site.output, why));
      }
    }
    const FlashBlocks fb = flash_blocks(site, h);
    Primitive fa;
    fa.kind = PrimitiveKind::FlashAttention;
    fa.buffer = site.output;
    fa.factors = {fb.rows, fb.keys};
    if (!try_add({fa})) continue;
    for (size_t n = site.first; n <= site.first + 3; ++n) gemm_statements.insert(n);
    for (std::string& r : flash_reasons(site, fb, h)) a.reasons.push_back(std::move(r));
  }
  for (const GemmSite& site : gemm_sites(k, b, h)) {
    if (matrix_outputs.count(site.output)) {
      gemm_statements.insert(site.statement);
      continue;
    }
    const GemmTiling& t = site.tiling;
    // The whole GEMM schedule, else without packing, else blocking only.
    GemmTiling unpacked = t;
    unpacked.pack_a = unpacked.pack_b = false;
    bool blocked = true;
    if (!try_add(gemm_schedule(site, t)) && !try_add(gemm_schedule(site, unpacked))) {
      std::vector<Primitive> plain = gemm_schedule(site, unpacked);
      std::erase_if(plain, [](const Primitive& x) {
        return x.kind == PrimitiveKind::MicroKernel || x.kind == PrimitiveKind::Unroll;
      });
      if (!try_add(plain)) continue;
      blocked = false;
    }
    gemm_statements.insert(site.statement);
    const int lanes = std::max(1, h.lanes_for(site.dtype));
    const int64_t bytes = dtype_bytes(site.dtype);
    const int64_t vectors = (t.nr + lanes - 1) / lanes;
    a.reasons.push_back(fmt::format(
        "{} (statement {}): contraction {}x{}x{} over '{}', register-blocked GEMM{}", site.output,
        site.statement, site.M, site.N, site.K, site.k, blocked ? "" : " (micro-kernel did not apply)"));
    a.reasons.push_back(fmt::format(
        "  registers: {}x{} tile = {} accumulators of {} x {} lanes + {} for a B row + 1 A broadcast = {} of {} "
        "vector registers ({}-bit)",
        t.mr, t.nr, t.mr * vectors, vectors, lanes, vectors, t.mr * vectors + vectors + 1, h.vector_registers,
        h.vector_bits));
    if (t.nr * t.kc * bytes > l1)
      a.reasons.push_back(fmt::format("  L1: kc={}: the B micro-panel ({}x{}, {}) is larger than L1 ({}) and streams "
                                      "from L2 with the A micro-panel ({}x{}); C's tile is reloaded once per {} steps",
                                      t.kc, t.kc, t.nr, kib(t.nr * t.kc * bytes), kib(l1), t.mr, t.kc, t.kc));
    else
      a.reasons.push_back(fmt::format("  L1: kc={} so the B micro-panel ({}x{}) takes {} of {}{}", t.kc, t.kc, t.nr,
                                      kib(t.nr * t.kc * bytes), kib(l1),
                                      (t.mr + t.nr) * t.kc * bytes <= l1
                                          ? fmt::format(", with the A micro-panel ({}x{}) {}", t.mr, t.kc,
                                                        kib((t.mr + t.nr) * t.kc * bytes))
                                          : fmt::format("; the A micro-panel ({}x{}) streams from L2", t.mr, t.kc)));
    const int64_t l3 = last_level_cache(h);
    a.reasons.push_back(fmt::format("  L2: packed A block mc={} x kc={} takes {} of {}", t.mc, t.kc,
                                    kib(t.mc * t.kc * bytes), kib(l2)));
    a.reasons.push_back(fmt::format("  {}: packed B block kc={} x nc={} takes {}{}", l3 > l2 && t.nc * t.kc * bytes > l2 / 2 ? "L3" : "L2",
                                    t.kc, t.nc, kib(t.nc * t.kc * bytes),
                                    site.M <= t.mc ? " (one A block: B is read once, kept in L2)" : ""));
    int64_t tasks = ((site.M + t.mg - 1) / t.mg) * ((site.N + t.ng - 1) / t.ng);
    a.reasons.push_back(fmt::format("  threads: {} parallel blocks of {}x{}{} over {} compute units (B packed {} "
                                    "times, A {} times per kc)",
                                    tasks, t.mg, t.ng, site.batch.empty() ? "" : " per batch", h.units,
                                    (site.M + t.mg - 1) / t.mg,
                                    ((site.N + t.ng - 1) / t.ng) * (t.a_whole ? 1 : (t.ng + t.nc - 1) / t.nc)));
    if (t.a_whole)
      a.reasons.push_back(fmt::format("  A packed once per parallel block ({}x{}, {}) instead of once per nc columns",
                                      t.mg, site.K, kib(t.mg * site.K * bytes)));
    if (blocked && h.kind == hcd::DeviceKind::Cpu)
      a.reasons.push_back(fmt::format("  prefetch: each {}x{} tile hints the next tile's {} rows of {} into the cache "
                                      "before its reduction loop{}",
                                      t.mr, t.nr, t.mr, site.output,
                                      t.kc < site.K ? fmt::format(" ({} is reloaded once per kc block)", site.output)
                                                    : ""));
    if (blocked && t.ku > 1)
      a.reasons.push_back(fmt::format("  unroll: the reduction loop in the register tile {} times by the host compiler "
                                      "({} FMAs per loop step)", t.ku, t.ku * t.mr * vectors));
    // A local result mapped elementwise by the next statement: the map runs on the
    // finished tiles in this launch (Epilogue.cpp) and the local is never stored.
    const TensorDecl* out = k.find_tensor(site.output);
    // Only when that next statement is the map itself: a statement in between may produce
    // a value the map reads, which the fused launch would read before it exists.
    std::function<bool(const Expr&)> reads_output = [&](const Expr& e) {
      if (e->kind == ExprKind::Access && e->name == site.output) return true;
      for (const Expr& o : e->operands)
        if (reads_output(o)) return true;
      return false;
    };
    if (out && out->role == TensorRole::Local && site.statement + 1 < k.body.size() &&
        reads_output(k.body[site.statement + 1].value)) {
      Primitive ep;
      ep.kind = PrimitiveKind::Epilogue;
      ep.buffer = site.output;
      if (try_add({ep})) {
        gemm_statements.insert(site.statement + 1);
        a.reasons.push_back(fmt::format("  epilogue: {} = map of {} runs on each finished {}x{} tile after the last "
                                        "kc block, in this launch; {} is never stored",
                                        k.body[site.statement + 1].output, site.output, t.mr, t.nr, site.output));
      }
    }
  }
  // Per-slice chains in one launch.
  for (size_t n = 0; n + 1 < k.body.size(); ++n) {
    const Comprehension& c = k.body[n];
    const TensorDecl* t = k.find_tensor(c.output);
    if (!t || t->role != TensorRole::Local || gemm_statements.count(n)) continue;
    const Comprehension& next = k.body[n + 1];
    if (next.indices.empty()) continue;
    Primitive ca;
    ca.kind = PrimitiveKind::ComputeAt;
    ca.buffer = c.output;
    ca.at = next.indices[0];
    // A slice of lower rank than the statement reading it (softmax's row statistics
    // m[i0, i1] of a rank-3 X): the producer runs per innermost slice (one row, at i1),
    // not per outermost index (512 rows that do not stay in L1), if that is legal.
    const size_t rank = t->shape.size();
    bool placed = false;
    // The loop at depth rank - 1 must be one of the consumer's own (output) loops: a
    // consumer with fewer of them than the slice's rank (`Y[i0] += t[i0, i1] * W[i0, i1,
    // i2]`, reducing over i1 and i2) has no `next.indices[rank - 1]`; reading it anyway
    // was the python suite's segfault (tests/lit/schedule/compute-at-nested.ut, Deep).
    if (rank >= 2 && rank <= next.indices.size() && rank < next.indices.size() + next.reduction_vars.size()) {
      Primitive inner = ca;
      inner.at = next.indices[rank - 1];
      placed = try_add({inner});
      if (placed) ca = inner;
    }
    if (placed || try_add({ca}))
      a.reasons.push_back(fmt::format("{}: computed inside the loop '{}' of the statement writing {} (one launch, "
                                      "the slice stays in L1)",
                                      c.output, ca.at, next.output));
  }
  // A slice's reduction whose terms the next loop computes again (softmax's exps): on a
  // CPU the reduction keeps them in a row buffer that fits half of L1 (next to the
  // slice itself) and the map reads them (KeepTerms.cpp).
  LoopProgram p = lower(s);
  if (h.kind == hcd::DeviceKind::Cpu) {
    for (const LoopFunc& f : p.funcs) {
      const Stmt& loop = slice_loop(f.body);
      if (loop->kind != StmtKind::For || loop->body[0]->kind != StmtKind::Block) continue;
      std::string written; // the func's output, to name the launch
      std::set<std::string> stored;
      std::function<void(const Stmt&)> find = [&](const Stmt& x) {
        if (x->kind == StmtKind::Store) {
          const LoopBuffer* buf = p.find_buffer(x->buffer);
          if (buf && buf->role == TensorRole::Output && written.empty()) written = x->buffer;
          if (buf && buf->role == TensorRole::Local) stored.insert(x->buffer);
        }
        for (const Stmt& c : x->body) find(c);
      };
      find(loop);
      if (written.empty()) continue;
      for (const Stmt& x : loop->body[0]->body) {
        if (x->kind != StmtKind::For) continue;
        auto extent = const_int_value(x->extent);
        int64_t bytes = 0;
        for (const std::string& local : stored) {
          const LoopBuffer* buf = p.find_buffer(local);
          bytes = std::max<int64_t>(bytes, extent.value_or(0) * dtype_bytes(buf->dtype));
        }
        if (bytes == 0 || bytes > l1 / 2) break;
        for (const std::string& local : stored) {
          Primitive keep;
          keep.kind = PrimitiveKind::KeepTerms;
          keep.buffer = local;
          keep.at = loop->var;
          keep.on = written;
          if (try_add({keep}))
            a.reasons.push_back(fmt::format("{}: the reduction into {} keeps its terms in a row buffer of {} "
                                            "(half of L1 {} at most) for the loop writing {}, which reads them "
                                            "instead of computing them again (keep_terms)",
                                            written, local, kib(bytes), kib(l1), written));
        }
        break;
      }
    }
    p = lower(s);
  }
  // Scatters whose unit-stride output index is a plain loop (`dW[Idx[i], d] += dY[i, d]`,
  // the gradients of embedding, gather, index_select): lowered, the spatial `d` is the
  // outer loop and the scatter loop runs inside it, so each `d` walks dY down a column,
  // one element per cache line. On a CPU `d` is split into one chunk per compute unit
  // (the chunks touch disjoint columns, so they run in parallel; the scatter loop may
  // not) and its inner part moves innermost and is vectorized: each point of the
  // scatter loop reads one contiguous row piece. Per output element the scatter points
  // still come in their order, so `=` scatters keep "the last point wins".
  if (h.kind == hcd::DeviceKind::Cpu) {
    for (const Comprehension& c : k.body) {
      if (!c.is_indirect_store() || c.store_indices.back()->kind != ExprKind::Var) continue;
      const std::string v = c.store_indices.back()->name;
      bool elsewhere = false; // `v` inside another index: the lanes would not be contiguous
      for (size_t n = 0; n + 1 < c.store_indices.size(); ++n) elsewhere |= depends_on(c.store_indices[n], v);
      if (elsewhere) continue;
      const LoopBuffer* out = p.find_buffer(c.output);
      if (!out) continue;
      const int64_t lanes = std::max(1, h.lanes_for(out->dtype));
      // The launch's perfect nest down to the indirect store into c.output.
      std::vector<Stmt> chain;
      for (const LoopFunc& f : p.funcs) {
        std::vector<Stmt> loops;
        Stmt x = f.body;
        while (x->kind == StmtKind::For && x->body.size() == 1) {
          loops.push_back(x);
          x = x->body[0];
        }
        bool indirect = false;
        if (x->kind == StmtKind::Store && x->buffer == c.output)
          for (const Expr& i : x->indices)
            visit(i, [&](const Expr& e) { indirect |= e->kind == ExprKind::Access; });
        if (indirect) chain = loops;
      }
      size_t at = chain.size();
      for (size_t n = 0; n < chain.size(); ++n)
        if (chain[n]->var == v) at = n;
      if (lanes < 2 || at + 1 >= chain.size()) continue; // no such loop, or it is innermost already
      const int64_t extent = const_int_value(chain[at]->extent).value_or(0);
      if (extent < 2 * lanes) continue;
      // One chunk per compute unit when `v` is the only parallel loop (outermost), a
      // multiple of the lanes that divides the extent (no tail); else `v` whole.
      int64_t chunk = extent;
      if (at == 0)
        for (int64_t f = round_up((extent + h.units - 1) / h.units, lanes); f < extent; f += lanes)
          if (extent % f == 0) {
            chunk = f;
            break;
          }
      // Split even into one chunk: the chunk loop keeps the grid slot, which the scatter
      // loop may not take.
      std::vector<Primitive> prims;
      Primitive order;
      order.kind = PrimitiveKind::Reorder;
      order.on = c.output;
      std::string inner = v;
      {
        Primitive split = split_in_two(v, chunk, c.output);
        prims.push_back(split);
        inner = split.inner;
      }
      for (const Stmt& l : chain)
        order.vars.push_back(l->var != v ? l->var : v + "_o");
      order.vars.push_back(inner);
      prims.push_back(order);
      Primitive vec;
      vec.kind = PrimitiveKind::Vectorize;
      vec.vars = {inner};
      vec.on = c.output;
      prims.push_back(vec);
      if (try_add(prims))
        a.reasons.push_back(fmt::format("{}: scatter over unit-stride '{}' ({} iterations): {}innermost and "
                                        "vectorized, so each scatter point reads a contiguous row piece",
                                        c.output, v, extent,
                                        chunk < extent ? fmt::format("{} chunks of {} in parallel, each ",
                                                                     extent / chunk, chunk)
                                                       : std::string()));
    }
    p = lower(s);
  }
  // Column reductions (`S[j] += X[i, j]`, a bias gradient's sum over the batch rows):
  // lowered, the reduction loop is the launch's outermost loop and the unit-stride
  // output loop its innermost, so there is no spatial loop to run in parallel and one
  // core walks all of X (2048 x 2048 f32 on Zen 4: 0.48 ms on one core of two). On a CPU
  // with several units the output loop is split into bands, a multiple of the lanes that
  // divides its extent, at most one per unit and at most a quarter of L1 of the output
  // each; the band loop moves outermost and runs in parallel, the reduction loop inside
  // it, the band's part innermost and vectorized: each unit streams its own columns of
  // every row into a piece of the output that stays in L1 (on both cores: median 0.34 ms
  // of twelve noisy runs, 0.18 at best).
  if (h.kind == hcd::DeviceKind::Cpu && h.units > 1) {
    for (const Comprehension& c : k.body) {
      if (c.reduce == ReduceKind::Assign || c.is_indirect_store() || c.indices.empty() || c.reduction_vars.empty())
        continue;
      const std::string v = c.indices.back();
      const LoopBuffer* out = p.find_buffer(c.output);
      if (!out) continue;
      const int64_t lanes = std::max(1, h.lanes_for(out->dtype));
      // The perfect nest (a top-level statement of a launch) that updates c.output.
      std::vector<Stmt> chain;
      for (const LoopFunc& f : p.funcs) {
        const std::vector<Stmt> tops = f.body->kind == StmtKind::Block ? f.body->body : std::vector<Stmt>{f.body};
        for (const Stmt& top : tops) {
          std::vector<Stmt> loops;
          Stmt x = top;
          while (x->kind == StmtKind::For && x->body.size() == 1) {
            loops.push_back(x);
            x = x->body[0];
          }
          if (x->kind != StmtKind::Store || x->buffer != c.output || loops.size() < 2) continue;
          bool updates = false; // reads its own output: the reduction, not its initialisation
          visit(x->value, [&](const Expr& e) { updates |= e->kind == ExprKind::Access && e->name == c.output; });
          if (updates) chain = loops;
        }
      }
      if (chain.empty() || chain.back()->var != v) continue;
      const std::vector<std::string>& red = c.reduction_vars;
      if (std::find(red.begin(), red.end(), chain.front()->var) == red.end()) continue;
      const int64_t extent = const_int_value(chain.back()->extent).value_or(0);
      const int64_t band_max = std::min<int64_t>((extent + h.units - 1) / h.units,
                                                 l1 / 4 / std::max(1, dtype_bytes(out->dtype)));
      int64_t band = 0;
      for (int64_t f = band_max / lanes * lanes; f >= lanes && band == 0; f -= lanes)
        if (extent % f == 0) band = f;
      if (band == 0 || band >= extent || band < 2 * lanes) continue;
      const Primitive split = split_in_two(v, band, c.output);
      Primitive order = loop_prim(PrimitiveKind::Reorder, {split.outer}, c.output);
      for (size_t n = 0; n + 1 < chain.size(); ++n) order.vars.push_back(chain[n]->var);
      order.vars.push_back(split.inner);
      const Primitive par = loop_prim(PrimitiveKind::Parallel, {split.outer}, c.output);
      const Primitive vec = loop_prim(PrimitiveKind::Vectorize, {split.inner}, c.output);
      if (try_add({split, order, par, vec}))
        a.reasons.push_back(fmt::format("{}: column reduction over '{}' into unit-stride '{}' ({} iterations): {} "
                                        "bands of {} ({} bytes of the output each, against L1 {}) in parallel over {} "
                                        "compute units, each streaming its columns of every row",
                                        c.output, chain.front()->var, v, extent, extent / band, band,
                                        band * dtype_bytes(out->dtype), kib(l1), h.units));
    }
    p = lower(s);
  }
  // Everything else: the outermost spatial loop in parallel.
  for (const LoopFunc& f : p.funcs) {
    if (f.body->kind != StmtKind::For || f.body->for_kind != ForKind::Serial) continue;
    Primitive par;
    par.kind = PrimitiveKind::Parallel;
    par.vars = {f.body->var};
    // Name the launch by what it writes, so only it is affected.
    std::function<std::string(const Stmt&)> written = [&](const Stmt& x) -> std::string {
      if (x->kind == StmtKind::Store && p.find_buffer(x->buffer)) return x->buffer;
      for (const Stmt& c : x->body)
        if (auto w = written(c); !w.empty()) return w;
      return {};
    };
    par.on = written(f.body);
    if (try_add({par}))
      a.reasons.push_back(fmt::format("{}: loop '{}' ({} iterations) in parallel over {} compute units", par.on,
                                      par.vars[0], *const_int_value(f.body->extent), h.units));
  }
  // Transposing maps on a CPU (`Y[j, i] = X[i, j]`): the store is unit-stride along the
  // inner loop and a load along the outer one, so untiled the load touches a new line,
  // and for rows a page or more apart a new page, every element (2048 x 2048 f32 on the
  // AVX-512 Xeon, two threads: 15 ms). Both loops are tiled so that the load's lines of
  // a tile stay in L1 until every element of them is used: the inner (store) side two
  // lines of elements, the outer (load) side twice that, halved while the tile's reads
  // and writes together would take more than half of L1 (2048 x 2048 f32: 64 x 32,
  // 1.8 ms; 16 x 16 3.7, 32 x 32 2.4, 64 x 16 2.3, 128 x 16 2.1 ms).
  p = lower(s);
  if (h.kind == hcd::DeviceKind::Cpu) {
    for (const LoopFunc& f : p.funcs) {
      // The innermost two loops of a perfect nest (a batched transpose's batch loops
      // stay outside the tiles).
      const Stmt* at = &f.body;
      while ((*at)->kind == StmtKind::For && (*at)->body.size() == 1 && (*at)->body[0]->kind == StmtKind::For &&
             (*at)->body[0]->body.size() == 1 && (*at)->body[0]->body[0]->kind == StmtKind::For)
        at = &(*at)->body[0];
      const Stmt& outer = *at;
      if (outer->kind != StmtKind::For || outer->body.size() != 1 ||
          (outer->for_kind != ForKind::GridX && outer->for_kind != ForKind::Parallel &&
           outer->for_kind != ForKind::Serial))
        continue;
      const Stmt& inner = outer->body[0];
      if (inner->kind != StmtKind::For || inner->for_kind != ForKind::Serial || inner->body.size() != 1 ||
          inner->body[0]->kind != StmtKind::Store)
        continue;
      const Stmt& st = inner->body[0];
      const LoopBuffer* out = p.find_buffer(st->buffer);
      auto oe = const_int_value(outer->extent), ie = const_int_value(inner->extent);
      auto is_var = [](const Expr& e, const std::string& v) { return e->kind == ExprKind::Var && e->name == v; };
      if (!out || !oe || !ie || st->indices.empty() || !is_var(st->indices.back(), inner->var)) continue;
      bool transposing = false;
      visit(st->value, [&](const Expr& e) {
        if (e->kind != ExprKind::Access || e->operands.size() < 2 || !is_var(e->operands.back(), outer->var)) return;
        for (size_t d = 0; d + 1 < e->operands.size(); ++d) transposing |= is_var(e->operands[d], inner->var);
      });
      if (!transposing) continue;
      const int64_t bytes = dtype_bytes(out->dtype);
      int64_t line_bytes = 64; // the first cache level's line
      for (const hcd::MemoryLevel& l : h.memory)
        if (l.scope != "register" && l.scope != "global" && l.line_bytes > 0) {
          line_bytes = l.line_bytes;
          break;
        }
      const int64_t line = std::max<int64_t>(1, line_bytes / bytes);
      int64_t ti = 2 * line, to = 4 * line;
      while (to * ti * bytes * 2 > l1 / 2 && ti > line) {
        ti /= 2;
        to /= 2;
      }
      if (*ie < 2 * ti || *oe < 2 * to) continue; // ragged edges are guarded tiles
      Primitive tile;
      tile.kind = PrimitiveKind::Tile;
      tile.vars = {outer->var, inner->var};
      tile.factors = {to, ti};
      tile.on = st->buffer;
      if (try_add({tile}))
        a.reasons.push_back(fmt::format("{}: transposing map, loops '{}' and '{}' tiled {} x {} ({} of reads and "
                                        "writes per tile against L1 {}): the load along '{}' and the store along "
                                        "'{}' both use whole lines",
                                        st->buffer, outer->var, inner->var, to, ti, kib(to * ti * bytes * 2), kib(l1),
                                        outer->var, inner->var));
    }
  }
  // Maps whose only loop is on the grid (a 1-D elementwise map): on a CPU a block is a
  // call on one core, so one element per block is all call overhead; the loop is split
  // into chunks (the grid runs them in parallel) whose inner loop is vectorized.
  p = lower(s);
  if (h.kind == hcd::DeviceKind::Cpu) {
    for (const LoopFunc& f : p.funcs) {
      const Stmt& loop = f.body;
      if (loop->kind != StmtKind::For || loop->for_kind != ForKind::GridX || loop->body[0]->kind != StmtKind::Store)
        continue;
      const Stmt& st = loop->body[0];
      const LoopBuffer* out = p.find_buffer(st->buffer);
      auto extent = const_int_value(loop->extent);
      if (!out || !extent) continue;
      const MapChunk chunk = map_chunk(st, p, *extent, h);
      if (chunk.elements == 0) continue;
      const Primitive split = split_in_two(loop->var, chunk.elements, st->buffer);
      const Primitive vec = loop_prim(PrimitiveKind::Vectorize, {split.inner}, st->buffer);
      if (try_add({split, vec}))
        a.reasons.push_back(fmt::format("{}: 1-D map of {} elements in {} chunks of {} ({} bytes per element, "
                                        "{} per chunk against L1 {}), each a vector loop; the chunks run in "
                                        "parallel over {} compute units",
                                        st->buffer, *extent, (*extent + chunk.elements - 1) / chunk.elements,
                                        chunk.elements, chunk.bytes_per_element,
                                        kib(chunk.elements * chunk.bytes_per_element), kib(l1), h.units));
    }
  }
  // Reductions into a register accumulator along a unit-stride loop: one partial result
  // per vector lane (VectorizeReduction.cpp), so the loop runs at vector width.
  // (Not on SIMT threads: their "vector" width is a wide load, not lanes that add.)
  p = lower(s);
  std::set<std::pair<std::string, std::string>> vectorized;
  if (simt_blocks(h)) p.funcs.clear();
  for (const LoopFunc& f : p.funcs) {
    std::string out;
    std::function<void(const Stmt&)> find_out = [&](const Stmt& x) {
      if (x->kind == StmtKind::Store && p.find_buffer(x->buffer) && out.empty()) out = x->buffer;
      for (const Stmt& c : x->body) find_out(c);
    };
    find_out(f.body);
    std::function<void(const Stmt&)> walk = [&](const Stmt& x) {
      if (x->kind == StmtKind::Allocate && x->scope == MemScope::Register && x->shape == std::vector<int64_t>{1}) {
        const int lanes = std::max(1, h.lanes_for(x->dtype));
        const std::vector<Stmt>& stmts = x->body[0]->kind == StmtKind::Block ? x->body[0]->body : x->body;
        for (const Stmt& loop : stmts)
          if (lanes > 1 && is_vectorizable_reduction(loop, x->buffer, lanes) &&
              vectorized.insert({loop->var, out}).second) {
            Primitive vec;
            vec.kind = PrimitiveKind::Vectorize;
            vec.vars = {loop->var};
            vec.on = out;
            if (try_add({vec}))
              a.reasons.push_back(fmt::format("{}: reduction over '{}' ({} iterations) in {} vector lanes of {}",
                                              out, loop->var, *const_int_value(loop->extent), lanes,
                                              dtype_name(x->dtype)));
          }
      }
      for (const Stmt& c : x->body) walk(c);
    };
    walk(f.body);
  }
  // Multi-pass slices on a CPU (a per-slice chain: max, sum, normalise of a row): only
  // the first pass reads memory, the later ones find the slice in L1. The last pass
  // that reads the slice hints the caches with the next one (Prefetch.cpp), so memory
  // streams while the core computes. Only for inputs larger than L2 (they come from
  // further out) that two passes or more read.
  if (h.kind == hcd::DeviceKind::Cpu) {
    const int64_t l2_bytes = cache_sizes(h).second;
    p = lower(s);
    for (const LoopFunc& f : p.funcs) {
      const Stmt& loop = f.body;
      if (loop->kind != StmtKind::For || loop->for_kind != ForKind::GridX || !const_int_value(loop->extent))
        continue;
      // The loop nests of the slice, in order, and what each reads.
      std::vector<std::set<std::string>> nests;
      std::function<void(const Stmt&)> walk = [&](const Stmt& x) {
        if (x->kind == StmtKind::For) {
          nests.emplace_back();
          std::function<void(const Stmt&)> reads = [&](const Stmt& y) {
            for (const Expr& e : {y->value, y->cond})
              if (e) visit(e, [&](const Expr& r) {
                  if (r->kind == ExprKind::Access) nests.back().insert(r->name);
                });
            for (const Stmt& c : y->body) reads(c);
          };
          reads(x);
          return;
        }
        if (x->kind == StmtKind::Block || x->kind == StmtKind::Let || x->kind == StmtKind::Allocate)
          for (const Stmt& c : x->body) walk(c);
      };
      const Stmt& slice = slice_loop(loop);
      walk(slice->body[0]);
      if (nests.size() < 2) continue;
      std::string written;
      std::function<void(const Stmt&)> find_out = [&](const Stmt& x) {
        if (x->kind == StmtKind::Store && written.empty()) {
          const LoopBuffer* buf = p.find_buffer(x->buffer);
          if (buf && buf->role == TensorRole::Output) written = x->buffer;
        }
        for (const Stmt& c : x->body) find_out(c);
      };
      find_out(loop);
      if (written.empty()) continue;
      // What one slice keeps in L1 while its passes run: its part of each tensor it
      // reads (a row of X; all of gamma) and the buffers it allocates (keep_terms' row of
      // terms). Written tensors are left out: an output this large is streamed past the
      // caches (below).
      std::map<std::string, int64_t> slice_part; // tensor -> bytes one slice reads
      std::function<void(const Stmt&)> parts = [&](const Stmt& x) {
        for (const Expr& e : {x->value, x->cond})
          if (e) visit(e, [&](const Expr& r) {
              if (r->kind != ExprKind::Access || slice_part.count(r->name)) return;
              const LoopBuffer* buf = p.find_buffer(r->name);
              if (!buf) return;
              int64_t bytes = dtype_bytes(buf->dtype);
              for (int64_t d : buf->shape) bytes *= d;
              for (size_t d = 0; d < r->operands.size() && d < buf->shape.size(); ++d)
                if (depends_on(r->operands[d], slice->var)) {
                  bytes /= std::max<int64_t>(1, buf->shape[d]);
                  break;
                }
              slice_part[r->name] = bytes;
            });
        if (x->kind == StmtKind::Allocate) {
          int64_t bytes = dtype_bytes(x->dtype);
          for (int64_t d : x->shape) bytes *= d;
          slice_part["allocation " + x->buffer] = bytes;
        }
        for (const Stmt& c : x->body) parts(c);
      };
      parts(slice->body[0]);
      int64_t resident = 0;
      for (const auto& [name, bytes] : slice_part) resident += bytes;
      const int64_t l1_bytes = cache_sizes(h).first;
      for (const LoopBuffer& buf : p.buffers) {
        int64_t bytes = dtype_bytes(buf.dtype);
        for (int64_t d : buf.shape) bytes *= d;
        int passes = 0; // nests that read it: the first from memory, a later one from L1
        for (const std::set<std::string>& nest : nests) passes += nest.count(buf.name) > 0;
        if (buf.role != TensorRole::Input || bytes <= l2_bytes || passes < 2) continue;
        // The next slice's part on top of this one's: where that overflows L1, the hint
        // fills L2 and leaves L1 to the lines in use (on Zen 4, 32 KiB L1: softmax's row,
        // terms and next row 48 KiB, 1.86 -> 1.62 us a row; layernorm 1.67 -> 1.42).
        const int64_t next = slice_part.count(buf.name) ? slice_part.at(buf.name) : 0;
        const int level = resident + next > l1_bytes ? 2 : 1;
        Primitive pf;
        pf.kind = PrimitiveKind::Prefetch;
        pf.buffer = buf.name;
        pf.at = slice->var;
        pf.on = written;
        if (level != 1) pf.factors = {level};
        if (try_add({pf}))
          a.reasons.push_back(fmt::format(
              "{}: the last loop nest of each '{}' slice that reads {} prefetches it for the next slice ({} of {} "
              "exceeds L2 {}: the first pass would wait on memory), into L{} (a slice holds {} in L1; with the "
              "next one's {} of {}, {} {} L1 {})",
              written, slice->var, buf.name, buf.name, kib(bytes), kib(l2_bytes), level, kib(resident), kib(next),
              buf.name, kib(resident + next), level == 2 ? "exceeds" : "fits", kib(l1_bytes)));
      }
    }
  }
  // Outputs written once and never read back by the kernel, on a CPU, by a launch whose
  // buffers together exceed the last-level cache: streaming stores skip reading each
  // line before writing it (StreamStores.cpp), and the output's first lines would be
  // gone from the cache before a consumer came for them anyway (the launch's own
  // stream evicts them). Add of 4 M f32 (48 MiB; Zen 4, 32 MiB L3): 2.0-2.2 -> 1.0-1.2
  // ms on one thread, 1.3-1.8 -> 0.8-0.9 on two; 3 M (36 MiB): 1.5 -> 0.8-0.9 and 0.83-0.88
  // -> 0.55. (The output alone exceeding the cache was the rule before: Add's 16 MiB
  // output was not streamed.) Not for GEMM outputs (their tiles are the GEMM path's).
  // The last level counts for at most 16 MiB per CPU sharing it (Hcd::kept_cache_bytes):
  // on the AVX-512 Xeon's 480 MiB socket L3, softmax's 64 MiB output written with
  // streaming stores ran at 0.78 of the triad against 0.62.
  if (h.kind == hcd::DeviceKind::Cpu) {
    const int64_t llc = h.kept_cache_bytes();
    std::set<std::string> gemm_outputs;
    for (size_t n : gemm_statements)
      if (n < k.body.size()) gemm_outputs.insert(k.body[n].output);
    p = lower(s);
    auto buffer_bytes = [](const LoopBuffer& buf) {
      int64_t bytes = dtype_bytes(buf.dtype);
      for (int64_t d : buf.shape) bytes *= d;
      return bytes;
    };
    for (const LoopBuffer& buf : p.buffers) {
      if (buf.role != TensorRole::Output || llc == 0 || gemm_outputs.count(buf.name)) continue;
      int writers = 0;
      bool read = false;
      int64_t footprint = 0; // the inputs and outputs of the launch that writes it
      for (const LoopFunc& f : p.funcs) {
        bool writes = false;
        std::set<std::string> touched;
        auto note = [&](const Expr& e) {
          visit(e, [&](const Expr& r) {
            if (r->kind != ExprKind::Access) return;
            read |= r->name == buf.name;
            touched.insert(r->name);
          });
        };
        std::function<void(const Stmt&)> walk = [&](const Stmt& x) {
          writes |= x->kind == StmtKind::Store && x->buffer == buf.name;
          if (x->kind == StmtKind::Store) touched.insert(x->buffer);
          for (const Expr& e : {x->min, x->extent, x->cond, x->value})
            if (e) note(e);
          for (const Expr& i : x->indices) note(i);
          for (const Stmt& c : x->body) walk(c);
        };
        walk(f.body);
        writers += writes;
        if (writes)
          for (const std::string& name : touched)
            if (const LoopBuffer* t = p.find_buffer(name); t && t->role != TensorRole::Local)
              footprint += buffer_bytes(*t);
      }
      const int64_t bytes = buffer_bytes(buf);
      if (writers != 1 || read || footprint <= llc) continue;
      Primitive st;
      st.kind = PrimitiveKind::Stream;
      st.buffer = buf.name;
      if (try_add({st}))
        a.reasons.push_back(fmt::format("{}: written with streaming stores ({}, in a launch whose buffers take {}, "
                                        "more than the last-level cache {}: the lines need not be read before they "
                                        "are written)",
                                        buf.name, kib(bytes), kib(footprint), kib(llc)));
    }
  }
  // Per-slice chains on a CPU: the output loop's divisions and math calls of the slice's
  // statistics (layernorm's rsqrt(var[i] + eps)) are computed once per slice, before the
  // loop; the C compiler keeps them in it (HoistInvariants.cpp).
  if (h.kind == hcd::DeviceKind::Cpu) {
    p = lower(s);
    for (const LoopFunc& f : p.funcs) {
      // The slice loop: the one whose body is a chain of statements, or in a nest of
      // single loops ending in a store (a map: `Y[i, j] = A[i, j] * sigmoid(c[i])`), the
      // loop around the innermost one.
      const Stmt* slice = &slice_loop(f.body);
      if ((*slice)->kind == StmtKind::For && (*slice)->body[0]->kind == StmtKind::Store) {
        const Stmt* parent = nullptr;
        for (const Stmt* l = &f.body; (*l)->kind == StmtKind::For && l != slice;) {
          parent = l;
          const Stmt& b = (*l)->body[0];
          l = b->kind == StmtKind::For ? &b : &b->body[0];
        }
        if (!parent) continue;
        slice = parent;
      }
      const Stmt& loop = *slice;
      if (loop->kind != StmtKind::For ||
          (loop->body[0]->kind != StmtKind::Block && loop->body[0]->kind != StmtKind::For))
        continue;
      std::set<std::string> outputs;
      std::function<void(const Stmt&)> find = [&](const Stmt& x) {
        if (x->kind == StmtKind::Store) {
          const LoopBuffer* buf = p.find_buffer(x->buffer);
          if (buf && buf->role == TensorRole::Output) outputs.insert(x->buffer);
        }
        for (const Stmt& c : x->body) find(c);
      };
      find(loop);
      for (const std::string& out : outputs) {
        Primitive hoist;
        hoist.kind = PrimitiveKind::Hoist;
        hoist.buffer = out;
        hoist.at = loop->var;
        hoist.on = out;
        if (try_add({hoist}))
          a.reasons.push_back(fmt::format("{}: the divisions and math calls of its loop in '{}' that are the same "
                                          "for the whole slice are computed once, before the loop (hoist)",
                                          out, loop->var));
      }
    }
  }
  // Streamed outputs of multi-pass slices on a CPU (softmax, layernorm): the pass that
  // writes the output runs one slice later, inside the slice's previous pass (Defer.cpp),
  // so its streaming stores go out while the core computes the next slice instead of in
  // one burst at the end of each slice. Only where that previous pass is not the slice's
  // first: it then reads its row from L1 (rmsnorm, whose only other pass is the first,
  // the one that reads the row from memory, ran 6% slower with it on one Zen 4 core;
  // softmax and layernorm 13-14% faster). Chunks of 16 slices where the slice count
  // allows (a multiple of 16, four chunks per compute unit or more; else 8, then 4).
  if (h.kind == hcd::DeviceKind::Cpu) {
    p = lower(s);
    for (const LoopFunc& f : p.funcs) {
      const Stmt& loop = f.body;
      if (loop->kind != StmtKind::For || loop->for_kind != ForKind::GridX || loop->body[0]->kind == StmtKind::For)
        continue;
      auto n = const_int_value(loop->extent);
      if (!n) continue;
      std::string out;
      for (const LoopBuffer& buf : p.buffers)
        if (buf.role == TensorRole::Output && buf.stream) {
          std::function<bool(const Stmt&)> writes = [&](const Stmt& x) {
            if (x->kind == StmtKind::Store && x->buffer == buf.name) return true;
            for (const Stmt& c : x->body)
              if (writes(c)) return true;
            return false;
          };
          if (writes(loop)) out = buf.name;
        }
      if (out.empty()) continue;
      // The slice's passes: its top-level loop nests (through blocks, lets and
      // allocations), a register allocation counting as one (a reduction's loops).
      int nests = 0;
      std::function<void(const Stmt&)> passes = [&](const Stmt& x) {
        if (x->kind == StmtKind::For || (x->kind == StmtKind::Allocate && x->scope == MemScope::Register)) {
          ++nests;
          return;
        }
        if (x->kind == StmtKind::Block || x->kind == StmtKind::Let || x->kind == StmtKind::Allocate)
          for (const Stmt& c : x->body) passes(c);
      };
      passes(loop->body[0]);
      if (nests < 3) continue;
      int64_t rows = 0;
      for (int64_t r : {16, 8, 4})
        if (!rows && *n % r == 0 && *n / r >= 4 * std::max(1, h.units)) rows = r;
      if (!rows) continue;
      Primitive d;
      d.kind = PrimitiveKind::Defer;
      d.buffer = out;
      d.at = loop->var;
      d.factors = {rows};
      if (try_add({d}))
        a.reasons.push_back(fmt::format("{}: written one '{}' slice later, inside the slice's pass before it, in "
                                        "chunks of {} slices ({} passes a slice: the streaming stores overlap the next "
                                        "slice's compute; defer)",
                                        out, loop->var, rows, nests));
    }
  }
  // Blocks of SIMT threads: every launch still on one thread per block runs its parallel
  // loops on blocks of threads, consecutive threads on consecutive elements (Threads.cpp).
  if (simt_blocks(h)) {
    p = lower(s);
    const int64_t warp = h.warp_size;
    int64_t limit = std::min<int64_t>(h.max_threads_per_block, h.max_block[0]);
    const int64_t block = std::max(warp, limit / 4 / warp * warp);
    std::set<std::pair<std::string, std::string>> done;
    for (const LoopFunc& f : p.funcs) {
      const StmtNode* top = f.body.get();
      while (top->kind == StmtKind::Let) top = top->body[0].get();
      if (top->kind != StmtKind::For) continue;
      if (top->for_kind == ForKind::Serial || top->for_kind == ForKind::Vectorized) {
        // Not on the grid: the outermost loop is a reduction (a column sum `S[j] += X[i,
        // j]` lowered in place: i outside j) or was left vectorized (its init). The first
        // loop of the perfect nest whose iterations are independent moves outermost
        // (reorder) and goes on blocks of threads: one output element per thread, each
        // walking the reduction alone, consecutive threads on consecutive elements.
        std::vector<const StmtNode*> chain{top};
        while (chain.back()->body[0]->kind == StmtKind::For) chain.push_back(chain.back()->body[0].get());
        for (size_t n = 0; n < chain.size(); ++n) {
          const StmtNode* l = chain[n];
          const auto e = const_int_value(l->extent);
          if (!e || const_int_value(l->min) != 0 || !parallel_conflict(top->body[0], l->var).empty() ||
              (n == 0 && !parallel_conflict(f.body, l->var).empty()))
            continue;
          std::string written_out;
          std::function<void(const Stmt&)> find_out = [&](const Stmt& x) {
            if (x->kind == StmtKind::Store && p.find_buffer(x->buffer) && written_out.empty()) written_out = x->buffer;
            for (const Stmt& c : x->body) find_out(c);
          };
          find_out(f.body);
          if (written_out.empty()) break;
          std::vector<Primitive> prims;
          if (n > 0) {
            Primitive order;
            order.kind = PrimitiveKind::Reorder;
            order.vars.push_back(l->var);
            for (size_t q = 0; q < n; ++q) order.vars.push_back(chain[q]->var);
            order.on = written_out;
            prims.push_back(order);
          }
          int64_t t = block;
          while (t > warp && (*e + t - 1) / t < h.units) t = std::max(warp, t / 2 / warp * warp);
          Primitive th;
          th.kind = PrimitiveKind::Threads;
          th.vars = {l->var};
          th.factors = {t};
          th.on = written_out;
          prims.push_back(th);
          if (try_add(prims)) {
            const int64_t used = block_threads(t, *e, h);
            a.reasons.push_back(fmt::format("{}: loop '{}' ({} iterations){} on {} blocks of {} threads, consecutive "
                                            "threads on consecutive '{}'{}",
                                            written_out, l->var, *e, n > 0 ? " moved outermost (reorder)" : "",
                                            (*e + used - 1) / used, used, l->var,
                                            n > 0 ? fmt::format("; each thread runs the reduction over '{}' alone",
                                                                chain[0]->var)
                                                  : ""));
          }
          break;
        }
        continue;
      }
      const ThreadNest nest = thread_nest(f.body, top->var);
      if (nest.loops.empty()) continue;
      // The launch by the tensor it writes: an output where it writes one (a row chain's
      // locals are written first).
      std::string out, local;
      std::function<void(const Stmt&)> written = [&](const Stmt& x) {
        if (x->kind == StmtKind::Store)
          if (const LoopBuffer* buf = p.find_buffer(x->buffer)) {
            if (buf->role == TensorRole::Output && out.empty()) out = x->buffer;
            if (local.empty()) local = x->buffer;
          }
        for (const Stmt& c : x->body) written(c);
      };
      written(f.body);
      if (out.empty()) out = local;
      if (out.empty() || !done.insert({out, top->var}).second) continue;
      // A row chain whose rows are at least a warp long: a block per row, its threads
      // sharing the row (BlockRows.cpp): the row's longest loop rounded up to a power of
      // two, at most a quarter of a block's limit, at least a warp.
      if (const int64_t row = block_rows_extent(f.body, top->var); row >= warp) {
        int64_t t = warp;
        while (t * 2 <= block && t < row) t *= 2;
        Primitive br;
        br.kind = PrimitiveKind::BlockRows;
        br.vars = {top->var};
        br.factors = {t};
        br.on = out;
        if (try_add({br})) {
          a.reasons.push_back(fmt::format(
              "{}: each of the {} rows of '{}' on a block of {} threads ({} warps of {}): thread t takes elements t, "
              "t + {}, ... of each loop of the row (coalesced, {} per thread for the longest, {}), each reduction "
              "combined through a shared array of {} partial results in {} halving steps, barriers between the steps "
              "(block_rows)",
              out, nest.iterations, top->var, t, t / warp, warp, t, (row + t - 1) / t, row, t,
              std::countr_zero(static_cast<uint64_t>(t))));
          continue;
        }
      }
      // A quarter of a block's limit (several blocks per compute unit hide latency),
      // halved down to one warp while there are fewer blocks than compute units.
      int64_t t = block;
      while (t > warp && (nest.iterations + t - 1) / t < h.units) t = std::max(warp, t / 2 / warp * warp);
      Primitive th;
      th.kind = PrimitiveKind::Threads;
      th.vars = {top->var};
      th.factors = {t};
      th.on = out;
      if (!try_add({th})) continue;
      const int64_t used = block_threads(t, nest.iterations, h);
      std::string loops;
      for (const std::string& l : nest.loops) loops += (loops.empty() ? "'" : ", '") + l + "'";
      a.reasons.push_back(fmt::format(
          "{}: loop{} {} ({} iterations) on {} blocks of {} threads ({} warp{} of {}) over {} compute units; "
          "consecutive threads take consecutive '{}'{}",
          out, nest.loops.size() > 1 ? "s" : "", loops, nest.iterations, (nest.iterations + used - 1) / used, used,
          (used + warp - 1) / warp, used > warp ? "s" : "", warp, h.units, nest.loops.back(),
          nest.per_thread_loops ? fmt::format(" and each runs the loops inside '{}' alone (one per thread, not "
                                              "cooperative)",
                                              nest.loops.back())
                                : " (coalesced)"));
    }
  }
  if (a.reasons.empty()) a.reasons.push_back("default schedule: nothing to block or fuse");
  a.reasons.push_back(fmt::format("vector width: {} bits ({} f32 lanes)", h.vector_bits, h.lanes_for(DType::F32)));
  if (last && last_json == to_json(s)) a.program = std::move(last);
  return a;
}

} // namespace unitile
