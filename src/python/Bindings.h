// The parts of the extension module unitile._core, one function per file that adds its
// classes and functions to the module, and the two objects they share: a device (one
// Session per device name, so compiled kernels are loaded once) and a device tensor.
#pragma once

#include "runtime/DeviceTensor.h"
#include "runtime/Session.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace unitile::python {

namespace nb = nanobind;

/// A device opened by name, with the session that compiles and runs on it.
struct PyDevice {
  std::string name;
  std::shared_ptr<Session> session;
};

/// The device named `name`, opened once per process (UserError if there is none).
std::shared_ptr<PyDevice> device_named(const std::string& name);

/// A tensor in a device's memory. `owner` holds the host array whose memory the buffer
/// uses when it was imported without a copy.
struct PyTensor {
  std::shared_ptr<PyDevice> device;
  DeviceTensor tensor;
  nb::object owner;

  static PyTensor from_array(const std::shared_ptr<PyDevice>& device, nb::ndarray<nb::ro> array, bool share);
  nb::ndarray<nb::numpy> numpy() const;
  /// The tensor's memory as a host array owned by `self` on host-memory devices, else a copy.
  nb::ndarray<> host_view(nb::handle self) const;
  PyTensor to(const std::shared_ptr<PyDevice>& target) const;
};

DType dtype_from_name(const std::string& name);

/// A kernel compiled for one device and shapes.
struct PyCompiled {
  std::shared_ptr<PyDevice> device;
  std::shared_ptr<const CompiledKernel> kernel;
  /// Run on tensors of this device (UserError for another device's); outputs stay there.
  std::map<std::string, PyTensor> run(const std::map<std::string, const PyTensor*>& inputs,
                                      const ParamValues& params) const;
};

/// A verified kernel and its compiled forms, by device, input shapes and bound names.
struct PyKernel {
  std::shared_ptr<const Kernel> kernel;
  std::map<std::string, std::shared_ptr<PyCompiled>> compiled;
  std::mutex mu;
  std::shared_ptr<PyCompiled> compile(const std::shared_ptr<PyDevice>& device,
                                      const std::map<std::string, std::vector<int64_t>>& input_shapes,
                                      const ShapeBindings& given);
};

void bind_devices(nb::module_& m);
void bind_arrays(nb::module_& m);
void bind_kernels(nb::module_& m);
void bind_graphs(nb::module_& m);
void bind_train(nb::module_& m);
void bind_profile(nb::module_& m);

/// Wrap every kernel of a verified module.
std::vector<std::shared_ptr<PyKernel>> kernels_of(Module m);

} // namespace unitile::python
