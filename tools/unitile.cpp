// The `unitile` command: run kernels on a device (checked against sim, timed), print
// generated source, and list the devices found.
//
//   unitile run FILE.ut --device DEV [--kernel K] [--shape M=64,...] [--param P=V]
//               [--input NAME=FILE.npy] [--output-dir DIR] [--check] [--repeat N] [--seed S]
//   unitile compile FILE.ut --device DEV [--kernel K] [--shape ...]
//   unitile devices
//
// Exit status: 0 success, 1 the user's error (message on stderr), 2 an internal error.
#include "ir/Diagnostic.h"
#include "runtime/DeviceRegistry.h"
#include "runtime/Inputs.h"
#include "runtime/KernelCache.h"
#include "runtime/Npy.h"
#include "runtime/OutputCheck.h"
#include "runtime/Session.h"
#include "runtime/SourceFiles.h"
#include "schedule/Lower.h"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>

using namespace unitile;

namespace {

constexpr const char* kExitStatusHelp =
    "Exit status: 0 success, 1 an error in the input (message on stderr), 2 an internal error.";

constexpr const char* kRunFooter =
    "Inputs not given with --input are random, seeded by --seed: floats uniform in [-1, 1]\n"
    "(rounded to the dtype), signed integers in [-8, 8], u8 in [0, 8], bools 0/1.\n"
    ".npy dtypes: <f2 f16, <f4 f32, <f8 f64, |i1 i8, <i2 i16, <i4 i32, <i8 i64, |u1 u8,\n"
    "|b1 bool. NumPy has no bf16: bf16 tensors are read and written as <u2 (the raw bits;\n"
    "in NumPy, x.view(np.uint16) of an ml_dtypes bfloat16 array).\n"
    "--check runs the kernel on sim with the same inputs and compares every output:\n"
    "|x - ref| <= atol + rtol*|ref| with f64 1e-9, f32 1e-4 (atol times sqrt of the longest\n"
    "reduction), f16 atol 1e-3 rtol 2e-3, bf16 atol 1e-2 rtol 1.6e-2, integers exact.\n"
    "Compiled kernels are cached in $UNITILE_CACHE_DIR (default ~/.cache/unitile).\n";

// Split "A=1,B=2" lists (possibly repeated) into NAME -> VALUE text, refusing malformed items.
std::vector<std::pair<std::string, std::string>> name_values(const std::vector<std::string>& items,
                                                             const char* flag, bool split_commas) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& list : items) {
    std::vector<std::string> parts;
    if (split_commas) {
      std::stringstream ss(list);
      for (std::string item; std::getline(ss, item, ',');) parts.push_back(item);
    } else {
      parts.push_back(list);
    }
    for (const std::string& kv : parts) {
      const auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size())
        throw UserError(fmt::format("error: {} expects NAME=VALUE, got '{}'", flag, kv));
      out.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
  }
  return out;
}

int64_t parse_int(const std::string& text, const std::string& what) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size())
    throw UserError(fmt::format("error: {}: '{}' is not an integer", what, text));
  return v;
}

