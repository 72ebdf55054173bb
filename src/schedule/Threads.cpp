// threads: a launch's parallel loops run on blocks of hardware threads (a GPU's SIMT
// threads), consecutive threads on consecutive iterations of the innermost of them.
//
// Why it is a primitive of its own: on a device whose blocks hold many threads, a launch
// whose only parallel loop is the grid runs one thread per block, which leaves all but
// one lane of every warp idle. The mapping every such launch needs is the same
// composition: take the perfect nest of loops at the top of the launch whose iterations
// are independent (the grid loop and every loop directly inside it whose stores all move
// with it), fuse them into one loop (row-major, so the last of them, the unit-stride
// loop of the default lowering, varies fastest), split it into blocks of T threads,
// keep the blocks on the grid and bind the threads to thread.x. Consecutive threads then
// touch consecutive elements (coalesced). Written as fuse/split/bind it would need
// loop names that differ per launch, while the init and update launches of a reduction
// share their spatial names; as one primitive it applies per launch.
//
// Where the nest stops early (a per-row chain: the row loop holds several loop nests; an
// update nest whose next loop is a reduction), each thread runs the rest of the body for
// its iteration: one row per thread, many rows per block.
//
// A block has T threads, or fewer when the launch has fewer iterations (their count
// rounded up to the HCD's warp size). The last block's threads past the end do nothing
// (bind guards a split's tail).
#include "schedule/Threads.h"

#include "schedule/LoopRewrite.h"
#include "schedule/Primitives.h"

#include <fmt/core.h>

namespace unitile {

namespace {

bool is_thread_kind(ForKind k) { return k == ForKind::ThreadX || k == ForKind::ThreadY || k == ForKind::ThreadZ; }

bool has_thread_loops(const Stmt& s) {
  if (!s) return false;
  if (s->kind == StmtKind::For && is_thread_kind(s->for_kind)) return true;
  for (const Stmt& b : s->body)
    if (has_thread_loops(b)) return true;
  return false;
}

// The outermost loop of a func, through the Lets above it.
const StmtNode* outermost_loop(const Stmt& body) {
  const StmtNode* s = body.get();
  while (s && s->kind == StmtKind::Let) s = s->body[0].get();
  return s && s->kind == StmtKind::For ? s : nullptr;
}

bool plain_loop(const StmtNode* s) {
  return s->kind == StmtKind::For && const_int_value(s->min) == 0 && const_int_value(s->extent).has_value();
}

} // namespace

ThreadNest thread_nest(const Stmt& body, const std::string& v) {
  ThreadNest n;
  const StmtNode* top = outermost_loop(body);
  if (!top || top->var != v || has_thread_loops(body)) return n;
  if (top->for_kind != ForKind::GridX || !plain_loop(top)) return n;
  n.iterations = 1;
  for (const StmtNode* l = top;;) {
    n.loops.push_back(l->var);
    n.iterations *= *const_int_value(l->extent);
    const StmtNode* in = l->body[0].get();
    if (in->kind != StmtKind::For || !plain_loop(in) ||
        (in->for_kind != ForKind::Serial && in->for_kind != ForKind::Vectorized))
      break;
    if (!parallel_conflict(in->body[0], in->var).empty()) break;
    l = in;
  }
  const StmtNode* last = top;
  while (last->var != n.loops.back()) last = last->body[0].get();
  n.per_thread_loops = last->body[0]->kind != StmtKind::Store;
  return n;
}

bool runs_on_threads(const Stmt& body) { return has_thread_loops(body); }

int64_t block_threads(int64_t requested, int64_t iterations, const hcd::Hcd& h) {
  const int64_t warp = std::max(1, h.warp_size);
  const int64_t rounded = (iterations + warp - 1) / warp * warp;
  return std::max<int64_t>(1, std::min(requested, rounded));
}

Stmt threads_loop(const Stmt& body, const std::string& v, int64_t threads, const hcd::Hcd& h) {
  const std::string what = fmt::format("threads {} {}", v, threads);
  const StmtNode* top = outermost_loop(body);
  if (!top || top->var != v)
    throw UserError(fmt::format("error: schedule: {}: loop '{}' is not the outermost loop of its launch", what, v));
  if (has_thread_loops(body))
    throw UserError(fmt::format("error: schedule: {}: the launch already runs on threads", what));
  if (threads > h.max_threads_per_block || (!h.max_block.empty() && threads > h.max_block[0]))
    throw UserError(fmt::format("error: schedule: {}: a block of {} threads exceeds the HCD's limit ({} per block, "
                                "{} along thread.x)",
                                what, threads, h.max_threads_per_block, h.max_block.empty() ? 0 : h.max_block[0]));
  Stmt r = body;
  if (top->for_kind == ForKind::Serial || top->for_kind == ForKind::Vectorized) r = parallelize_loop(r, v);
  if (outermost_loop(r)->for_kind != ForKind::GridX)
    throw UserError(fmt::format("error: schedule: {}: loop '{}' is on another grid axis than grid.x", what, v));
  ThreadNest n = thread_nest(r, v);
  if (n.loops.empty())
    throw UserError(fmt::format("error: schedule: {}: loop '{}' needs a constant extent starting at 0", what, v));
  auto fresh = [&](const std::string& base) {
    std::string name = base;
    for (int k = 0; !find_loops(r, name).empty(); ++k) name = fmt::format("{}_{}", base, k);
    return name;
  };
  std::string fused = n.loops[0];
  for (size_t k = 1; k < n.loops.size(); ++k) {
    std::string name = fresh(fused + "_" + n.loops[k]);
    r = fuse_loops(r, fused, n.loops[k], name);
    fused = name;
  }
  const int64_t t = block_threads(threads, n.iterations, h);
  const std::string blocks = fresh(fused + "_b"), lane = fresh(fused + "_t");
  r = split_loop(r, fused, t, blocks, lane);
  return bind_loop(r, lane, ForKind::ThreadX);
}

} // namespace unitile
