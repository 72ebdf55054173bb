// `unitile tune`: measure schedules of each kernel on a device into the tuning database
// (later compiles and runs use the fastest), and move records between machines.
#include "unitile/Command.h"

#include "ir/Diagnostic.h"
#include "runtime/Inputs.h"
#include "runtime/KernelCache.h"
#include "runtime/Session.h"
#include "runtime/SourceFiles.h"
#include "tune/Tuner.h"
#include "tune/TuningDatabase.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

namespace unitile::cli {
namespace {

struct TuneOptions {
  CommonOptions common;
  int trials = 0;
  double budget = 0;
  int repeat = 5;
  uint64_t seed = 0;
  std::vector<std::string> params;
  std::string export_file, import_file;
};

TuningDatabase open_database() {
  auto path = TuningDatabase::default_path();
  if (!path)
    throw UserError(
        "error: no tuning database: set UNITILE_TUNING_DB (or UNITILE_CACHE_DIR or HOME)");
  return TuningDatabase(*path);
}

// Records, one JSON object per line; a file holding one JSON array of them is read too.
std::vector<TuningRecord> read_records(const std::string& file) {
  std::ifstream in(file);
  if (!in)
    throw UserError(fmt::format("error: --import {}: cannot read the file", file));
  std::stringstream all;
  all << in.rdbuf();
  const std::string text = all.str();
  std::vector<TuningRecord> rows;
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '[') {
    nlohmann::json arr;
    try {
      arr = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw UserError(fmt::format("error: --import {}: not JSON ({})", file, e.what()));
    }
    for (size_t n = 0; n < arr.size(); ++n)
      rows.push_back(record_from_json(arr[n].dump(), fmt::format("{}: record {}", file, n + 1)));
    return rows;
  }
  std::istringstream lines(text);
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n)
    if (line.find_first_not_of(" \t\r") != std::string::npos)
      rows.push_back(record_from_json(line, fmt::format("{}:{}", file, n)));
  return rows;
}

int move_records(const TuneOptions& o) {
  TuningDatabase db = open_database();
  if (!o.import_file.empty()) {
    const std::vector<TuningRecord> rows = read_records(o.import_file);
    const size_t added = db.insert_new(rows);
    std::cout << fmt::format("imported {} rows from {} into {} ({} already there)\n", added,
                             o.import_file, db.path().string(), rows.size() - added);
  }
  if (!o.export_file.empty()) {
    const std::vector<TuningRecord> rows = db.rows();
    std::ofstream out(o.export_file);
    for (const TuningRecord& r : rows)
      out << record_to_json(r) << "\n";
    out.close();
    if (!out)
      throw UserError(fmt::format("error: --export {}: cannot write the file", o.export_file));
    std::cout << fmt::format("exported {} rows from {} to {}\n", rows.size(), db.path().string(),
                             o.export_file);
  }
  return 0;
}

