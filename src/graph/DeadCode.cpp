// Dead-code elimination. Why: traced functions and autodiff leave nodes whose results
// nothing returns (a forward value the gradient did not need, a repeated subexpression
// after CSE); compiling and running them costs kernels and memory for nothing. All ops
// are pure, so a node no output depends on can always go.
#include "graph/GraphRewrite.h"
#include "graph/Passes.h"

namespace unitile::graph {

Graph eliminate_dead_code(const Graph& g, size_t* removed) {
  const std::vector<bool> live = live_nodes(g);
  GraphRewrite rw(g);
  size_t dead = 0;
  for (size_t n = 0; n < g.nodes().size(); ++n) {
    if (live[n])
      rw.copy(n);
    else
      ++dead;
  }
  if (removed) *removed = dead;
  return rw.finish();
}

} // namespace unitile::graph
