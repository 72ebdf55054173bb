// The HCD's launch limits, checked per func (see LaunchLimits.h).
#include "runtime/LaunchLimits.h"

#include "ir/Diagnostic.h"

#include <fmt/core.h>

namespace unitile {

namespace {

void add_shared(const Stmt& s, int64_t& bytes) {
  if (!s)
    return;
  if (s->kind == StmtKind::Allocate && s->scope == MemScope::Shared) {
    int64_t n = dtype_bytes(s->dtype);
    for (int64_t d : s->shape)
      n *= d;
    bytes += n;
  }
  for (const Stmt& b : s->body)
    add_shared(b, bytes);
}

} // namespace

int64_t shared_bytes(const LoopFunc& f) {
  int64_t bytes = 0;
  add_shared(f.body, bytes);
  return bytes;
}

void check_launch_limits(const std::string& kernel, const LoopFunc& f, const LaunchDims& dims,
                         const hcd::Hcd& hcd) {
  auto refuse = [&](const std::string& what) {
    throw UserError(fmt::format("error: kernel {} (func {}) does not fit device '{}' (HCD {}): {}",
                                kernel, f.name, hcd.name, hcd.source, what));
  };
  int64_t threads = 1;
  for (int a = 0; a < 3; ++a) {
    const char axis = "xyz"[a];
    if (a < static_cast<int>(hcd.max_grid.size()) && dims.grid[a] > hcd.max_grid[a])
      refuse(fmt::format("grid.{} has {} blocks; [limits] max_grid allows {}", axis, dims.grid[a],
                         hcd.max_grid[a]));
    if (a < static_cast<int>(hcd.max_block.size()) && dims.block[a] > hcd.max_block[a])
      refuse(fmt::format("thread.{} has {} threads per block; [limits] max_block allows {}", axis,
                         dims.block[a], hcd.max_block[a]));
    threads *= dims.block[a];
  }
  if (threads > hcd.max_threads_per_block)
    refuse(fmt::format("a block of {} x {} x {} = {} threads; [compute] max_threads_per_block "
                       "allows {}",
                       dims.block[0], dims.block[1], dims.block[2], threads,
                       hcd.max_threads_per_block));
  const int64_t shared = shared_bytes(f);
  if (shared > 0 && shared > hcd.shared_memory_per_block)
    refuse(fmt::format("{} bytes of shared allocations; [limits] shared_memory_per_block allows {}",
                       shared, hcd.shared_memory_per_block));
}

} // namespace unitile
