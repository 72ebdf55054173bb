// The thread-tiled GEMM launch of a contraction on SIMT hardware (see ThreadGemm.h).
#include "schedule/ThreadGemm.h"

#include "schedule/LoopRewrite.h"

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

void fail(const std::string& what, const std::string& why) {
  throw UserError(fmt::format("error: schedule: {}: {}", what, why));
}

// The staging memory: the first level after the registers and the bytes one block may use.
std::pair<MemScope, int64_t> staging(const hcd::Hcd& h) {
  for (const hcd::MemoryLevel& l : h.memory) {
    if (l.scope == "register") continue;
    MemScope s = l.scope == "shared" ? MemScope::Shared : l.scope == "local" ? MemScope::Local : MemScope::Global;
    int64_t bytes = l.size_bytes;
    if (h.shared_memory_per_block > 0) bytes = std::min(bytes, h.shared_memory_per_block);
    return {s, bytes};
  }
  return {MemScope::Shared, h.shared_memory_per_block};
}

// 32-bit registers one element of `t` takes.
int64_t words(DType t) { return std::max<int64_t>(1, dtype_bytes(t) / 4); }

// Registers of a thread's tile: the accumulators, one column of A and one row of B.
int64_t tile_registers(const ThreadTiles& t, DType d) { return (t.tm * t.tn + t.tm + t.tn) * words(d); }

// The read of `tensor` in the statement's value.
const ExprNode* read_of(const Comprehension& c, const std::string& tensor) {
  const ExprNode* read = nullptr;
  visit(c.value, [&](const Expr& e) {
    if (e->kind == ExprKind::Access && e->name == tensor && !read) read = e.get();
  });
  return read;
}

// Whether the copy of `tensor` walks the staged tile's first dimension (k) fastest: when
// the tensor's last index is k. Its staged rows are then padded by one element, so that
// consecutive threads' stores (one row apart) fall in different banks.
bool k_fastest(const MatrixSite& s, const Kernel& k, const std::string& tensor) {
  return read_of(k.body[s.statement], tensor)->operands.back()->name == s.k;
}

int64_t staged_bytes(const MatrixSite& s, const Kernel& k, const ThreadTiles& t) {
  const int64_t pa = k_fastest(s, k, s.a) ? 1 : 0, pb = k_fastest(s, k, s.b) ? 1 : 0;
  return t.bk * (t.bm + pa + t.bn + pb) * dtype_bytes(s.input);
}

} // namespace

bool simt_blocks(const hcd::Hcd& h) {
  return h.warp_size > 1 && h.max_threads_per_block >= 2 * h.warp_size && !h.max_block.empty() &&
         h.max_block[0] >= h.warp_size && h.shared_memory_per_block > 0;
}

std::optional<MatrixSite> thread_gemm_site(const Kernel& k, const ShapeBindings& b, const hcd::Hcd& h,
                                           const std::string& output, std::string* why) {
  auto no = [&](std::string w) -> std::optional<MatrixSite> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  if (!simt_blocks(h))
    return no(fmt::format("HCD '{}' does not run blocks of SIMT threads with shared memory (warp_size {}, "
                          "max_threads_per_block {}, shared_memory_per_block {})",
                          h.name, h.warp_size, h.max_threads_per_block, h.shared_memory_per_block));
  std::optional<MatrixSite> site = contraction_site(k, b, output, why);
  if (!site) return site;
  const TensorDecl* tc = k.find_tensor(output);
  if ((site->input != DType::F32 && site->input != DType::F64) || tc->dtype != site->input)
    return no(fmt::format("A, B and C must all be f32 or all f64 (they are {}, {})", dtype_name(site->input),
                          dtype_name(tc->dtype)));
  return site;
}