double parse_number(const std::string& text, const std::string& what) {
  try {
    size_t used = 0;
    double v = std::stod(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  if (text == "true") return 1;
  if (text == "false") return 0;
  throw UserError(fmt::format("error: {}: '{}' is not a number", what, text));
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "(none)" : s;
}

std::vector<const Kernel*> select_kernels(const Module& m, const std::string& name, const std::string& file) {
  std::vector<const Kernel*> out;
  if (name.empty()) {
    for (const Kernel& k : m.kernels) out.push_back(&k);
    if (out.empty()) throw UserError(fmt::format("{}: error: the file defines no kernel", file));
    return out;
  }
  if (const Kernel* k = m.find(name)) return {k};
  std::vector<std::string> names;
  for (const Kernel& k : m.kernels) names.push_back(k.name);
  throw UserError(fmt::format("{}: error: no kernel named '{}'; the file defines: {}", file, name, join(names)));
}

// Names a --shape binding may give for `k`: its shape symbols and specialisation params.
std::vector<std::string> bindable_names(const Kernel& k) {
  std::vector<std::string> names = k.shape_symbols();
  for (const std::string& p : specialisation_params(k))
    if (std::find(names.begin(), names.end(), p) == names.end()) names.push_back(p);
  return names;
}

struct CommonOptions {
  std::string file, kernel, device, device_plugin, hcd;
  std::vector<std::string> shapes;
};

struct RunOptions {
  std::vector<std::string> params, inputs;
  std::string output_dir;
  bool check = false;
  int repeat = 0;
  uint64_t seed = 0;
};

void add_common(CLI::App* cmd, CommonOptions& o) {
  cmd->add_option("file", o.file, "the .ut file")->required();
  cmd->add_option("--kernel", o.kernel, "only this kernel (default: every kernel in the file, in order)");
  cmd->add_option("--device", o.device, "device name, as `unitile devices` lists them")->required();
  cmd->add_option("--device-plugin", o.device_plugin, "load the device from this plugin file instead of searching");
  cmd->add_option("--hcd", o.hcd, "run under this HCD file instead of the device's own (sim models other chips)");
  cmd->add_option("--shape", o.shapes, "shape bindings NAME=VALUE[,NAME=VALUE...]; may repeat")
      ->allow_extra_args(false);
}

DeviceOptions device_options(const CommonOptions& o) { return {o.device_plugin, o.hcd}; }

ShapeBindings shape_bindings(const CommonOptions& o, const std::vector<const Kernel*>& kernels) {
  std::set<std::string> known;
  for (const Kernel* k : kernels)
    for (const std::string& n : bindable_names(*k)) known.insert(n);
  ShapeBindings b;
  for (const auto& [name, value] : name_values(o.shapes, "--shape", true)) {
    if (!known.count(name))
      throw UserError(fmt::format("error: --shape {}: no kernel run here has a shape symbol '{}' (symbols: {})",
                                  name, name, join({known.begin(), known.end()})));
    b[name] = parse_int(value, "--shape " + name);
  }
  return b;
}

int run_command(const CommonOptions& co, const RunOptions& ro) {
  const Module m = load_module(co.file);
  const std::vector<const Kernel*> kernels = select_kernels(m, co.kernel, co.file);
  const ShapeBindings shapes = shape_bindings(co, kernels);

  std::map<std::string, double> params;
  for (const auto& [name, value] : name_values(ro.params, "--param", true)) {
    bool known = false;
    for (const Kernel* k : kernels) known |= k->find_param(name) != nullptr;
    if (!known) throw UserError(fmt::format("error: --param {}: no kernel run here has a param '{}'", name, name));
    params[name] = parse_number(value, "--param " + name);
  }
  std::map<std::string, std::string> input_files;
  for (const auto& [name, path] : name_values(ro.inputs, "--input", false)) {
    bool known = false;
    for (const Kernel* k : kernels) {
      const TensorDecl* t = k->find_tensor(name);
      known |= t && t->role == TensorRole::Input;
    }
    if (!known) {
      std::vector<std::string> names;
      for (const Kernel* k : kernels)
        for (const TensorDecl* t : k->inputs()) names.push_back(t->name);
      throw UserError(fmt::format("error: --input {}: no kernel run here has an input '{}' (inputs: {})", name,
                                  name, join(names)));
    }
    if (!input_files.emplace(name, path).second)
      throw UserError(fmt::format("error: --input {} is given twice", name));
  }
  if (ro.repeat < 0) throw UserError("error: --repeat must be at least 0");

  auto cache = std::make_shared<KernelCache>(KernelCache::default_dir());
  Session session(open_device(co.device, device_options(co)), cache);
  std::optional<Session> reference;
  if (ro.check) reference.emplace(open_device("sim"), cache);

  bool all_ok = true;
  for (const Kernel* k : kernels) {
    if (co.kernel.empty()) std::cout << "kernel " << k->name << "\n";
    ShapeBindings given;
    const std::vector<std::string> bindable = bindable_names(*k);
    for (const auto& [name, v] : shapes)
      if (std::find(bindable.begin(), bindable.end(), name) != bindable.end()) given[name] = v;
    const std::vector<std::string> spec = specialisation_params(*k);
    for (const std::string& p : spec)
      if (auto it = params.find(p); it != params.end() && !given.count(p))
        given[p] = parse_int(fmt::format("{}", it->second), "--param " + p);

    std::map<std::string, Tensor> loaded;
    std::map<std::string, std::vector<int64_t>> loaded_shapes;
    for (const TensorDecl* in : k->inputs()) {
      auto f = input_files.find(in->name);
      if (f == input_files.end()) continue;
      Tensor t = read_npy(f->second, in->dtype);
      if (t.dtype != in->dtype)
        throw UserError(fmt::format("error: input '{}' ({}): expected dtype {} ('{}'), got {} ('{}')", in->name,
                                    f->second, dtype_name(in->dtype), npy_descr(in->dtype), dtype_name(t.dtype),
                                    npy_descr(t.dtype)));
      if (t.shape.size() != in->shape.size())
        throw UserError(fmt::format("error: input '{}' ({}): expected rank {}, got shape {}", in->name, f->second,
                                    in->shape.size(), shape_string(t.shape)));
      loaded_shapes[in->name] = t.shape;
      loaded.emplace(in->name, std::move(t));
    }
    const ShapeBindings b = bind_shapes(*k, loaded_shapes, given);
    const std::map<std::string, Tensor> inputs = complete_inputs(*k, b, std::move(loaded), ro.seed);

    auto compiled = session.compile(*k, b);
    RunResult result = session.run(*compiled, inputs, params, ro.repeat);

    std::vector<std::string> order;
    for (const TensorDecl* out : k->outputs()) order.push_back(out->name);
    if (!ro.output_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(ro.output_dir, ec);
      if (ec) throw UserError(fmt::format("error: --output-dir {}: {}", ro.output_dir, ec.message()));
      for (const std::string& name : order) {
        const std::string path = (std::filesystem::path(ro.output_dir) / (name + ".npy")).string();
        write_npy(path, result.outputs.at(name));
        std::cout << fmt::format("output: {} {}{} -> {}\n", name, dtype_name(result.outputs.at(name).dtype),
                                 shape_string(result.outputs.at(name).shape), path);
      }
    }
    if (reference) {
      auto ref_compiled = reference->compile(*k, b);
      RunResult ref = reference->run(*ref_compiled, inputs, params, 0);
      const CheckReport report =
          compare_outputs(order, result.outputs, ref.outputs, longest_reduction_extent(*k, b));
      std::cout << report.message() << "\n";
      all_ok &= report.ok();
    }
    if (result.timing) {
      std::cout << fmt::format("timing: runs={} median_ms={:.6g} min_ms={:.6g}\n", result.timing->samples_ms.size(),
                               result.timing->median_ms, result.timing->min_ms);
    }
    std::cout.flush();
  }
  return all_ok ? 0 : 1;
}

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
    std::cout << fmt::format("// unitile compile: kernel {} for device {} (dialect {}), shapes {}; unbound "
                             "symbols default to 64\n",
                             k->name, session.device().name(), compiled->source.dialect, join(listed));
    std::cout << compiled->source.code;
    if (!compiled->source.code.empty() && compiled->source.code.back() != '\n') std::cout << "\n";
  }
  return 0;
}

