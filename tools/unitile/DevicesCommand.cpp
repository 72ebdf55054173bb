// `unitile devices`: list the device plugins found and a summary of each one's HCD.
#include "unitile/Command.h"

#include "hcd/Hcd.h"

#include <fmt/core.h>

#include <iostream>

namespace unitile::cli {
namespace {

int devices_command(const std::string& print_hcd) {
  if (!print_hcd.empty()) {
    // A file or a built-in name, as --hcd takes them; host-cpu is detected now.
    const bool is_file = print_hcd.find('/') != std::string::npos || print_hcd.ends_with(".toml");
    std::cout << hcd::to_toml(is_file ? hcd::load_file(print_hcd) : hcd::builtin(print_hcd));
    return 0;
  }
  const auto devices = list_devices();
  if (devices.empty()) {
    std::cout << "no device plugins found; searched:\n";
    for (const std::string& d : plugin_search_path())
      std::cout << "  " << d << "\n";
    return 0;
  }
  for (const DeviceListing& d : devices) {
    std::cout << fmt::format("{}  {}\n", d.name, d.path);
    if (d.error.empty())
      std::cout << "    " << d.summary << "\n";
    else
      std::cout << "    unavailable: " << d.error << "\n";
    if (!d.unavailable.empty())
      std::cout << "    unavailable: " << d.unavailable << "\n";
  }
  // The HCDs compiled in, which --hcd takes by name: sim runs and models any of them (the
  // virtual NPU has no device of its own), the others are the devices' own files. No
  // blank line: scripts read this listing line by line (tests/lit/lit.cfg.py).
  std::cout << "HCDs built in (--hcd NAME; `--device sim --hcd NAME --report` models any of them):\n";
  for (const std::string& name : hcd::builtin_names())
    std::cout << fmt::format("    {}\n", hcd::summary(hcd::builtin(name)));
  return 0;
}

CommandAction setup_devices(CLI::App& cmd) {
  auto print_hcd = std::make_shared<std::string>();
  cmd.add_option("--print-hcd", *print_hcd,
                 "print the HCD of a built-in name (host-cpu: this machine, detected) or a file as "
                 "TOML, and exit; the output is a valid --hcd file");
  cmd.footer(std::string("Search path: $UNITILE_PLUGIN_PATH (colon-separated), then "
                         "<executable dir>/../lib/unitile/plugins, then the install prefix.\n") +
             kExitStatusHelp);
  return [print_hcd] { return devices_command(*print_hcd); };
}

const CommandRegistration reg{
    {"devices", "list the device plugins found and their capabilities", 30, setup_devices}};

} // namespace
} // namespace unitile::cli
