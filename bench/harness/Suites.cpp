// The suites: GEMM against OpenBLAS and oneDNN, the bandwidth-bound row ops against the
// STREAM triad (and oneDNN where it has the op), causal attention against OpenBLAS +
// softmax loop + OpenBLAS, and compilation time (cold and cache hit).
#include "harness/Suites.h"

#include "harness/BenchKernels.h"
#include "ir/Diagnostic.h"
#include "runtime/DeviceRegistry.h"
#include "runtime/Inputs.h"
#include "runtime/KernelCache.h"

#include <fmt/core.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <numeric>

namespace unitile::bench {

namespace {

using Dims = std::vector<int64_t>;

const std::vector<SuiteInfo> kSuites = {
    {"gemm", "MxNxK, or one size for a square GEMM", {"f32", "f64", "bf16"}},
    {"triad", "N elements per array (NxD: N*D)", {"f32"}},
    {"softmax", "NxD, or one size for a square matrix", {"f32"}},
    {"layernorm", "NxD, or one size", {"f32"}},
    {"rmsnorm", "NxD, or one size", {"f32"}},
    {"chain", "NxD, or one size", {"f32"}},
    {"attention", "HxNxD (heads, sequence, head dim; batch 1)", {"f32"}},
    {"compile", "one size S (GemmF32 at M=N=K=S)", {"f32"}},
};

constexpr double kNormEps = 1e-5;
constexpr double kTriadScale = 3.0;

// The shapes of the targets, and the --quick stand-ins.
std::vector<Dims> default_shapes(const std::string& suite, bool quick) {
  if (suite == "gemm") {
    if (quick) return {{64, 64, 64}, {48, 40, 24}};
    return {{256, 256, 256},   {512, 512, 512},    {1024, 1024, 1024}, {2048, 2048, 2048},
            {4096, 4096, 4096}, {2048, 768, 768},  {2048, 3072, 768},  {2048, 768, 3072},
            {128, 50257, 768}};
  }
  if (suite == "attention") return quick ? std::vector<Dims>{{2, 32, 16}} : std::vector<Dims>{{12, 1024, 64}};
  if (suite == "compile") return quick ? std::vector<Dims>{{32}} : std::vector<Dims>{{128}};
  if (suite == "triad") return quick ? std::vector<Dims>{{64 * 256}} : std::vector<Dims>{{4096 * 4096}};
  return quick ? std::vector<Dims>{{64, 256}} : std::vector<Dims>{{4096, 4096}};
}

// "2048x768x768" -> {2048, 768, 768}; one size fills `rank` dims when `square` allows.
Dims parse_shape(const std::string& text, size_t rank, bool square, const std::string& suite,
                 const std::string& form) {
  Dims dims;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find('x', start), text.size());
    const std::string part = text.substr(start, end - start);
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (part.empty() || used != part.size() || v <= 0)
      throw UserError(fmt::format("error: --shape {}: '{}' is not a positive size ({} takes {})", text,
                                  part, suite, form));
    dims.push_back(v);
    start = end + 1;
  }
  if (dims.size() == 1 && square) dims.assign(rank, dims[0]);
  if (dims.size() != rank)
    throw UserError(fmt::format("error: --shape {}: {} takes {}", text, suite, form));
  return dims;
}

size_t shape_rank(const std::string& suite) {
  if (suite == "gemm" || suite == "attention") return 3;
  if (suite == "triad" || suite == "compile") return 1;
  return 2;
}

std::vector<Dims> parse_shapes(const std::string& suite, const std::vector<std::string>& texts) {
  std::string form;
  for (const SuiteInfo& s : kSuites)
    if (s.name == suite) form = s.shape_form;
  std::vector<Dims> out;
  for (const std::string& text : texts) {
    if (suite == "triad") {
      // A row op's NxD names the same array size: N*D elements.
      const Dims d = parse_shape(text, std::count(text.begin(), text.end(), 'x') + 1, false, suite, form);
      out.push_back({std::accumulate(d.begin(), d.end(), int64_t{1}, std::multiplies<>())});
      continue;
    }
    out.push_back(parse_shape(text, shape_rank(suite), shape_rank(suite) > 1, suite, form));
  }
  return out;
}

std::vector<Dims> shapes_for(const BenchRunner& runner, const std::string& suite) {
  const auto& opts = runner.options();
  if (opts.shapes.empty()) return default_shapes(suite, opts.quick);
  return parse_shapes(suite, opts.shapes);
}

