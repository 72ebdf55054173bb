// Kernels from Python: .ut text and bare comprehensions become verified kernels, which
// compile per device and shapes (each compiled form kept, so a repeated call only runs)
// and run on device tensors without copies through the host.
#include "Bindings.h"

#include "graph/ComprehensionKernel.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "runtime/Explain.h"
#include "schedule/Lower.h"
#include "schedule/Specialize.h"

#include <fmt/core.h>
#include <fmt/format.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <mutex>

namespace unitile::python {

namespace {

using NamedDTypes = std::vector<std::pair<std::string, std::string>>;

NamedDTypes tensors_of(const Kernel& k, TensorRole role) {
  NamedDTypes out;
  for (const TensorDecl& t : k.tensors)
    if (t.role == role) out.emplace_back(t.name, std::string(dtype_name(t.dtype)));
  return out;
}

} // namespace

std::shared_ptr<PyCompiled> PyKernel::compile(const std::shared_ptr<PyDevice>& device,
                                              const std::map<std::string, std::vector<int64_t>>& input_shapes,
                                              const ShapeBindings& given) {
  std::string key = device->name;
  for (const auto& [n, s] : input_shapes) key += fmt::format(";{}[{}]", n, fmt::join(s, ","));
  for (const auto& [n, v] : given) key += fmt::format(";{}={}", n, v);
  std::lock_guard lock(mu);
  if (auto it = compiled.find(key); it != compiled.end()) return it->second;
  const ShapeBindings b = bind_shapes(*kernel, input_shapes, given);
  auto c = std::make_shared<PyCompiled>();
  c->device = device;
  c->kernel = device->session->compile(*kernel, b);
  compiled.emplace(key, c);
  return c;
}

std::map<std::string, PyTensor> PyCompiled::run(const std::map<std::string, const PyTensor*>& inputs,
                                                const ParamValues& params) const {
  std::map<std::string, DeviceTensor> in;
  for (const auto& [name, t] : inputs) {
    if (t->device.get() != device.get())
      throw UserError(fmt::format("error: kernel {}: input '{}' is on device '{}' but the kernel runs on '{}'",
                                  kernel->kernel_name, name, t->device->name, device->name));
    in.emplace(name, t->tensor);
  }
  std::map<std::string, DeviceTensor> out;
  {
    nb::gil_scoped_release release; // kernels may run long; other Python threads go on
    out = device->session->run_resident(*kernel, in, params);
  }
  std::map<std::string, PyTensor> result;
  for (auto& [name, t] : out) result.emplace(name, PyTensor{device, std::move(t), nb::object()});
  return result;
}

std::vector<std::shared_ptr<PyKernel>> kernels_of(Module m) {
  std::vector<std::shared_ptr<PyKernel>> out;
  for (Kernel& k : m.kernels) {
    auto p = std::make_shared<PyKernel>();
    p->kernel = std::make_shared<const Kernel>(std::move(k));
    out.push_back(std::move(p));
  }
  return out;
}

void bind_kernels(nb::module_& m) {
  nb::class_<PyCompiled>(m, "CompiledKernel", "A kernel compiled and loaded for one device and shapes")
      .def_prop_ro("device", [](const PyCompiled& c) { return c.device; })
      .def_prop_ro("bindings", [](const PyCompiled& c) { return c.kernel->bindings; })
      .def("source", [](const PyCompiled& c) { return c.kernel->source.code; },
           "The source generated for the device, in its HCD's dialect")
      .def("loop_ir", [](const PyCompiled& c) { return to_string(c.kernel->program); }, "The Loop IR compiled")
      .def(
          "explain",
          [](const PyCompiled& c) {
            return schedule_explanation(c.kernel->kernel_name, c.kernel->schedule, c.kernel->schedule_origin,
                                        c.kernel->reasons, c.kernel->program);
          },
          "The schedule applied, where it came from and why, as a pasteable schedule block")
      .def("run", &PyCompiled::run, nb::arg("inputs"), nb::arg("params"),
           "Run on device tensors of this device; returns the outputs, on the device");

  nb::class_<PyKernel>(m, "Kernel", "A verified Kernel IR kernel")
      .def_prop_ro("name", [](const PyKernel& k) { return k.kernel->name; })
      .def_prop_ro("text", [](const PyKernel& k) { return to_string(*k.kernel); }, "The kernel as .ut text")
      .def_prop_ro("inputs", [](const PyKernel& k) { return tensors_of(*k.kernel, TensorRole::Input); })
      .def_prop_ro("outputs", [](const PyKernel& k) { return tensors_of(*k.kernel, TensorRole::Output); })
      .def_prop_ro("params",
                   [](const PyKernel& k) {
                     NamedDTypes out;
                     for (const ParamDecl& p : k.kernel->params)
                       out.emplace_back(p.name, std::string(dtype_name(p.dtype)));
                     return out;
                   })
      .def_prop_ro("bound_names",
                   [](const PyKernel& k) {
                     const std::set<std::string> names = bound_names(*k.kernel);
                     return std::vector<std::string>(names.begin(), names.end());
                   },
                   "Shape symbols and specialisation params: the names a compile binds")
      .def_prop_ro("compiled_count",
                   [](PyKernel& k) {
                     std::lock_guard lock(k.mu);
                     return k.compiled.size();
                   },
                   "How many compiled forms (device, shapes) are kept")
      .def("compile", &PyKernel::compile, nb::arg("device"), nb::arg("input_shapes"), nb::arg("given"),
           "Compile for a device and the inputs' shapes (plus symbols and specialisation params in `given`); "
           "kept, so the same device and shapes compile once");

  m.def(
      "parse_module",
      [](const std::string& text, const std::string& filename) {
        return kernels_of(parse_module(SourceFile{filename, text}));
      },
      nb::arg("text"), nb::arg("filename"), "Every kernel of .ut text, verified");
  m.def(
      "comprehension_signature",
      [](const std::string& statements) {
        const graph::ComprehensionSignature s = graph::comprehension_signature(statements);
        return std::map<std::string, std::vector<std::string>>{
            {"inputs", s.inputs}, {"outputs", s.outputs}, {"locals", s.locals}, {"params", s.params}};
      },
      nb::arg("statements"), "The names comprehension statements read, write and take as scalars");
  m.def(
      "comprehension_kernel",
      [](const std::string& name, const std::string& statements,
         const std::map<std::string, std::pair<std::string, std::vector<int64_t>>>& inputs,
         const std::map<std::string, std::string>& params, const std::optional<std::string>& dtype) {
        graph::ComprehensionTypes types;
        for (const auto& [n, t] : inputs) types.inputs[n] = {dtype_from_name(t.first), t.second};
        for (const auto& [n, d] : params) types.params[n] = dtype_from_name(d);
        if (dtype) types.dtype = dtype_from_name(*dtype);
        return kernels_of(graph::comprehension_kernel(name, statements, types).module).front();
      },
      nb::arg("name"), nb::arg("statements"), nb::arg("inputs"), nb::arg("params"), nb::arg("dtype").none(),
      "The kernel for comprehension statements and concrete input types");
}

} // namespace unitile::python
