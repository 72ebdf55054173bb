// The graph executor: a graph run on one device as a sequence of fused kernels, with
// device-resident values between them and intermediates in planned, reused buffers.
#pragma once

#include "graph/Fusion.h"
#include "graph/GraphKernel.h"
#include "graph/MemoryPlan.h"
#include "runtime/Session.h"

#include <memory>
#include <string>
#include <vector>

namespace unitile::graph {

struct ExecutorOptions {
  bool fuse = true;            // false: one kernel per node
  bool plan_memory = true;     // false: every intermediate allocated per run
  size_t max_group_nodes = 16; // see FusionOptions
  std::string name = "graph";  // kernels are named <name>_k0, <name>_k1, ...
};

class GraphExecutor {
public:
  /// Runs dead-code and common-subexpression elimination, partitions the graph
  /// (fusion), plans memory, compiles every kernel once and allocates the planned
  /// buffers. Errors in the graph (an op that fails to compile) are UserErrors.
  GraphExecutor(Session& session, Graph g, ExecutorOptions opts = {});

  /// `inputs` in g.inputs() order (device tensors of this session's device, each of the
  /// input's dtype and shape); returns the outputs in g.outputs() order, freshly
  /// allocated and owned by the caller (safe to feed back as the next run's inputs).
  std::vector<DeviceTensor> run(const std::vector<DeviceTensor>& inputs);

  const MemoryPlan& memory_plan() const { return plan_; }
  /// The graph after the passes, printed group by group with the kernels and the plan
  /// as comments.
  std::string describe() const;
  /// The graph after the passes (the one the partition indexes).
  const Graph& graph() const { return graph_; }
  const Partition& partition() const { return partition_; }
  /// The kernels a run launches (groups that are views launch none).
  size_t kernel_count() const;

private:
  struct GroupKernel {
    GraphKernel source; // the group's kernel; inputs/outputs name the group's values in order
    std::shared_ptr<const CompiledKernel> compiled; // null for a view
    std::vector<int> output_buffers; // per group output: its planned buffer, or -1
    /// A group of reshapes only (view_source() says which) runs no kernel: its output is
    /// the value `view_of` (a group input) under a new shape, sharing its storage.
    ValueId view_of = -1;
    /// A group none of whose values another group reads the data of runs nothing.
    bool runs_nothing = false;
  };

  Session& session_;
  ExecutorOptions opts_;
  Graph graph_;
  Partition partition_;
  MemoryPlan plan_;
  std::vector<GroupKernel> kernels_;
  std::vector<std::shared_ptr<DeviceBuffer>> buffers_; // the plan's buffers, allocated once
  /// What inputs taken for their type alone (FusionGroup::shape_only) bind to: storage of
  /// the largest such input, never written and never read.
  std::shared_ptr<DeviceBuffer> placeholder_;
};

/// The passes the executor runs before partitioning: dead code, common subexpressions,
/// dead code again, then a copy node for each output that is a graph input or returned
/// twice (every output must be a fresh tensor the caller owns).
Graph prepare_for_execution(const Graph& g);

/// When every node of `group` only reshapes (reshape, flatten, squeeze, unsqueeze and
/// their gradients: the same elements in the same order under another shape), each
/// reshaping the previous one's result, and its one output is not returned by the graph:
/// the group input whose storage that output can share. Otherwise -1.
ValueId view_source(const Graph& g, const FusionGroup& group);

} // namespace unitile::graph
