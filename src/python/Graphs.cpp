// Graphs from Python: the tracer records each operation as an op call here (checked at
// once, so errors surface at the user's line), then asks for the graph as one kernel.
// Also the op list, so every op is reachable as tl.<name>.
#include "Bindings.h"

#include "graph/Autodiff.h"
#include "graph/Executor.h"
#include "graph/Graph.h"
#include "graph/GraphText.h"
#include "graph/GraphKernel.h"
#include "graph/GraphOps.h"
#include "ir/Diagnostic.h"
#include "ops/OpLibrary.h"

#include <fmt/core.h>

#include <algorithm>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace unitile::python {

namespace {

ops::AttrValue attr_value(const std::string& name, nb::handle v) {
  if (nb::isinstance<nb::bool_>(v)) return int64_t{nb::cast<bool>(v)};
  if (nb::isinstance<nb::int_>(v)) return nb::cast<int64_t>(v);
  if (nb::isinstance<nb::float_>(v)) return nb::cast<double>(v);
  if (nb::isinstance<nb::str>(v)) return nb::cast<std::string>(v);
  if (nb::isinstance<nb::list>(v) || nb::isinstance<nb::tuple>(v)) {
    std::vector<int64_t> ints;
    std::vector<double> floats;
    bool all_ints = true;
    for (nb::handle x : v) {
      if (nb::isinstance<nb::int_>(x) || nb::isinstance<nb::bool_>(x)) {
        ints.push_back(nb::cast<int64_t>(x));
        floats.push_back(static_cast<double>(ints.back()));
      } else if (nb::isinstance<nb::float_>(x)) {
        all_ints = false;
        floats.push_back(nb::cast<double>(x));
      } else {
        throw UserError(fmt::format("error: attribute '{}': list items must be numbers", name));
      }
    }
    if (all_ints) return ints;
    return floats;
  }
  throw UserError(fmt::format("error: attribute '{}': unsupported value {}", name, nb::cast<std::string>(nb::repr(v))));
}

const char* kind_name(ops::AttrKind k) {
  switch (k) {
  case ops::AttrKind::Int: return "int";
  case ops::AttrKind::Bool: return "bool";
  case ops::AttrKind::Float: return "float";
  case ops::AttrKind::String: return "str";
  case ops::AttrKind::Ints: return "ints";
  case ops::AttrKind::Floats: return "floats";
  }
  return "?";
}

// A graph executor with the device it runs on (kept alive while the executor lives).
struct PyGraphExecutor {
  std::shared_ptr<PyDevice> device;
  std::unique_ptr<graph::GraphExecutor> exec;
};

nb::dict op_spec(const ops::OpDef& op, bool library) {
  nb::dict d;
  d["name"] = op.name;
  d["category"] = op.category;
  d["summary"] = op.summary;
  d["library"] = library;
  nb::list ins, outs, attrs;
  for (const ops::Port& p : op.inputs) ins.append(nb::make_tuple(p.name, p.optional, p.variadic));
  for (const ops::Port& p : op.outputs) outs.append(p.name);
  for (const ops::AttrSpec& a : op.attrs) attrs.append(nb::make_tuple(a.name, kind_name(a.kind), a.default_value.has_value()));
  d["inputs"] = ins;
  d["outputs"] = outs;
  d["attrs"] = attrs;
  return d;
}

} // namespace

// The outputs of the node just added in the op's declared order (P_new before M_new,
// Values before Indices; a variadic port's Y0, Y1, ..., Y10 by number), which is how Python
// unpacks them; the node keeps its outputs by port name.
std::vector<graph::ValueId> declared_order(const graph::Graph& g, const std::string& op_name) {
  const ops::OpDef& op = graph::graph_op(op_name);
  std::vector<std::pair<std::pair<size_t, long>, graph::ValueId>> keyed;
  for (const auto& [port, value] : g.nodes().back().outputs) {
    std::pair<size_t, long> key{op.outputs.size(), 0};
    for (size_t i = 0; i < op.outputs.size(); ++i) {
      const std::string& name = op.outputs[i].name;
      if (port == name)
        key = {i, 0};
      else if (op.outputs[i].variadic && port.starts_with(name) && port.size() > name.size() &&
               port.find_first_not_of("0123456789", name.size()) == std::string::npos)
        key = {i, std::stol(port.substr(name.size()))};
    }
    keyed.emplace_back(key, value);
  }
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<graph::ValueId> out;
  for (const auto& kv : keyed)
    out.push_back(kv.second);
  return out;
}