std::string named(const std::vector<std::string>& names, const Dims& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += fmt::format("{}{}={}", i ? "," : "", names[i], dims[i]);
  return s;
}

void run_gemm(BenchRunner& runner) {
  const std::string dtype = runner.options().dtype;
  const std::string kernel = dtype == "f32" ? "GemmF32" : dtype == "f64" ? "GemmF64" : "GemmBF16";
  for (const Dims& d : shapes_for(runner, "gemm")) {
    BenchCase c;
    c.op = "gemm";
    c.dtype = dtype;
    c.shape = named({"M", "N", "K"}, d);
    c.kernel = &bench_kernel("gemm.ut", kernel);
    c.bindings = {{"M", d[0]}, {"N", d[1]}, {"K", d[2]}};
    c.inputs = {"A", "B"};
    c.output = "C";
    c.dims = d;
    // The `unitile run --check` tolerance: a sum of K products carries ~sqrt(K) roundings.
    c.tolerance = tolerance_for(*parse_dtype(dtype), d[2]);
    c.baselines.push_back({"openblas", "openblas", "gemm", {}, false});
    if (dtype != "f64") c.baselines.push_back({"onednn", "onednn", "gemm", {}, false});
    runner.run_case(c);
  }
}

// The triad for arrays of `elements` f32: Unitile's Triad kernel against the plain loop
// (the loop's bandwidth is what the row ops are measured against).
void run_triad_for(BenchRunner& runner, int64_t elements) {
  BenchCase c;
  c.op = "triad";
  c.dtype = "f32";
  c.shape = named({"N"}, {elements});
  c.kernel = &bench_kernel("rows.ut", "Triad");
  c.bindings = {{"N", elements}};
  c.params = {{"s", kTriadScale}};
  c.inputs = {"b", "c"};
  c.output = "a";
  c.dims = {elements};
  c.bytes = 3.0 * 4 * static_cast<double>(elements);
  c.tolerance = {1e-6, 1e-6};
  c.baselines.push_back({"loops", "loops", "triad", {kTriadScale}, false});
  runner.run_case(c);
}

void run_row_op(BenchRunner& runner, const std::string& suite) {
  struct RowOp {
    const char* kernel;
    std::vector<std::string> inputs;
    double arrays; // N x D arrays read or written once
    double vectors; // D-long vectors read once
    bool has_eps;
    const char* onednn; // oneDNN op of the same computation, or nullptr
    Tolerance tolerance;
  };
  static const std::map<std::string, RowOp> ops = {
      {"softmax", {"Softmax", {"X"}, 2, 0, false, "softmax", {1e-6, 1e-4}}},
      {"layernorm", {"LayerNorm", {"X", "gamma", "beta"}, 2, 2, true, "layernorm", {1e-5, 1e-4}}},
      {"rmsnorm", {"RmsNorm", {"X", "gamma"}, 2, 1, true, nullptr, {1e-5, 1e-4}}},
      {"chain", {"Chain", {"A", "B", "C"}, 4, 0, false, nullptr, {1e-6, 1e-6}}},
  };
  const RowOp& op = ops.at(suite);
  for (const Dims& d : shapes_for(runner, suite)) {
    BenchCase c;
    c.op = suite;
    c.dtype = "f32";
    c.shape = named({"N", "D"}, d);
    c.kernel = &bench_kernel("rows.ut", op.kernel);
    c.bindings = {{"N", d[0]}, {"D", d[1]}};
    std::vector<double> params;
    if (op.has_eps) {
      c.params = {{"eps", kNormEps}};
      params = {kNormEps};
    }
    c.inputs = op.inputs;
    c.output = "Y";
    c.dims = d;
    c.bytes = 4 * (op.arrays * static_cast<double>(d[0] * d[1]) + op.vectors * static_cast<double>(d[1]));
    c.tolerance = op.tolerance;
    c.baselines.push_back({"triad", "loops", suite, params, true});
    if (op.onednn) c.baselines.push_back({"onednn", "onednn", op.onednn, params, false});
    runner.run_case(c);
  }
}

