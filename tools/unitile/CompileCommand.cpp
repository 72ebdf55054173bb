// `unitile compile`: print the source generated for a device, or the device compiler's
// readable output (`--emit ptx` on cuda: whatever the HCD's [toolchain] assembly names).
#include "unitile/Command.h"

#include "OpTarget.h"

#include "runtime/Explain.h"
#include "runtime/KernelCache.h"
#include "runtime/Session.h"
#include "runtime/SourceFiles.h"
#include "tune/TunedLookup.h"
#include "tune/TuningDatabase.h"

#include <fmt/core.h>

#include <optional>

#include <iostream>

namespace unitile::cli {
namespace {

struct CompileOptions {
  CommonOptions common;
  OpTargetOptions op;
  std::string emit = "source";
  bool explain = false;
};

int compile_command(const CompileOptions& o) {
  const CommonOptions& co = o.common;
  // op:NAME: the library op written out for --shape inputs (concrete shapes, so --shape
  // describes inputs there instead of binding symbols); `--emit ut` prints its kernel.
  const bool op_target = is_op_target(co.file);
  if (!op_target && (!o.op.attrs.empty() || !o.op.dtypes.empty() || o.emit == "ut"))
    throw UserError("error: --attr, --dtype and --emit ut apply to op:NAME targets only");
  std::optional<ops::OpInstance> inst;
  if (op_target)
    inst = instantiate_op_target(co.file, co.shapes, {}, o.op);
  if (inst && o.emit == "ut") {
    std::cout << inst->text;
    return 0;
  }
  const Module m = inst ? inst->module : load_module(co.file);
  const std::vector<const Kernel*> kernels = select_kernels(m, co.kernel, co.file);
  const ShapeBindings shapes = op_target ? ShapeBindings{} : shape_bindings(co, kernels);
  auto cache = std::make_shared<KernelCache>(KernelCache::default_dir());
  Session session(open_device(co.device, device_options(co)), cache);
  session.set_schedule_lookup(tuning_database_lookup(TuningDatabase::default_path()));
  const hcd::Hcd& h = session.device().hcd();
  const bool assembly = o.emit != "source";
  if (assembly && (h.assembly.empty() || o.emit != h.assembly))
    throw UserError(fmt::format("error: --emit {}: device {} (HCD '{}') can emit: source{}", o.emit,
                                session.device().name(), h.name,
                                h.assembly.empty() ? "" : ", " + h.assembly));
  for (const Kernel* k : kernels) {
    ShapeBindings given;
    std::vector<std::string> listed;
    for (const std::string& name : bindable_names(*k)) {
      if (auto it = shapes.find(name); it != shapes.end()) {
        given[name] = it->second;
        listed.push_back(fmt::format("{}={}", name, it->second));
      } else {
        given[name] = 64; // compile shows code, so any size will do; say which were made up
        listed.push_back(fmt::format("{}=64 (default)", name));
      }
    }
    const ShapeBindings b = bind_shapes(*k, {}, given);
    // Build without loading: printing code needs the device's compiler, not the device.
    const Session::Built built = session.build(*k, b, assembly ? h.assembly_flags : std::vector<std::string>{});
    if (o.explain) {
      std::cout << schedule_explanation(k->name, built.schedule, built.schedule_origin, built.reasons,
                                        built.program);
      continue;
    }
    std::cout << fmt::format(
        "// unitile compile: kernel {} for device {} ({}), shapes {}; unbound "
        "symbols default to 64\n",
        k->name, session.device().name(),
        assembly ? o.emit : "dialect " + built.source.dialect, join(listed));
    std::string text = assembly ? std::string(built.binary->begin(), built.binary->end())
                                : built.source.code;
    std::cout << text;
    if (!text.empty() && text.back() != '\n')
      std::cout << "\n";
  }
  return 0;
}

CommandAction setup_compile(CLI::App& cmd) {
  auto co = std::make_shared<CompileOptions>();
  add_common(&cmd, co->common);
  cmd.add_option("--emit", co->emit,
                 "what to print: source (the generated code, default) or the device "
                 "compiler's readable output its HCD names ([toolchain] assembly, e.g. ptx); "
                 "ut: an op:NAME target's Kernel IR");
  add_op_target_options(&cmd, co->op);
  cmd.add_flag("--explain", co->explain,
               "print the schedule and why it was chosen (working set per memory level, vector width, "
               "registers, threads) instead of the code");
  cmd.footer(kExitStatusHelp);
  return [co] { return compile_command(*co); };
}

const CommandRegistration reg{
    {"compile", "print the source generated for a device (unbound symbols default to 64)", 20,
     setup_compile}};

} // namespace
} // namespace unitile::cli
