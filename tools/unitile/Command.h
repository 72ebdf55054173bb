// The `unitile` command's pieces: each subcommand lives in its own file and registers
// itself here, so adding one (tune, bench, ops, profile, ...) touches no other file.
#pragma once

#include "ir/Kernel.h"
#include "runtime/DeviceRegistry.h"
#include "schedule/Lower.h"

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace unitile::cli {

inline constexpr const char* kExitStatusHelp =
    "Exit status: 0 success, 1 an error in the input (message on stderr), 2 an internal error.";

// A subcommand sets up its options on `cmd` and returns the action to run once the
// command line has parsed; the action returns the exit status.
using CommandAction = std::function<int()>;
using CommandSetup = std::function<CommandAction(CLI::App& cmd)>;

struct CommandInfo {
  std::string name, description;
  int order = 0; // position in `unitile --help`
  CommandSetup setup;
};

// Registers a subcommand at static-initialisation time:
//   const CommandRegistration reg{{"run", "compile and run", 10, setup_run}};
struct CommandRegistration {
  explicit CommandRegistration(CommandInfo info);
};

const std::vector<CommandInfo>& registered_commands();

// Shared helpers of the subcommands.

// Split "A=1,B=2" lists (possibly repeated) into NAME -> VALUE text, refusing malformed items.
std::vector<std::pair<std::string, std::string>> name_values(const std::vector<std::string>& items,
                                                             const char* flag, bool split_commas);
int64_t parse_int(const std::string& text, const std::string& what);
double parse_number(const std::string& text, const std::string& what);
std::string join(const std::vector<std::string>& v);

// The kernels of `m` a command works on: the one named, or all of them in order.
std::vector<const Kernel*> select_kernels(const Module& m, const std::string& name,
                                          const std::string& file);
// Names a --shape binding may give for `k`: its shape symbols and specialisation params.
std::vector<std::string> bindable_names(const Kernel& k);

// The options every kernel command takes: FILE, --kernel, --device, --device-plugin,
// --hcd, --shape.
struct CommonOptions {
  std::string file, kernel, device, device_plugin, hcd;
  std::vector<std::string> shapes;
};
void add_common(CLI::App* cmd, CommonOptions& o);
DeviceOptions device_options(const CommonOptions& o);
// --shape bindings, each checked against the symbols of `kernels`.
ShapeBindings shape_bindings(const CommonOptions& o, const std::vector<const Kernel*>& kernels);

} // namespace unitile::cli