ThreadTiles thread_gemm_tiles(const Kernel& k, const MatrixSite& s, const hcd::Hcd& h) {
  const int64_t warp = std::max(1, h.warp_size);
  ThreadTiles t;
  // The thread tile: up to 8 x 8, as large as half of a thread's registers holds (the
  // rest is for addresses, indices and the compiler).
  t.tm = t.tn = 8;
  while (tile_registers(t, s.input) * 2 > h.vector_registers && t.tm * t.tn > 1) {
    if (t.tn >= t.tm) t.tn /= 2;
    else t.tm /= 2;
  }
  // Threads: a quarter of a block's limit (several blocks share a compute unit), a square
  // of threads as far as the powers of two allow, thread.x the wider side.
  const int64_t max_y = h.max_block.size() > 1 ? h.max_block[1] : 1;
  int64_t threads = std::max<int64_t>(warp, h.max_threads_per_block / 4 / warp * warp);
  int64_t tx = 1;
  while (tx * tx < threads) tx *= 2;
  tx = std::min(tx, h.max_block[0]);
  int64_t ty = std::max<int64_t>(1, std::min(threads / tx, max_y));
  // No larger than the matrix needs: thread tiles first, then threads (keeping a warp).
  while (t.tm > 1 && t.tm / 2 * ty >= s.M) t.tm /= 2;
  while (ty > 1 && ty / 2 * t.tm >= s.M && tx * ty / 2 >= warp) ty /= 2;
  while (t.tn > 1 && t.tn / 2 * tx >= s.N) t.tn /= 2;
  while (tx > 1 && tx / 2 * t.tn >= s.N && tx * ty / 2 >= warp) tx /= 2;
  int64_t batch = 1;
  for (int64_t e : s.batch_extents) batch *= e;
  auto tasks = [&] { return batch * ceil_div(s.M, ty * t.tm) * ceil_div(s.N, tx * t.tn); };
  // Then smaller until every compute unit has a block: first down to 4 warps, then to 4 x 4
  // tiles, then down to 2 warps, then to 2 x 2 tiles (fewer threads keep each thread's
  // reuse of the staged tiles; smaller tiles keep more threads for latency).
  auto halve_threads = [&] {
    if (ty >= tx) ty /= 2;
    else tx /= 2;
  };
  auto halve_tile = [&] {
    if (t.tm >= t.tn) t.tm /= 2;
    else t.tn /= 2;
  };
  while (tasks() < h.units) {
    if (tx * ty > 4 * warp) halve_threads();
    else if (t.tm * t.tn > 16) halve_tile();
    else if (tx * ty > 2 * warp) halve_threads();
    else if (t.tm * t.tn > 4) halve_tile();
    else break;
  }
  t.bm = ty * t.tm;
  t.bn = tx * t.tn;
  // The k block: 16 deep, less while the tiles take more than a quarter of the staging
  // memory (room for other blocks on the same unit).
  const int64_t budget = staging(h).second;
  t.bk = 16;
  while (t.bk > 1 && staged_bytes(s, k, t) * 4 > budget) t.bk /= 2;
  t.bk = std::min(t.bk, s.K);
  return t;
}

std::vector<std::string> thread_gemm_reasons(const MatrixSite& s, const ThreadTiles& t, const hcd::Hcd& h) {
  std::vector<std::string> r;
  const int64_t tx = t.threads_x(), ty = t.threads_y(), threads = tx * ty, warp = std::max(1, h.warp_size);
  r.push_back(fmt::format("{} (statement {}): contraction {}x{}x{} over '{}' ({}), a thread-tiled GEMM on blocks of "
                          "SIMT threads (thread_gemm)",
                          s.output, s.statement, s.M, s.N, s.K, s.k, dtype_name(s.input)));
  r.push_back(fmt::format("  block tile {}x{} in k blocks of {}: {} x {} = {} threads ({} warp{} of {}), each a {}x{} "
                          "register tile at rows y + a*{}, columns x + c*{} (consecutive threads: consecutive "
                          "columns of C, of the B tile and of the A copy)",
                          t.bm, t.bn, t.bk, tx, ty, threads, ceil_div(threads, warp), threads > warp ? "s" : "", warp, t.tm, t.tn, ty, tx));
  r.push_back(fmt::format("  registers: {} accumulators + {} A + {} B values = {} of {} 32-bit registers per thread",
                          t.tm * t.tn, t.tm, t.tn, tile_registers(t, s.input), h.vector_registers));
  const int64_t bytes = t.bk * (t.bm + t.bn) * dtype_bytes(s.input);
  const auto [scope, limit] = staging(h);
  r.push_back(fmt::format("  {} memory: the A ({}x{}, k-major) and B ({}x{}) tiles take about {} of {} per block; per k "
                          "block every thread copies {} elements of A and {} of B, between two barriers",
                          mem_scope_name(scope), t.bk, t.bm, t.bk, t.bn, kib(bytes), kib(limit),
                          ceil_div(t.bm * t.bk, threads), ceil_div(t.bk * t.bn, threads)));
  int64_t batch = 1;
  for (int64_t e : s.batch_extents) batch *= e;
  r.push_back(fmt::format("  grid: {} blocks over {} compute units", batch * ceil_div(s.M, t.bm) * ceil_div(s.N, t.bn),
                          h.units));
  return r;
}

