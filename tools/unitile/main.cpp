// The `unitile` command. Each subcommand is a file in this folder that registers itself
// (see Command.h):
//
//   unitile run FILE.ut --device DEV [--kernel K] [--shape M=64,...] [--param P=V]
//               [--input NAME=FILE.npy] [--output-dir DIR] [--check] [--repeat N] [--seed S]
//   unitile compile FILE.ut --device DEV [--kernel K] [--shape ...]
//   unitile devices
//
// Exit status: 0 success, 1 the user's error (message on stderr), 2 an internal error.
#include "unitile/Command.h"

#include "ir/Diagnostic.h"

#include <iostream>

using namespace unitile;

namespace {

int run(int argc, char** argv) {
  CLI::App app{"unitile: compile tensor comprehensions and run them on any device"};
  app.footer(cli::kExitStatusHelp);
  app.require_subcommand(1);

  std::vector<std::pair<CLI::App*, cli::CommandAction>> commands;
  for (const cli::CommandInfo& info : cli::registered_commands()) {
    CLI::App* cmd = app.add_subcommand(info.name, info.description);
    commands.emplace_back(cmd, info.setup(*cmd));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 1;
  }
  for (auto& [cmd, action] : commands)
    if (*cmd)
      return action();
  return 1;
}

} // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const UserError& e) {
    std::cout.flush();
    std::string msg = e.what();
    std::cerr << msg;
    if (msg.empty() || msg.back() != '\n')
      std::cerr << "\n";
    return 1;
  } catch (const InternalError& e) {
    std::cout.flush();
    std::cerr << "unitile: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "unitile: internal error: " << e.what() << "\n";
    return 2;
  }
}
