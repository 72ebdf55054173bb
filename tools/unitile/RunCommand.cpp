// `unitile run`: compile kernels for a device, run them on given or random inputs, write
// outputs as .npy, check them against sim and time them.
#include "unitile/Command.h"
#include "unitile/KernelInputs.h"

#include "OpTarget.h"

#include "backends/sim/ChipReport.h"
#include "ir/Diagnostic.h"
#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "runtime/Inputs.h"
#include "runtime/KernelCache.h"
#include "runtime/Npy.h"
#include "runtime/OutputCheck.h"
#include "runtime/Session.h"
#include "runtime/SourceFiles.h"
#include "tune/TunedLookup.h"
#include "tune/TuningDatabase.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

namespace unitile::cli {
namespace {

constexpr const char* kRunFooter =
    "FILE may be op:NAME, a library op (`unitile ops` lists them): its inputs come from\n"
    "--input NAME=FILE.npy or --shape NAME=2x3x4 (random, with --dtype), attributes from\n"
    "--attr NAME=VALUE.\n"
    "Inputs not given with --input are random, seeded by --seed: floats uniform in [-1, 1]\n"
    "(rounded to the dtype), signed integers in [-8, 8], u8 in [0, 8], bools 0/1.\n"
    ".npy dtypes: <f2 f16, <f4 f32, <f8 f64, |i1 i8, <i2 i16, <i4 i32, <i8 i64, |u1 u8,\n"
    "|b1 bool. NumPy has no bf16: bf16 tensors are read and written as <u2 (the raw bits;\n"
    "in NumPy, x.view(np.uint16) of an ml_dtypes bfloat16 array).\n"
    "--check runs the kernel on sim with the same inputs and compares every output:\n"
    "|x - ref| <= atol + rtol*|ref| with f64 1e-9, f32 1e-4 (atol times sqrt of the longest\n"
    "reduction), f16 atol 1e-3 rtol 2e-3, bf16 atol 1e-2 rtol 1.6e-2, integers exact.\n"
    "Compiled kernels are cached in $UNITILE_CACHE_DIR (default ~/.cache/unitile).\n"
    "--report models the launches on the chip the HCD describes (--hcd FILE or a built-in\n"
    "name, with --device sim to model any chip): the address trace of the Loop IR runs\n"
    "through set-associative LRU caches of the HCD's [[memory]] levels, and the time is a\n"
    "roofline of peak rates, bandwidths and latencies (docs/ARCHITECTURE.md).\n";

struct RunOptions {
  InputFlags in; // --param, --input, --seed (shared with `unitile profile`)
  std::string output_dir;
  bool check = false;
  int repeat = 0;
  bool report = false, report_warm = false;
  std::string report_json;
  OpTargetOptions op;
};

void print_timing(const RunResult& result) {
  if (result.timing)
    std::cout << fmt::format("timing: runs={} median_ms={:.6g} min_ms={:.6g}\n",
                             result.timing->samples_ms.size(), result.timing->median_ms,
                             result.timing->min_ms);
}

// A Loop IR program (FILE.loop) runs as written, on random inputs: how hand-scheduled
// programs (shared-memory staging, thread blocks) are run and checked on every device.
int run_loop_program(const CommonOptions& co, const RunOptions& ro) {
  if (!co.kernel.empty() || !co.shapes.empty() || !ro.in.inputs.empty() || !ro.in.params.empty() ||
      !ro.output_dir.empty() || ro.report || !ro.report_json.empty())
    throw UserError("error: a .loop program runs as written on random inputs: --kernel, --shape, "
                    "--input, --param, --output-dir and --report do not apply");
  LoopProgram program = parse_loop_program(read_source_file(co.file));
  verify_input(program, co.file);
  if (!program.params.empty())
    throw UserError(fmt::format("error: {}: programs with runtime params cannot run from a .loop "
                                "file yet",
                                co.file));
  std::map<std::string, Tensor> inputs;
  std::vector<std::string> order;
  int64_t longest = 1;
  uint64_t stream = 0;
  for (const LoopBuffer& b : program.buffers) {
    for (int64_t d : b.shape)
      longest = std::max(longest, d);
    if (b.role == TensorRole::Input)
      inputs.emplace(b.name, random_tensor(b.dtype, b.shape, ro.in.seed, ++stream));
    if (b.role == TensorRole::Output)
      order.push_back(b.name);
  }
  auto cache = std::make_shared<KernelCache>(KernelCache::default_dir());
  std::optional<RunResult> ref;
  if (ro.check) {
    Session sim(open_device("sim"), cache);
    ref = sim.run(*sim.compile_program(program), inputs, {}, 0);
  }
  const std::vector<std::string> names = device_list(co.device);
  bool all_ok = true;
  for (const std::string& name : names) {
    Session session(open_device(name, device_options(co)), cache);
    if (names.size() > 1)
      std::cout << "device " << name << "\n";
    RunResult result = session.run(*session.compile_program(program), inputs, {}, ro.repeat);
    if (ref) {
      // The longest dimension bounds every reduction a hand-written program can hold.
      const CheckReport report = compare_outputs(order, result.outputs, ref->outputs, longest);
      std::cout << report.message() << "\n";
      all_ok &= report.ok();
    }
    print_timing(result);
  }
  return all_ok ? 0 : 1;
}

// The chip model of the sim device (src/backends/sim/ChipModel.h) run on the Loop IR
// the device was given, under the device's HCD, with the same inputs and params.
sim::KernelReport model_kernel(const Session& session, const CompiledKernel& ck,
                               const std::map<std::string, Tensor>& inputs,
                               const ParamValues& params, bool warm) {
  std::vector<std::vector<char>> storage;
  std::vector<sim::BufferArg> buffers;
  for (const LoopBuffer& b : ck.program.buffers) {
    const size_t bytes = shape_numel(b.shape) * static_cast<size_t>(dtype_bytes(b.dtype));
    storage.emplace_back(std::max<size_t>(bytes, 1), 0);
    if (b.role == TensorRole::Input)
      std::memcpy(storage.back().data(), inputs.at(b.name).data.data(), bytes);
    buffers.push_back({storage.back().data(), bytes});
  }
  std::vector<sim::ParamArg> args;
  for (const ParamDecl& p : ck.program.params) {
    const double v = params.at(p.name); // Session::run has checked every param is given
    args.push_back(is_float(p.dtype) ? sim::ParamArg{true, 0, v}
                                     : sim::ParamArg{false, static_cast<int64_t>(v), 0});
  }
  sim::ChipModelOptions options;
  options.warm = warm;
  return sim::model_program(ck.program, session.device().hcd(), buffers, args, options);
}

int run_command(const CommonOptions& co, const RunOptions& ro) {
  if (co.file.ends_with(".loop"))
    return run_loop_program(co, ro);
  const KernelTarget target = load_kernel_target(co, ro.in, ro.op);
  const Module& m = target.module;
  const std::vector<const Kernel*> kernels = select_kernels(m, co.kernel, co.file);
  const KernelInputs in = check_input_flags(co, ro.in, kernels, target.op);
  const ParamValues& params = in.params;
  if (ro.repeat < 0)
    throw UserError("error: --repeat must be at least 0");

  // `--device a,b` runs (and checks, and times) every kernel on each device in turn.
  const std::vector<std::string> device_names = device_list(co.device);
  const bool several = device_names.size() > 1;
  if (several && !co.device_plugin.empty())
    throw UserError("error: --device-plugin loads one device; --device must then name one");
  auto cache = std::make_shared<KernelCache>(KernelCache::default_dir());
  std::vector<Session> sessions;
  for (const std::string& name : device_names) {
    sessions.emplace_back(open_device(name, device_options(co)), cache);
    sessions.back().set_schedule_lookup(tuning_database_lookup(TuningDatabase::default_path()));
  }
  std::optional<Session> reference;
  if (ro.check)
    reference.emplace(open_device("sim"), cache);

  if (ro.report_warm && !ro.report && ro.report_json.empty())
    throw UserError("error: --report-warm needs --report or --report-json");
  nlohmann::json json_reports = nlohmann::json::array();
  bool all_ok = true;
  for (const Kernel* k : kernels) {
    if (co.kernel.empty())
      std::cout << "kernel " << k->name << "\n";
    const KernelCall call = prepare_call(*k, in);
    const ShapeBindings& b = call.bindings;
    const std::map<std::string, Tensor>& inputs = call.inputs;

    std::vector<std::string> order;
    for (const TensorDecl* out : k->outputs())
      order.push_back(out->name);
    std::optional<RunResult> ref;
    for (Session& session : sessions) {
      if (several)
        std::cout << "device " << session.device().name() << "\n";
      auto compiled = session.compile(*k, b);
      RunResult result = session.run(*compiled, inputs, params, ro.repeat);
      if (!ro.output_dir.empty()) {
        // With several devices each writes into DIR/<device>/.
        const std::filesystem::path dir =
            several ? std::filesystem::path(ro.output_dir) / session.device().name()
                    : std::filesystem::path(ro.output_dir);
        std::error_code ec;
        std::filesystem::create_directories(dir, ec);
        if (ec)
          throw UserError(fmt::format("error: --output-dir {}: {}", dir.string(), ec.message()));
        for (const std::string& name : order) {
          const std::string path = (dir / (name + ".npy")).string();
          write_npy(path, result.outputs.at(name));
          std::cout << fmt::format("output: {} {}{} -> {}\n", name,
                                   dtype_name(result.outputs.at(name).dtype),
                                   shape_string(result.outputs.at(name).shape), path);
        }
      }
      if (reference) {
        if (!ref)
          // The plain default lowering on sim: a reference independent of the schedule.
          ref = reference->run(*reference->compile(*k, b, Schedule{}), inputs, params, 0);
        const CheckReport report =
            compare_outputs(order, result.outputs, ref->outputs, longest_reduction_extent(*k, b));
        std::cout << report.message() << "\n";
        all_ok &= report.ok();
      }
      print_timing(result);
      if (ro.report || !ro.report_json.empty()) {
        const sim::KernelReport rep =
            model_kernel(session, *compiled, inputs, params, ro.report_warm);
        if (ro.report)
          std::cout << sim::format_report(rep);
        nlohmann::json j = sim::report_json(rep);
        j["shapes"] = b;
        j["device"] = session.device().name();
        j["hcd"] = rep.device; // the chip modelled
        if (result.timing)
          j["measured_median_s"] = result.timing->median_ms * 1e-3;
        json_reports.push_back(std::move(j));
      }
      std::cout.flush();
    }
  }
  if (!ro.report_json.empty()) {
    std::ofstream out(ro.report_json);
    out << nlohmann::json{{"device", co.device}, {"kernels", json_reports}}.dump(2) << "\n";
    if (!out)
      throw UserError(
          fmt::format("error: --report-json {}: cannot write the file", ro.report_json));
  }
  return all_ok ? 0 : 1;
}

CommandAction setup_run(CLI::App& cmd) {
  auto co = std::make_shared<CommonOptions>();
  auto ro = std::make_shared<RunOptions>();
  add_common(&cmd, *co);
  cmd.get_option("--device")
      ->description(
          "device name, as `unitile devices` lists them; a list (cpu,opencl) runs on each in turn");
  add_input_flags(cmd, ro->in);
  cmd.add_option("--output-dir", ro->output_dir,
                 "write each output as DIR/<name>.npy (DIR/<device>/<name>.npy with several devices)");
  add_op_target_options(&cmd, ro->op);
  cmd.add_flag("--check", ro->check, "also run on sim and compare every output");
  cmd.add_option("--repeat", ro->repeat, "time N device runs after one warm-up (median and min)");
  cmd.add_flag("--report", ro->report,
               "print the sim chip model of each launch under the device's HCD: bytes per memory "
               "level, operation counts, estimated time");
  cmd.add_option("--report-json", ro->report_json, "write the chip-model report as JSON to FILE");
  cmd.add_flag("--report-warm", ro->report_warm,
               "model a repeated launch (caches warmed by one run first) instead of a cold one");
  cmd.footer(std::string(kRunFooter) + kExitStatusHelp);
  return [co, ro] { return run_command(*co, *ro); };
}

const CommandRegistration reg{
    {"run", "compile a .ut kernel for a device and run it", 10, setup_run}};

} // namespace
} // namespace unitile::cli
