// `unitile profile`: run every kernel of a .ut file on one or more devices under the
// profiler, print the per-device table and the side-by-side timeline, and write the
// Chrome trace and the HTML report.
#include "unitile/Command.h"
#include "unitile/GraphInputs.h"
#include "unitile/KernelInputs.h"

#include "graph/Executor.h"
#include "graph/GraphText.h"
#include "ir/Diagnostic.h"
#include "profile/ChromeTrace.h"
#include "profile/HtmlReport.h"
#include "profile/OutputFile.h"
#include "profile/Profiler.h"
#include "runtime/KernelCache.h"
#include "runtime/Session.h"
#include "runtime/SourceFiles.h"
#include "tune/TunedLookup.h"
#include "tune/TuningDatabase.h"

#include <fmt/core.h>

#include <iostream>

namespace unitile::cli {
namespace {

constexpr const char* kProfileFooter =
    "Each kernel is compiled and run once per device (a warm-up, not recorded); then the\n"
    "file's kernels run in order --repeat times with every launch timed on the device's own\n"
    "timer. Inputs are as for `unitile run` (--input NAME=FILE.npy, else random, seeded).\n"
    "Output: per device a table (calls, total/avg/min/max ms, share of the device's time,\n"
    "GFLOP/s and GB/s from the operations and bytes counted in each launch's Loop IR) and\n"
    "one timeline line, `cpu-0: MatrixMul(62%) -> Softmax(38%)`, aligned across devices.\n"
    "--trace writes Chrome Trace Event JSON (open it in ui.perfetto.dev or chrome://tracing;\n"
    "pid = device, tid = queue); --html a self-contained page with each device's timeline,\n"
    "the table and a roofline against the HCD's peak rates. Files are written only when the\n"
    "whole profile succeeded. Targets: a .ut file, op:NAME with `unitile run`'s flags\n"
    "(--shape X=2x3 --dtype f64 --attr K=V), or a graph (.utg, see `unitile graph`), run\n"
    "through the graph executor as its fused kernels (<graph>_k0, _k1, ...: the ops of\n"
    "each are listed after the timeline).\n";

struct ProfileArgs {
  InputFlags in;
  OpTargetOptions op;
  int repeat = 1;
  std::string trace, html;
};

// One session per --device, sharing the kernel cache, with the tuning database attached.
std::vector<Session> open_sessions(const CommonOptions& co) {
  const std::vector<std::string> device_names = device_list(co.device);
  if (device_names.size() > 1 && !co.device_plugin.empty())
    throw UserError("error: --device-plugin loads one device; --device must then name one");
  auto cache = std::make_shared<KernelCache>(KernelCache::default_dir());
  std::vector<Session> sessions;
  for (const std::string& name : device_names) {
    sessions.emplace_back(open_device(name, device_options(co)), cache);
    sessions.back().set_schedule_lookup(tuning_database_lookup(TuningDatabase::default_path()));
  }
  return sessions;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Refuse what cannot be profiled, with the reason, before anything runs.
void check_target(const std::string& target) {
  if (is_op_target(target) || ends_with(target, ".ut") || ends_with(target, ".utg")) return;
  throw UserError(fmt::format(
      "error: {}: unitile profile runs the kernels of a .ut file, a library op (op:NAME) or a "
      "graph (.utg); ONNX models need the converter, which does not exist yet",
      target));
}

// Print the table and timeline; write the trace and the HTML report.
void report(const profile::Profiler& profiler, const ProfileArgs& pa, const std::string& legend) {
  std::cout << profiler.table() << "\n" << profiler.timeline() << legend;
  profile::StagedOutputs outputs;
  if (!pa.trace.empty())
    outputs.add(pa.trace,
                profile::chrome_trace(profiler.devices(), profiler.events()).dump(1) + "\n",
                "--trace");
  if (!pa.html.empty())
    outputs.add(pa.html, profile::html_report(profiler.devices(), profiler.events()), "--html");
  outputs.commit();
  if (!pa.trace.empty())
    std::cout << "trace: " << pa.trace << "\n";
  if (!pa.html.empty())
    std::cout << "html: " << pa.html << "\n";
}

// A graph: its inputs from --input files or random (seeded per input name, as `unitile
// graph --run` makes them), run on each device by the graph executor: once to warm up,
// then --repeat times recorded. Every launch is one fused kernel of the partition.
int profile_graph(const CommonOptions& co, const ProfileArgs& pa) {
  if (!co.kernel.empty() || !co.shapes.empty() || !pa.in.params.empty())
    throw UserError("error: a graph's shapes are in its text; --kernel, --shape and --param do not apply");
  const graph::NamedGraph parsed = graph::parse_graph(read_source_file(co.file));
  const std::vector<Tensor> host_inputs = graph_host_inputs(parsed, pa.in.inputs, pa.in.seed);
  std::vector<Session> sessions = open_sessions(co);
  profile::Profiler profiler;
  std::string legend;
  for (Session& session : sessions) {
    graph::ExecutorOptions eo;
    eo.name = parsed.name;
    graph::GraphExecutor exec(session, parsed.graph, eo);
    std::vector<DeviceTensor> inputs;
    for (const Tensor& t : host_inputs) {
      auto buffer = std::make_shared<DeviceBuffer>(session.device().alloc(std::max<size_t>(t.nbytes(), 1)));
      session.device().copy_in(*buffer, t.data.data(), t.nbytes());
      inputs.push_back(DeviceTensor{t.dtype, t.shape, std::move(buffer)});
    }
    exec.run(inputs); // warm-up, not recorded
    profiler.start();
    for (int r = 0; r < pa.repeat; ++r) exec.run(inputs);
    profiler.stop();
    if (legend.empty()) {
      // What each kernel computes: the ops of its group, in order (the same partition on
      // every device, since it depends on the graph alone).
      const graph::Partition& p = exec.partition();
      legend = "\nkernels:\n";
      for (size_t k = 0; k < p.groups.size(); ++k) {
        std::string ops;
        for (size_t n : p.groups[k].nodes) ops += (ops.empty() ? "" : ", ") + exec.graph().nodes()[n].op;
        legend += fmt::format("  {}_k{}: {}\n", parsed.name, k, ops);
      }
    }
  }
  report(profiler, pa, legend);
  return 0;
}

int profile_command(const CommonOptions& co, const ProfileArgs& pa) {
  check_target(co.file);
  if (pa.repeat < 1)
    throw UserError("error: --repeat must be at least 1");
  // Paths are checked before the (possibly long) run; files are written at the end.
  if (!pa.trace.empty())
    profile::check_writable(pa.trace, "--trace");
  if (!pa.html.empty())
    profile::check_writable(pa.html, "--html");
  if (ends_with(co.file, ".utg")) return profile_graph(co, pa);

  // The same path as `unitile run`: a .ut file's kernels, or op:NAME written out.
  const KernelTarget target = load_kernel_target(co, pa.in, pa.op);
  const std::vector<const Kernel*> kernels = select_kernels(target.module, co.kernel, co.file);
  const KernelInputs in = check_input_flags(co, pa.in, kernels, target.op);
  std::vector<Session> sessions = open_sessions(co);
  std::vector<KernelCall> calls;
  for (const Kernel* k : kernels)
    calls.push_back(prepare_call(*k, in));

  profile::Profiler profiler;
  for (Session& session : sessions) {
    std::vector<std::shared_ptr<const CompiledKernel>> compiled;
    for (const KernelCall& c : calls) {
      compiled.push_back(session.compile(*c.kernel, c.bindings));
      session.run(*compiled.back(), c.inputs, in.params, 0); // warm-up, not recorded
    }
    profiler.start();
    for (int r = 0; r < pa.repeat; ++r)
      for (size_t i = 0; i < calls.size(); ++i)
        session.run(*compiled[i], calls[i].inputs, in.params, 0);
    profiler.stop();
  }

  report(profiler, pa, "");
  return 0;
}

CommandAction setup_profile(CLI::App& cmd) {
  auto co = std::make_shared<CommonOptions>();
  auto pa = std::make_shared<ProfileArgs>();
  add_common(&cmd, *co);
  cmd.get_option("file")->description(
      "a .ut file (every kernel in it, in order, or --kernel), op:NAME (a library op; see "
      "`unitile ops`) or a graph (.utg)");
  // Repeated --device options join into one comma list: `--device cpu --device sim`
  // is `--device cpu,sim`.
  cmd.get_option("--device")
      ->description("device to profile on; repeat it or give a list (cpu,sim,opencl)")
      ->multi_option_policy(CLI::MultiOptionPolicy::Join)
      ->delimiter(',');
  add_input_flags(cmd, pa->in);
  add_op_target_options(&cmd, pa->op);
  cmd.add_option("--repeat", pa->repeat,
                 "recorded passes over the kernels after the warm-up (default 1)");
  cmd.add_option("--trace", pa->trace, "write a Chrome Trace Event JSON file (Perfetto opens it)");
  cmd.add_option("--html", pa->html,
                 "write a self-contained HTML report (timeline, table, roofline)");
  cmd.footer(std::string(kProfileFooter) + kExitStatusHelp);
  return [co, pa] { return profile_command(*co, *pa); };
}

const CommandRegistration reg{
    {"profile", "run kernels under the profiler: per-device table, timeline, trace, HTML", 35,
     setup_profile}};

} // namespace
} // namespace unitile::cli
