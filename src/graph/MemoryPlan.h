// The memory planner: device buffers for the values that cross kernel boundaries,
// shared by values whose lifetimes do not overlap.
#pragma once

#include "graph/Fusion.h"

#include <map>
#include <string>
#include <vector>

namespace unitile::graph {

/// One planned value: computed by group `first`, read last by group `last`.
struct PlannedValue {
  ValueId value = -1;
  size_t bytes = 0;
  int first = 0, last = 0;
  int buffer = -1;
};

struct MemoryPlan {
  std::vector<size_t> buffer_bytes;  // the buffers, each as large as its largest tenant
  std::vector<PlannedValue> values;  // every intermediate value, in definition order
  size_t peak_bytes = 0;             // sum of buffer_bytes: what the plan allocates
  size_t no_reuse_bytes = 0;         // one buffer per value
  size_t live_peak_bytes = 0;        // most bytes live at once (no plan can go below)
  /// The buffer of `v`, or -1 when it is not planned (graph inputs and outputs, values
  /// inside one kernel).
  int buffer_of(ValueId v) const;
};

/// Plan the values that one group writes and a later group reads, except the graph's
/// outputs (those are handed to the caller, so each run allocates them). A value lives
/// from its group to the last group reading it; buffers are given greedily in group
/// order, best fit first: the smallest free buffer that holds the value, else the largest
/// free one grown to fit, else a new one.
/// `views` maps each value that a group without a kernel makes as a view of another
/// (a reshape: same bytes, new shape; see GraphExecutor) to the value whose storage it
/// shares: such values get no buffer, and their readers keep that storage alive.
MemoryPlan plan_memory(const Graph& g, const Partition& p, const std::map<ValueId, ValueId>& views = {});

/// The plan as comment lines: `%3 -> buf0 (64 B, kernels 0..2)`, then the totals.
std::vector<std::string> describe_plan(const MemoryPlan& plan, const std::vector<std::string>& names);

} // namespace unitile::graph
