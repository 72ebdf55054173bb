// What a training run keeps between steps, in one device's memory: the parameters (named
// tensors), the optimizer's state per parameter, and the number of updates done.
#pragma once

#include "runtime/DeviceTensor.h"
#include "runtime/Session.h"
#include "runtime/Tensor.h"
#include "train/Optimizer.h"

#include <string>
#include <vector>

namespace unitile::train {

/// A trainable tensor: a name (unique in its model) and its initial value.
struct Parameter {
  std::string name;
  Tensor initial;
};

struct TrainState {
  std::vector<std::string> names;     // the parameters, in order
  std::vector<DeviceTensor> params;   // names' order
  std::vector<std::vector<DeviceTensor>> optimizer_state; // per parameter, state_names() order
  int64_t step = 0;                   // updates done

  /// The index of parameter `name`; UserError listing the names when there is none.
  size_t index_of(const std::string& name) const;
};

/// The parameters `values` (already in `session`'s device memory) named `names`, with
/// the optimizer's state at zero and no update done. Names must be distinct and
/// non-empty, values of a float dtype. A parameter in one of `groups` gets the state of
/// its group's settings (SGD keeps a momentum buffer only where momentum is not 0).
TrainState make_train_state(Session& session, const std::vector<std::string>& names,
                            std::vector<DeviceTensor> values, const OptimizerConfig& config,
                            const std::vector<ParamGroup>& groups = {});
/// The same from host values, copied to the device.
TrainState make_train_state(Session& session, const std::vector<Parameter>& params,
                            const OptimizerConfig& config, const std::vector<ParamGroup>& groups = {});

/// Replace parameter `name` by `value` (same dtype and shape, else a UserError); the
/// optimizer state is kept.
void set_parameter(TrainState& state, const std::string& name, DeviceTensor value);

/// A host tensor copied into `session`'s device memory, and back.
DeviceTensor upload(Session& session, const Tensor& t);
Tensor download(Session& session, const DeviceTensor& t);

} // namespace unitile::train
