// `unitile compile`: print the source generated for a device.
#include "unitile/Command.h"

#include "runtime/KernelCache.h"
#include "runtime/Session.h"
#include "runtime/SourceFiles.h"

#include <fmt/core.h>

#include <iostream>

namespace unitile::cli {
namespace {

int compile_command(const CommonOptions& co) {
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
  cmd.footer(kExitStatusHelp);
  return [co] { return compile_command(*co); };
}

const CommandRegistration reg{
    {"compile", "print the source generated for a device (unbound symbols default to 64)", 20,
     setup_compile}};

} // namespace
} // namespace unitile::cli
