// The matrix-unit launch of a contraction (see MatrixUnit.h).
#include "schedule/MatrixUnit.h"

#include "schedule/LoopRewrite.h"
#include "schedule/ShapeEval.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <set>

namespace unitile {

namespace {

Expr imm(int64_t v) { return int_imm(v); }
Expr add(Expr a, Expr b) { return binary(BinaryOp::Add, std::move(a), std::move(b)); }
Expr mul(Expr a, Expr b) { return binary(BinaryOp::Mul, std::move(a), std::move(b)); }
Expr floor_div(Expr a, int64_t b) { return binary(BinaryOp::FloorDiv, std::move(a), imm(b)); }
Expr mod(Expr a, int64_t b) { return binary(BinaryOp::Mod, std::move(a), imm(b)); }
Expr less(Expr a, int64_t b) { return binary(BinaryOp::Lt, std::move(a), imm(b)); }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string kib(int64_t bytes) {
  return bytes % 1024 == 0 ? fmt::format("{} KiB", bytes / 1024) : fmt::format("{:.1f} KiB", bytes / 1024.0);
}

// An operand: an unguarded access with distinct plain index variables (a cast to a float
// type around it is looked through).
const ExprNode* operand_access(const Expr& e) {
  const ExprNode* x = e.get();
  if (x->kind == ExprKind::Cast && is_float(x->type)) x = x->operands[0].get();
  if (x->kind != ExprKind::Access || x->guard) return nullptr;
  std::set<std::string> seen;
  for (const Expr& i : x->operands)
    if (i->kind != ExprKind::Var || !seen.insert(i->name).second) return nullptr;
  return x;
}

// The site statement's (first) read of `tensor`.
const ExprNode* site_read(const Kernel& k, const MatrixSite& s, const std::string& tensor) {
  const ExprNode* read = nullptr;
  visit(k.body[s.statement].value, [&](const Expr& e) {
    if (e->kind == ExprKind::Access && e->name == tensor && !read) read = e.get();
  });
  return read;
}

bool indexes(const ExprNode* a, const std::string& v) {
  for (const Expr& i : a->operands)
    if (i->name == v) return true;
  return false;
}

// The lets of a task `tv` of a blocked contraction launch: its batch indices (`batch_at`
// maps the batch variables to them), then the first row `i0` and column `j0` of its
// bm x bn block of C, tasks ordered batch, row block, column block.
void task_lets(const MatrixSite& s, const Expr& tv, int64_t nmb, int64_t nnb, int64_t bm, int64_t bn, NameSet& names,
               const std::string& i0, const std::string& j0, std::vector<std::pair<std::string, Expr>>& lets,
               std::map<std::string, Expr>& batch_at) {
  int64_t stride = nmb * nnb, batch = 1;
  std::vector<Expr> bexpr(s.batch.size());
  for (size_t q = s.batch.size(); q-- > 0;) {
    Expr e = floor_div(tv, stride);
    bexpr[q] = q == 0 ? e : mod(e, s.batch_extents[q]);
    stride *= s.batch_extents[q];
    batch *= s.batch_extents[q];
  }
  for (size_t q = 0; q < s.batch.size(); ++q) {
    std::string name = names.fresh(s.batch[q]);
    lets.emplace_back(name, simplify(bexpr[q]));
    batch_at[s.batch[q]] = var(name);
  }
  Expr it = nnb == 1 ? tv : floor_div(tv, nnb);
  if (batch > 1 || nmb == 1) it = nmb == 1 ? imm(0) : mod(it, nmb);
  lets.emplace_back(i0, simplify(mul(it, imm(bm))));
  lets.emplace_back(j0, simplify(nnb == 1 ? imm(0) : mul(mod(tv, nnb), imm(bn))));
}


// Registers one lane (thread) may use, in bytes: SIMT lanes have 32-bit registers; a
// single-lane core has vector_registers of vector_bits.
int64_t lane_register_bytes(const hcd::Hcd& h) {
  return h.warp_size > 1 ? int64_t{h.vector_registers} * 4 : int64_t{h.vector_registers} * h.vector_bits / 8;
}

// The staging memory: the first level after the registers (shared memory on a GPU, an
// NPU core's local memory), its scope and the bytes one block may use of it.
std::pair<MemScope, int64_t> staging(const hcd::Hcd& h) {
  for (const hcd::MemoryLevel& l : h.memory) {
    if (l.scope == "register") continue;
    MemScope s = l.scope == "shared" ? MemScope::Shared : l.scope == "local" ? MemScope::Local : MemScope::Global;
    int64_t bytes = l.size_bytes;
    if (h.shared_memory_per_block > 0) bytes = std::min(bytes, h.shared_memory_per_block);
    return {s, bytes};
  }
  return {MemScope::Local, h.shared_memory_per_block > 0 ? h.shared_memory_per_block : 64 * 1024};
}

// Row padding of the staged tiles, in elements. On SIMT lanes a unit's fragment reads 8
// rows x 4 columns of 32-bit words at once; shared memory serves 32 words per cycle from
// 32 banks, so rows whose length is a multiple of 32 words would put all 8 rows in the
// same banks. 16 bytes more per A row (4 banks) and 32 bytes per 32-bit B row (8 banks,
// 16 bytes for 16-bit B, whose reads pair two rows) spread them over distinct banks.
int64_t pad_a(const MatrixSite& s, const hcd::Hcd& h) { return h.warp_size > 1 ? 16 / dtype_bytes(s.input) : 0; }
int64_t pad_b(const MatrixSite&, const hcd::Hcd& h) { return h.warp_size > 1 ? 8 : 0; }

int64_t staged_bytes(const MatrixSite& s, const MatrixTiles& t, const hcd::Hcd& h) {
  return (t.bm * (t.bk + pad_a(s, h)) + t.bk * (t.bn + pad_b(s, h))) * dtype_bytes(s.input);
}

// `p` with the launches at `replaced` (a statement's update and init) removed and one
// launch `func_name` running `body` in the place of the first.
LoopProgram replace_launch(const LoopProgram& p, std::vector<size_t> replaced, const std::string& func_name,
                           Stmt body) {
  LoopProgram result = p;
  std::sort(replaced.begin(), replaced.end());
  const size_t first = replaced.front();
  for (size_t q = replaced.size(); q-- > 0;)
    result.funcs.erase(result.funcs.begin() + static_cast<std::ptrdiff_t>(replaced[q]));
  result.funcs.insert(result.funcs.begin() + static_cast<std::ptrdiff_t>(first), LoopFunc{func_name, std::move(body)});
  return result;
}

void fail(const std::string& what, const std::string& why) {
  throw UserError(fmt::format("error: schedule: {}: {}", what, why));
}

// The launches lowering made for the site's statement (its update and, for in-place sums,
// its init), which the matrix launch replaces; a UserError if the update was already
// replaced by an earlier primitive.
std::vector<size_t> statement_launches(const Kernel& k, const LoopProgram& p, const MatrixSite& s,
                                       const std::string& what) {
  const std::string func_name = fmt::format("{}_{}", k.name, s.statement);
  std::vector<size_t> replaced;
  bool has_update = false;
  for (size_t f = 0; f < p.funcs.size(); ++f)
    if (p.funcs[f].name == func_name || p.funcs[f].name == func_name + "_init") {
      replaced.push_back(f);
      has_update |= p.funcs[f].name == func_name;
    }
  if (!has_update)
    fail(what, fmt::format("the launch of statement {} was already changed by an earlier primitive; put matrix_unit "
                           "first",
                           s.statement));
  return replaced;
}

// A copy of one operand element into a packed panel: `tensor` read at `at` (its row, k
// or column variables bound to expressions; the batch variables as the task's), zero
// where `in_range` fails.
Stmt packed_copy(const Kernel& k, const MatrixSite& s, const std::map<std::string, Expr>& batch_at,
                 const std::string& tensor, const LoopBuffer& buf, const std::string& panel,
                 std::vector<Expr> panel_at, std::map<std::string, Expr> at, Expr in_range) {
  const ExprNode* read = site_read(k, s, tensor);
  for (const auto& [v, e] : batch_at) at[v] = e;
  std::vector<Expr> idx;
  for (const Expr& i : read->operands) idx.push_back(simplify(at.at(i->name)));
  Stmt st = store(panel, panel_at, access(tensor, idx, buf.dtype));
  if (in_range) st = if_then(in_range, st, store(panel, panel_at, float_imm(0.0, buf.dtype)));
  return st;
}

// ---- tile-register launches (tile_registers_launch): the tiles of one core, AMX-style.
//
// The unit's registers hold whole tiles: up to 2 x 2 f32 accumulator tiles of a
// micro-tile (tmm0-3) and the 2 A and 2 B tiles of one k step (tmm4-7), so one k step
// loads 4 tiles for 4 multiplies. Operands come packed so that every tile is 1 KiB of
// consecutive memory (rows of 64 bytes): the B panel of a task [k blocks, column tiles,
// k / 2, 2 n] in k pairs (the unit's B layout) and the A panel of a micro-row [k blocks,
// rows, k], both zero-padded, which also lets any index order of A and B and ragged
// M, N and K take the same path.

// The private cache of one core: the largest local level that no other unit shares
// (the L2 of a CPU core); 1 MiB when the HCD names none.
int64_t core_cache_bytes(const hcd::Hcd& h) {
  int64_t best = 0;
  for (const hcd::MemoryLevel& l : h.memory)
    if (l.scope == "local" && l.shared_by <= 1) best = std::max(best, l.size_bytes);
  return best > 0 ? best : int64_t{1} << 20;
}

// One compute unit's share of the largest cache level (the L3 over the cores sharing
// it); the core's own cache where the HCD names no larger one.
int64_t last_cache_share(const hcd::Hcd& h) {
  int64_t best = core_cache_bytes(h);
  for (const hcd::MemoryLevel& l : h.memory)
    if (l.scope != "global" && l.scope != "register" && l.size_bytes > 0)
      best = std::max(best, l.size_bytes / std::max(1, l.shared_by));
  return best;
}

// The last-level cache the schedule counts on keeping data in between calls
// (Hcd::kept_cache_bytes: at most 16 MiB per CPU sharing it), at least the core's own.
int64_t kept_cache_bytes(const hcd::Hcd& h) { return std::max(core_cache_bytes(h), h.kept_cache_bytes()); }

int64_t batch_count(const MatrixSite& s) {
  int64_t n = 1;
  for (int64_t e : s.batch_extents) n *= e;
  return n;
}

MatrixTiles register_tiles(const MatrixSite& s, const hcd::Hcd& h) {
  MatrixTiles t;
  t.bk = s.unit.k;
  t.warps_m = s.M > s.unit.m ? 2 : 1; // accumulator tiles along rows (tm) and columns (tn)
  t.warps_n = s.N > s.unit.n ? 2 : 1;
  const int64_t mm = t.warps_m * s.unit.m, mn = t.warps_n * s.unit.n;
  const int64_t kp = ceil_div(s.K, s.unit.k) * s.unit.k;
  // The B panel, kp x bn, takes at most half of the core's cache.
  int64_t bn = std::max<int64_t>(mn, core_cache_bytes(h) / 2 / (kp * dtype_bytes(s.input)) / mn * mn);
  bn = std::min(bn, ceil_div(s.N, mn) * mn);
  int64_t nnb = ceil_div(s.N, bn), nmb = 1;
  const int64_t batch = batch_count(s), units = std::max(1, h.units);
  // Rows split only when columns give fewer tasks than units (each row block packs the
  // B panel again); a small task count is made a multiple of the units.
  if (batch * nnb < units) nmb = std::min(ceil_div(units, batch * nnb), ceil_div(s.M, mm));
  while ((batch * nnb * nmb) % units != 0 && batch * nnb * nmb < 4 * units && ceil_div(s.N, nnb + 1) >= mn) ++nnb;
  t.bn = ceil_div(ceil_div(s.N, nnb), mn) * mn;
  t.bm = ceil_div(ceil_div(s.M, nmb), mm) * mm;
  return t;
}

// A B pack over columns up to `end` (exclusive) where N is ragged: `full` (no column test)
// while those columns are all inside N, else `ragged` (tests each column). A per-element
// test keeps the C compiler from vectorizing the k-pair interleave: 128x50257x768 bf16
// spent more than half its time in a scalar copy of B.
Stmt full_columns(const Expr& end, int64_t n, Stmt full, Stmt ragged) {
  return if_then(less(simplify(end), n + 1), std::move(full), std::move(ragged));
}

// Whether B is read as B[.., k, j] with rows a page or more apart (N >= 2048 bf16), so
// that a narrow piece of each row is a new page per row: its misses are not overlapped
// unless the loads are hinted ahead.
bool b_rows_far(const MatrixSite& s) { return s.b_rows && s.N * dtype_bytes(s.input) >= 4096; }

// Whether a task reads its A tiles in place instead of packing A panels: A is read as
// A[.., i, k] (a tile is 16 rows of 64 bytes at A's row stride), M and K are whole
// micro-tiles and k steps (nothing to pad with zeros), and the task's A block, bm x K,
// takes at most half of the core's cache, where it stays while every column micro-panel
// passes over it. The loops then run column micro-panel outermost: its B panel (K x tn
// unit columns, in k pairs) is packed into a small buffer that stays in L1 while the
// task's micro-rows stream their A tiles from L2. Packed A panels cost a copy of A per
// call (512^3 on the Xeon: 0.06 of 0.23 ms), and with micro-rows outermost every
// micro-tile read its B panel from L2 instead (512^3, one thread, thread CPU time:
// 0.23 -> 0.20-0.21 ms; oneDNN 0.18-0.19; 256^3 0.035 -> 0.030, oneDNN 0.026).
// Larger A blocks keep the packed panels: A from L3 in place was slower (1024^3 2.7
// against 2.2 ms). So does a B micro-panel above two thirds of L1, which the A tiles
// passing through would push out, unless B's rows are far apart (b_rows_far) and the
// micro-panel fits L1: then each pack hints the next micro-panel's rows, which arrive
// while this one's micro-rows run (the LM head, 128 x 50257 x 768 bf16, 48 KiB
// micro-panels in the 48 KiB L1: two threads 10.3-10.7 -> 9.1-9.6 ms; B panels above L1,
// K = 1024-4096, were 5-25% slower this way).
bool a_in_place(const MatrixSite& s, const MatrixTiles& t, const hcd::Hcd& h) {
  const int64_t mm = t.warps_m * s.unit.m, mn = t.warps_n * s.unit.n, bytes = dtype_bytes(s.input);
  const int64_t panel = s.K * mn * bytes, l1 = staging(h).second;
  return s.a_rows && s.M % mm == 0 && s.K % s.unit.k == 0 && t.bm * s.K * bytes <= core_cache_bytes(h) / 2 &&
         (panel * 3 <= l1 * 2 || (b_rows_far(s) && panel <= l1));
}

// Whether a task of the in-place path collects its C block in a local f32 buffer and
// writes it out a row at a time after its last column micro-panel, instead of storing
// each micro-tile into C as it finishes. Where B's rows are far apart so are C's (N
// elements apart), and a micro-tile's 16 rows of 64 bytes land in 16 pages, each line
// read for ownership from memory on its own while the next micro-panel's B lines are in
// flight; a row of the block is one contiguous run (bn columns) that the hardware's
// streamer and the store buffer handle together. The block (bm x bn f32) must leave L2
// to A's block and the B micro-panel. 128 x 50257 x 768 bf16, two threads, the kernel's
// C in bench/amx_cputime/driver_threads.c: 9.5-11.0 -> 8.3-8.8 ms (docs/PERFORMANCE.md,
// "C written a block row at a time").
bool c_block_rows(const MatrixSite& s, const MatrixTiles& t, const hcd::Hcd& h) {
  return b_rows_far(s) && t.bm * t.bn * 4 <= core_cache_bytes(h) / 4;
}

// Whether the in-place path hints the next B micro-panel's rows from the multiply loop
// (R rows per k step of each micro-row, R = K / (micro-rows x k steps)) instead of from
// the pack: B does not stay in the cache between calls (kept_cache_bytes), so its lines
// come from far away, and issued in one burst during the pack they held the fill buffers
// while the micro-rows that followed issued none; spread over the multiplies they
// overlap them. Driver (bench/amx_cputime/driver_threads.c), two threads, alternating:
// 128 x 50257 x 768 bf16 7.40-7.89 -> 7.20-7.47 ms (with A packed in tiles, not built),
// 64 x 32000 x 768 3.44-3.77 -> 3.32-3.38; with B at 25 MB (128 x 16384 x 768), which
// stays in the cache, it was 5% slower, so that keeps the pack's hints. `unitile bench`,
// two threads, three alternating rounds: 64 x 32000 x 768 4.33-4.51 -> 3.19-3.53 ms, the
// LM head 6.46-6.69 -> 6.46-6.81 (0.885-0.897 -> 0.905-0.916 of oneDNN); with one
// micro-row (32 x 25001 x 768: 32 rows, 64 hints, per k step) 1.65-1.69 -> 1.69-1.85, so
// at most 16 rows a step.
int64_t b_matrix_bytes(const MatrixSite& s) { return s.K * s.N * dtype_bytes(s.input); } // one batch's B

// Rows of B each k step of a micro-row hints (hints_in_multiplies).
int64_t hint_rows_per_step(const MatrixSite& s, const MatrixTiles& t) {
  return s.K / (t.bm / (t.warps_m * s.unit.m) * ceil_div(s.K, s.unit.k));
}

bool hints_in_multiplies(const MatrixSite& s, const MatrixTiles& t, const hcd::Hcd& h) {
  const int64_t mm = t.warps_m * s.unit.m, mn = t.warps_n * s.unit.n;
  const int64_t steps = t.bm / mm * ceil_div(s.K, s.unit.k);
  return b_rows_far(s) && t.bn / mn > 1 && s.K % steps == 0 && s.K / steps <= 16 &&
         b_matrix_bytes(s) > kept_cache_bytes(h);
}

std::vector<std::string> register_reasons(const MatrixSite& s, const MatrixTiles& t, const hcd::Hcd& h) {
  std::vector<std::string> r;
  const int64_t tm = t.warps_m, tn = t.warps_n;
  const int64_t kp = ceil_div(s.K, s.unit.k) * s.unit.k;
  r.push_back(fmt::format("{} (statement {}): contraction {}x{}x{} over '{}' on the matrix unit {}x{}x{} ({} in, f32 "
                          "accumulator) in tile registers",
                          s.output, s.statement, s.M, s.N, s.K, s.k, s.unit.m, s.unit.n, s.unit.k,
                          dtype_name(s.input)));
  r.push_back(fmt::format("  micro-tile {}x{}: {} x {} accumulator tiles (tmm0-{}), {} A and {} B tiles per k step of "
                          "{} (tmm4-7)",
                          tm * s.unit.m, tn * s.unit.n, tm, tn, tm * tn - 1, tm, tn, s.unit.k));
  if (a_in_place(s, t, h)) {
    r.push_back(fmt::format("  local: B micro-panel {}x{} in k pairs {}, packed per column micro-panel and kept in "
                            "L1 while every micro-row passes; A read in place (block {}x{}, {} of the core's {})",
                            kp, tn * s.unit.n, kib(kp * tn * s.unit.n * dtype_bytes(s.input)), t.bm, s.K,
                            kib(t.bm * s.K * dtype_bytes(s.input)), kib(core_cache_bytes(h))));
    if (b_rows_far(s) && t.bn / (tn * s.unit.n) > 1)
      r.push_back(fmt::format("  B rows {} bytes apart: {} the next micro-panel's rows", s.N * dtype_bytes(s.input),
                              hints_in_multiplies(s, t, h)
                                  ? fmt::format("B ({}) larger than the cache kept between calls ({}): each k step "
                                                "of the multiplies hints {} of",
                                                kib(b_matrix_bytes(s)), kib(kept_cache_bytes(h)),
                                                hint_rows_per_step(s, t))
                                  : std::string("each pack hints")));
    if (c_block_rows(s, t, h))
      r.push_back(fmt::format("  C block {}x{} f32 {} collected locally, written out a row at a time", t.bm, t.bn,
                              kib(t.bm * t.bn * 4)));
  } else
    r.push_back(fmt::format("  local: B panel {}x{} in k pairs {} of the core's {}, A panel {}x{} {}", kp, t.bn,
                            kib(kp * t.bn * dtype_bytes(s.input)), kib(core_cache_bytes(h)), tm * s.unit.m, kp,
                            kib(tm * s.unit.m * kp * dtype_bytes(s.input))));
  r.push_back(fmt::format("  tasks: {} blocks of {}x{} over {} compute units",
                          batch_count(s) * ceil_div(s.M, t.bm) * ceil_div(s.N, t.bn), t.bm, t.bn, h.units));
  return r;
}

LoopProgram register_launch(const Kernel& k, const LoopProgram& p, const hcd::Hcd& h, const MatrixSite& s,
                            const std::vector<int64_t>& tiles) {
  const std::string what = fmt::format("matrix_unit {}", s.output);
  MatrixTiles t = register_tiles(s, h);
  const int64_t um = s.unit.m, un = s.unit.n, uk = s.unit.k;
  if (!tiles.empty()) {
    if (tiles.size() != 5)
      fail(what, "expected five tile sizes: tiles BM BN BK warps TM TN (with tile registers, TM x TN accumulator "
                 "tiles)");
    t = MatrixTiles{tiles[0], tiles[1], tiles[2], tiles[3], tiles[4]};
  }
  const int64_t tm = t.warps_m, tn = t.warps_n, mm = tm * um, mn = tn * un;
  if (tm < 1 || tn < 1 || tm > 2 || tn > 2 || t.bk != uk || t.bm < mm || t.bm % mm || t.bn < mn || t.bn % mn)
    fail(what, fmt::format("block tile {}x{}x{} with {}x{} accumulator tiles: the tile registers hold up to 2 x 2 "
                           "accumulator tiles of {}x{}, k steps are {} deep, and the block is a multiple of the "
                           "micro-tile",
                           t.bm, t.bn, t.bk, tm, tn, um, un, uk));
  const std::string func_name = fmt::format("{}_{}", k.name, s.statement);
  const std::vector<size_t> replaced = statement_launches(k, p, s, what);
  const LoopBuffer* abuf = p.find_buffer(s.a);
  const LoopBuffer* bbuf = p.find_buffer(s.b);
  if (!p.find_buffer(s.output) || !abuf || !bbuf) fail(what, "the contraction's tensors are not buffers of the program");

  const int64_t kp = ceil_div(s.K, uk) * uk, nks = kp / uk;
  const int64_t nmb = ceil_div(s.M, t.bm), nnb = ceil_div(s.N, t.bn), batch = batch_count(s);
  const int64_t tasks = batch * nmb * nnb;

  NameSet names(p);
  const std::string task = names.fresh("task"), i0 = names.fresh("i0"), j0 = names.fresh("j0");
  const std::string a_p = names.fresh(s.a + "_panel"), b_p = names.fresh(s.b + "_pairs"),
                    acc = names.fresh(s.output + "_tiles");

  std::vector<std::pair<std::string, Expr>> lets;
  std::map<std::string, Expr> batch_at;
  task_lets(s, var(task), nmb, nnb, t.bm, t.bn, names, i0, j0, lets, batch_at);

  // A copy of one operand element into a packed panel: the tensor read at `at` (its
  // row/k/column variables bound to expressions), zero where `in_range` fails.
  auto packed = [&](const std::string& tensor, const LoopBuffer& buf, const std::string& panel,
                    std::vector<Expr> panel_at, std::map<std::string, Expr> at, Expr in_range) {
    return packed_copy(k, s, batch_at, tensor, buf, panel, std::move(panel_at), std::move(at), std::move(in_range));
  };
  auto conj = [](Expr a, Expr b) { return a ? binary(BinaryOp::And, a, b) : b; };
  auto loop = [](const std::string& v, int64_t n, Stmt body, ForKind kind = ForKind::Serial) {
    return for_loop(v, imm(0), imm(n), kind, std::move(body));
  };

  const std::string ib = names.fresh("ib"), jb = names.fresh("jb");
  const Expr row0 = simplify(add(var(i0), mul(var(ib), imm(mm))));
  const int64_t ahead = 2; // k steps the prefetches run ahead (see below)

  if (a_in_place(s, t, h)) {
    // Column micro-panel outermost (see a_in_place): its B panel b_p[h, ks, pp, 2 c + e] =
    // B[ks * uk + 2 pp + e, j0 + jb * mn + h * un + c], then every micro-row of the task with
    // its A tiles loaded from A itself.
    const std::string ks = names.fresh("ks"), half = names.fresh("h"), pp = names.fresh("pp"), c = names.fresh("c"),
                      e = names.fresh("e");
    Expr kv = simplify(add(add(mul(var(ks), imm(uk)), mul(var(pp), imm(2))), var(e)));
    Expr jv = simplify(add(add(add(var(j0), mul(var(jb), imm(mn))), mul(var(half), imm(un))), var(c)));
    // B's rows far apart (b_rows_far): each k pair's copy hints the same two rows of the
    // next column micro-panel, the mn columns after these in the same pages, at both ends
    // (the piece may straddle two lines); they arrive while this micro-panel's micro-rows
    // run. Without the hints every row of a micro-panel misses on its own, one page after
    // another (128 x 50257 x 768 bf16, two threads: docs/PERFORMANCE.md, bf16 round 5).
    // Where B does not stay in the cache between calls (hints_in_multiplies) the same
    // hints go out from the multiply loop instead, R rows per k step of each micro-row
    // (`spread`, placed below).
    Stmt hint, spread;
    const std::string kt = names.fresh("ks");
    if (b_rows_far(s) && t.bn / mn > 1) {
      const ExprNode* bread = site_read(k, s, s.b);
      Expr next = simplify(add(var(j0), mul(add(var(jb), imm(1)), imm(mn))));
      auto b_at = [&](const Expr& row, const Expr& col) {
        std::vector<Expr> idx;
        for (const Expr& i : bread->operands)
          idx.push_back(i->name == s.k ? simplify(row) : i->name == s.j ? simplify(col) : batch_at.at(i->name));
        return idx;
      };
      Expr next_fits =
          conj(less(simplify(add(var(jb), imm(1))), t.bn / mn), less(simplify(add(next, imm(mn))), s.N + 1));
      if (hints_in_multiplies(s, t, h)) {
        const int64_t rows = hint_rows_per_step(s, t);
        Expr row = mul(add(mul(var(ib), imm(nks)), var(kt)), imm(rows));
        spread = if_then(next_fits, block({prefetch(s.b, b_at(row, next), rows),
                                           prefetch(s.b, b_at(row, add(next, imm(mn - 1))), rows)}));
      } else {
        Expr row = add(mul(var(ks), imm(uk)), mul(var(pp), imm(2)));
        hint = if_then(next_fits,
                       block({prefetch(s.b, b_at(row, next), 2), prefetch(s.b, b_at(row, add(next, imm(mn - 1))), 2)}));
      }
    }
    auto panel_of = [&](Expr in_range) {
      Stmt st = packed(s.b, *bbuf, b_p, {var(half), var(ks), var(pp), simplify(add(mul(var(c), imm(2)), var(e)))},
                       {{s.k, kv}, {s.j, jv}}, in_range);
      Stmt pair = loop(half, tn, loop(c, un, loop(e, 2, st, ForKind::Unrolled)),
                       tn > 1 ? ForKind::Unrolled : ForKind::Serial);
      if (hint && !in_range) pair = block({hint, pair});
      return loop(ks, nks, loop(pp, uk / 2, pair));
    };
    // Only the last micro-panel of a ragged N needs the column test; the others copy
    // unguarded, which the C compiler vectorizes (see full_columns).
    Stmt panel = s.N % mn != 0 || s.N % t.bn != 0
                     ? full_columns(add(var(j0), mul(add(var(jb), imm(1)), imm(mn))), s.N, panel_of(nullptr),
                                    panel_of(less(jv, s.N)))
                     : panel_of(nullptr);
    // A's tile at (row, k step): its read with i and k bound, batch indices as the task's.
    const ExprNode* aread = site_read(k, s, s.a);
    auto a_at = [&](Expr row, Expr kk) {
      std::vector<Expr> idx;
      for (const Expr& i : aread->operands)
        idx.push_back(i->name == s.i ? simplify(row) : i->name == s.k ? simplify(kk) : batch_at.at(i->name));
      return idx;
    };
    const bool staged = c_block_rows(s, t, h);
    const std::string c_st = names.fresh(s.output + "_block");
    std::vector<Stmt> zero, mma, out, hints;
    for (int64_t a = 0; a < tm; ++a)
      for (int64_t cc = 0; cc < tn; ++cc) {
        const std::vector<Expr> tile = {imm(a), imm(cc), imm(0), imm(0)};
        zero.push_back(matrix_zero(acc, tile, um, un));
        mma.push_back(matrix_mma_pairs(acc, tile,
                                       access(s.a, a_at(add(row0, imm(a * um)), mul(var(kt), imm(uk))), s.input),
                                       access(b_p, {imm(cc), var(kt), imm(0), imm(0)}, s.input), um, un, uk));
        if (staged) {
          out.push_back(matrix_store(c_st,
                                     {simplify(add(mul(var(ib), imm(mm)), imm(a * um))),
                                      simplify(add(mul(var(jb), imm(mn)), imm(cc * un)))},
                                     access(acc, tile, DType::F32), um, un));
          continue;
        }
        std::vector<Expr> origin;
        for (const std::string& v : s.batch) origin.push_back(batch_at.at(v));
        origin.push_back(simplify(add(row0, imm(a * um))));
        origin.push_back(simplify(add(add(var(j0), mul(var(jb), imm(mn))), imm(cc * un))));
        out.push_back(matrix_store(s.output, origin, access(acc, tile, DType::F32), um, un));
      }
    // The A tiles two k steps ahead are hinted into L1 a row (one line) at a time, for the
    // reason the B tiles are below; here A is the operand that comes from L2 (512^3: 0.32
    // ms without the hints, 0.29 one step ahead, 0.27-0.28 two, four no better).
    if (nks > ahead) {
      for (int64_t a = 0; a < tm; ++a)
        hints.push_back(prefetch(s.a, a_at(add(row0, imm(a * um)), mul(add(var(kt), imm(ahead)), imm(uk))), um));
      mma.push_back(if_then(less(simplify(add(var(kt), imm(ahead))), nks), block(hints)));
    }
    if (spread) mma.insert(mma.begin(), spread);
    Stmt micro = block({block(zero), loop(kt, nks, block(mma)), block(out)});
    if (t.bm * nmb - s.M >= mm) micro = if_then(less(row0, s.M), micro);
    Stmt col = block({panel, loop(ib, t.bm / mm, micro)});
    if (t.bn * nnb - s.N >= mn) col = if_then(less(simplify(add(var(j0), mul(var(jb), imm(mn)))), s.N), col);
    Stmt body = loop(jb, t.bn / mn, col);
    if (staged) {
      // The block's rows into C: whole rows vectorized, the last task's ragged columns
      // (and rows past M) tested one by one.
      const LoopBuffer* cbuf = p.find_buffer(s.output);
      const std::string r = names.fresh("r"), cc = names.fresh("c");
      auto copy = [&](ForKind kind, Expr in_range) {
        std::vector<Expr> idx;
        for (const std::string& v : s.batch) idx.push_back(batch_at.at(v));
        idx.push_back(simplify(add(var(i0), var(r))));
        idx.push_back(simplify(add(var(j0), var(cc))));
        Expr v = access(c_st, {var(r), var(cc)}, DType::F32);
        if (cbuf->dtype != DType::F32) v = cast(cbuf->dtype, v);
        Stmt st = store(s.output, std::move(idx), v);
        if (in_range) st = if_then(std::move(in_range), st);
        return loop(cc, t.bn, st, kind);
      };
      Stmt row = s.N % t.bn != 0 ? full_columns(add(var(j0), imm(t.bn)), s.N, copy(ForKind::Vectorized, nullptr),
                                                copy(ForKind::Serial, less(simplify(add(var(j0), var(cc))), s.N)))
                                 : copy(ForKind::Vectorized, nullptr);
      if (t.bm * nmb != s.M) row = if_then(less(simplify(add(var(i0), var(r))), s.M), row);
      body = allocate(c_st, DType::F32, {t.bm, t.bn}, MemScope::Local, block({body, loop(r, t.bm, row)}));
    }
    body = allocate(acc, DType::F32, {tm, tn, um, un}, MemScope::Register, body);
    body = allocate(b_p, s.input, {tn, nks, uk / 2, 2 * un}, MemScope::Local, body);
    for (size_t q = lets.size(); q-- > 0;) body = let_stmt(lets[q].first, lets[q].second, body);
    return replace_launch(p, replaced, func_name, for_loop(task, imm(0), imm(tasks), ForKind::GridX, body));
  }

  // 1. The task's B panel in k pairs: b_p[jt, ks, pp, 2 c + e] = B[ks * uk + 2 pp + e, j0 + jt * un + c]
  //    (a column tile's k steps consecutive: one stream of 1 KiB tiles per B register),
  //    written in its own order, a column tile (or two) at a time. With the column tile
  //    innermost, consecutive stores were a panel column (k / 2 x 64 bytes) apart (256^3:
  //    4.4 against 3.0 us per pack). One column tile at a time reads each 64-byte line of
  //    B twice, K lines apart: from L1 while K lines take at most half of it (256^3), else
  //    two column tiles go together (jt = 2 jp + h; 2048^3: 27.1 -> 24.1 ms; one at a time
  //    is 6% faster at 256^3).
  Stmt pack_b;
  {
    const int64_t col_tiles = t.bn / un, line = 64;
    const std::string ks = names.fresh("ks"), pp = names.fresh("pp"), c = names.fresh("c"), e = names.fresh("e");
    Expr kv = simplify(add(add(mul(var(ks), imm(uk)), mul(var(pp), imm(2))), var(e)));
    Expr k_range = s.K % uk != 0 ? less(kv, s.K) : Expr();
    // The copy of column tile `jt` at one k pair (ks, pp): 2 x un elements, zero where
    // `in_range` fails (ragged: a column test on top of the k test).
    auto column = [&](const Expr& jt) { return simplify(add(add(var(j0), mul(jt, imm(un))), var(c))); };
    auto copy = [&](Expr jt, Expr in_range) {
      Stmt st = packed(s.b, *bbuf, b_p, {simplify(jt), var(ks), var(pp), simplify(add(mul(var(c), imm(2)), var(e)))},
                       {{s.k, kv}, {s.j, column(jt)}}, in_range);
      return loop(c, un, loop(e, 2, st, ForKind::Unrolled));
    };
    auto ragged = [&](const Expr& jt) { return conj(k_range, less(column(jt), s.N)); };

    // B read as B[.., k, j] with rows a page or more apart (N >= 2048 bf16): the panel is
    // copied a k pair at a time across all its column tiles (each row's bn columns one
    // contiguous run), the pair two pairs ahead hinted. Column tile by column tile, each
    // 64-byte piece of a row is in a different page from the last, and its miss is not
    // overlapped: 128 x 50257 x 768 bf16 (one thread, thread CPU time, 3 alternating
    // rounds) 21.5-24.4 ms that way, 20.6-22.3 this way (20.8-23.9 without the hints).
    const ExprNode* bread = site_read(k, s, s.b);
    if (b_rows_far(s)) {
      const std::string jt = names.fresh("jt");
      Stmt tile = s.N % t.bn != 0 ? full_columns(add(var(j0), mul(add(var(jt), imm(1)), imm(un))), s.N,
                                                 copy(var(jt), k_range), copy(var(jt), ragged(var(jt))))
                                  : copy(var(jt), k_range);
      const int64_t ahead = 2;
      Expr pair = add(mul(var(ks), imm(uk)), mul(var(pp), imm(2)));
      Expr k_next = simplify(add(pair, imm(2 * ahead)));
      std::vector<Expr> at;
      for (const Expr& i : bread->operands)
        at.push_back(i->name == s.k   ? k_next
                     : i->name == s.j ? simplify(add(var(j0), mul(var(jt), imm(un))))
                                      : batch_at.at(i->name));
      Stmt hint = if_then(less(simplify(add(pair, imm(2 * ahead + 1))), s.K), prefetch(s.b, at, 2));
      pack_b = loop(ks, nks, loop(pp, uk / 2, loop(jt, col_tiles, block({hint, tile}))));
    } else {
      const int64_t per = col_tiles % 2 == 0 && kp * line > staging(h).second / 2 ? 2 : 1;
      const std::string jp = names.fresh(per == 2 ? "jp" : "jt"), half = names.fresh("h");
      Expr jt = per == 2 ? add(mul(var(jp), imm(2)), var(half)) : var(jp);
      auto tiles_of = [&](Expr in_range) {
        Stmt row = copy(jt, in_range);
        if (per == 2) row = loop(half, 2, row, ForKind::Unrolled);
        return loop(ks, nks, loop(pp, uk / 2, row));
      };
      Stmt tiles = s.N % t.bn != 0 ? full_columns(add(var(j0), mul(add(var(jp), imm(1)), imm(per * un))), s.N,
                                                  tiles_of(k_range), tiles_of(ragged(jt)))
                                   : tiles_of(k_range);
      pack_b = loop(jp, col_tiles / per, tiles);
    }
  }

  // 2. A micro-row's A panel: a_p[ks, r, x] = A[row0 + r, ks * uk + x].
  Stmt pack_a;
  {
    const std::string ks = names.fresh("ks"), r = names.fresh("r"), x = names.fresh("x");
    Expr iv = simplify(add(row0, var(r)));
    Expr kv = simplify(add(mul(var(ks), imm(uk)), var(x)));
    Expr in_range;
    if (s.M % mm != 0 || s.M % t.bm != 0) in_range = conj(in_range, less(iv, s.M));
    if (s.K % uk != 0) in_range = conj(in_range, less(kv, s.K));
    Stmt st = packed(s.a, *abuf, a_p, {var(ks), var(r), var(x)}, {{s.i, iv}, {s.k, kv}}, in_range);
    pack_a = loop(ks, nks, loop(r, mm, loop(x, uk, st)));
  }

  // 3. A micro-tile: zero, the k steps, store (clipped at C's edges).
  Stmt micro;
  {
    const std::string ks = names.fresh("ks");
    std::vector<Stmt> zero, mma, out;
    for (int64_t a = 0; a < tm; ++a)
      for (int64_t c = 0; c < tn; ++c) {
        const std::vector<Expr> tile = {imm(a), imm(c), imm(0), imm(0)};
        zero.push_back(matrix_zero(acc, tile, um, un));
        mma.push_back(matrix_mma_pairs(acc, tile, access(a_p, {var(ks), imm(a * um), imm(0)}, s.input),
                                       access(b_p, {simplify(add(mul(var(jb), imm(tn)), imm(c))), var(ks), imm(0),
                                                    imm(0)},
                                              s.input),
                                       um, un, uk));
        std::vector<Expr> origin;
        for (const std::string& v : s.batch) origin.push_back(batch_at.at(v));
        origin.push_back(simplify(add(row0, imm(a * um))));
        origin.push_back(simplify(add(add(var(j0), mul(var(jb), imm(mn))), imm(c * un))));
        out.push_back(matrix_store(s.output, origin, access(acc, tile, DType::F32), um, un));
      }
    // The B tiles two k steps ahead are hinted into L1, a row (one line) at a time: the
    // unit's registers cannot be renamed, so each k step's tile loads wait for the
    // multiplies of the step before, and a load that misses L1 stalls the chain (the B
    // panel is read from L2, once per micro-row; 512^3: 0.255 -> 0.23 ms, one step
    // ahead 0.23, four 0.25 at 256^3).
    if (nks > ahead) {
      const std::string pl = names.fresh("pl");
      std::vector<Stmt> hints;
      for (int64_t c = 0; c < tn; ++c)
        hints.push_back(prefetch(b_p, {simplify(add(mul(var(jb), imm(tn)), imm(c))), simplify(add(var(ks), imm(ahead))),
                                       var(pl), imm(0)}));
      mma.push_back(if_then(less(simplify(add(var(ks), imm(ahead))), nks),
                            loop(pl, uk / 2, block(hints), ForKind::Unrolled)));
    }
    micro = block({block(zero), loop(ks, nks, block(mma)), block(out)});
    if (t.bn * nnb - s.N >= mn) micro = if_then(less(simplify(add(var(j0), mul(var(jb), imm(mn)))), s.N), micro);
  }
  Stmt row = block({pack_a, loop(jb, t.bn / mn, micro)});
  if (t.bm * nmb - s.M >= mm) row = if_then(less(row0, s.M), row);

  Stmt body = block({pack_b, loop(ib, t.bm / mm, row)});
  body = allocate(acc, DType::F32, {tm, tn, um, un}, MemScope::Register, body);
  body = allocate(a_p, s.input, {nks, mm, uk}, MemScope::Local, body);
  body = allocate(b_p, s.input, {t.bn / un, nks, uk / 2, 2 * un}, MemScope::Local, body);
  for (size_t q = lets.size(); q-- > 0;) body = let_stmt(lets[q].first, lets[q].second, body);
  return replace_launch(p, replaced, func_name, for_loop(task, imm(0), imm(tasks), ForKind::GridX, body));
}

// ---- vector pair launches (pair_unit): a dot product of k pairs per vector lane.
//
// AVX512-BF16's vdpbf16ps adds to each of 16 f32 lanes the two products of a pair of
// bf16 values of one operand and a pair of the other: with A's pair (A[i, k], A[i, k + 1])
// broadcast and B's 16 columns held in k pairs, it is a 1 x 16 x 2 matrix unit. The
// micro-tile is tm rows x tn vectors of accumulators in vector registers (warps_m x
// warps_n of MatrixTiles); per k pair it loads tn B vectors and broadcasts tm A pairs.
// Per task (a block of rows x columns, one per core at a time), per column micro-panel:
// its B panel packed in k pairs, b_p[k / 2, 2 tn 16], then every micro-row over it,
// accumulating the whole of K in registers. A's pairs are broadcast from A itself where
// A is stored in rows of k and K is even (pair_a_in_place); otherwise the task first
// packs its A block in k pairs, a_p[micro-row, k / 2, row, 2] (zero-padded).

// Whether A's pairs are read from A: rows of k in memory (each pair is 4 consecutive
// bytes) and no pair crosses a row's end. A packed per task costs a copy of the A block
// per column block, one element per column-block-width multiply-adds: at 64 columns
// about as long again as the multiplies of 512^3.
bool pair_a_in_place(const MatrixSite& s) { return s.a_rows && s.K % 2 == 0; }

// The most accumulator rows for tn vectors per row: tm x tn accumulators, tn B vectors and
// one broadcast A pair in the vector registers.
int64_t pair_rows(int64_t tn, const hcd::Hcd& h) { return (h.vector_registers - tn - 1) / tn; }

MatrixTiles pair_tiles(const MatrixSite& s, const hcd::Hcd& h) {
  MatrixTiles t;
  t.bk = s.unit.k;
  // 8 rows x 2 vectors: 16 accumulators, more than the multiply's latency needs; on Zen 4
  // (2048^3) 8 x 3 and 6 x 4 were no faster, 12 x 2 and 14 x 2 slower (docs/PERFORMANCE.md).
  t.warps_n = s.N > s.unit.n ? 2 : 1;
  t.warps_m = std::max<int64_t>(1, std::min<int64_t>({8, pair_rows(t.warps_n, h), s.M}));
  const int64_t mm = t.warps_m, mn = t.warps_n * s.unit.n;
  const int64_t kp = ceil_div(s.K, 2) * 2;
  // The task's A block takes at most half of one unit's share of the last cache level,
  // where it stays while every column micro-panel passes over it (its micro-rows stream
  // from there, prefetched by the hardware); each row block packs B again. 2048^3, one
  // thread, Zen 4: rows of 128 (an A block in half of L2) 86-92 ms, 256 82-85, 512 78-80,
  // 1024 and 2048 77.7-78.1 (oneDNN 80).
  int64_t bm = std::max(mm, last_cache_share(h) / 2 / (kp * dtype_bytes(s.input)) / mm * mm);
  bm = std::min(bm, ceil_div(s.M, mm) * mm);
  const int64_t nmb = ceil_div(s.M, bm), batch = batch_count(s), units = std::max(1, h.units);
  t.bm = ceil_div(ceil_div(s.M, nmb), mm) * mm;
  // Columns split until there are four tasks per compute unit (the blocks are handed out
  // as they finish), each at least one micro-panel wide; with A packed per task, at
  // least 512 columns wide where the units have tasks enough (see pair_a_in_place).
  int64_t nnb = std::max<int64_t>(1, ceil_div(4 * units, batch * nmb));
  if (!pair_a_in_place(s)) nnb = std::min(nnb, std::max<int64_t>(ceil_div(units, batch * nmb), ceil_div(s.N, 512)));
  nnb = std::min(nnb, ceil_div(s.N, mn));
  t.bn = ceil_div(ceil_div(s.N, nnb), mn) * mn;
  return t;
}

std::vector<std::string> pair_reasons(const MatrixSite& s, const MatrixTiles& t, const hcd::Hcd& h) {
  std::vector<std::string> r;
  const int64_t tm = t.warps_m, tn = t.warps_n, kp = ceil_div(s.K, 2) * 2, bytes = dtype_bytes(s.input);
  r.push_back(fmt::format("{} (statement {}): contraction {}x{}x{} over '{}' on the unit {}x{}x{} (one vector "
                          "instruction: {} f32 lanes += a pair of {} products each; {} in, f32 accumulator)",
                          s.output, s.statement, s.M, s.N, s.K, s.k, s.unit.m, s.unit.n, s.unit.k, s.unit.n,
                          dtype_name(s.input), dtype_name(s.input)));
  r.push_back(fmt::format("  registers: micro-tile {}x{} = {} accumulators of {} lanes + {} B vectors + 1 A "
                          "broadcast = {} of {} vector registers",
                          tm, tn * s.unit.n, tm * tn, s.unit.n, tn, tm * tn + tn + 1, h.vector_registers));
  r.push_back(fmt::format("  A block {}x{} {}, {} (at most half of a unit's {} of the last cache level); B "
                          "micro-panel {}x{} in k pairs, {}, packed per column micro-panel (the core's cache {})",
                          t.bm, kp,
                          pair_a_in_place(s) ? "read in place (pairs broadcast from A)" : "packed in k pairs once per task",
                          kib(t.bm * kp * bytes), kib(last_cache_share(h)), kp, tn * s.unit.n,
                          kib(kp * tn * s.unit.n * bytes), kib(core_cache_bytes(h))));
  if (b_rows_far(s) && t.bn / (tn * s.unit.n) > 1)
    r.push_back(fmt::format("  B rows {} bytes apart: each pack hints the next micro-panel's rows", s.N * bytes));
  r.push_back(fmt::format("  tasks: {} blocks of {}x{} over {} compute units",
                          batch_count(s) * ceil_div(s.M, t.bm) * ceil_div(s.N, t.bn), t.bm, t.bn, h.units));
  return r;
}

LoopProgram pair_launch(const Kernel& k, const LoopProgram& p, const hcd::Hcd& h, const MatrixSite& s,
                        const std::vector<int64_t>& tiles) {
  const std::string what = fmt::format("matrix_unit {}", s.output);
  MatrixTiles t = pair_tiles(s, h);
  const int64_t un = s.unit.n;
  if (!tiles.empty()) {
    if (tiles.size() != 5)
      fail(what, "expected five tile sizes: tiles BM BN BK warps TM TN (with vector pairs, TM rows x TN vectors of "
                 "accumulators)");
    t = MatrixTiles{tiles[0], tiles[1], tiles[2], tiles[3], tiles[4]};
  }
  const int64_t tm = t.warps_m, tn = t.warps_n, mn = tn * un;
  if (tm < 1 || tn < 1 || tm * tn + tn + 1 > h.vector_registers || t.bk != 2 || t.bm < tm || t.bm % tm ||
      t.bn < mn || t.bn % mn)
    fail(what, fmt::format("block tile {}x{}x{} with {} x {} accumulator vectors: the micro-tile's accumulators, "
                           "its {} B vectors and an A broadcast must fit the {} vector registers, k steps are 2 "
                           "deep, and the block is a multiple of the micro-tile ({} x {})",
                           t.bm, t.bn, t.bk, tm, tn, tn, h.vector_registers, tm, mn));
  const std::string func_name = fmt::format("{}_{}", k.name, s.statement);
  const std::vector<size_t> replaced = statement_launches(k, p, s, what);
  const LoopBuffer* abuf = p.find_buffer(s.a);
  const LoopBuffer* bbuf = p.find_buffer(s.b);
  if (!p.find_buffer(s.output) || !abuf || !bbuf) fail(what, "the contraction's tensors are not buffers of the program");

  const int64_t npairs = ceil_div(s.K, 2);
  const int64_t nmb = ceil_div(s.M, t.bm), nnb = ceil_div(s.N, t.bn), batch = batch_count(s);
  const int64_t tasks = batch * nmb * nnb, rows_per_task = t.bm / tm;

  NameSet names(p);
  const std::string task = names.fresh("task"), i0 = names.fresh("i0"), j0 = names.fresh("j0");
  const std::string a_p = names.fresh(s.a + "_pairs"), b_p = names.fresh(s.b + "_pairs"),
                    acc = names.fresh(s.output + "_vectors");
  std::vector<std::pair<std::string, Expr>> lets;
  std::map<std::string, Expr> batch_at;
  task_lets(s, var(task), nmb, nnb, t.bm, t.bn, names, i0, j0, lets, batch_at);
  auto conj = [](Expr a, Expr b) { return a && b ? binary(BinaryOp::And, a, b) : a ? a : b; };
  auto loop = [](const std::string& v, int64_t n, Stmt body, ForKind kind = ForKind::Serial) {
    return for_loop(v, imm(0), imm(n), kind, std::move(body));
  };
  auto packed = [&](const std::string& tensor, const LoopBuffer& buf, const std::string& panel,
                    std::vector<Expr> panel_at, std::map<std::string, Expr> at, Expr in_range) {
    return packed_copy(k, s, batch_at, tensor, buf, panel, std::move(panel_at), std::move(at), std::move(in_range));
  };

  // 1. The task's A block in k pairs: a_p[ib, pp, r, e] = A[i0 + ib * tm + r, 2 pp + e],
  //    each row read in order (a micro-row's rows, then its pairs); none in place.
  const bool in_place = pair_a_in_place(s);
  Stmt pack_a;
  if (!in_place) {
    const std::string ib = names.fresh("ib"), r = names.fresh("r"), pp = names.fresh("pp"), e = names.fresh("e");
    Expr iv = simplify(add(add(var(i0), mul(var(ib), imm(tm))), var(r)));
    Expr kv = simplify(add(mul(var(pp), imm(2)), var(e)));
    Expr in_range;
    if (s.M % tm != 0 || s.M % t.bm != 0) in_range = conj(in_range, less(iv, s.M));
    if (s.K % 2 != 0) in_range = conj(in_range, less(kv, s.K));
    Stmt st = packed(s.a, *abuf, a_p, {var(ib), var(pp), var(r), var(e)}, {{s.i, iv}, {s.k, kv}}, in_range);
    pack_a = loop(ib, rows_per_task, loop(r, tm, loop(pp, npairs, loop(e, 2, st, ForKind::Unrolled))));
  }

  // 2. Per column micro-panel jb: its B panel, b_p[pp, 32 h + 2 c + e] = B[2 pp + e, j0 +
  //    jb * mn + 16 h + c] (a k pair's tn vectors consecutive), then every micro-row.
  const std::string jb = names.fresh("jb"), ib = names.fresh("ib");
  Stmt panel;
  {
    const std::string pp = names.fresh("pp"), half = names.fresh("h"), c = names.fresh("c"), e = names.fresh("e");
    Expr kv = simplify(add(mul(var(pp), imm(2)), var(e)));
    Expr jv = simplify(add(add(add(var(j0), mul(var(jb), imm(mn))), mul(var(half), imm(un))), var(c)));
    Expr k_range = s.K % 2 != 0 ? less(kv, s.K) : Expr();
    // B's rows far apart (b_rows_far): each pair's copy hints the same two rows of the next
    // micro-panel (the mn columns after these, in the same pages), at both ends; they
    // arrive while this micro-panel's micro-rows run (see the tile-register launch).
    Stmt hint;
    if (b_rows_far(s) && t.bn / mn > 1) {
      const ExprNode* bread = site_read(k, s, s.b);
      Expr next = simplify(add(var(j0), mul(add(var(jb), imm(1)), imm(mn))));
      auto b_at = [&](const Expr& col) {
        std::vector<Expr> idx;
        for (const Expr& i : bread->operands)
          idx.push_back(i->name == s.k   ? simplify(mul(var(pp), imm(2)))
                        : i->name == s.j ? simplify(col)
                                         : batch_at.at(i->name));
        return idx;
      };
      Expr fits = less(simplify(add(next, imm(mn))), s.N + 1);
      if (s.K % 2 != 0) fits = conj(fits, less(simplify(add(mul(var(pp), imm(2)), imm(1))), s.K));
      hint = if_then(conj(less(simplify(add(var(jb), imm(1))), t.bn / mn), fits),
                     block({prefetch(s.b, b_at(next), 2), prefetch(s.b, b_at(add(next, imm(mn - 1))), 2)}));
    }
    auto panel_of = [&](Expr in_range) {
      Stmt st = packed(s.b, *bbuf, b_p, {var(pp), simplify(add(mul(var(half), imm(2 * un)), add(mul(var(c), imm(2)), var(e))))},
                       {{s.k, kv}, {s.j, jv}}, conj(k_range, in_range));
      Stmt pair = loop(half, tn, loop(c, un, loop(e, 2, st, ForKind::Unrolled)), tn > 1 ? ForKind::Unrolled : ForKind::Serial);
      if (hint && !in_range) pair = block({hint, pair});
      return loop(pp, npairs, pair);
    };
    // Only the micro-panel that crosses N tests its columns (see full_columns).
    panel = s.N % mn != 0 || s.N % t.bn != 0
                ? full_columns(add(var(j0), mul(add(var(jb), imm(1)), imm(mn))), s.N, panel_of(nullptr),
                               panel_of(less(jv, s.N)))
                : panel_of(nullptr);
  }

  // 3. A micro-tile: zero, a matrix_mma_pairs per accumulator and k pair, store (clipped
  //    at C's edges, rounded to C's dtype).
  Stmt micro;
  {
    const std::string pp = names.fresh("pp");
    const Expr row0 = simplify(add(var(i0), mul(var(ib), imm(tm))));
    // In place, A's row at micro-tile row `a` (the last row of A for rows past M, whose
    // results are not stored).
    const ExprNode* aread = site_read(k, s, s.a);
    auto a_pair = [&](int64_t a) {
      if (!in_place) return access(a_p, {var(ib), var(pp), imm(a), imm(0)}, s.input);
      Expr row = simplify(add(row0, imm(a)));
      if (t.bm * nmb - s.M > 0 || s.M % tm != 0) row = call(MathFn::Min, {row, imm(s.M - 1)});
      std::vector<Expr> idx;
      for (const Expr& i : aread->operands)
        idx.push_back(i->name == s.i   ? row
                      : i->name == s.k ? simplify(mul(var(pp), imm(2)))
                                       : batch_at.at(i->name));
      return access(s.a, idx, s.input);
    };
    std::vector<Stmt> zero, mma, out;
    for (int64_t a = 0; a < tm; ++a)
      for (int64_t cc = 0; cc < tn; ++cc) {
        const std::vector<Expr> vec = {imm(a), imm(cc), imm(0), imm(0)};
        zero.push_back(matrix_zero(acc, vec, 1, un));
        mma.push_back(matrix_mma_pairs(acc, vec, a_pair(a), access(b_p, {var(pp), imm(cc * 2 * un)}, s.input), 1, un, 2));
        std::vector<Expr> origin;
        for (const std::string& v : s.batch) origin.push_back(batch_at.at(v));
        origin.push_back(simplify(add(row0, imm(a))));
        origin.push_back(simplify(add(add(var(j0), mul(var(jb), imm(mn))), imm(cc * un))));
        out.push_back(matrix_store(s.output, origin, access(acc, vec, DType::F32), 1, un));
      }
    Stmt k_loop = loop(pp, npairs, block(mma));
    micro = block({block(zero), k_loop, block(out)});
    if (t.bm * nmb - s.M >= tm) micro = if_then(less(row0, s.M), micro);
  }
  Stmt col = block({panel, loop(ib, rows_per_task, micro)});
  if (t.bn * nnb - s.N >= mn) col = if_then(less(simplify(add(var(j0), mul(var(jb), imm(mn)))), s.N), col);
  Stmt body = in_place ? loop(jb, t.bn / mn, col) : block({pack_a, loop(jb, t.bn / mn, col)});
  body = allocate(acc, DType::F32, {tm, tn, 1, un}, MemScope::Register, body);
  body = allocate(b_p, s.input, {npairs, 2 * mn}, MemScope::Local, body);
  if (!in_place) body = allocate(a_p, s.input, {rows_per_task, npairs, tm, 2}, MemScope::Local, body);
  for (size_t q = lets.size(); q-- > 0;) body = let_stmt(lets[q].first, lets[q].second, body);
  return replace_launch(p, replaced, func_name, for_loop(task, imm(0), imm(tasks), ForKind::GridX, body));
}

} // namespace

std::optional<MatrixSite> contraction_site(const Kernel& k, const ShapeBindings& b, const std::string& output,
                                           std::string* why) {
  auto no = [&](std::string w) -> std::optional<MatrixSite> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  size_t n = k.body.size();
  for (size_t q = 0; q < k.body.size(); ++q)
    if (k.body[q].output == output) n = q;
  if (n == k.body.size()) return no(fmt::format("no statement of kernel '{}' writes '{}'", k.name, output));
  const Comprehension& c = k.body[n];
  if (c.reduce != ReduceKind::Add || c.reduction_vars.size() != 1 || c.is_indirect_store() || c.indices.size() < 2)
    return no("the statement is not a sum over one reduction axis into a matrix `C[.., i, j] += ...`");
  if (c.value->kind != ExprKind::Binary || c.value->binary_op != BinaryOp::Mul)
    return no("the summed value is not a product A[.., i, k] * B[.., k, j]");
  const ExprNode* x = operand_access(c.value->operands[0]);
  const ExprNode* y = operand_access(c.value->operands[1]);
  if (!x || !y) return no("the factors are not plain reads of two tensors (one index variable per dimension)");
  MatrixSite s;
  s.statement = n;
  s.output = output;
  s.i = c.indices[c.indices.size() - 2];
  s.j = c.indices.back();
  s.k = c.reduction_vars[0];
  s.batch.assign(c.indices.begin(), c.indices.end() - 2);
  std::set<std::string> lhs(c.indices.begin(), c.indices.end());
  if (lhs.size() != c.indices.size()) return no("an index variable appears twice on the left-hand side");
  if (indexes(x, s.j)) std::swap(x, y);
  std::set<std::string> a_vars(s.batch.begin(), s.batch.end()), b_vars = a_vars;
  a_vars.insert({s.i, s.k});
  b_vars.insert({s.k, s.j});
  for (const Expr& e : x->operands)
    if (!a_vars.count(e->name)) return no(fmt::format("'{}' is read at '{}', which is not its row, k or batch", x->name, e->name));
  for (const Expr& e : y->operands)
    if (!b_vars.count(e->name)) return no(fmt::format("'{}' is read at '{}', which is not k, its column or batch", y->name, e->name));
  if (!indexes(x, s.i) || !indexes(x, s.k) || !indexes(y, s.k) || !indexes(y, s.j))
    return no("the factors do not read A[.., i, k] and B[.., k, j]");
  s.a = x->name;
  s.b = y->name;
  const size_t ar = x->operands.size();
  s.a_rows = ar >= 2 && x->operands[ar - 1]->name == s.k && x->operands[ar - 2]->name == s.i;
  const size_t br = y->operands.size();
  s.b_rows = br >= 2 && y->operands[br - 1]->name == s.j && y->operands[br - 2]->name == s.k;
  const TensorDecl* ta = k.find_tensor(s.a);
  const TensorDecl* tb = k.find_tensor(s.b);
  const TensorDecl* tc = k.find_tensor(output);
  if (!ta || !tb || !tc || ta->dtype != tb->dtype)
    return no("A and B have different dtypes");
  s.input = ta->dtype;
  auto extent = [&](const std::string& v) { return eval_int(c.ranges.at(v), b, "the range of '" + v + "'"); };
  s.M = extent(s.i);
  s.N = extent(s.j);
  s.K = extent(s.k);
  for (const std::string& v : s.batch) s.batch_extents.push_back(extent(v));
  if (s.M < 1 || s.N < 1 || s.K < 1) return no("an empty contraction");
  return s;
}

std::optional<MatrixSite> matrix_site(const Kernel& k, const ShapeBindings& b, const hcd::Hcd& h,
                                      const std::string& output, bool tf32, std::string* why) {
  auto no = [&](std::string w) -> std::optional<MatrixSite> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  std::optional<MatrixSite> site = contraction_site(k, b, output, why);
  if (!site) return site;
  MatrixSite& s = *site;
  const TensorDecl* tc = k.find_tensor(output);
  if (tc->dtype != DType::F32 && tc->dtype != s.input)
    return no(fmt::format("the result is {}; the unit accumulates in f32, stored as f32 or the inputs' dtype",
                          dtype_name(tc->dtype)));
  bool found = false;
  for (const hcd::MatrixUnit& u : h.matrix_units) {
    const bool takes = std::find(u.input_dtypes.begin(), u.input_dtypes.end(), s.input) != u.input_dtypes.end();
    const bool precision = u.precision == "inputs" || (tf32 && u.precision == "tf32" && s.input == DType::F32);
    const bool printable = !tile_registers_launch(h) || c_prints_unit(h, u);
    if (takes && precision && printable && u.accumulator == DType::F32 && u.m > 0 && u.n > 0 && u.k > 0) {
      s.unit = u;
      s.tf32 = u.precision == "tf32";
      found = true;
      break;
    }
  }
  if (!found)
    return no(fmt::format("HCD '{}' has no matrix unit taking {} operands with an f32 accumulator{}", h.name,
                          dtype_name(s.input),
                          s.input == DType::F32 && !tf32 ? " at f32 precision (tf32 only when the schedule asks)" : ""));
  return site;
}

bool pair_unit(const hcd::MatrixUnit& u) { return u.m == 1 && u.n == 16 && u.k == 2; }

int64_t pair_max_rows(int64_t tn, const hcd::Hcd& h) { return pair_rows(tn, h); }

bool c_prints_unit(const hcd::Hcd& h, const hcd::MatrixUnit& u) {
  auto has = [&](const char* f) { return std::find(h.isa.begin(), h.isa.end(), f) != h.isa.end(); };
  const bool bf16 = u.input_dtypes == std::vector<DType>{DType::BF16};
  // AMX's tdpbf16ps: 16 x 16 += 16 x 32 x 16, bf16, on tile registers.
  if (u.m == 16 && u.n == 16 && u.k == 32) return bf16 && has("amx-tile") && has("amx-bf16");
  // AVX512-BF16's vdpbf16ps on 512-bit vectors: 1 x 16 += 1 x 2 x 16.
  if (pair_unit(u)) return bf16 && has("avx512_bf16") && h.vector_bits == 512;
  return false;
}

bool dialect_issues_matrix_units(const hcd::Hcd& h) {
  if (h.dialect == "opencl") return false;
  if (h.dialect != "c") return true;
  for (const hcd::MatrixUnit& u : h.matrix_units)
    if (c_prints_unit(h, u)) return true;
  return false;
}

bool tile_registers_launch(const hcd::Hcd& h) { return h.warp_size <= 1 && h.dialect == "c"; }

std::vector<MatrixSite> matrix_sites(const Kernel& k, const ShapeBindings& b, const hcd::Hcd& h) {
  std::vector<MatrixSite> out;
  if (h.matrix_units.empty() || !dialect_issues_matrix_units(h)) return out;
  std::set<std::string> seen;
  for (const Comprehension& c : k.body) {
    if (!seen.insert(c.output).second) continue;
    try {
      if (auto s = matrix_site(k, b, h, c.output, false)) out.push_back(*s);
    } catch (const UserError&) {
      // an unbound range: not a site
    }
  }
  return out;
}

MatrixTiles matrix_tiles(const MatrixSite& s, const hcd::Hcd& h) {
  if (tile_registers_launch(h)) return pair_unit(s.unit) ? pair_tiles(s, h) : register_tiles(s, h);
  const int64_t um = s.unit.m, un = s.unit.n, uk = s.unit.k;
  const int64_t lanes = std::max(1, h.warp_size);
  MatrixTiles t;
  // Warps per block: up to 4 (2 x 2), as many as a block may hold.
  const int64_t max_warps =
      std::max<int64_t>(1, std::min<int64_t>(h.max_threads_per_block / lanes, h.max_block.size() > 1 ? h.max_block[1] : 1));
  if (max_warps >= 4) t.warps_m = t.warps_n = 2;
  else if (max_warps >= 2) t.warps_m = 2;
  // A warp's accumulators take at most a quarter of its lanes' registers.
  int64_t lane_bytes = lane_register_bytes(h) * lanes, budget = 1;
  while (budget < lane_bytes) budget *= 2;
  budget = std::max<int64_t>(budget / 16, um * un); // f32 elements: a quarter of the bytes
  int64_t wm = um, wn = un;
  for (int64_t cm = um; cm <= 8 * um; cm *= 2)
    for (int64_t cn = un; cn <= 8 * un; cn *= 2) {
      if (cm * cn > budget) continue;
      const int64_t area = cm * cn, best = wm * wn;
      const int64_t bal = std::abs(cm / um - cn / un), best_bal = std::abs(wm / um - wn / un);
      if (area > best || (area == best && bal < best_bal)) {
        wm = cm;
        wn = cn;
      }
    }
  // No larger than the matrix needs, then smaller until every compute unit has a block.
  while (wm > um && (wm / 2) * t.warps_m >= s.M) wm /= 2;
  while (wn > un && (wn / 2) * t.warps_n >= s.N) wn /= 2;
  int64_t batch = 1;
  for (int64_t e : s.batch_extents) batch *= e;
  auto tasks = [&] { return batch * ceil_div(s.M, wm * t.warps_m) * ceil_div(s.N, wn * t.warps_n); };
  while (tasks() < h.units && (wm > um || wn > un)) {
    if (wm / um >= wn / un && wm > um) wm /= 2;
    else wn /= 2;
  }
  t.bm = wm * t.warps_m;
  t.bn = wn * t.warps_n;
  // k block: 32 deep (a multiple of the unit's k), less if the tiles would take more than
  // a quarter of the staging memory (room for other blocks on the same unit).
  const int64_t stage_bytes = staging(h).second;
  t.bk = std::max<int64_t>(uk, 32 / uk * uk);
  while (t.bk > uk && staged_bytes(s, t, h) * 4 > stage_bytes) t.bk -= uk;
  if (t.bk > s.K) t.bk = ceil_div(s.K, uk) * uk;
  return t;
}

std::vector<std::string> matrix_reasons(const MatrixSite& s, const MatrixTiles& t, const hcd::Hcd& h) {
  if (tile_registers_launch(h)) return pair_unit(s.unit) ? pair_reasons(s, t, h) : register_reasons(s, t, h);
  std::vector<std::string> r;
  const int64_t lanes = std::max(1, h.warp_size);
  const int64_t wm = t.bm / t.warps_m, wn = t.bn / t.warps_n;
  r.push_back(fmt::format("{} (statement {}): contraction {}x{}x{} over '{}' on the matrix unit {}x{}x{} ({} in, f32 "
                          "accumulator{})",
                          s.output, s.statement, s.M, s.N, s.K, s.k, s.unit.m, s.unit.n, s.unit.k,
                          dtype_name(s.input), s.tf32 ? ", operands rounded to tf32" : ""));
  r.push_back(fmt::format("  block tile {}x{} in k blocks of {}: {} warps of {} lanes ({} x {}), each {}x{} = {}x{} "
                          "unit tiles, {} f32 accumulators per lane",
                          t.bm, t.bn, t.bk, t.warps_m * t.warps_n, lanes, t.warps_m, t.warps_n, wm, wn,
                          wm / s.unit.m, wn / s.unit.n, wm * wn / lanes));
  const auto [scope, bytes] = staging(h);
  r.push_back(fmt::format("  {}: A and B tiles take {} of {}", mem_scope_name(scope), kib(staged_bytes(s, t, h)),
                          kib(bytes)));
  int64_t batch = 1;
  for (int64_t e : s.batch_extents) batch *= e;
  r.push_back(fmt::format("  threads: {} blocks over {} compute units",
                          batch * ceil_div(s.M, t.bm) * ceil_div(s.N, t.bn), h.units));
  return r;
}

LoopProgram matrix_unit(const Kernel& k, const LoopProgram& p, const ShapeBindings& b, const hcd::Hcd& h,
                        const std::string& output, const std::vector<int64_t>& tiles, bool tf32) {
  const std::string what = fmt::format("matrix_unit {}", output);
  std::string why;
  std::optional<MatrixSite> site = matrix_site(k, b, h, output, tf32, &why);
  if (!site) fail(what, why);
  const MatrixSite& s = *site;
  if (tile_registers_launch(h))
    return pair_unit(s.unit) ? pair_launch(k, p, h, s, tiles) : register_launch(k, p, h, s, tiles);
  MatrixTiles t = matrix_tiles(s, h);
  const int64_t um = s.unit.m, un = s.unit.n, uk = s.unit.k;
  const int64_t lanes = std::max(1, h.warp_size);
  if (!tiles.empty()) {
    if (tiles.size() != 5) fail(what, "expected five tile sizes: tiles BM BN BK warps WM WN");
    t = MatrixTiles{tiles[0], tiles[1], tiles[2], tiles[3], tiles[4]};
  }
  if (t.warps_m < 1 || t.warps_n < 1 || t.bm % (t.warps_m * um) || t.bn % (t.warps_n * un) || t.bk < 1 || t.bk % uk)
    fail(what, fmt::format("block tile {}x{}x{} over {}x{} warps does not split into {}x{}x{} unit tiles", t.bm, t.bn,
                           t.bk, t.warps_m, t.warps_n, um, un, uk));
  const int64_t warps = t.warps_m * t.warps_n, threads = warps * lanes;
  if (threads > h.max_threads_per_block || (h.max_block.size() > 1 && warps > h.max_block[1]))
    fail(what, fmt::format("{} warps of {} lanes exceed a block of the HCD ({} threads, {} along thread.y)", warps,
                           lanes, h.max_threads_per_block, h.max_block.size() > 1 ? h.max_block[1] : 1));

  // The statement's launches, as lowering made them: the update and (in-place sums) its init.
  const std::string func_name = fmt::format("{}_{}", k.name, s.statement);
  const std::vector<size_t> replaced = statement_launches(k, p, s, what);
  const LoopBuffer* cbuf = p.find_buffer(output);
  const LoopBuffer* abuf = p.find_buffer(s.a);
  const LoopBuffer* bbuf = p.find_buffer(s.b);
  if (!cbuf || !abuf || !bbuf) fail(what, "the contraction's tensors are not buffers of the program");

  const int64_t tm = t.bm / t.warps_m / um, tn = t.bn / t.warps_n / un;
  const int64_t wm = t.bm / t.warps_m, wn = t.bn / t.warps_n;
  const int64_t nmb = ceil_div(s.M, t.bm), nnb = ceil_div(s.N, t.bn), nkb = ceil_div(s.K, t.bk);
  int64_t batch = 1;
  for (int64_t e : s.batch_extents) batch *= e;
  const int64_t tasks = batch * nmb * nnb;
  const int64_t pa = pad_a(s, h), pb = pad_b(s, h);
  const MemScope scope = staging(h).first;

  NameSet names(p);
  const std::string task = names.fresh("task"), i0 = names.fresh("i0"), j0 = names.fresh("j0"),
                    k_o = names.fresh(s.k + "_o"), kk = names.fresh(s.k + "_u");
  const std::string a_s = names.fresh(s.a + "_" + mem_scope_name(scope)),
                    b_s = names.fresh(s.b + "_" + mem_scope_name(scope)), acc = names.fresh(output + "_tiles");

  // Lets of the task: batch indices, the row and column block.
  std::vector<std::pair<std::string, Expr>> lets;
  std::map<std::string, Expr> batch_at;
  task_lets(s, var(task), nmb, nnb, t.bm, t.bn, names, i0, j0, lets, batch_at);

  // A thread loop over warps (thread.y) and, for copies, one over lanes (thread.x).
  auto warp_loop = [&](const std::string& w, Stmt body) {
    return for_loop(w, imm(0), imm(warps), ForKind::ThreadY, std::move(body));
  };
  auto unrolled = [&](const std::string& v, int64_t n, Stmt body) {
    return for_loop(v, imm(0), imm(n), n > 1 ? ForKind::Unrolled : ForKind::Serial, std::move(body));
  };
  // A warp's tile origin inside the block: rows (w // warps_n) * wm, columns (w % warps_n) * wn.
  auto warp_row = [&](const std::string& w) { return t.warps_n == 1 ? mul(var(w), imm(wm)) : mul(floor_div(var(w), t.warps_n), imm(wm)); };
  auto warp_col = [&](const std::string& w) { return t.warps_n == 1 ? imm(0) : mul(mod(var(w), t.warps_n), imm(wn)); };

  // 1. Zero the accumulators.
  Stmt zero;
  {
    const std::string w = names.fresh("w"), a = names.fresh("tm"), c = names.fresh("tn");
    zero = warp_loop(w, unrolled(a, tm, unrolled(c, tn, matrix_zero(acc, {var(w), var(a), var(c), imm(0), imm(0)}, um, un))));
  }

  // 2. Copy one operand tile: element q of the tile per thread and step, in the order that
  //    makes consecutive lanes read consecutive elements of the tensor.
  const std::string cw = names.fresh("w"), cl = names.fresh("lane");
  auto copy_tile = [&](const std::string& tensor, const LoopBuffer& buf, const std::string& staged, int64_t rows,
                       int64_t cols, const std::string& row_var, Expr row0, int64_t row_extent,
                       const std::string& col_var, Expr col0, int64_t col_extent) {
    const ExprNode* read = site_read(k, s, tensor);
    const bool rows_fast = read->operands.back()->name == row_var;
    const std::string e = names.fresh("e"), r = names.fresh("r"), c = names.fresh("c"), q = names.fresh("q");
    const int64_t total = rows * cols, steps = ceil_div(total, threads);
    Expr qv = add(mul(add(mul(var(e), imm(warps)), var(cw)), imm(lanes)), var(cl));
    Expr rv = rows_fast ? mod(var(q), rows) : floor_div(var(q), cols);
    Expr cv = rows_fast ? floor_div(var(q), rows) : mod(var(q), cols);
    std::map<std::string, Expr> at = batch_at;
    at[row_var] = add(row0, var(r));
    at[col_var] = add(col0, var(c));
    std::vector<Expr> idx;
    for (const Expr& i : read->operands) idx.push_back(simplify(at.at(i->name)));
    Expr value = access(tensor, idx, buf.dtype);
    Expr zero_v = float_imm(0.0, buf.dtype);
    Expr in_range;
    auto conj = [&](Expr cnd) { in_range = in_range ? binary(BinaryOp::And, in_range, cnd) : cnd; };
    // Only tests that can fail: a partial last block along that axis.
    if (row_extent % rows != 0) conj(less(simplify(add(row0, var(r))), row_extent));
    if (col_extent % cols != 0) conj(less(simplify(add(col0, var(c))), col_extent));
    Stmt st = in_range ? if_then(in_range, store(staged, {var(r), var(c)}, value), store(staged, {var(r), var(c)}, zero_v))
                       : store(staged, {var(r), var(c)}, value);
    st = let_stmt(r, simplify(rv), let_stmt(c, simplify(cv), st));
    if (total % threads != 0) st = if_then(less(var(q), total), st);
    st = let_stmt(q, simplify(qv), st);
    return for_loop(e, imm(0), imm(steps), ForKind::Serial, st);
  };
  const Expr k0 = mul(var(k_o), imm(t.bk));
  Stmt copies = for_loop(
      cw, imm(0), imm(warps), ForKind::ThreadY,
      for_loop(cl, imm(0), imm(lanes), ForKind::ThreadX,
               block({copy_tile(s.a, *abuf, a_s, t.bm, t.bk, s.i, var(i0), s.M, s.k, k0, s.K),
                      copy_tile(s.b, *bbuf, b_s, t.bk, t.bn, s.k, k0, s.K, s.j, var(j0), s.N)})));

  // 3. Every warp multiplies its tiles over the k block's unit steps.
  Stmt mma;
  {
    const std::string w = names.fresh("w"), a = names.fresh("tm"), c = names.fresh("tn");
    Expr arow = simplify(add(warp_row(w), mul(var(a), imm(um))));
    Expr bcol = simplify(add(warp_col(w), mul(var(c), imm(un))));
    Expr kofs = simplify(mul(var(kk), imm(uk)));
    Stmt one = matrix_mma(acc, {var(w), var(a), var(c), imm(0), imm(0)}, access(a_s, {arow, kofs}, s.input),
                          access(b_s, {kofs, bcol}, s.input), um, un, uk, s.tf32);
    mma = warp_loop(w, unrolled(kk, t.bk / uk, unrolled(a, tm, unrolled(c, tn, one))));
  }
  Stmt k_loop = for_loop(k_o, imm(0), imm(nkb), ForKind::Serial, block({copies, barrier(), mma, barrier()}));

  // 4. Store the tiles (clipped at C's edges; rounded to C's dtype).
  Stmt out;
  {
    const std::string w = names.fresh("w"), a = names.fresh("tm"), c = names.fresh("tn");
    std::vector<Expr> origin;
    for (const std::string& v : s.batch) origin.push_back(batch_at.at(v));
    origin.push_back(simplify(add(add(var(i0), warp_row(w)), mul(var(a), imm(um)))));
    origin.push_back(simplify(add(add(var(j0), warp_col(w)), mul(var(c), imm(un)))));
    Stmt st = matrix_store(output, origin, access(acc, {var(w), var(a), var(c), imm(0), imm(0)}, DType::F32), um, un);
    out = warp_loop(w, unrolled(a, tm, unrolled(c, tn, st)));
  }

  Stmt body = block({zero, k_loop, out});
  body = allocate(acc, DType::F32, {warps, tm, tn, um, un}, MemScope::Register, body);
  body = allocate(b_s, s.input, {t.bk, t.bn + pb}, scope, body);
  body = allocate(a_s, s.input, {t.bm, t.bk + pa}, scope, body);
  for (size_t q = lets.size(); q-- > 0;) body = let_stmt(lets[q].first, lets[q].second, body);
  return replace_launch(p, replaced, func_name, for_loop(task, imm(0), imm(tasks), ForKind::GridX, body));
}

} // namespace unitile
