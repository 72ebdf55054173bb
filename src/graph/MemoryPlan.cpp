// Memory planning. Why: an executor that allocates every intermediate of a training
// step separately needs the sum of all of them at once, though most die a kernel or two
// after they are made; reusing buffers by liveness bounds device memory by what is live
// together, and allocating the buffers once per executor (not per run) takes allocation
// out of the step.
#include "graph/MemoryPlan.h"

#include "runtime/Tensor.h"

#include <fmt/core.h>

#include <algorithm>
#include <set>

namespace unitile::graph {

int MemoryPlan::buffer_of(ValueId v) const {
  for (const PlannedValue& pv : values)
    if (pv.value == v) return pv.buffer;
  return -1;
}

MemoryPlan plan_memory(const Graph& g, const Partition& p, const std::map<ValueId, ValueId>& views) {
  MemoryPlan plan;
  const std::set<ValueId> returned(g.outputs().begin(), g.outputs().end());
  auto storage_of = [&](ValueId v) {
    for (auto it = views.find(v); it != views.end(); it = views.find(v)) v = it->second;
    return v;
  };
  // Lifetimes, in group positions.
  for (size_t gi = 0; gi < p.groups.size(); ++gi)
    for (ValueId v : p.groups[gi].outputs) {
      if (returned.count(v) || views.count(v)) continue;
      PlannedValue pv;
      pv.value = v;
      pv.bytes = shape_numel(g.value(v).type.shape) * static_cast<size_t>(dtype_bytes(g.value(v).type.dtype));
      pv.first = pv.last = static_cast<int>(gi);
      for (size_t r = gi + 1; r < p.groups.size(); ++r) {
        const std::vector<ValueId>& shape_only = p.groups[r].shape_only;
        for (ValueId in : p.groups[r].inputs)
          if (storage_of(in) == v && std::find(shape_only.begin(), shape_only.end(), in) == shape_only.end())
            pv.last = static_cast<int>(r);
      }
      plan.values.push_back(pv);
      plan.no_reuse_bytes += pv.bytes;
    }

  // Greedy best fit in definition order. A buffer frees once its tenant's last reader
  // has run, so a group never writes a buffer that one of its inputs lives in.
  std::vector<int> busy_until; // per buffer: the last group reading its tenant
  for (PlannedValue& pv : plan.values) {
    int best = -1;
    for (size_t b = 0; b < plan.buffer_bytes.size(); ++b) {
      if (busy_until[b] >= pv.first) continue;
      const size_t size = plan.buffer_bytes[b];
      if (best < 0) {
        best = static_cast<int>(b);
        continue;
      }
      const size_t cur = plan.buffer_bytes[static_cast<size_t>(best)];
      const bool fits = size >= pv.bytes, cur_fits = cur >= pv.bytes;
      // Prefer buffers that fit, the smallest of those; else the largest to grow.
      if ((fits && !cur_fits) || (fits && cur_fits && size < cur) || (!fits && !cur_fits && size > cur))
        best = static_cast<int>(b);
    }
    if (best < 0) {
      best = static_cast<int>(plan.buffer_bytes.size());
      plan.buffer_bytes.push_back(0);
      busy_until.push_back(-1);
    }
    pv.buffer = best;
    plan.buffer_bytes[static_cast<size_t>(best)] = std::max(plan.buffer_bytes[static_cast<size_t>(best)], pv.bytes);
    busy_until[static_cast<size_t>(best)] = pv.last;
  }
  for (size_t b : plan.buffer_bytes) plan.peak_bytes += b;
  for (size_t gi = 0; gi < p.groups.size(); ++gi) {
    size_t live = 0;
    for (const PlannedValue& pv : plan.values)
      if (pv.first <= static_cast<int>(gi) && static_cast<int>(gi) <= pv.last) live += pv.bytes;
    plan.live_peak_bytes = std::max(plan.live_peak_bytes, live);
  }
  return plan;
}

std::vector<std::string> describe_plan(const MemoryPlan& plan, const std::vector<std::string>& names) {
  std::vector<std::string> out{"memory plan:"};
  for (const PlannedValue& pv : plan.values)
    out.push_back(fmt::format("  {} -> buf{} ({} B, kernels {}..{})", names[static_cast<size_t>(pv.value)], pv.buffer,
                              pv.bytes, pv.first, pv.last));
  for (size_t b = 0; b < plan.buffer_bytes.size(); ++b) out.push_back(fmt::format("  buf{}: {} B", b, plan.buffer_bytes[b]));
  out.push_back(fmt::format("  peak {} B in {} buffer{} (no reuse: {} B; most live at once: {} B)", plan.peak_bytes,
                            plan.buffer_bytes.size(), plan.buffer_bytes.size() == 1 ? "" : "s", plan.no_reuse_bytes,
                            plan.live_peak_bytes));
  return out;
}

} // namespace unitile::graph
