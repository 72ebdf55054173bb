// unitile-opt: runs IR passes on text and prints text, for lit + FileCheck tests.
//   unitile-opt FILE.ut                         parse, verify, print the kernels
//   unitile-opt FILE.ut --pass=lower --shape M=4,N=8 [--kernel NAME]
//                                               print the Loop IR of the default schedule
//   unitile-opt FILE.ut --pass=lower --emit=c   print generated source for a dialect
//   unitile-opt FILE.loop --loop                parse, verify and print Loop IR
//   unitile-opt FILE.ut --pass=schedule --shape ... apply the kernel's `schedule { }` block
//                                               (or --schedule TEXT) and print the Loop IR
//   unitile-opt FILE.ut --pass=auto --shape ...  print the auto-scheduler's schedule, its
//                                               reasons, and the Loop IR it gives
//   unitile-opt FILE.loop --loop --emit=cuda --hcd nvidia-h100
//                                               print generated source for a Loop IR program
#include "codegen/Codegen.h"
#include "hcd/Hcd.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "schedule/ApplySchedule.h"
#include "schedule/AutoSchedule.h"
#include "schedule/Lower.h"
#include "schedule/SimplifyIndices.h"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <fstream>
#include <iostream>
#include <sstream>

using namespace unitile;

namespace {

SourceFile read_source(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(fmt::format("{}: error: cannot open file", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return SourceFile{path, ss.str()};
}

ShapeBindings parse_bindings(const std::vector<std::string>& items) {
  ShapeBindings b;
  for (const auto& list : items) {
    std::stringstream ss(list);
    std::string kv;
    while (std::getline(ss, kv, ',')) {
      auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0)
        throw UserError(fmt::format("error: --shape expects NAME=VALUE, got '{}'", kv));
      try {
        b[kv.substr(0, eq)] = std::stoll(kv.substr(eq + 1));
      } catch (const std::exception&) {
        throw UserError(fmt::format("error: --shape {}: '{}' is not an integer", kv.substr(0, eq),
                                    kv.substr(eq + 1)));
      }
    }
  }
  return b;
}

int run(int argc, char** argv) {
  CLI::App app{"unitile-opt: run IR passes on text, print text"};
  std::string input, pass, emit, kernel_name, hcd_name = "host-cpu", schedule_text;
  std::vector<std::string> shapes;
  bool loop_input = false;
  app.add_option("input", input, "a .ut (Kernel IR) or, with --loop, a Loop IR file")->required();
  app.add_option("--pass", pass, "pass to run: lower, schedule, auto, simplify-indices (Kernel IR out)")
      ->check(CLI::IsMember({"lower", "schedule", "auto", "simplify-indices"}));
  app.add_option("--schedule", schedule_text, "with --pass=schedule: schedule text instead of the kernel's block");
  app.add_option("--shape", shapes, "shape bindings NAME=VALUE[,NAME=VALUE...]");
  app.add_option("--kernel", kernel_name, "only this kernel");
  app.add_option("--emit", emit, "print generated source in a dialect (c, cuda, opencl, loopir)");
  app.add_option("--hcd", hcd_name, "built-in HCD name or HCD file for --pass/--emit");
  app.add_flag("--loop", loop_input, "the input is Loop IR text");
  CLI11_PARSE(app, argc, argv);

  SourceFile src = read_source(input);
  auto target_hcd = [&] {
    return hcd_name.find('/') != std::string::npos || hcd_name.ends_with(".toml")
               ? hcd::load_file(hcd_name)
               : hcd::builtin(hcd_name);
  };
  if (loop_input) {
    LoopProgram p = parse_loop_program(src);
    verify_input(p, src.name);
    if (emit.empty()) {
      std::cout << to_string(p);
      return 0;
    }
    hcd::Hcd target = target_hcd();
    target.dialect = emit;
    std::cout << generate_source(p, target).code;
    return 0;
  }
  Module m = parse_module(src);
  if (pass.empty() && emit.empty()) {
    for (const auto& k : m.kernels)
      if (kernel_name.empty() || k.name == kernel_name) std::cout << to_string(k) << "\n";
    return 0;
  }
  hcd::Hcd h = target_hcd();
  ShapeBindings given = parse_bindings(shapes);
  for (const auto& k : m.kernels) {
    if (!kernel_name.empty() && k.name != kernel_name) continue;
    ShapeBindings b = bind_shapes(k, {}, given);
    if (pass == "simplify-indices") {
      std::cout << to_string(simplify_indices(k, b)) << "\n";
      continue;
    }
    LoopProgram p;
    if (pass == "schedule") {
      std::optional<Schedule> s = schedule_text.empty()
                                      ? kernel_schedule(k)
                                      : parse_schedule(schedule_text, "--schedule", SourceLoc{1, 1});
      if (!s) throw UserError(fmt::format("{}: error: kernel '{}' has no schedule block", input, k.name));
      p = lower_scheduled(k, b, h, *s);
    } else if (pass == "auto") {
      // As a Session compiles: indices simplified, then the auto-scheduler.
      const Kernel simple = simplify_indices(k, b);
      AutoSchedule a = auto_schedule(simple, b, h);
      for (const std::string& r : a.reasons) std::cout << "# " << r << "\n";
      std::cout << "schedule {\n" << to_text(a.schedule) << "}\n";
      p = lower_scheduled(simple, b, h, a.schedule);
    } else {
      p = lower_to_loops(k, b, h);
    }
    verify(p);
    if (emit.empty()) {
      std::cout << to_string(p);
    } else {
      hcd::Hcd target = h;
      target.dialect = emit;
      std::cout << generate_source(p, target).code;
    }
  }
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const UserError& e) {
    std::cerr << e.what();
    if (std::string_view(e.what()).ends_with("\n") == false) std::cerr << "\n";
    return 1;
  } catch (const InternalError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return 2;
  }
}