LoopProgram thread_gemm(const Kernel& k, const LoopProgram& p, const ShapeBindings& b, const hcd::Hcd& h,
                        const std::string& output, const std::vector<int64_t>& tiles) {
  const std::string what = fmt::format("thread_gemm {}", output);
  std::string why;
  std::optional<MatrixSite> site = thread_gemm_site(k, b, h, output, &why);
  if (!site) fail(what, why);
  const MatrixSite& s = *site;
  ThreadTiles t = thread_gemm_tiles(k, s, h);
  if (!tiles.empty()) {
    if (tiles.size() != 5) fail(what, "expected five tile sizes: tiles BM BN BK thread TM TN");
    t = ThreadTiles{tiles[0], tiles[1], tiles[2], tiles[3], tiles[4]};
  }
  if (t.tm < 1 || t.tn < 1 || t.bk < 1 || t.bm % t.tm || t.bn % t.tn || t.bm < t.tm || t.bn < t.tn)
    fail(what, fmt::format("block tile {}x{} does not split into {}x{} thread tiles", t.bm, t.bn, t.tm, t.tn));
  const int64_t tx = t.threads_x(), ty = t.threads_y(), threads = tx * ty;
  const int64_t max_y = h.max_block.size() > 1 ? h.max_block[1] : 1;
  if (threads > h.max_threads_per_block || tx > h.max_block[0] || ty > max_y)
    fail(what, fmt::format("{} x {} threads exceed a block of the HCD ({} threads, {} x {})", tx, ty,
                           h.max_threads_per_block, h.max_block[0], max_y));

  const std::string func_name = fmt::format("{}_{}", k.name, s.statement);
  std::vector<size_t> replaced;
  for (size_t f = 0; f < p.funcs.size(); ++f)
    if (p.funcs[f].name == func_name || p.funcs[f].name == func_name + "_init") replaced.push_back(f);
  bool has_update = false;
  for (size_t f : replaced) has_update |= p.funcs[f].name == func_name;
  if (!has_update)
    fail(what, fmt::format("the launch of statement {} was already changed by an earlier primitive; put thread_gemm "
                           "first",
                           s.statement));
  const LoopBuffer* abuf = p.find_buffer(s.a);
  const LoopBuffer* bbuf = p.find_buffer(s.b);
  const LoopBuffer* cbuf = p.find_buffer(output);
  if (!abuf || !bbuf || !cbuf) fail(what, "the contraction's tensors are not buffers of the program");

  const int64_t nmb = ceil_div(s.M, t.bm), nnb = ceil_div(s.N, t.bn), nkb = ceil_div(s.K, t.bk);
  int64_t batch = 1;
  for (int64_t e : s.batch_extents) batch *= e;
  const int64_t tasks = batch * nmb * nnb;
  const MemScope scope = staging(h).first;
  const bool a_kf = k_fastest(s, k, s.a), b_kf = k_fastest(s, k, s.b);
  const int64_t pa = a_kf ? 1 : 0, pb = b_kf ? 1 : 0;

  std::set<std::string> taken;
  for (const LoopBuffer& x : p.buffers) taken.insert(x.name);
  for (const ParamDecl& x : p.params) taken.insert(x.name);
  auto fresh = [&](const std::string& base) {
    if (taken.insert(base).second) return base;
    for (int n = 0;; ++n)
      if (std::string c = fmt::format("{}_{}", base, n); taken.insert(c).second) return c;
  };
  const std::string task = fresh("task"), i0 = fresh("i0"), j0 = fresh("j0"), k_o = fresh(s.k + "_o"),
                    kk = fresh(s.k + "_i");
  const std::string a_s = fresh(s.a + "_" + mem_scope_name(scope)), b_s = fresh(s.b + "_" + mem_scope_name(scope)),
                    acc = fresh(output + "_tile");

  // The task's batch indices and block origins.
  std::vector<std::pair<std::string, Expr>> lets;
  std::map<std::string, Expr> batch_at;
  {
    const Expr tv = var(task);
    int64_t stride = nmb * nnb;
    std::vector<Expr> bexpr(s.batch.size());
    for (size_t q = s.batch.size(); q-- > 0;) {
      Expr e = floor_div(tv, stride);
      bexpr[q] = q == 0 ? e : mod(e, s.batch_extents[q]);
      stride *= s.batch_extents[q];
    }
    for (size_t q = 0; q < s.batch.size(); ++q) {
      std::string name = fresh(s.batch[q]);
      lets.emplace_back(name, simplify(bexpr[q]));
      batch_at[s.batch[q]] = var(name);
    }
    Expr it = nnb == 1 ? tv : floor_div(tv, nnb);
    if (batch > 1 || nmb == 1) it = nmb == 1 ? imm(0) : mod(it, nmb);
    lets.emplace_back(i0, simplify(mul(it, imm(t.bm))));
    lets.emplace_back(j0, simplify(nnb == 1 ? imm(0) : mul(mod(tv, nnb), imm(t.bn))));
  }

  // A nest over the block's threads: thread.y outside thread.x.
  auto thread_loops = [&](const std::string& y, const std::string& x, Stmt body) {
    return for_loop(y, imm(0), imm(ty), ForKind::ThreadY, for_loop(x, imm(0), imm(tx), ForKind::ThreadX, std::move(body)));
  };
  auto unrolled = [&](const std::string& v, int64_t n, Stmt body) {
    return for_loop(v, imm(0), imm(n), n > 1 ? ForKind::Unrolled : ForKind::Serial, std::move(body));
  };
  auto tile_at = [&](const std::string& y, const std::string& x, const std::string& a, const std::string& c) {
    return std::vector<Expr>{var(y), var(x), var(a), var(c)};
  };

  // 1. Every thread zeroes its tile.
  Stmt zero;
  {
    const std::string y = fresh("ty"), x = fresh("tx"), a = fresh("a"), c = fresh("c");
    zero = thread_loops(y, x, unrolled(a, t.tm, unrolled(c, t.tn, store(acc, tile_at(y, x, a, c), float_imm(0.0, s.input)))));
  }

  // 2. All threads copy a tile [bk, extent] of `tensor` (k rows, `col_var` columns from
  //    col0): thread q takes elements q, q + threads, ..., in the order that makes
  //    consecutive threads read consecutive elements of the tensor.
  const std::string cy = fresh("ty"), cx = fresh("tx");
  const Expr k0 = mul(var(k_o), imm(t.bk));
  auto copy_tile = [&](const std::string& tensor, const LoopBuffer& buf, const std::string& staged, int64_t cols,
                       const std::string& col_var, Expr col0, int64_t col_extent, bool kf) {
    const ExprNode* read = read_of(k.body[s.statement], tensor);
    const std::string e = fresh("e"), r = fresh("r"), c = fresh("c"), q = fresh("q");
    const int64_t total = t.bk * cols, steps = ceil_div(total, threads);
    Expr qv = add(mul(add(mul(var(e), imm(ty)), var(cy)), imm(tx)), var(cx));
    Expr rv = kf ? mod(var(q), t.bk) : floor_div(var(q), cols);
    Expr cv = kf ? floor_div(var(q), t.bk) : mod(var(q), cols);
    std::map<std::string, Expr> at = batch_at;
    at[s.k] = add(k0, var(r));
    at[col_var] = add(col0, var(c));
    std::vector<Expr> idx;
    for (const Expr& i : read->operands) idx.push_back(simplify(at.at(i->name)));
    Expr value = access(tensor, idx, buf.dtype);
    Expr in_range;
    auto conj = [&](Expr cnd) { in_range = in_range ? binary(BinaryOp::And, in_range, cnd) : cnd; };
    if (s.K % t.bk != 0) conj(less(simplify(add(k0, var(r))), s.K));
    if (col_extent % cols != 0) conj(less(simplify(add(col0, var(c))), col_extent));
    const std::vector<Expr> dst{var(r), var(c)};
    Stmt st = in_range ? if_then(in_range, store(staged, dst, value), store(staged, dst, float_imm(0.0, buf.dtype)))
                       : store(staged, dst, value);
    st = let_stmt(r, simplify(rv), let_stmt(c, simplify(cv), st));
    if (total % threads != 0) st = if_then(less(var(q), total), st);
    st = let_stmt(q, simplify(qv), st);
    return for_loop(e, imm(0), imm(steps), steps > 1 ? ForKind::Unrolled : ForKind::Serial, st);
  };
  Stmt copies = thread_loops(cy, cx,
                             block({copy_tile(s.a, *abuf, a_s, t.bm, s.i, var(i0), s.M, a_kf),
                                    copy_tile(s.b, *bbuf, b_s, t.bn, s.j, var(j0), s.N, b_kf)}));

  // 3. Every thread accumulates its tile over the k block.
  Stmt compute;
  {
    const std::string y = fresh("ty"), x = fresh("tx"), a = fresh("a"), c = fresh("c");
    Expr av = access(a_s, {var(kk), simplify(add(var(y), mul(var(a), imm(ty))))}, s.input);
    Expr bv = access(b_s, {var(kk), simplify(add(var(x), mul(var(c), imm(tx))))}, s.input);
    Expr sum = add(access(acc, tile_at(y, x, a, c), s.input), mul(av, bv));
    Stmt one = store(acc, tile_at(y, x, a, c), sum);
    compute = thread_loops(y, x, for_loop(kk, imm(0), imm(t.bk), ForKind::Serial,
                                          unrolled(a, t.tm, unrolled(c, t.tn, one))));
  }
  Stmt k_loop = for_loop(k_o, imm(0), imm(nkb), ForKind::Serial, block({copies, barrier(), compute, barrier()}));

  // 4. Every thread stores its tile (clipped at C's edges).
  Stmt out;
  {
    const std::string y = fresh("ty"), x = fresh("tx"), a = fresh("a"), c = fresh("c"), r = fresh("row"),
                      col = fresh("col");
    std::vector<Expr> idx;
    for (const std::string& v : s.batch) idx.push_back(batch_at.at(v));
    idx.push_back(var(r));
    idx.push_back(var(col));
    Stmt st = store(output, idx, access(acc, tile_at(y, x, a, c), s.input));
    Expr in_range;
    auto conj = [&](Expr cnd) { in_range = in_range ? binary(BinaryOp::And, in_range, cnd) : cnd; };
    if (s.M % t.bm != 0) conj(less(var(r), s.M));
    if (s.N % t.bn != 0) conj(less(var(col), s.N));
    if (in_range) st = if_then(in_range, st);
    st = let_stmt(r, simplify(add(var(i0), add(var(y), mul(var(a), imm(ty))))),
                  let_stmt(col, simplify(add(var(j0), add(var(x), mul(var(c), imm(tx))))), st));
    out = thread_loops(y, x, unrolled(a, t.tm, unrolled(c, t.tn, st)));
  }

  Stmt body = block({zero, k_loop, out});
  body = allocate(acc, s.input, {ty, tx, t.tm, t.tn}, MemScope::Register, body);
  body = allocate(b_s, s.input, {t.bk, t.bn + pb}, scope, body);
  body = allocate(a_s, s.input, {t.bk, t.bm + pa}, scope, body);
  for (size_t q = lets.size(); q-- > 0;) body = let_stmt(lets[q].first, lets[q].second, body);

  LoopProgram result = p;
  std::sort(replaced.begin(), replaced.end());
  const size_t first = replaced.front();
  for (size_t q = replaced.size(); q-- > 0;)
    result.funcs.erase(result.funcs.begin() + static_cast<std::ptrdiff_t>(replaced[q]));
  result.funcs.insert(result.funcs.begin() + static_cast<std::ptrdiff_t>(first),
                      LoopFunc{func_name, for_loop(task, imm(0), imm(tasks), ForKind::GridX, body)});
  return result;
}

} // namespace unitile
