// One training step as ONE graph: the caller's forward graph (which computes the loss),
// the gradients of the loss with respect to every parameter (graph::append_gradients),
// optional clipping by their global norm, and an optimizer update per parameter. The
// graph is compiled once by graph::GraphExecutor (fused kernels, planned memory); every
// step then runs it on the device-resident parameters and optimizer state and swaps the
// new ones in, with the learning rate and the update number passed as scalar inputs (so
// a schedule never recompiles anything).
#pragma once

#include "graph/Executor.h"
#include "graph/Graph.h"
#include "runtime/Session.h"
#include "train/Optimizer.h"
#include "train/TrainState.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace unitile::train {

struct TrainStepOptions {
  /// Scale the gradients so their joint L2 norm is at most this (torch's clip_grad_norm_).
  std::optional<double> clip_norm;
  /// Keep every step's gradients (before clipping) readable through gradients().
  bool keep_gradients = false;
  /// Where the caller built the forward graph, for messages about the step's own nodes.
  std::string where = "training step";
  /// Parameters updated with settings of their own (torch.optim's param_groups); the
  /// others use the step's OptimizerConfig. Each group's learning rate is a scalar input
  /// of its own, so its schedule never recompiles either.
  std::vector<ParamGroup> param_groups;
  /// How the graph executor partitions and plans the step (its kernels are named
  /// train_step_k0, ... unless `name` is changed from the default).
  graph::ExecutorOptions executor;
};

class TrainStep {
public:
  /// The step training `forward`'s inputs named `param_names` (the other inputs are the
  /// batch, in graph order) to lower `loss`, a one-element float value of `forward`.
  /// `gradients` (optional, `param_names` order) are values of `forward` the caller
  /// computed; by default they are derived by graph::append_gradients.
  TrainStep(Session& session, graph::Graph forward, graph::ValueId loss,
            std::vector<std::string> param_names, OptimizerConfig config,
            TrainStepOptions options = {}, std::vector<graph::ValueId> gradients = {});
  ~TrainStep();
  TrainStep(TrainStep&&) noexcept;
  TrainStep& operator=(TrainStep&&) noexcept;

  /// One update of `state` (made for the same parameters) on `batch`, which holds the
  /// forward graph's non-parameter inputs in order, on this session's device. Returns
  /// the loss, computed with the parameters before the update.
  double run(TrainState& state, const std::vector<DeviceTensor>& batch);

  /// The whole step (the first update's when it differs, see OptimizerConfig).
  const graph::Graph& graph() const;
  /// The types the batch must have.
  const std::vector<ops::TensorSpec>& batch_types() const { return batch_types_; }
  const std::vector<std::string>& param_names() const { return param_names_; }
  const OptimizerConfig& config() const { return config_; }
  /// The settings of every parameter (param_names() order) and group.
  const GroupAssignment& groups() const { return groups_; }
  /// The last run's gradients, param_names() order (keep_gradients only, else UserError).
  const std::vector<DeviceTensor>& gradients() const;
  /// The last run's global gradient norm before clipping (clip_norm only).
  std::optional<double> grad_norm() const { return grad_norm_; }
  /// How the step's graph runs: the executor's partition into kernels.
  std::string describe() const;

  struct Program; // one compiled graph with the meaning of its inputs and outputs

private:
  Session* session_;
  std::vector<std::string> param_names_;
  std::vector<ops::TensorSpec> param_types_, batch_types_;
  OptimizerConfig config_;
  TrainStepOptions options_;
  GroupAssignment groups_;
  std::unique_ptr<Program> every_, first_; // first_: only when the first update differs
  std::vector<DeviceTensor> gradients_;
  std::optional<double> grad_norm_;
};

} // namespace unitile::train
