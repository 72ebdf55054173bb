// `unitile bench`: run Unitile's kernels and measurement baselines (OpenBLAS, oneDNN,
// plain loops) in one process on the same data, print a table and write JSON records.
// The machinery is in bench/harness; the baselines are libraries it dlopens.
#include "unitile/Command.h"

#include "harness/BenchRunner.h"
#include "harness/Suites.h"
#include "ir/Diagnostic.h"
#include "profile/ChromeTrace.h"
#include "profile/HtmlReport.h"
#include "profile/OutputFile.h"
#include "profile/Profiler.h"
#include "tune/TunedLookup.h"
#include "tune/TuningDatabase.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <iostream>

namespace unitile::cli {
namespace {

constexpr const char* kBenchFooter =
    "Each case checks Unitile's output against the baseline's before timing; a disagreement is\n"
    "a `failed` record and is never timed. Times are medians of --repeat runs after a warm-up.\n"
    "ratio = baseline_ms / unitile_ms: above 1 means Unitile is faster. Bandwidth ops (softmax,\n"
    "layernorm, rmsnorm, chain) also get a `triad` record: baseline_ms is the time their bytes\n"
    "take at the STREAM-triad bandwidth measured in the same run, so ratio is the fraction of\n"
    "triad bandwidth. compile-cold/compile-hit compare with issue 3's targets (1 s, 5 ms).\n"
    "Baselines are loaded from $UNITILE_BASELINE_DIR (default: lib/unitile/baselines beside\n"
    "bin/); a missing one is reported as unavailable. OMP_WAIT_POLICY defaults to passive.\n"
    "Unitile's kernels get the tuning database's best record for their shape where one exists,\n"
    "as in compile and run (records are per shape and HCD, whose units follow the thread count:\n"
    "tune with UNITILE_NUM_THREADS set as bench will run); --no-tuned: the\n"
    "auto-scheduler only. The status says `ok (tuned schedule)`, the JSON's `schedule` field\n"
    "where each schedule came from.\n"
    "Exit status: 0 every case ran, was unavailable or was skipped; 1 a wrong result or a bad\n"
    "option; 2 an internal error.\n";

struct BenchArgs {
  std::vector<std::string> ops, shapes;
  std::string dtype = "f32", threads, json;
  int repeat = 5;
  bool quick = false;
  bool library_ops = false; // --ops: the operator library against PyTorch
  double max_run_s = 30;
  uint64_t seed = 0;
  bool profile = false;
  bool no_tuned = false;
  bool huge_pages = false;
  std::string trace, html;
};

int cpus_available() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(CPU_COUNT(&set), 1);
  return 1;
}

// --threads "1,all" -> {1, CPUs}; default: UNITILE_NUM_THREADS when set, else every CPU.
std::vector<int> thread_counts(const std::string& text) {
  std::string spec = text;
  if (spec.empty()) {
    const char* env = std::getenv("UNITILE_NUM_THREADS");
    spec = env && *env ? env : "all";
  }
  std::vector<int> out;
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t end = std::min(spec.find(',', start), spec.size());
    const std::string item = spec.substr(start, end - start);
    const int n = item == "all" ? cpus_available()
                                : static_cast<int>(parse_int(item, "--threads (or UNITILE_NUM_THREADS)"));
    if (n < 1 || n > 4096)
      throw UserError(fmt::format("error: --threads: '{}' must be 'all' or 1..4096", item));
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
    start = end + 1;
  }
  return out;
}

std::vector<std::string> split_list(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const std::string& item : items) {
    size_t start = 0;
    while (start <= item.size()) {
      const size_t end = std::min(item.find(',', start), item.size());
      if (end > start) out.push_back(item.substr(start, end - start));
      start = end + 1;
    }
  }
  return out;
}

// The suites to run: those named (each must support the dtype), else every suite that does.
std::vector<std::string> selected_suites(const BenchArgs& a) {
  std::vector<std::string> names = split_list(a.ops);
  std::vector<std::string> out;
  const bool all = names.empty() || std::find(names.begin(), names.end(), "all") != names.end();
  for (const std::string& n : names) {
    if (n == "all") continue;
    const auto& s = bench::suites();
    auto it = std::find_if(s.begin(), s.end(), [&](const bench::SuiteInfo& i) { return i.name == n; });
    if (it == s.end()) {
      std::vector<std::string> known;
      for (const auto& i : s) known.push_back(i.name);
      throw UserError(fmt::format("error: --op {}: no such benchmark (known: {}, all)", n, join(known)));
    }
    if (std::find(it->dtypes.begin(), it->dtypes.end(), a.dtype) == it->dtypes.end())
      throw UserError(fmt::format("error: --op {} --dtype {}: {} runs only {}", n, a.dtype, n, join(it->dtypes)));
  }
  for (const bench::SuiteInfo& s : bench::suites()) {
    const bool named = std::find(names.begin(), names.end(), s.name) != names.end();
    const bool has_dtype = std::find(s.dtypes.begin(), s.dtypes.end(), a.dtype) != s.dtypes.end();
    if ((named || all) && has_dtype) out.push_back(s.name);
  }
  if (out.empty()) throw UserError(fmt::format("error: no benchmark runs --dtype {}", a.dtype));
  return out;
}

