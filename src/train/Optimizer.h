// Optimizers as graph nodes: a configuration (SGD with momentum, Adam, AdamW), the state
// tensors it keeps per parameter, and the update of one parameter appended to a graph as
// one library op call (sgd, adam, adamw) whose learning rate and step count are scalar
// graph inputs, so every step runs the same compiled code.
#pragma once

#include "graph/Graph.h"
#include "train/LrSchedule.h"

#include <string>
#include <vector>

namespace unitile::train {

enum class OptimizerKind { Sgd, Adam, AdamW };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::AdamW;
  LrSchedule lr = LrSchedule::constant(1e-3);
  // SGD (torch.optim.SGD's meaning)
  double momentum = 0;
  double dampening = 0;
  bool nesterov = false;
  // Adam and AdamW (torch.optim.Adam / AdamW)
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  /// SGD and Adam: an L2 penalty added to the gradient; AdamW: decoupled decay
  /// (the parameter is scaled by 1 - lr * weight_decay before the update).
  double weight_decay = 0;

  static OptimizerConfig sgd(LrSchedule lr, double momentum = 0, double weight_decay = 0,
                             bool nesterov = false, double dampening = 0);
  static OptimizerConfig adam(LrSchedule lr, double beta1 = 0.9, double beta2 = 0.999,
                              double eps = 1e-8, double weight_decay = 0);
  static OptimizerConfig adamw(LrSchedule lr, double beta1 = 0.9, double beta2 = 0.999,
                               double eps = 1e-8, double weight_decay = 1e-2);

  /// A UserError naming the bad setting (the ops check them again when instantiated).
  void check() const;
  /// The library op doing one update: "sgd", "adam" or "adamw".
  std::string op_name() const;
  /// The state kept per parameter, in the order the update takes and returns it:
  /// {"momentum"} for SGD with momentum, {} without, {"m", "v"} for Adam and AdamW.
  /// Every state tensor has the parameter's dtype and shape and starts at zero.
  std::vector<std::string> state_names() const;
  /// Whether the first update differs from the others in more than its inputs: SGD with
  /// momentum and dampening starts its buffer at the undamped gradient (as torch does),
  /// which a zero buffer cannot give, so the first update is a graph of its own.
  bool first_update_differs() const;
  std::string describe() const;
};

/// Parameters updated with settings of their own, like torch.optim's param_groups (e.g. no
/// weight decay on biases and LayerNorm scales, as GPT training does): every parameter
/// named in `params` is updated with `config` instead of the step's settings. `config`
/// has its own learning-rate schedule; it must be the same kind of optimizer as the step's.
struct ParamGroup {
  std::vector<std::string> params;
  OptimizerConfig config;
};

/// The settings each parameter of a step is updated with. Group 0 is the step's own
/// configuration (the parameters in no ParamGroup), group g > 0 is ParamGroup g - 1.
struct GroupAssignment {
  std::vector<OptimizerConfig> configs; // per group
  std::vector<size_t> group;            // per parameter: its group
  const OptimizerConfig& of(size_t param) const { return configs[group[param]]; }
  /// Whether group `g` updates at least one parameter.
  bool used(size_t g) const;
};

/// Put each of `names` in its group. A UserError (prefixed by `where`) for a group naming
/// an unknown parameter or one already in another group, or using another kind of
/// optimizer than `config`.
GroupAssignment assign_groups(const std::vector<std::string>& names, const OptimizerConfig& config,
                              const std::vector<ParamGroup>& groups, const std::string& where);

/// The per-step scalars every update reads: the learning rate (f64) and the number of
/// the update, counting from 1 (i64).
struct StepScalars {
  graph::ValueId lr = -1;
  graph::ValueId step = -1;
};

/// Values produced by one parameter's update.
struct Update {
  graph::ValueId param = -1;
  std::vector<graph::ValueId> state; // state_names() order
};

/// Append to `g` the update of `param` by `grad` with its `state` (state_names() order).
/// With `first_update` and first_update_differs(), the update that has no state yet.
Update append_update(graph::Graph& g, const OptimizerConfig& config, graph::ValueId param,
                     graph::ValueId grad, const std::vector<graph::ValueId>& state,
                     const StepScalars& scalars, bool first_update, const std::string& where);

} // namespace unitile::train
