// `unitile devices`: list the device plugins found and a summary of each one's HCD.
#include "unitile/Command.h"

#include <fmt/core.h>

#include <iostream>

namespace unitile::cli {
namespace {

int devices_command() {
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
  return 0;
}

CommandAction setup_devices(CLI::App& cmd) {
  cmd.footer(std::string("Search path: $UNITILE_PLUGIN_PATH (colon-separated), then "
                         "<executable dir>/../lib/unitile/plugins, then the install prefix.\n") +
             kExitStatusHelp);
  return [] { return devices_command(); };
}

const CommandRegistration reg{
    {"devices", "list the device plugins found and their capabilities", 30, setup_devices}};

} // namespace
} // namespace unitile::cli
