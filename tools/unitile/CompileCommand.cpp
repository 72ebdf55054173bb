// `unitile compile`: print the source generated for a device.
#include "unitile/Command.h"

#include "runtime/KernelCache.h"
#include "runtime/Session.h"
#include "runtime/SourceFiles.h"

#include <fmt/core.h>

#include <iostream>

namespace unitile::cli {
namespace {

// The schedule a kernel was compiled with, and why (the auto-scheduler's reasons).
void print_explanation(const CompiledKernel& ck) {
  std::cout << fmt::format("// schedule of {} ({}):\n", ck.kernel_name, ck.schedule_origin);
  for (const std::string& r : ck.reasons) std::cout << "//   " << r << "\n";
  std::cout << "schedule {\n";
  std::string text = to_text(ck.schedule);
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::cout << "  " << text.substr(start, end - start) << "\n";
    start = end + 1;
  }
  std::cout << "}\n";
  for (size_t n = 0; n < ck.program.funcs.size(); ++n) {
    const LaunchDims& d = ck.launch[n];
    std::cout << fmt::format("// launch {}: grid {}x{}x{}, block {}x{}x{}\n", ck.program.funcs[n].name, d.grid[0],
                             d.grid[1], d.grid[2], d.block[0], d.block[1], d.block[2]);
  }
}

int compile_command(const CommonOptions& co, bool explain) {
  const Module m = load_module(co.file);
  const std::vector<const Kernel*> kernels = select_kernels(m, co.kernel, co.file);
  const ShapeBindings shapes = shape_bindings(co, kernels);
  auto cache = std::make_shared<KernelCache>(KernelCache::default_dir());
  Session session(open_device(co.device, device_options(co)), cache);
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
    auto compiled = session.compile(*k, b);
    if (explain) {
      print_explanation(*compiled);
      continue;
    }
    std::cout << fmt::format(
        "// unitile compile: kernel {} for device {} (dialect {}), shapes {}; unbound "
        "symbols default to 64\n",
        k->name, session.device().name(), compiled->source.dialect, join(listed));
    std::cout << compiled->source.code;
    if (!compiled->source.code.empty() && compiled->source.code.back() != '\n')
      std::cout << "\n";
  }
  return 0;
}

CommandAction setup_compile(CLI::App& cmd) {
  auto co = std::make_shared<CommonOptions>();
  add_common(&cmd, *co);
  auto explain = std::make_shared<bool>(false);
  cmd.add_flag("--explain", *explain,
               "print the schedule and why it was chosen (working set per memory level, vector width, "
               "registers, threads) instead of the code");
  cmd.footer(kExitStatusHelp);
  return [co, explain] { return compile_command(*co, *explain); };
}

const CommandRegistration reg{
    {"compile", "print the source generated for a device (unbound symbols default to 64)", 20,
     setup_compile}};

} // namespace
} // namespace unitile::cli
