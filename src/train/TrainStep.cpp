// The training step: building its graph (forward, gradients, clipping, updates) and
// running it on a TrainState.
#include "train/TrainStep.h"

#include "graph/Autodiff.h"
#include "graph/Executor.h"
#include "ir/Diagnostic.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <map>

namespace unitile::train {

namespace {

std::string type_text(const ops::TensorSpec& t) {
  return fmt::format("{}{}", dtype_name(t.dtype), shape_string(t.shape));
}

} // namespace

/// A compiled step graph and what each of its inputs and outputs is.
struct TrainStep::Program {
  enum class Source { Param, Batch, State, Lr, Step };
  struct Slot {
    Source source;
    size_t index = 0; // parameter, batch or (learning rate) group index
    size_t slot = 0;  // state slot
  };
  graph::Graph graph;
  std::vector<Slot> inputs; // graph.inputs() order
  // Outputs: the loss, the new parameters, the new state (per parameter, per slot), then
  // the total norm when clipping, then the gradients when kept.
  bool has_norm = false, has_gradients = false;
  std::unique_ptr<graph::GraphExecutor> executor;
};

namespace {

std::unique_ptr<TrainStep::Program> build_program(Session& session, graph::Graph g, graph::ValueId loss,
                                                  const std::vector<std::string>& param_names,
                                                  std::vector<graph::ValueId> gradients,
                                                  const GroupAssignment& groups,
                                                  const TrainStepOptions& options, bool first_update) {
  using Source = TrainStep::Program::Source;
  auto p = std::make_unique<TrainStep::Program>();
  const std::string& where = options.where;
  std::map<std::string, graph::ValueId> by_name;
  for (graph::ValueId v : g.inputs())
    by_name[g.value(v).input_name] = v;
  std::vector<graph::ValueId> params;
  for (size_t i = 0; i < param_names.size(); ++i) {
    auto it = by_name.find(param_names[i]);
    UT_INTERNAL_ASSERT(it != by_name.end(), "parameter input checked by the constructor");
    params.push_back(it->second);
  }
  size_t batch_index = 0;
  for (graph::ValueId v : g.inputs()) {
    size_t k = 0;
    while (k < params.size() && params[k] != v)
      ++k;
    if (k < params.size())
      p->inputs.push_back({Source::Param, k, 0});
    else
      p->inputs.push_back({Source::Batch, batch_index++, 0});
  }

  if (gradients.empty())
    gradients = graph::append_gradients(g, loss, params);

  // The per-step scalars (a learning rate per parameter group) and the optimizer state,
  // as graph inputs.
  std::vector<StepScalars> scalars(groups.configs.size());
  graph::ValueId step = -1;
  if (groups.configs[0].kind != OptimizerKind::Sgd) {
    step = g.add_input("train__step", ops::TensorSpec{DType::I64, {}});
    p->inputs.push_back({Source::Step, 0, 0});
  }
  for (size_t k = 0; k < groups.configs.size(); ++k) {
    scalars[k].step = step;
    if (!groups.used(k))
      continue;
    scalars[k].lr = g.add_input(k == 0 ? std::string("train__lr") : fmt::format("train__lr_group{}", k - 1),
                                ops::TensorSpec{DType::F64, {}});
    p->inputs.push_back({Source::Lr, k, 0});
  }
  std::vector<std::vector<graph::ValueId>> state(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const std::vector<std::string> slots = groups.of(i).state_names();
    const bool state_given = !(first_update && groups.of(i).first_update_differs());
    for (size_t k = 0; k < slots.size(); ++k) {
      if (!state_given) {
        state[i].push_back(-1); // not read: the first update starts the state
        continue;
      }
      state[i].push_back(g.add_input(fmt::format("{}__{}", param_names[i], slots[k]), g.value(params[i]).type));
      p->inputs.push_back({Source::State, i, k});
    }
  }

  std::vector<graph::ValueId> applied = gradients;
  graph::ValueId norm = -1;
  if (options.clip_norm) {
    ops::Attrs attrs;
    attrs["max_norm"] = *options.clip_norm;
    g.add_node("clip_grad_norm", gradients, attrs, where);
    for (const auto& [port, v] : g.nodes().back().outputs) {
      if (port == "TotalNorm")
        norm = v;
      else
        applied[static_cast<size_t>(std::stoul(port.substr(1)))] = v;
    }
    p->has_norm = true;
  }

  std::vector<graph::ValueId> new_params, new_state;
  for (size_t i = 0; i < params.size(); ++i) {
    const Update u = append_update(g, groups.of(i), params[i], applied[i], state[i], scalars[groups.group[i]],
                                   first_update, where);
    new_params.push_back(u.param);
    new_state.insert(new_state.end(), u.state.begin(), u.state.end());
  }
  std::vector<graph::ValueId> outputs{loss};
  outputs.insert(outputs.end(), new_params.begin(), new_params.end());
  outputs.insert(outputs.end(), new_state.begin(), new_state.end());
  if (p->has_norm)
    outputs.push_back(norm);
  if (options.keep_gradients) {
    outputs.insert(outputs.end(), gradients.begin(), gradients.end());
    p->has_gradients = true;
  }
  g.set_outputs(outputs);
  p->graph = std::move(g);
  graph::ExecutorOptions executor_options = options.executor;
  if (executor_options.name == graph::ExecutorOptions{}.name)
    executor_options.name = "train_step";
  if (first_update)
    executor_options.name += "_first";
  p->executor = std::make_unique<graph::GraphExecutor>(session, p->graph, executor_options);
  return p;
}

} // namespace

TrainStep::TrainStep(Session& session, graph::Graph forward, graph::ValueId loss,
                     std::vector<std::string> param_names, OptimizerConfig config,
                     TrainStepOptions options, std::vector<graph::ValueId> gradients)
    : session_(&session), param_names_(std::move(param_names)), config_(std::move(config)),
      options_(std::move(options)) {
  const std::string& where = options_.where;
  config_.check();
  if (options_.clip_norm && !(*options_.clip_norm > 0))
    throw UserError(fmt::format("{}: error: clip_norm must be above 0, got {}", where, *options_.clip_norm));
  if (param_names_.empty())
    throw UserError(fmt::format("{}: error: a training step needs at least one parameter", where));
  groups_ = assign_groups(param_names_, config_, options_.param_groups, where);
  UT_INTERNAL_ASSERT(loss >= 0 && static_cast<size_t>(loss) < forward.values().size(), "unknown loss value");
  const ops::TensorSpec& loss_type = forward.value(loss).type;
  if (!is_float(loss_type.dtype) || shape_numel(loss_type.shape) != 1)
    throw UserError(fmt::format("{}: error: the loss must be a single float value, got {}", where,
                                type_text(loss_type)));
  std::map<std::string, graph::ValueId> by_name;
  for (graph::ValueId v : forward.inputs())
    by_name[forward.value(v).input_name] = v;
  for (const std::string& name : param_names_) {
    auto it = by_name.find(name);
    if (it == by_name.end())
      throw UserError(fmt::format("{}: error: parameter '{}' is not an input of the forward graph", where, name));
    const ops::TensorSpec& t = forward.value(it->second).type;
    if (!is_float(t.dtype))
      throw UserError(fmt::format("{}: error: parameter '{}' is {}: parameters must be floats", where, name,
                                  type_text(t)));
    param_types_.push_back(t);
    by_name.erase(it);
  }
  for (graph::ValueId v : forward.inputs())
    if (by_name.count(forward.value(v).input_name))
      batch_types_.push_back(forward.value(v).type);
  if (!gradients.empty()) {
    if (gradients.size() != param_names_.size())
      throw UserError(fmt::format("{}: error: {} gradients given for {} parameters", where, gradients.size(),
                                  param_names_.size()));
    for (size_t i = 0; i < gradients.size(); ++i) {
      UT_INTERNAL_ASSERT(gradients[i] >= 0 && static_cast<size_t>(gradients[i]) < forward.values().size(),
                         "unknown gradient value");
      const ops::TensorSpec& t = forward.value(gradients[i]).type;
      if (t.dtype != param_types_[i].dtype || t.shape != param_types_[i].shape)
        throw UserError(fmt::format("{}: error: the gradient of '{}' is {} but the parameter is {}", where,
                                    param_names_[i], type_text(t), type_text(param_types_[i])));
    }
  }
  bool first_differs = false;
  for (const OptimizerConfig& c : groups_.configs)
    first_differs = first_differs || c.first_update_differs();
  if (first_differs)
    first_ = build_program(session, forward, loss, param_names_, gradients, groups_, options_, true);
  every_ = build_program(session, std::move(forward), loss, param_names_, std::move(gradients), groups_,
                         options_, false);
}

TrainStep::~TrainStep() = default;
TrainStep::TrainStep(TrainStep&&) noexcept = default;
TrainStep& TrainStep::operator=(TrainStep&&) noexcept = default;

const graph::Graph& TrainStep::graph() const { return first_ ? first_->graph : every_->graph; }

std::string TrainStep::describe() const { return every_->executor->describe(); }

const std::vector<DeviceTensor>& TrainStep::gradients() const {
  if (!options_.keep_gradients)
    throw UserError("error: the training step was made without keep_gradients, so it keeps no gradients");
  if (gradients_.empty())
    throw UserError("error: no gradients yet: the training step has not run");
  return gradients_;
}

double TrainStep::run(TrainState& state, const std::vector<DeviceTensor>& batch) {
  const std::string& where = options_.where;
  // Check everything before running, so a bad call changes nothing.
  if (state.names.size() != param_names_.size())
    throw UserError(fmt::format("{}: error: the state has {} parameters but the step trains {}", where,
                                state.names.size(), param_names_.size()));
  std::vector<size_t> at(param_names_.size());
  for (size_t i = 0; i < param_names_.size(); ++i) {
    at[i] = state.index_of(param_names_[i]);
    const DeviceTensor& t = state.params[at[i]];
    if (t.dtype != param_types_[i].dtype || t.shape != param_types_[i].shape)
      throw UserError(fmt::format("{}: error: parameter '{}' is {}{} in the state but {} in the graph", where,
                                  param_names_[i], dtype_name(t.dtype), shape_string(t.shape),
                                  type_text(param_types_[i])));
    const size_t slots = groups_.of(i).state_names().size();
    if (state.optimizer_state[at[i]].size() != slots)
      throw UserError(fmt::format("{}: error: parameter '{}' has {} optimizer state tensors, {} needs {}", where,
                                  param_names_[i], state.optimizer_state[at[i]].size(),
                                  groups_.of(i).describe(), slots));
  }
  if (batch.size() != batch_types_.size())
    throw UserError(fmt::format("{}: error: the step takes {} batch tensors, got {}", where, batch_types_.size(),
                                batch.size()));
  for (size_t j = 0; j < batch.size(); ++j)
    if (batch[j].dtype != batch_types_[j].dtype || batch[j].shape != batch_types_[j].shape)
      throw UserError(fmt::format("{}: error: batch tensor {} is {}{} but the step was built for {}", where, j,
                                  dtype_name(batch[j].dtype), shape_string(batch[j].shape),
                                  type_text(batch_types_[j])));

  Program& p = state.step == 0 && first_ ? *first_ : *every_;
  std::vector<DeviceTensor> lr_device;
  for (const OptimizerConfig& c : groups_.configs) {
    Tensor lr = Tensor::zeros(DType::F64, {});
    lr.set(0, c.lr.at(state.step));
    lr_device.push_back(upload(*session_, lr));
  }
  Tensor step = Tensor::zeros(DType::I64, {});
  step.set(0, static_cast<double>(state.step + 1));
  const DeviceTensor step_device = upload(*session_, step);
  std::vector<DeviceTensor> inputs;
  for (const Program::Slot& s : p.inputs) {
    switch (s.source) {
    case Program::Source::Param:
      inputs.push_back(state.params[at[s.index]]);
      break;
    case Program::Source::Batch:
      inputs.push_back(batch[s.index]);
      break;
    case Program::Source::State:
      inputs.push_back(state.optimizer_state[at[s.index]][s.slot]);
      break;
    case Program::Source::Lr:
      inputs.push_back(lr_device[s.index]);
      break;
    case Program::Source::Step:
      inputs.push_back(step_device);
      break;
    }
  }
  std::vector<DeviceTensor> out = p.executor->run(inputs);
  const size_t n = param_names_.size();
  size_t slots = 0;
  for (size_t i = 0; i < n; ++i)
    slots += groups_.of(i).state_names().size();
  UT_INTERNAL_ASSERT(out.size() == 1 + n + slots + (p.has_norm ? 1 : 0) + (p.has_gradients ? n : 0),
                     "training step output count");
  const double loss = download(*session_, out[0]).get(0);
  size_t k = 1;
  for (size_t i = 0; i < n; ++i)
    state.params[at[i]] = std::move(out[k++]);
  for (size_t i = 0; i < n; ++i)
    for (size_t s = 0; s < groups_.of(i).state_names().size(); ++s)
      state.optimizer_state[at[i]][s] = std::move(out[k++]);
  grad_norm_.reset();
  if (p.has_norm)
    grad_norm_ = download(*session_, out[k++]).get(0);
  if (p.has_gradients)
    gradients_.assign(std::make_move_iterator(out.begin() + static_cast<std::ptrdiff_t>(k)),
                      std::make_move_iterator(out.end()));
  state.step += 1;
  return loss;
}

} // namespace unitile::train