// `--ops` runs bench/ops/bench_ops.py (PyTorch is a Python library, so its side of the
// comparison lives in Python): the installed copy beside bin/, else the source tree's.
int bench_library_ops(const BenchArgs& a) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> scripts = {exe.parent_path().parent_path() / "share" / "unitile" / "bench" /
                                       "bench_ops.py",
                                   fs::path(UNITILE_SOURCE_DIR) / "bench" / "ops" / "bench_ops.py"};
  fs::path script;
  for (const fs::path& s : scripts)
    if (fs::exists(s, ec)) {
      script = s;
      break;
    }
  if (script.empty())
    throw UserError(fmt::format("error: --ops: bench_ops.py not found (looked in {} and {})",
                                scripts[0].string(), scripts[1].string()));
  // The interpreter must see NumPy and PyTorch: $UNITILE_PYTHON, else the source tree's
  // venv (scripts/setup.sh makes it from Debian's python3), else Debian's python3.
  std::string python = "/usr/bin/python3";
  if (const char* env = std::getenv("UNITILE_PYTHON"); env && *env)
    python = env;
  else if (fs::exists(fs::path(UNITILE_SOURCE_DIR) / ".venv" / "bin" / "python", ec))
    python = (fs::path(UNITILE_SOURCE_DIR) / ".venv" / "bin" / "python").string();
  const std::vector<int> threads = thread_counts(a.threads);
  std::vector<std::string> args = {python, script.string(), "--unitile", exe.string(),
                                   "--threads", std::to_string(threads.front()), "--repeat",
                                   std::to_string(a.repeat)};
  if (threads.size() > 1)
    throw UserError("error: --ops takes one thread count per run");
  if (!a.ops.empty())
    args.insert(args.end(), {"--ops", join(split_list(a.ops))});
  if (a.quick)
    args.push_back("--quick");
  if (!a.json.empty())
    args.insert(args.end(), {"--json", a.json});
  for (std::string& s : args)
    s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
  std::vector<char*> argv;
  for (std::string& s : args)
    argv.push_back(s.data());
  argv.push_back(nullptr);
  std::cout.flush();
  execv(argv[0], argv.data());
  throw UserError(fmt::format("error: --ops: cannot run {}: {}", python, std::strerror(errno)));
}

int bench_command(const BenchArgs& a) {
  if (a.library_ops && a.huge_pages)
    throw UserError("error: --huge-pages is for the kernel benchmarks, not --ops: PyTorch's tensors would stay on "
                    "ordinary pages while Unitile's moved");
  if (a.library_ops)
    return bench_library_ops(a);
  if (a.repeat < 1) throw UserError("error: --repeat must be at least 1");
  if (!(a.max_run_s > 0)) throw UserError("error: --max-run-s must be positive");
  if (a.dtype != "f32" && a.dtype != "f64" && a.dtype != "bf16")
    throw UserError(fmt::format("error: --dtype {}: bench runs f32, f64 or bf16", a.dtype));
  const std::vector<std::string> names = selected_suites(a);
  const std::vector<int> threads = thread_counts(a.threads);
  bench::check_shapes(names, split_list(a.shapes));
  const bool profiling = a.profile || !a.trace.empty() || !a.html.empty();
  if (!a.trace.empty()) profile::check_writable(a.trace, "--trace");
  if (!a.html.empty()) profile::check_writable(a.html, "--html");
  profile::Profiler profiler;
  std::ofstream json_file;
  if (!a.json.empty()) {
    json_file.open(a.json);
    if (!json_file) throw UserError(fmt::format("error: --json {}: cannot write the file", a.json));
  }

  // Idle OpenMP threads (the loops, oneDNN, the attention baseline's softmax) sleep at
  // once instead of spinning, so they do not steal the cores from OpenBLAS's threads
  // inside one baseline call. libgomp reads this when the first baseline is dlopened.
  if (!std::getenv("OMP_WAIT_POLICY")) setenv("OMP_WAIT_POLICY", "passive", 1);
  std::cerr << fmt::format("bench: OMP_WAIT_POLICY={}\n", std::getenv("OMP_WAIT_POLICY"));
  // The cpu device reads this at each large allocation; the baselines get its buffers.
  if (a.huge_pages) setenv("UNITILE_HUGE_PAGES", "1", 1);
  const char* huge_env = std::getenv("UNITILE_HUGE_PAGES");
  const bool huge_pages = huge_env && std::string(huge_env) == "1";
  std::cerr << fmt::format("bench: buffers of 2 MiB or more on {} pages, both sides\n",
                           huge_pages ? "2 MiB (transparent huge)" : "ordinary");

  std::vector<bench::BenchRecord> records;
  for (int t : threads) {
    // Unitile's cpu device reads UNITILE_NUM_THREADS at every launch.
    setenv("UNITILE_NUM_THREADS", std::to_string(t).c_str(), 1);
    bench::BenchOptions o;
    o.shapes = split_list(a.shapes);
    o.dtype = a.dtype;
    o.threads = t;
    o.repeat = a.repeat;
    o.quick = a.quick;
    o.max_run_s = a.max_run_s;
    o.seed = a.seed;
    o.huge_pages = huge_pages;
    if (profiling) o.profiler = &profiler;
    // Like every other compile, the best record of the tuning database where one exists.
    if (!a.no_tuned) o.schedule_lookup = tuning_database_lookup(TuningDatabase::default_path());
    std::cerr << fmt::format("bench: {} thread(s): {}\n", t, join(names));
    bench::BenchRunner runner(o, std::cerr);
    for (const std::string& n : names) bench::run_suite(runner, n);
    records.insert(records.end(), runner.records().begin(), runner.records().end());
  }

  bench::print_report(std::cout, records);
  if (profiling) {
    std::cout << "\nprofile of the Unitile kernels (--repeat runs each, after timing):\n"
              << profiler.table() << "\n"
              << profiler.timeline();
    profile::StagedOutputs outputs;
    if (!a.trace.empty())
      outputs.add(a.trace, profile::chrome_trace(profiler.devices(), profiler.events()).dump(1) + "\n",
                  "--trace");
    if (!a.html.empty())
      outputs.add(a.html, profile::html_report(profiler.devices(), profiler.events()), "--html");
    outputs.commit();
    if (!a.trace.empty()) std::cout << "trace: " << a.trace << "\n";
    if (!a.html.empty()) std::cout << "html: " << a.html << "\n";
  }
  if (!a.json.empty()) {
    nlohmann::json list = nlohmann::json::array();
    for (const bench::BenchRecord& r : records) list.push_back(bench::to_json(r));
    json_file << list.dump(2) << "\n";
    if (!json_file.flush()) throw UserError(fmt::format("error: --json {}: write failed", a.json));
    std::cout << fmt::format("wrote {} records to {}\n", records.size(), a.json);
  }
  const bool any_failed = std::any_of(records.begin(), records.end(), [](const bench::BenchRecord& r) {
    return r.status == bench::RecordStatus::Failed;
  });
  return any_failed ? 1 : 0;
}

