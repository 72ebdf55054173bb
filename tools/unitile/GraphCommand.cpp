// `unitile graph`: read a graph (.utg), run passes on it and print it, or run it on a
// device through the graph executor and check it against the one-kernel form on sim.
#include "unitile/Command.h"
#include "unitile/GraphInputs.h"

#include "graph/Executor.h"
#include "graph/Fusion.h"
#include "graph/GraphKernel.h"
#include "graph/GraphText.h"
#include "graph/MemoryPlan.h"
#include "graph/Passes.h"
#include "ir/Diagnostic.h"
#include "runtime/KernelCache.h"
#include "runtime/Npy.h"
#include "runtime/OutputCheck.h"
#include "runtime/Session.h"
#include "runtime/SourceFiles.h"

#include <fmt/core.h>

#include <filesystem>
#include <iostream>
#include <optional>
#include <set>

namespace unitile::cli {
namespace {

constexpr const char* kGraphFooter =
    "Passes (--passes, applied in the order given): dce removes nodes no output needs; cse\n"
    "merges nodes with the same op, attributes and inputs; fuse partitions the nodes into\n"
    "kernels (printed as `// kernel` comments before each group); plan assigns the values\n"
    "that cross kernels to reused buffers and prints the peak (it partitions one kernel\n"
    "per node when fuse was not given).\n"
    "--run executes the graph on --device through the graph executor (dce, cse, fuse,\n"
    "plan; --no-fuse runs one kernel per node). Inputs not given with --input are random,\n"
    "seeded by --seed like `unitile run`'s. --check also runs the whole graph as ONE kernel\n"
    "on sim (plain default lowering) and compares every output with the tolerances of\n"
    "`unitile run --check`.\n";

struct GraphOptions {
  std::string file;
  std::vector<std::string> passes;
  bool print = false, run = false, check = false, no_fuse = false;
  size_t max_group_nodes = 16;
  std::string device, device_plugin, hcd, output_dir;
  std::vector<std::string> inputs;
  uint64_t seed = 0;
};

int print_passes(const graph::NamedGraph& parsed, const GraphOptions& o) {
  graph::Graph g = parsed.graph;
  std::optional<graph::Partition> partition;
  std::optional<graph::MemoryPlan> plan;
  for (const std::string& pass : o.passes) {
    if (pass == "dce") {
      g = graph::eliminate_dead_code(g);
    } else if (pass == "cse") {
      g = graph::eliminate_common_subexpressions(g);
    } else if (pass == "fuse") {
      partition = graph::partition_graph(g, {true, o.max_group_nodes});
    } else if (pass == "plan") {
      if (!partition) partition = graph::partition_graph(g, {false, o.max_group_nodes});
      plan = graph::plan_memory(g, *partition);
    } else {
      throw UserError(fmt::format("error: --passes: unknown pass '{}' (passes: dce, cse, fuse, plan)", pass));
    }
    if ((pass == "dce" || pass == "cse") && partition)
      throw UserError(fmt::format("error: --passes: '{}' after fuse or plan would change the partitioned graph; "
                                  "give it before them",
                                  pass));
  }
  graph::GraphPrintOptions po;
  if (partition) {
    po.order = graph::partition_order(*partition);
    const std::vector<std::string> names = graph::value_names(g, po.order);
    const graph::Partition& p = *partition;
    po.comments_before = [&p, names, name = parsed.name](size_t n) -> std::vector<std::string> {
      const int gi = p.group_of_node[n];
      if (gi < 0 || p.groups[static_cast<size_t>(gi)].nodes.front() != n) return {};
      return graph::describe_group(p, static_cast<size_t>(gi), fmt::format("{}_k{}", name, gi), names);
    };
    if (plan) po.trailer = graph::describe_plan(*plan, names);
  }
  std::cout << graph::print_graph(g, parsed.name, po);
  return 0;
}

DeviceTensor to_device(const Device& dev, const Tensor& t) {
  auto buffer = std::make_shared<DeviceBuffer>(dev.alloc(std::max<size_t>(t.nbytes(), 1)));
  dev.copy_in(*buffer, t.data.data(), t.nbytes());
  return DeviceTensor{t.dtype, t.shape, std::move(buffer)};
}

Tensor to_host(const Device& dev, const DeviceTensor& t) {
  Tensor out = Tensor::zeros(t.dtype, t.shape);
  dev.copy_out(out.data.data(), *t.buffer, out.nbytes());
  return out;
}

int run_graph(const graph::NamedGraph& parsed, const GraphOptions& o) {
  const graph::Graph& g = parsed.graph;
  // Inputs: --input files by name, random otherwise.
  std::map<std::string, Tensor> host_inputs;
  {
    std::vector<Tensor> in = graph_host_inputs(parsed, o.inputs, o.seed);
    for (size_t i = 0; i < in.size(); ++i) host_inputs.emplace(g.value(g.inputs()[i]).input_name, std::move(in[i]));
  }

  auto cache = std::make_shared<KernelCache>(KernelCache::default_dir());
  Session session(open_device(o.device, DeviceOptions{o.device_plugin, o.hcd}), cache);
  graph::ExecutorOptions eo;
  eo.fuse = !o.no_fuse;
  eo.max_group_nodes = o.max_group_nodes;
  eo.name = parsed.name;
  graph::GraphExecutor exec(session, g, eo);
  if (o.print) std::cout << exec.describe();

  std::vector<DeviceTensor> inputs;
  for (graph::ValueId v : g.inputs())
    inputs.push_back(to_device(session.device(), host_inputs.at(g.value(v).input_name)));
  const std::vector<DeviceTensor> outputs = exec.run(inputs);

  std::map<std::string, Tensor> got;
  std::vector<std::string> order;
  for (size_t i = 0; i < outputs.size(); ++i) {
    order.push_back(fmt::format("out{}", i));
    got.emplace(order.back(), to_host(session.device(), outputs[i]));
  }
  const graph::MemoryPlan& plan = exec.memory_plan();
  std::cout << fmt::format("ran graph {} on {}: {} kernel{}, planned peak {} B (no reuse {} B)\n", parsed.name,
                           o.device, exec.kernel_count(), exec.kernel_count() == 1 ? "" : "s", plan.peak_bytes,
                           plan.no_reuse_bytes);
  std::optional<std::filesystem::path> dir;
  if (!o.output_dir.empty()) {
    dir = o.output_dir;
    std::filesystem::create_directories(*dir);
  }
  for (const std::string& name : order) {
    const Tensor& t = got.at(name);
    std::string line = fmt::format("output: {} {}{}", name, dtype_name(t.dtype), shape_string(t.shape));
    if (dir) {
      const std::string path = (*dir / (name + ".npy")).string();
      write_npy(path, t);
      line += " -> " + path;
    }
    std::cout << line << "\n";
  }
  if (!o.check) return 0;

  // The reference: the whole graph as one kernel on sim, plainly lowered.
  Session sim(open_device("sim"), cache);
  const graph::GraphKernel whole = graph::graph_kernel(g, parsed.name);
  std::map<std::string, Tensor> ref_inputs;
  for (size_t i = 0; i < g.inputs().size(); ++i)
    ref_inputs.emplace(whole.inputs[i], host_inputs.at(g.value(g.inputs()[i]).input_name));
  const RunResult ref = sim.run(*sim.compile(whole.kernel(), {}, Schedule{}), ref_inputs, {}, 0);
  std::map<std::string, Tensor> expected;
  for (size_t i = 0; i < whole.outputs.size(); ++i) expected.emplace(order[i], ref.outputs.at(whole.outputs[i]));
  const CheckReport report = compare_outputs(order, got, expected, longest_reduction_extent(whole.kernel(), {}));
  std::cout << report.message() << "\n";
  return report.ok() ? 0 : 1;
}

int graph_command(const GraphOptions& o) {
  const graph::NamedGraph parsed = graph::parse_graph(read_source_file(o.file));
  if (!o.run) {
    if (o.check || !o.device.empty() || !o.inputs.empty() || !o.output_dir.empty() || o.no_fuse)
      throw UserError("error: --device, --input, --output-dir, --check and --no-fuse need --run");
    return print_passes(parsed, o);
  }
  if (!o.passes.empty())
    throw UserError("error: --passes prints passes; --run always runs dce, cse, fuse and plan (--print shows them)");
  if (o.device.empty()) throw UserError("error: --run needs --device DEV");
  return run_graph(parsed, o);
}

CommandAction setup_graph(CLI::App& cmd) {
  auto o = std::make_shared<GraphOptions>();
  cmd.add_option("file", o->file, "the graph, a .utg file")->required();
  cmd.add_option("--passes", o->passes, "passes to run, in order: dce, cse, fuse, plan (comma-separated)")
      ->delimiter(',');
  cmd.add_flag("--print", o->print, "with --run: print the graph as the executor partitioned it");
  cmd.add_option("--max-group-nodes", o->max_group_nodes, "at most this many nodes per fused kernel (default 16)")
      ->check(CLI::PositiveNumber);
  cmd.add_flag("--run", o->run, "run the graph on --device");
  cmd.add_option("--device", o->device, "device name, as `unitile devices` lists them");
  cmd.add_option("--device-plugin", o->device_plugin, "load the device from this plugin file instead of searching");
  cmd.add_option("--hcd", o->hcd, "run under this HCD file instead of the device's own");
  cmd.add_option("--input", o->inputs, "NAME=FILE.npy for a graph input; may repeat");
  cmd.add_option("--seed", o->seed, "seed of the random inputs (default 0)");
  cmd.add_option("--output-dir", o->output_dir, "write each output as DIR/out<i>.npy");
  cmd.add_flag("--check", o->check, "compare the outputs with the whole graph as one kernel on sim");
  cmd.add_flag("--no-fuse", o->no_fuse, "with --run: one kernel per node");
  cmd.footer(std::string(kGraphFooter) + kExitStatusHelp);
  return [o] { return graph_command(*o); };
}

const CommandRegistration reg{{"graph", "print, transform and run a graph of op calls (.utg)", 45, setup_graph}};

} // namespace
} // namespace unitile::cli
