// Training state on a device: made from host parameters, parameters replaced, tensors
// copied between host and device.
#include "train/TrainState.h"

#include "ir/Diagnostic.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <set>

namespace unitile::train {

size_t TrainState::index_of(const std::string& name) const {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name)
      return i;
  throw UserError(fmt::format("error: no parameter named '{}' (the parameters: {})", name,
                              fmt::join(names, ", ")));
}

DeviceTensor upload(Session& session, const Tensor& t) {
  DeviceTensor d;
  d.dtype = t.dtype;
  d.shape = t.shape;
  auto buffer = std::make_shared<DeviceBuffer>(session.device().alloc(t.nbytes()));
  session.device().copy_in(*buffer, t.data.data(), t.nbytes());
  d.buffer = std::move(buffer);
  return d;
}

Tensor download(Session& session, const DeviceTensor& t) {
  Tensor h = Tensor::zeros(t.dtype, t.shape);
  session.device().copy_out(h.data.data(), *t.buffer, h.nbytes());
  return h;
}

TrainState make_train_state(Session& session, const std::vector<std::string>& names,
                            std::vector<DeviceTensor> values, const OptimizerConfig& config,
                            const std::vector<ParamGroup>& groups) {
  config.check();
  UT_INTERNAL_ASSERT(names.size() == values.size(), "one value per parameter name");
  TrainState s;
  std::set<std::string> seen;
  for (const std::string& name : names) {
    if (name.empty())
      throw UserError("error: a parameter has an empty name");
    if (!seen.insert(name).second)
      throw UserError(fmt::format("error: parameter '{}' is given twice", name));
  }
  const GroupAssignment assignment = assign_groups(names, config, groups, "training state");
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    if (!is_float(values[i].dtype))
      throw UserError(fmt::format("error: parameter '{}' is {}: parameters must be floats", name,
                                  dtype_name(values[i].dtype)));
    std::vector<DeviceTensor> slots;
    for (size_t k = 0; k < assignment.of(i).state_names().size(); ++k)
      slots.push_back(upload(session, Tensor::zeros(values[i].dtype, values[i].shape)));
    s.names.push_back(name);
    s.params.push_back(std::move(values[i]));
    s.optimizer_state.push_back(std::move(slots));
  }
  return s;
}

TrainState make_train_state(Session& session, const std::vector<Parameter>& params,
                            const OptimizerConfig& config, const std::vector<ParamGroup>& groups) {
  std::vector<std::string> names;
  std::vector<DeviceTensor> values;
  for (const Parameter& p : params) {
    names.push_back(p.name);
    values.push_back(upload(session, p.initial));
  }
  return make_train_state(session, names, std::move(values), config, groups);
}

void set_parameter(TrainState& state, const std::string& name, DeviceTensor value) {
  const size_t i = state.index_of(name);
  const DeviceTensor& old = state.params[i];
  if (old.dtype != value.dtype || old.shape != value.shape)
    throw UserError(fmt::format("error: parameter '{}' is {}{} but the new value is {}{}", name,
                                dtype_name(old.dtype), shape_string(old.shape), dtype_name(value.dtype),
                                shape_string(value.shape)));
  state.params[i] = std::move(value);
}

} // namespace unitile::train