int devices_command() {
  const auto devices = list_devices();
  if (devices.empty()) {
    std::cout << "no device plugins found; searched:\n";
    for (const std::string& d : plugin_search_path()) std::cout << "  " << d << "\n";
    return 0;
  }
  for (const DeviceListing& d : devices) {
    std::cout << fmt::format("{}  {}\n", d.name, d.path);
    if (d.error.empty())
      std::cout << "    " << d.summary << "\n";
    else
      std::cout << "    unavailable: " << d.error << "\n";
  }
  return 0;
}

int run(int argc, char** argv) {
  CLI::App app{"unitile: compile tensor comprehensions and run them on any device"};
  app.footer(kExitStatusHelp);
  app.require_subcommand(1);

  CommonOptions run_common, compile_common;
  RunOptions run_opts;
  CLI::App* run_cmd = app.add_subcommand("run", "compile a .ut kernel for a device and run it");
  add_common(run_cmd, run_common);
  run_cmd->add_option("--param", run_opts.params, "param values NAME=VALUE; may repeat")->allow_extra_args(false);
  run_cmd->add_option("--input", run_opts.inputs, "read input NAME from a .npy file: NAME=PATH; may repeat")
      ->allow_extra_args(false);
  run_cmd->add_option("--output-dir", run_opts.output_dir, "write each output as DIR/<name>.npy");
  run_cmd->add_flag("--check", run_opts.check, "also run on sim and compare every output");
  run_cmd->add_option("--repeat", run_opts.repeat, "time N device runs after one warm-up (median and min)");
  run_cmd->add_option("--seed", run_opts.seed, "seed of the random inputs (default 0)");
  run_cmd->footer(std::string(kRunFooter) + kExitStatusHelp);

  CLI::App* compile_cmd =
      app.add_subcommand("compile", "print the source generated for a device (unbound symbols default to 64)");
  add_common(compile_cmd, compile_common);
  compile_cmd->footer(kExitStatusHelp);

  CLI::App* devices_cmd = app.add_subcommand("devices", "list the device plugins found and their capabilities");
  devices_cmd->footer(std::string("Search path: $UNITILE_PLUGIN_PATH (colon-separated), then "
                                  "<executable dir>/../lib/unitile/plugins, then the install prefix.\n") +
                      kExitStatusHelp);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 1;
  }
  if (*run_cmd) return run_command(run_common, run_opts);
  if (*compile_cmd) return compile_command(compile_common);
  if (*devices_cmd) return devices_command();
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
    if (msg.empty() || msg.back() != '\n') std::cerr << "\n";
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