CommandAction setup_bench(CLI::App& cmd) {
  auto a = std::make_shared<BenchArgs>();
  std::string ops_help = "benchmarks to run, comma-separated or repeated (default all):";
  for (const bench::SuiteInfo& s : bench::suites()) ops_help += fmt::format("\n  {}: --shape {}", s.name, s.shape_form);
  cmd.add_option("--op", a->ops, ops_help)->allow_extra_args(false);
  cmd.add_option("--shape", a->shapes, "shapes instead of the issue-3 defaults, e.g. 512,2048x768x768")
      ->allow_extra_args(false);
  cmd.add_option("--dtype", a->dtype, "f32 (default), f64 or bf16 (gemm only)");
  cmd.add_option("--threads", a->threads,
                 "thread counts, e.g. 1,all (default $UNITILE_NUM_THREADS, else all CPUs); sets "
                 "Unitile's pool and the baselines' threads");
  cmd.add_option("--repeat", a->repeat, "timed runs per side after a warm-up (default 5); medians");
  cmd.add_flag("--ops", a->library_ops,
               "sweep the operator library against PyTorch CPU instead (bench/ops/bench_ops.py; "
               "--op then names library ops)");
  cmd.add_flag("--quick", a->quick, "small default shapes (seconds, for a smoke test)");
  cmd.add_option("--max-run-s", a->max_run_s,
                 "do not time a Unitile kernel whose first run takes longer (default 30)");
  cmd.add_option("--json", a->json, "write the records as one JSON list to FILE");
  cmd.add_option("--seed", a->seed, "seed of the random inputs (default 0)");
  cmd.add_flag("--no-tuned", a->no_tuned,
               "ignore the tuning database ($UNITILE_TUNING_DB, else tuning.sqlite in the kernel cache): "
               "the auto-scheduler's schedules only");
  cmd.add_flag("--huge-pages", a->huge_pages,
               "put buffers of 2 MiB or more, Unitile's and the baselines' alike, on transparent huge pages "
               "(sets UNITILE_HUGE_PAGES=1; off by default)");
  cmd.add_flag("--profile", a->profile,
               "also run each Unitile kernel --repeat times under the profiler (after timing it) and "
               "print its per-kernel table and timeline");
  cmd.add_option("--trace", a->trace, "with the profile: write a Chrome Trace Event JSON file (implies --profile)");
  cmd.add_option("--html", a->html, "with the profile: write the HTML report (implies --profile)");
  cmd.footer(kBenchFooter);
  return [a] { return bench_command(*a); };
}

const CommandRegistration reg{
    {"bench", "measure Unitile's kernels against OpenBLAS, oneDNN and STREAM triad", 40, setup_bench}};

} // namespace
} // namespace unitile::cli