void run_attention(BenchRunner& runner) {
  for (const Dims& d : shapes_for(runner, "attention")) {
    BenchCase c;
    c.op = "attention";
    c.dtype = "f32";
    c.shape = named({"H", "N", "D"}, d);
    c.kernel = &bench_kernel("attention.ut", "CausalAttention");
    c.bindings = {{"H", d[0]}, {"N", d[1]}, {"D", d[2]}};
    c.inputs = {"Q", "K", "V"};
    c.output = "O";
    c.dims = d;
    c.tolerance = {1e-5, 1e-4};
    c.baselines.push_back({"openblas", "openblas", "causal_attention", {}, false});
    runner.run_case(c);
  }
}

// A fresh empty directory under the system temp dir, removed on destruction.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "unitile-bench-XXXXXX").string();
    UT_INTERNAL_ASSERT(mkdtemp(tmpl.data()) != nullptr, "cannot create a temporary directory");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// Compilation time of GemmF32: cold (empty cache directory: lower, generate, run the
// device compiler, load) and a cache hit (a new session and cache object on the same
// directory, as a new process would see it: lower, generate, read the entry, load).
void run_compile(BenchRunner& runner) {
  const Kernel& k = bench_kernel("gemm.ut", "GemmF32");
  const int repeat = std::max(runner.options().repeat, 1);
  for (const Dims& d : shapes_for(runner, "compile")) {
    const ShapeBindings b = {{"M", d[0]}, {"N", d[0]}, {"K", d[0]}};
    const std::string shape = named({"M", "N", "K"}, {d[0], d[0], d[0]});
    std::vector<double> cold, hit;
    std::string failure;
    auto quiet = [](const std::string&) {};
    for (int r = 0; r < repeat && failure.empty(); ++r) {
      TempDir dir;
      using Clock = std::chrono::steady_clock;
      {
        auto cache = std::make_shared<KernelCache>(dir.path, quiet);
        Session s(open_device("cpu"), cache);
        const auto start = Clock::now();
        s.compile(k, b);
        cold.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
        if (cache->stats().compiles != 1) failure = "the cold compile did not run the compiler";
      }
      auto cache = std::make_shared<KernelCache>(dir.path, quiet);
      Session s(open_device("cpu"), cache);
      const auto start = Clock::now();
      auto ck = s.compile(k, b);
      hit.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
      if (cache->stats().disk_hits != 1 || cache->stats().compiles != 0)
        failure = "the second compile was not a cache hit";
      if (r == 0 && failure.empty()) {
        // The kernel loaded from the cache must compute the right thing: check it on sim.
        Session sim(open_device("sim"), cache);
        const auto inputs = complete_inputs(k, b, {}, runner.options().seed);
        const RunResult got = s.run(*ck, inputs, {}, 0);
        const RunResult ref = sim.run(*sim.compile(k, b), inputs, {}, 0);
        const CheckReport report = compare_outputs({"C"}, got.outputs, ref.outputs, d[0]);
        if (!report.ok()) failure = "the cached kernel's result is wrong: " + report.message();
      }
    }
    for (const auto& [op, samples, target] :
         {std::tuple{"compile-cold", &cold, 1000.0}, std::tuple{"compile-hit", &hit, 5.0}}) {
      BenchRecord r;
      r.op = op;
      r.shape = shape;
      r.dtype = "f32";
      r.threads = runner.options().threads;
      r.baseline = "target";
      r.baseline_ms = target;
      r.note = fmt::format("baseline_ms is issue 3's target; checked against sim");
      r.tolerance = tolerance_text(tolerance_for(DType::F32, d[0]));
      if (!failure.empty()) {
        r.status = RecordStatus::Failed;
        r.note = failure;
      } else {
        r.unitile_ms = median(*samples);
        r.runs = static_cast<int>(samples->size());
      }
      runner.add_record(std::move(r));
    }
  }
}

} // namespace

const std::vector<SuiteInfo>& suites() { return kSuites; }

void check_shapes(const std::vector<std::string>& names, const std::vector<std::string>& shapes) {
  for (const std::string& name : names) parse_shapes(name, shapes);
}

void run_suite(BenchRunner& runner, const std::string& name) {
  if (name == "gemm") return run_gemm(runner);
  if (name == "attention") return run_attention(runner);
  if (name == "compile") return run_compile(runner);
  if (name == "triad") {
    for (const Dims& d : shapes_for(runner, "triad")) run_triad_for(runner, d[0]);
    return;
  }
  run_row_op(runner, name);
}

} // namespace unitile::bench
