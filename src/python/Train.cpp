// Training from Python: learning-rate schedules, optimizer configurations, the training
// state on a device and compiled training steps (src/train). python/unitile/_train.py
// traces the user's loss function into the forward graph and drives these.
#include "Bindings.h"

#include "graph/Graph.h"
#include "ir/Diagnostic.h"
#include "train/TrainStep.h"

#include <fmt/core.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace unitile::python {

namespace {

/// A training state and the device that holds it.
struct PyTrainState {
  std::shared_ptr<PyDevice> device;
  train::TrainState state;
};

/// A compiled training step and its device.
struct PyTrainStep {
  std::shared_ptr<PyDevice> device;
  std::unique_ptr<train::TrainStep> step;
};

PyTensor wrap(const std::shared_ptr<PyDevice>& device, DeviceTensor t) {
  return PyTensor{device, std::move(t), nb::object()};
}

void require_device(const std::shared_ptr<PyDevice>& want, const PyTensor& t, const std::string& what) {
  if (t.device.get() != want.get())
    throw UserError(fmt::format("error: {} is on device '{}' but the training runs on '{}'", what, t.device->name,
                                want->name));
}

} // namespace

void bind_train(nb::module_& m) {
  using train::LrSchedule;
  using train::OptimizerConfig;
  nb::class_<LrSchedule>(m, "LrSchedule", "A learning rate per update (src/train/LrSchedule.h)")
      .def_static("constant", &LrSchedule::constant, nb::arg("lr"))
      .def_static("warmup_cosine", &LrSchedule::warmup_cosine, nb::arg("base_lr"), nb::arg("warmup_steps"),
                  nb::arg("total_steps"), nb::arg("min_lr") = 0.0)
      .def("at", &LrSchedule::at, nb::arg("step"), "the rate of update `step` (0 for the first)")
      .def_ro("base_lr", &LrSchedule::base_lr)
      .def_ro("warmup_steps", &LrSchedule::warmup_steps)
      .def_ro("total_steps", &LrSchedule::total_steps)
      .def_ro("min_lr", &LrSchedule::min_lr)
      .def("__repr__", &LrSchedule::describe);

  nb::class_<OptimizerConfig>(m, "OptimizerConfig", "An optimizer's settings (src/train/Optimizer.h)")
      .def_static("sgd", &OptimizerConfig::sgd, nb::arg("lr"), nb::arg("momentum") = 0.0,
                  nb::arg("weight_decay") = 0.0, nb::arg("nesterov") = false, nb::arg("dampening") = 0.0)
      .def_static("adam", &OptimizerConfig::adam, nb::arg("lr"), nb::arg("beta1") = 0.9, nb::arg("beta2") = 0.999,
                  nb::arg("eps") = 1e-8, nb::arg("weight_decay") = 0.0)
      .def_static("adamw", &OptimizerConfig::adamw, nb::arg("lr"), nb::arg("beta1") = 0.9,
                  nb::arg("beta2") = 0.999, nb::arg("eps") = 1e-8, nb::arg("weight_decay") = 1e-2)
      .def_ro("lr", &OptimizerConfig::lr)
      .def_prop_ro("op", &OptimizerConfig::op_name)
      .def_prop_ro("state_names", &OptimizerConfig::state_names)
      .def("__repr__", &OptimizerConfig::describe);

  nb::class_<train::ParamGroup>(m, "ParamGroup", "Parameters with settings of their own (src/train/Optimizer.h)")
      .def(nb::init<std::vector<std::string>, OptimizerConfig>(), nb::arg("params"), nb::arg("config"))
      .def_ro("params", &train::ParamGroup::params)
      .def_ro("config", &train::ParamGroup::config);

  nb::class_<PyTrainState>(m, "TrainState", "Parameters and optimizer state on one device")
      .def_prop_ro("names", [](const PyTrainState& s) { return s.state.names; })
      .def_prop_rw(
          "step", [](const PyTrainState& s) { return s.state.step; },
          [](PyTrainState& s, int64_t step) {
            if (step < 0) throw UserError(fmt::format("error: the update count must not be negative, got {}", step));
            s.state.step = step;
          },
          "updates done")
      .def(
          "param", [](const PyTrainState& s, const std::string& name) {
            return wrap(s.device, s.state.params[s.state.index_of(name)]);
          },
          nb::arg("name"))
      .def(
          "set_param",
          [](PyTrainState& s, const std::string& name, const PyTensor& value) {
            require_device(s.device, value, fmt::format("the new value of parameter '{}'", name));
            train::set_parameter(s.state, name, value.tensor);
          },
          nb::arg("name"), nb::arg("value"))
      .def(
          "optimizer_state",
          [](const PyTrainState& s, const std::string& name) {
            std::vector<PyTensor> out;
            for (const DeviceTensor& t : s.state.optimizer_state[s.state.index_of(name)]) out.push_back(wrap(s.device, t));
            return out;
          },
          nb::arg("name"), "the optimizer's state tensors of a parameter (OptimizerConfig.state_names order)")
      .def(
          "set_optimizer_state",
          [](PyTrainState& s, const std::string& name, const std::vector<const PyTensor*>& values) {
            std::vector<DeviceTensor>& slots = s.state.optimizer_state[s.state.index_of(name)];
            if (values.size() != slots.size())
              throw UserError(fmt::format("error: parameter '{}' has {} optimizer state tensors, got {}", name,
                                          slots.size(), values.size()));
            for (size_t k = 0; k < slots.size(); ++k) {
              require_device(s.device, *values[k], fmt::format("optimizer state of '{}'", name));
              if (values[k]->tensor.dtype != slots[k].dtype || values[k]->tensor.shape != slots[k].shape)
                throw UserError(fmt::format("error: optimizer state {} of '{}' is {}{}, got {}{}", k, name,
                                            dtype_name(slots[k].dtype), shape_string(slots[k].shape),
                                            dtype_name(values[k]->tensor.dtype), shape_string(values[k]->tensor.shape)));
            }
            for (size_t k = 0; k < slots.size(); ++k) slots[k] = values[k]->tensor;
          },
          nb::arg("name"), nb::arg("values"));

  m.def(
      "make_train_state",
      [](std::shared_ptr<PyDevice> device, const std::vector<std::string>& names,
         const std::vector<const PyTensor*>& values, const OptimizerConfig& config,
         const std::vector<train::ParamGroup>& param_groups) {
        if (names.size() != values.size())
          throw UserError(fmt::format("error: {} parameter names for {} values", names.size(), values.size()));
        std::vector<DeviceTensor> tensors;
        for (size_t i = 0; i < values.size(); ++i) {
          require_device(device, *values[i], fmt::format("parameter '{}'", names[i]));
          tensors.push_back(values[i]->tensor);
        }
        auto s = std::make_shared<PyTrainState>();
        s->device = device;
        s->state = train::make_train_state(*device->session, names, std::move(tensors), config, param_groups);
        return s;
      },
      nb::arg("device"), nb::arg("names"), nb::arg("values"), nb::arg("config"),
      nb::arg("param_groups") = std::vector<train::ParamGroup>{},
      "Parameters (device tensors) with the optimizer's state at zero");

  nb::class_<PyTrainStep>(m, "TrainStep", "One compiled training step (src/train/TrainStep.h)")
      .def(
          "__init__",
          [](PyTrainStep* self, std::shared_ptr<PyDevice> device, const graph::Graph& forward, int loss,
             const std::vector<std::string>& param_names, const OptimizerConfig& config,
             std::optional<double> clip_norm, bool keep_gradients, const std::string& where,
             const std::vector<train::ParamGroup>& param_groups) {
            train::TrainStepOptions options;
            options.param_groups = param_groups;
            options.clip_norm = clip_norm;
            options.keep_gradients = keep_gradients;
            if (!where.empty()) options.where = where;
            auto step = std::make_unique<train::TrainStep>(*device->session, forward, loss, param_names, config,
                                                           options);
            new (self) PyTrainStep{std::move(device), std::move(step)};
          },
          nb::arg("device"), nb::arg("forward"), nb::arg("loss"), nb::arg("param_names"), nb::arg("config"),
          nb::arg("clip_norm") = nb::none(), nb::arg("keep_gradients") = false, nb::arg("where") = "",
          nb::arg("param_groups") = std::vector<train::ParamGroup>{})
      .def(
          "run",
          [](PyTrainStep& s, PyTrainState& state, const std::vector<const PyTensor*>& batch) {
            if (state.device.get() != s.device.get())
              throw UserError(fmt::format("error: the training state is on device '{}' but the step runs on '{}'",
                                          state.device->name, s.device->name));
            std::vector<DeviceTensor> tensors;
            for (size_t i = 0; i < batch.size(); ++i) {
              require_device(s.device, *batch[i], fmt::format("batch tensor {}", i));
              tensors.push_back(batch[i]->tensor);
            }
            nb::gil_scoped_release release; // a step may run long; other Python threads go on
            return s.step->run(state.state, tensors);
          },
          nb::arg("state"), nb::arg("batch"), "one update; returns the loss before it")
      .def("gradients",
           [](const PyTrainStep& s) {
             std::vector<PyTensor> out;
             for (const DeviceTensor& t : s.step->gradients()) out.push_back(wrap(s.device, t));
             return out;
           })
      .def_prop_ro("grad_norm", [](const PyTrainStep& s) { return s.step->grad_norm(); },
                   "the last step's gradient norm before clipping (with clip_norm)")
      .def("describe", [](const PyTrainStep& s) { return s.step->describe(); });
}

} // namespace unitile::python
