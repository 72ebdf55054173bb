// Optimizer configurations and their update nodes (see Optimizer.h); the formulas live
// in the library ops (src/ops/defs/Optimizers.cpp), which follow torch.optim.
#include "train/Optimizer.h"

#include "ir/Diagnostic.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <cmath>

namespace unitile::train {

OptimizerConfig OptimizerConfig::sgd(LrSchedule lr, double momentum, double weight_decay,
                                     bool nesterov, double dampening) {
  OptimizerConfig c;
  c.kind = OptimizerKind::Sgd;
  c.lr = lr;
  c.momentum = momentum;
  c.weight_decay = weight_decay;
  c.nesterov = nesterov;
  c.dampening = dampening;
  c.check();
  return c;
}

OptimizerConfig OptimizerConfig::adam(LrSchedule lr, double beta1, double beta2, double eps,
                                      double weight_decay) {
  OptimizerConfig c;
  c.kind = OptimizerKind::Adam;
  c.lr = lr;
  c.beta1 = beta1;
  c.beta2 = beta2;
  c.eps = eps;
  c.weight_decay = weight_decay;
  c.check();
  return c;
}

OptimizerConfig OptimizerConfig::adamw(LrSchedule lr, double beta1, double beta2, double eps,
                                       double weight_decay) {
  OptimizerConfig c = adam(lr, beta1, beta2, eps, weight_decay);
  c.kind = OptimizerKind::AdamW;
  return c;
}

void OptimizerConfig::check() const {
  auto fail = [&](const std::string& why) {
    throw UserError(fmt::format("error: optimizer {}: {}", describe(), why));
  };
  lr.check();
  if (!(weight_decay >= 0) || !std::isfinite(weight_decay))
    fail("weight_decay must be a finite number >= 0");
  if (kind == OptimizerKind::Sgd) {
    if (!(momentum >= 0) || !std::isfinite(momentum))
      fail("momentum must be a finite number >= 0");
    if (!(dampening >= 0 && dampening <= 1))
      fail("dampening must be in [0, 1]");
    if (nesterov && (momentum <= 0 || dampening != 0))
      fail("nesterov needs a momentum above 0 and zero dampening");
    return;
  }
  if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1))
    fail("betas must be in [0, 1)");
  if (!(eps >= 0) || !std::isfinite(eps))
    fail("eps must be a finite number >= 0");
}

std::string OptimizerConfig::op_name() const {
  switch (kind) {
  case OptimizerKind::Sgd:
    return "sgd";
  case OptimizerKind::Adam:
    return "adam";
  case OptimizerKind::AdamW:
    return "adamw";
  }
  UT_INTERNAL_ASSERT(false, "unknown optimizer kind");
  return "";
}

std::vector<std::string> OptimizerConfig::state_names() const {
  if (kind != OptimizerKind::Sgd)
    return {"m", "v"};
  if (momentum != 0)
    return {"momentum"};
  return {};
}

bool OptimizerConfig::first_update_differs() const {
  return kind == OptimizerKind::Sgd && momentum != 0 && dampening != 0;
}

std::string OptimizerConfig::describe() const {
  if (kind == OptimizerKind::Sgd)
    return fmt::format("sgd(lr={}, momentum={}, dampening={}, weight_decay={}, nesterov={})",
                       lr.describe(), momentum, dampening, weight_decay, nesterov);
  return fmt::format("{}(lr={}, betas=({}, {}), eps={}, weight_decay={})", op_name(), lr.describe(),
                     beta1, beta2, eps, weight_decay);
}

bool GroupAssignment::used(size_t g) const {
  for (size_t k : group)
    if (k == g)
      return true;
  return false;
}

GroupAssignment assign_groups(const std::vector<std::string>& names, const OptimizerConfig& config,
                              const std::vector<ParamGroup>& groups, const std::string& where) {
  GroupAssignment a;
  a.configs.push_back(config);
  a.group.assign(names.size(), 0);
  for (size_t g = 0; g < groups.size(); ++g) {
    const ParamGroup& group = groups[g];
    group.config.check();
    if (group.config.kind != config.kind)
      throw UserError(fmt::format("{}: error: parameter group {} uses {} but the optimizer is {}: all groups "
                                  "must use the same kind of optimizer",
                                  where, g, group.config.op_name(), config.op_name()));
    a.configs.push_back(group.config);
    for (const std::string& name : group.params) {
      size_t i = 0;
      while (i < names.size() && names[i] != name)
        ++i;
      if (i == names.size())
        throw UserError(fmt::format("{}: error: parameter group {} names '{}', which is not a parameter (the "
                                    "parameters: {})",
                                    where, g, name, fmt::join(names, ", ")));
      if (a.group[i] != 0)
        throw UserError(fmt::format("{}: error: parameter '{}' is in parameter groups {} and {}", where, name,
                                    a.group[i] - 1, g));
      a.group[i] = g + 1;
    }
  }
  return a;
}

namespace {

// The value the last node of `g` defines on output port `port` (an op's outputs come in
// the order it writes them, not in port order).
graph::ValueId last_output(const graph::Graph& g, const std::string& port) {
  for (const auto& [name, v] : g.nodes().back().outputs)
    if (name == port)
      return v;
  UT_INTERNAL_ASSERT(false, "op:" + g.nodes().back().op + " has no output " + port);
  return -1;
}

} // namespace

Update append_update(graph::Graph& g, const OptimizerConfig& config, graph::ValueId param,
                     graph::ValueId grad, const std::vector<graph::ValueId>& state,
                     const StepScalars& scalars, bool first_update, const std::string& where) {
  const std::vector<std::string> names = config.state_names();
  UT_INTERNAL_ASSERT(state.size() == names.size(), "optimizer state count");
  ops::Attrs attrs;
  std::vector<std::pair<std::string, graph::ValueId>> inputs{{"P", param}, {"G", grad}};
  Update u;
  if (config.kind == OptimizerKind::Sgd) {
    attrs["momentum"] = config.momentum;
    attrs["dampening"] = config.dampening;
    attrs["weight_decay"] = config.weight_decay;
    attrs["nesterov"] = int64_t{config.nesterov};
    // Without M the op starts the buffer at the gradient (torch's first step).
    if (!state.empty() && !(first_update && config.first_update_differs()))
      inputs.emplace_back("M", state[0]);
    inputs.emplace_back("Lr", scalars.lr);
    g.add_node_ports("sgd", inputs, attrs, where);
    u.param = last_output(g, "P_new");
    if (!state.empty())
      u.state.push_back(last_output(g, "M_new"));
    return u;
  }
  attrs["beta1"] = config.beta1;
  attrs["beta2"] = config.beta2;
  attrs["eps"] = config.eps;
  attrs["weight_decay"] = config.weight_decay;
  inputs.insert(inputs.end(), {{"M", state[0]}, {"V", state[1]}, {"Step", scalars.step}, {"Lr", scalars.lr}});
  g.add_node_ports(config.op_name(), inputs, attrs, where);
  u.param = last_output(g, "P_new");
  u.state = {last_output(g, "M_new"), last_output(g, "V_new")};
  return u;
}

} // namespace unitile::train
