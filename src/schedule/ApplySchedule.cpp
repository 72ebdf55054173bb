// Applies a schedule's primitives to the lowered loops of a kernel (see ApplySchedule.h).
#include "schedule/ApplySchedule.h"

#include "ir/Verifier.h"
#include "schedule/BlockRows.h"
#include "schedule/FlashAttention.h"
#include "schedule/Lower.h"
#include "schedule/LoopRewrite.h"
#include "schedule/MatrixUnit.h"
#include "schedule/Primitives.h"
#include "schedule/ThreadGemm.h"
#include "schedule/Threads.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

namespace unitile {

namespace {

bool stores_to(const Stmt& s, const std::string& b) {
  if (s->kind == StmtKind::Store && s->buffer == b) return true;
  for (const Stmt& c : s->body)
    if (stores_to(c, b)) return true;
  return false;
}

bool touches(const Stmt& s, const std::string& b) {
  bool found = stores_to(s, b);
  std::function<void(const Stmt&)> walk = [&](const Stmt& x) {
    for (const Expr& e : {x->min, x->extent, x->cond, x->value})
      if (e) visit(e, [&](const Expr& a) { found |= a->kind == ExprKind::Access && a->name == b; });
    for (const Expr& i : x->indices) visit(i, [&](const Expr& a) { found |= a->kind == ExprKind::Access && a->name == b; });
    for (const Stmt& c : x->body) walk(c);
  };
  walk(s);
  return found;
}

bool is_init(const LoopFunc& f) { return f.name.size() > 5 && f.name.ends_with("_init"); }

Stmt apply_one(const LoopProgram& p, const Stmt& body, const Primitive& x, const hcd::Hcd& hcd) {
  switch (x.kind) {
  case PrimitiveKind::Split: {
    const std::string& v = x.vars[0];
    return split_loop(body, v, x.factors[0], x.outer.empty() ? v + "_o" : x.outer,
                      x.inner.empty() ? v + "_i" : x.inner);
  }
  case PrimitiveKind::Tile: {
    Stmt r = body;
    std::vector<std::string> order;
    for (size_t n = 0; n < x.vars.size(); ++n) {
      r = split_loop(r, x.vars[n], x.factors[n], x.vars[n] + "_o", x.vars[n] + "_i");
      order.push_back(x.vars[n] + "_o");
    }
    for (const std::string& v : x.vars) order.push_back(v + "_i");
    return x.vars.size() > 1 ? reorder_loops(r, order) : r;
  }
  case PrimitiveKind::Reorder: return reorder_loops(body, x.vars);
  case PrimitiveKind::Fuse:
    return fuse_loops(body, x.vars[0], x.vars[1], x.outer.empty() ? x.vars[0] + "_" + x.vars[1] : x.outer);
  case PrimitiveKind::Parallel: return parallelize_loop(body, x.vars[0]);
  case PrimitiveKind::Vectorize: {
    // Reduction loops named v get lane-wide accumulators; otherwise the loop is marked.
    int reductions = 0;
    Stmt r = vectorize_reduction(body, x.vars[0], [&](DType t) { return std::max(1, hcd.lanes_for(t)); },
                                 &reductions);
    return reductions ? r : vectorize_loop(body, x.vars[0]);
  }
  case PrimitiveKind::Unroll: return unroll_loop(body, x.vars[0], x.factors.empty() ? 0 : x.factors[0]);
  case PrimitiveKind::Bind: return bind_loop(body, x.vars[0], x.bind);
  case PrimitiveKind::Stage: return stage_buffer(p, body, x.buffer, x.scope, x.at);
  case PrimitiveKind::CacheWrite: return cache_write(p, body, x.buffer, x.scope, x.at);
  case PrimitiveKind::MicroKernel: return micro_kernel(p, body, x.at, hcd);
  case PrimitiveKind::Prefetch: return prefetch_next(body, x.buffer, x.at, x.factors.empty() ? 1 : static_cast<int>(x.factors[0]));
  case PrimitiveKind::KeepTerms: return keep_terms(p, body, x.buffer, x.at);
  case PrimitiveKind::Hoist: return hoist_invariants(p, body, x.buffer, x.at);
  case PrimitiveKind::Defer: return defer_last_pass(p, body, x.buffer, x.at, x.factors.empty() ? 16 : x.factors[0]);
  case PrimitiveKind::Threads: return threads_loop(body, x.vars[0], x.factors[0], hcd);
  case PrimitiveKind::ThreadGemm:
  case PrimitiveKind::BlockRows:
  case PrimitiveKind::Stream:
  case PrimitiveKind::ComputeAt:
  case PrimitiveKind::FoldInit:
  case PrimitiveKind::Epilogue:
  case PrimitiveKind::FlashAttention:
  case PrimitiveKind::MatrixUnit:
  case PrimitiveKind::Widen:
  case PrimitiveKind::Pretranspose:
  case PrimitiveKind::Inline: break;
  }
  internal_fail(__FILE__, __LINE__, "program-level primitive applied to one func");
}

// The loops a primitive names: it applies to the funcs that have all of them.
std::vector<std::string> named_loops(const Primitive& x) {
  if (!x.at.empty()) return {x.at};
  return x.vars;
}

bool has_loops(const LoopFunc& f, const std::vector<std::string>& loops) {
  for (const std::string& l : loops)
    if (find_loops(f.body, l).empty()) return false;
  return !loops.empty();
}

UserError located(const Primitive& x, const Kernel& k, const UserError& e) {
  std::string msg = e.what();
  if (msg.starts_with("error: ")) msg = msg.substr(7);
  if (msg.ends_with("\n")) msg.pop_back();
  return UserError(Diagnostic{k.schedule_file, x.loc, msg, "see `unitile compile --explain` for the loops a kernel has", {}, 1});
}

} // namespace

std::optional<Schedule> kernel_schedule(const Kernel& k) {
  if (!k.schedule_text) return std::nullopt;
  return parse_schedule(*k.schedule_text, k.schedule_file, k.schedule_loc);
}

LoopProgram lower_scheduled(const Kernel& kernel, const ShapeBindings& b, const hcd::Hcd& hcd,
                            const Schedule& s) {
  Kernel k = kernel;
  // The Kernel IR primitives first, in their order.
  for (const Primitive& x : s.primitives)
    if (x.kind == PrimitiveKind::Inline || x.kind == PrimitiveKind::Widen || x.kind == PrimitiveKind::Pretranspose) {
      try {
        k = x.kind == PrimitiveKind::Inline ? inline_local(k, x.buffer)
            : x.kind == PrimitiveKind::Widen ? widen_accumulator(k, x.buffer)
                                             : pretranspose_operand(k, x.buffer, x.on);
      } catch (const UserError& e) {
        throw located(x, kernel, e);
      }
    }
  LoopProgram p = lower_to_loops(k, b, hcd, LowerOptions{true});
  for (const Primitive& x : s.primitives) {
    if (x.kind == PrimitiveKind::Inline || x.kind == PrimitiveKind::Widen || x.kind == PrimitiveKind::Pretranspose)
      continue;
    try {
      if (x.kind == PrimitiveKind::ComputeAt) {
        p = compute_at(p, x.buffer, x.at);
        continue;
      }
      if (x.kind == PrimitiveKind::FoldInit) {
        p = fold_init(p, x.buffer);
        continue;
      }
      if (x.kind == PrimitiveKind::Epilogue) {
        p = epilogue(p, x.buffer);
        continue;
      }
      if (x.kind == PrimitiveKind::Stream) {
        p = stream_output(p, x.buffer);
        continue;
      }
      if (x.kind == PrimitiveKind::FlashAttention) {
        p = flash_attention(k, p, b, hcd, x.buffer, x.factors);
        continue;
      }
      if (x.kind == PrimitiveKind::MatrixUnit) {
        p = matrix_unit(k, p, b, hcd, x.buffer, x.factors, !x.vars.empty());
        continue;
      }
      if (x.kind == PrimitiveKind::ThreadGemm) {
        p = thread_gemm(k, p, b, hcd, x.buffer, x.factors);
        continue;
      }
      if (x.kind == PrimitiveKind::Threads || x.kind == PrimitiveKind::BlockRows) {
        // Every launch (an init launch too) whose outermost loop is the named one, that
        // does not run on threads yet and, with `on`, that writes that tensor.
        int applied = 0;
        for (LoopFunc& f : p.funcs) {
          if (!x.on.empty() && !stores_to(f.body, x.on)) continue;
          const StmtNode* top = f.body.get();
          while (top->kind == StmtKind::Let) top = top->body[0].get();
          if (top->kind != StmtKind::For || top->var != x.vars[0] || runs_on_threads(f.body)) continue;
          f.body = x.kind == PrimitiveKind::Threads ? threads_loop(f.body, x.vars[0], x.factors[0], hcd)
                                                    : block_rows(p, f.body, x.vars[0], x.factors[0], hcd);
          ++applied;
        }
        if (!applied)
          throw UserError(fmt::format("error: schedule: {}: no launch of kernel '{}'{} has '{}' as its "
                                      "outermost loop",
                                      primitive_name(x.kind), k.name, x.on.empty() ? "" : " writing '" + x.on + "'", x.vars[0]));
        continue;
      }
      const std::vector<std::string> loops = named_loops(x);
      int applied = 0;
      // With `on`, a tensor that several statements write (a zero fill, then a scatter
      // into it) names every launch storing to it; when some of them have the loops, the
      // others are skipped (else the primitive's own error names the missing loop).
      bool some_have = false;
      for (const LoopFunc& f : p.funcs)
        some_have |= !x.on.empty() && !is_init(f) && stores_to(f.body, x.on) && has_loops(f, loops);
      for (LoopFunc& f : p.funcs) {
        if (!x.on.empty() ? (is_init(f) || !stores_to(f.body, x.on) || (some_have && !has_loops(f, loops)))
                          : !has_loops(f, loops))
          continue;
        // Without `on`, primitives about a buffer or a contraction skip the launches they
        // cannot concern (an init launch, one that never touches the buffer).
        if (x.on.empty() && is_init(f) && x.kind != PrimitiveKind::Split && x.kind != PrimitiveKind::Tile) continue;
        if (x.on.empty() && (x.kind == PrimitiveKind::Stage || x.kind == PrimitiveKind::CacheWrite) &&
            !touches(f.body, x.buffer))
          continue;
        f.body = apply_one(p, f.body, x, hcd);
        ++applied;
      }
      if (!applied)
        throw UserError(x.on.empty()
                            ? fmt::format("error: schedule: {}: kernel '{}' has no loop '{}' (after the "
                                          "primitives before it)",
                                          primitive_name(x.kind), k.name, fmt::join(loops, "', '"))
                            : fmt::format("error: schedule: {}: no statement of kernel '{}' writes '{}'",
                                          primitive_name(x.kind), k.name, x.on));
    } catch (const UserError& e) {
      throw located(x, kernel, e);
    }
  }
  for (LoopFunc& f : p.funcs) f.body = partition_tails(f.body);
  verify(p);
  return p;
}

} // namespace unitile