int tune_command(const TuneOptions& o) {
  const CommonOptions& co = o.common;
  if (co.file.empty()) {
    if (o.export_file.empty() && o.import_file.empty())
      throw UserError("error: unitile tune needs FILE.ut (or --export / --import)");
    return move_records(o);
  }
  if (!o.export_file.empty() || !o.import_file.empty())
    throw UserError("error: --export and --import move records only; give them without FILE.ut");
  if (co.device.empty())
    throw UserError("error: --device is required to tune");
  if (o.trials < 0)
    throw UserError("error: --trials must be at least 1");
  if (o.budget < 0)
    throw UserError("error: --budget must be a positive number of seconds");
  if (o.repeat < 1)
    throw UserError("error: --repeat must be at least 1");
  unitile::TuneOptions to;
  to.trials = o.trials;
  to.budget_s = o.budget;
  if (to.trials == 0 && to.budget_s == 0)
    to.trials = 20;
  to.repeat = o.repeat;
  to.seed = o.seed;

  const Module m = load_module(co.file);
  const std::vector<const Kernel*> kernels = select_kernels(m, co.kernel, co.file);
  const ShapeBindings shapes = shape_bindings(co, kernels);
  ParamValues params;
  for (const auto& [name, v] : name_values(o.params, "--param", true))
    params[name] = parse_number(v, "--param " + name);

  TuningDatabase db = open_database();
  auto cache = std::make_shared<KernelCache>(KernelCache::default_dir());
  Session session(open_device(co.device, device_options(co)), cache);
  Session sim(open_device("sim"), cache);
  const bool tty = isatty(2);
  for (const Kernel* k : kernels) {
    ShapeBindings given;
    const std::vector<std::string> bindable = bindable_names(*k);
    for (const auto& [name, v] : shapes)
      if (std::find(bindable.begin(), bindable.end(), name) != bindable.end())
        given[name] = v;
    for (const std::string& p : specialisation_params(*k))
      if (auto it = params.find(p); it != params.end() && !given.count(p))
        given[p] = parse_int(fmt::format("{}", it->second), "--param " + p);
    const ShapeBindings b = bind_shapes(*k, {}, given);
    auto progress = [&](const TuneProgress& p) {
      std::string line = fmt::format("tune {}: trial {}{}", k->name, p.trial,
                                     p.trials ? fmt::format("/{}", p.trials) : "");
      if (p.retimed)
        line += fmt::format(", re-timing {}", p.retimed);
      line += p.best_ms ? fmt::format(", best {:.4g} ms", *p.best_ms) : ", no valid schedule yet";
      if (p.last && p.last->status != TrialStatus::Ok)
        line += fmt::format(" (last: {})", trial_status_name(p.last->status));
      line += fmt::format(", {:.1f} s", p.elapsed_s);
      if (tty)
        std::cerr << "\r" << line << "\033[K" << std::flush;
      else
        std::cerr << line << "\n";
    };
    const TuneResult r = tune_kernel(session, sim, db, *k, b, params, to, progress);
    if (tty)
      std::cerr << "\n";
    std::cout << fmt::format("kernel {} shapes {}: {} trials, {} re-timed, {} GEMM site{}, ",
                             k->name, shape_bucket(b), r.trials, r.retimed, r.gemm_sites,
                             r.gemm_sites == 1 ? "" : "s");
    if (r.matrix_sites > 0)
      std::cout << fmt::format("{} matrix-unit site{} on tile registers, ", r.matrix_sites,
                               r.matrix_sites == 1 ? "" : "s");
    if (r.tiled_nests > 0)
      std::cout << fmt::format("{} tiled nest{}, ", r.tiled_nests, r.tiled_nests == 1 ? "" : "s");
    if (r.best)
      std::cout << fmt::format("best median {:.4g} ms over {} measurement{}, recorded in {}\n",
                               r.best->median_ms, r.best->measurements,
                               r.best->measurements == 1 ? "" : "s", db.path().string());
    else
      std::cout << fmt::format("no candidate passed the check (rows recorded in {})\n",
                               db.path().string());
  }
  return 0;
}

CommandAction setup_tune(CLI::App& cmd) {
  auto o = std::make_shared<TuneOptions>();
  add_common(&cmd, o->common);
  cmd.get_option("file")->required(false);
  cmd.get_option("--device")->required(false);
  cmd.add_option("--trials", o->trials,
                 "stop after N candidates (default 20 when --budget is not given)");
  cmd.add_option("--budget", o->budget, "stop after this many seconds per kernel");
  cmd.add_option("--repeat", o->repeat,
                 "timed runs per candidate; the median is recorded (default 5)");
  cmd.add_option("--param", o->params, "param values NAME=VALUE; may repeat")
      ->allow_extra_args(false);
  cmd.add_option("--seed", o->seed, "seed of the random inputs (default 0)");
  cmd.add_option("--export", o->export_file,
                 "write every record of the tuning database to FILE (JSON lines)");
  cmd.add_option("--import", o->import_file,
                 "add the records of FILE (JSON lines or a JSON array) to the database");
  cmd.footer(
      std::string(
          "The database is $UNITILE_TUNING_DB, else <kernel cache dir>/tuning.sqlite. Records are "
          "keyed by kernel structure, exact shape values, dtype and HCD.\n") +
      kExitStatusHelp);
  return [o] { return tune_command(*o); };
}

const CommandRegistration reg{
    {"tune", "measure schedules on a device and record the fastest in the tuning database", 25,
     setup_tune}};

} // namespace
} // namespace unitile::cli