void bind_graphs(nb::module_& m) {
  nb::class_<graph::Graph>(m, "Graph", "A graph of op calls, recorded by the tracer")
      .def(nb::init<>())
      .def(
          "add_input",
          [](graph::Graph& g, const std::string& name, const std::string& dtype,
             const std::vector<int64_t>& shape) {
            return g.add_input(name, ops::TensorSpec{dtype_from_name(dtype), shape});
          },
          nb::arg("name"), nb::arg("dtype"), nb::arg("shape"))
      .def(
          "add",
          [](graph::Graph& g, const std::string& op, const std::vector<int>& inputs, nb::dict attrs,
             const std::string& where) {
            ops::Attrs a;
            for (auto [k, v] : attrs) {
              const std::string key = nb::cast<std::string>(k);
              a[key] = attr_value(key, v);
            }
            g.add_node(op, inputs, a, where);
            return declared_order(g, op);
          },
          nb::arg("op"), nb::arg("inputs"), nb::arg("attrs"), nb::arg("where"),
          "Call an op on values; returns its output values in the op's declared order (checked "
          "now: errors "
          "name `where`)")
      .def(
          "value",
          [](const graph::Graph& g, int v) {
            const graph::Value& x = g.value(v);
            return std::make_pair(std::string(dtype_name(x.type.dtype)), x.type.shape);
          },
          nb::arg("value"), "(dtype, shape) of a value")
      .def("set_outputs", &graph::Graph::set_outputs, nb::arg("outputs"))
      .def(
          "kernel",
          [](const graph::Graph& g, const std::string& name) {
            graph::GraphKernel gk = graph::graph_kernel(g, name);
            return kernels_of(std::move(gk.module)).front();
          },
          nb::arg("name"),
          "The graph as one verified kernel (inputs by name, outputs out0, out1, ...)");

  // ---- the graph executor and the text form (src/graph/Executor.h, GraphText.h) ----
  nb::class_<PyGraphExecutor>(m, "GraphExecutor",
                              "A graph compiled for one device as fused kernels with planned buffers")
      .def(
          "__init__",
          [](PyGraphExecutor* self, std::shared_ptr<PyDevice> device, const graph::Graph& g, bool fuse,
             bool plan_memory, const std::string& name, size_t max_group_nodes) {
            graph::ExecutorOptions opts{fuse, plan_memory, max_group_nodes, name};
            auto exec = std::make_unique<graph::GraphExecutor>(*device->session, g, opts);
            new (self) PyGraphExecutor{std::move(device), std::move(exec)};
          },
          nb::arg("device"), nb::arg("graph"), nb::arg("fuse") = true, nb::arg("plan_memory") = true,
          nb::arg("name") = "graph", nb::arg("max_group_nodes") = 16)
      .def(
          "run",
          [](PyGraphExecutor& e, const std::vector<PyTensor>& inputs) {
            std::vector<DeviceTensor> in;
            for (size_t i = 0; i < inputs.size(); ++i) {
              if (inputs[i].device.get() != e.device.get())
                throw UserError(fmt::format("error: graph input {} is on device '{}' but the graph runs on '{}'", i,
                                            inputs[i].device->name, e.device->name));
              in.push_back(inputs[i].tensor);
            }
            std::vector<DeviceTensor> out;
            {
              nb::gil_scoped_release release;
              out = e.exec->run(in);
            }
            std::vector<PyTensor> result;
            for (DeviceTensor& t : out) result.push_back(PyTensor{e.device, std::move(t), nb::object()});
            return result;
          },
          nb::arg("inputs"), "Run on device tensors in the graph's input order; returns the outputs in order")
      .def("describe", [](const PyGraphExecutor& e) { return e.exec->describe(); },
           "The graph after the passes, kernel by kernel, with the memory plan")
      .def_prop_ro("kernel_count", [](const PyGraphExecutor& e) { return e.exec->kernel_count(); })
      .def_prop_ro("peak_bytes", [](const PyGraphExecutor& e) { return e.exec->memory_plan().peak_bytes; },
                   "bytes of the planned intermediate buffers")
      .def_prop_ro("no_reuse_bytes", [](const PyGraphExecutor& e) { return e.exec->memory_plan().no_reuse_bytes; },
                   "bytes the intermediates would take without reuse");
  m.def(
      "graph_text", [](const graph::Graph& g, const std::string& name) { return graph::print_graph(g, name); },
      nb::arg("graph"), nb::arg("name") = "graph", "The graph in the .utg text form");
  m.def(
      "parse_graph",
      [](const std::string& text, const std::string& file) {
        graph::NamedGraph ng = graph::parse_graph(SourceFile{file, text});
        return std::make_pair(ng.name, std::move(ng.graph));
      },
      nb::arg("text"), nb::arg("file") = "<graph>", "(name, Graph) from the .utg text form");
  // ---- end of the graph executor block ----

  m.def(
      "op_specs",
      [] {
        nb::list out;
        for (const ops::OpDef& op : ops::all_ops()) out.append(op_spec(op, true));
        for (const ops::OpDef& op : graph::graph_ops())
          if (!ops::find_op(op.name)) out.append(op_spec(op, false));
        return out;
      },
      "Every op a graph can call: the library's, then the graph's own that the library lacks");

  // --- autodiff: tl.grad / tl.value_and_grad append the gradient nodes here ----------------
  m.def(
      "append_gradients",
      [](graph::Graph& g, int loss, const std::vector<int>& wrt, std::optional<int> seed) {
        return graph::append_gradients(g, loss, wrt, seed);
      },
      nb::arg("graph"), nb::arg("loss"), nb::arg("wrt"), nb::arg("seed") = nb::none(),
      "Append to `graph` the nodes computing d(loss)/d(w) for each w in `wrt`; returns their values");
}

} // namespace unitile::python
