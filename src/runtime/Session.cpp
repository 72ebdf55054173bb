// Compiling through lowering, codegen and the kernel cache, and running on a device.
#include "runtime/Session.h"

#include "schedule/ApplySchedule.h"
#include "schedule/AutoSchedule.h"

#include "ir/Diagnostic.h"
#include "ir/Verifier.h"
#include "runtime/Inputs.h"
#include "runtime/LaunchLimits.h"
#include "runtime/ProfiledLaunch.h"
#include "schedule/Lower.h"
#include "schedule/SimplifyIndices.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

namespace unitile {

namespace {

// The device buffers of one call: every LoopProgram buffer, inputs copied in.
struct BoundBuffers {
  std::vector<DeviceBuffer> buffers;
  std::vector<ut_arg> args;
};

// The scalar arguments after the buffers: every runtime param, narrowed as declared.
void bind_params(const CompiledKernel& ck, const ParamValues& params, std::vector<ut_arg>& args);

ut_arg buffer_arg(DType dtype, const DeviceBuffer& b) {
  ut_arg a{};
  a.kind = UT_ARG_BUFFER;
  a.dtype = static_cast<uint32_t>(dtype);
  a.value.buffer = b.handle();
  return a;
}

BoundBuffers bind_buffers(const Device& dev, const CompiledKernel& ck,
                          const std::map<std::string, Tensor>& inputs, const ParamValues& params) {
  BoundBuffers bb;
  for (const LoopBuffer& buf : ck.program.buffers) {
    const size_t bytes = shape_numel(buf.shape) * static_cast<size_t>(dtype_bytes(buf.dtype));
    bb.buffers.push_back(dev.alloc(bytes));
    if (buf.role == TensorRole::Input) {
      auto it = inputs.find(buf.name);
      if (it == inputs.end())
        throw UserError(fmt::format("error: kernel {}: no value for input '{}'", ck.kernel_name, buf.name));
      check_input_tensor(buf.name, buf.dtype, buf.shape, it->second);
      dev.copy_in(bb.buffers.back(), it->second.data.data(), bytes);
    }
    bb.args.push_back(buffer_arg(buf.dtype, bb.buffers.back()));
  }
  bind_params(ck, params, bb.args);
  return bb;
}

void bind_params(const CompiledKernel& ck, const ParamValues& params, std::vector<ut_arg>& args) {
  for (const ParamDecl& p : ck.program.params) {
    auto it = params.find(p.name);
    if (it == params.end())
      throw UserError(fmt::format("error: kernel {}: param '{}' ({}) has no value; pass --param {}=VALUE",
                                  ck.kernel_name, p.name, dtype_name(p.dtype), p.name));
    ut_arg a{};
    a.dtype = static_cast<uint32_t>(p.dtype);
    if (is_float(p.dtype)) {
      a.kind = UT_ARG_F64;
      a.value.f64 = it->second;
    } else {
      if (std::trunc(it->second) != it->second)
        throw UserError(fmt::format("error: param '{}' is {} but was given {}", p.name, dtype_name(p.dtype),
                                    it->second));
      a.kind = UT_ARG_I64;
      a.value.i64 = static_cast<int64_t>(it->second);
    }
    args.push_back(a);
  }
}

} // namespace

void Session::launch_all(const CompiledKernel& ck, const std::vector<ut_arg>& args) {
  if (profile::Profiler* profiler = profile::active_profiler(); profiler != nullptr) [[unlikely]] {
    if (!profiling_) profiling_ = std::make_shared<LaunchProfiling>();
    profiling_->launch_all(device_, ck, args, *profiler);
    return;
  }
  for (size_t i = 0; i < ck.entries.size(); ++i)
    device_.launch(ck.entries[i], ck.launch[i], args,
                   fmt::format("{} (func {})", ck.kernel_name, ck.program.funcs[i].name));
}

Session::Session(Device device, std::shared_ptr<KernelCache> cache)
    : device_(std::move(device)), cache_(std::move(cache)) {
  UT_INTERNAL_ASSERT(cache_ != nullptr, "a session needs a kernel cache");
}

std::string Session::compile_options() const {
  std::string opts = device_.hcd().compiler;
  for (const std::string& f : device_.hcd().flags) opts += " " + f;
  return opts;
}

Session::Built Session::build(const Kernel& given, const ShapeBindings& b,
                              const std::vector<std::string>& extra_flags,
                              const std::optional<Schedule>& schedule) {
  const hcd::Hcd& hcd = device_.hcd();
  // Tuning records are keyed by the kernel as written; everything else sees its
  // indices simplified (reshapes' `//` and `%` resolved), which changes no value.
  const Kernel k = simplify_indices(given, b);
  Schedule chosen;
  std::string origin;
  std::vector<std::string> reasons;
  std::optional<LoopProgram> tuned; // the chosen schedule already lowered (tuned, or the auto-scheduler's)
  if (schedule) {
    chosen = *schedule;
    origin = schedule->empty() ? "default" : "given";
  } else if (auto own = kernel_schedule(k)) {
    chosen = *own;
    origin = "kernel";
  } else {
    if (lookup_) {
      if (auto found = lookup_(given, b, hcd)) {
        try {
          tuned = lower_scheduled(k, b, hcd, found->schedule);
          chosen = found->schedule;
          reasons = found->reasons;
          origin = "tuned";
        } catch (const UserError& e) {
          reasons.push_back(fmt::format("the tuned schedule no longer applies ({}); using the auto-scheduler's",
                                        e.what()));
        }
      }
    }
    if (!tuned) {
      AutoSchedule a = auto_schedule(k, b, hcd);
      chosen = a.schedule;
      reasons.insert(reasons.end(), a.reasons.begin(), a.reasons.end());
      origin = "auto";
      if (!chosen.empty() && a.program) tuned = std::move(a.program); // lowered already
    }
  }
  LoopProgram program = tuned             ? std::move(*tuned)
                        : chosen.empty() ? lower_to_loops(k, b, hcd)
                                         : lower_scheduled(k, b, hcd, chosen);
  Built out = build_program(std::move(program), extra_flags);
  out.schedule = std::move(chosen);
  out.schedule_origin = std::move(origin);
  out.reasons = std::move(reasons);
  return out;
}

Session::Built Session::build_program(LoopProgram program,
                                      const std::vector<std::string>& extra_flags) {
  Built out;
  const hcd::Hcd& hcd = device_.hcd();
  out.program = std::move(program);
  verify(out.program);
  for (const LoopFunc& f : out.program.funcs)
    check_launch_limits(out.program.kernel, f, launch_dims(f), hcd);
  out.source = generate_source(out.program, hcd);
  UT_INTERNAL_ASSERT(out.source.entries.size() == out.program.funcs.size(),
                     "codegen gave a different number of entries than funcs");
  std::string options = compile_options();
  for (const std::string& f : extra_flags) options += " " + f;
  out.key = kernel_cache_key({to_string(out.program), out.source.code, out.source.dialect,
                              hcd.hash(), device_.toolchain_version(), options});
  if (auto it = compiled_.find(out.key); it != compiled_.end()) {
    out.binary = it->second.binary;
    return out;
  }
  out.binary = cache_->get_or_compile(out.key, [&] { return device_.compile(out.source.code, options); });
  return out;
}

std::shared_ptr<const CompiledKernel> Session::compile(const Kernel& k, const ShapeBindings& b,
                                                       const std::optional<Schedule>& schedule) {
  return load_built(build(k, b, {}, schedule), k.name, b);
}

std::shared_ptr<const CompiledKernel> Session::compile_program(LoopProgram program) {
  std::string name = program.kernel;
  return load_built(build_program(std::move(program)), name, {});
}

std::shared_ptr<const CompiledKernel> Session::load_built(Built built, const std::string& kernel_name,
                                                          const ShapeBindings& b) {
  if (auto it = compiled_.find(built.key); it != compiled_.end()) return it->second.kernel;

  auto ck = std::make_shared<CompiledKernel>();
  ck->kernel_name = kernel_name;
  ck->bindings = b;
  ck->program = std::move(built.program);
  ck->source = std::move(built.source);
  ck->key = built.key;
  ck->schedule = std::move(built.schedule);
  ck->schedule_origin = std::move(built.schedule_origin);
  ck->reasons = std::move(built.reasons);
  for (size_t i = 0; i < ck->program.funcs.size(); ++i) {
    ck->entries.push_back(device_.load(*built.binary, ck->source.entries[i]));
    ck->launch.push_back(launch_dims(ck->program.funcs[i]));
  }
  compiled_.emplace(ck->key, Compiled{ck, built.binary});
  return ck;
}

RunResult Session::run(const CompiledKernel& ck, const std::map<std::string, Tensor>& inputs,
                       const ParamValues& params, int repeat) {
  BoundBuffers bb = bind_buffers(device_, ck, inputs, params);
  launch_all(ck, bb.args);
  device_.synchronize();

  RunResult result;
  for (size_t i = 0; i < ck.program.buffers.size(); ++i) {
    const LoopBuffer& buf = ck.program.buffers[i];
    if (buf.role != TensorRole::Output) continue;
    Tensor t = Tensor::zeros(buf.dtype, buf.shape);
    device_.copy_out(t.data.data(), bb.buffers[i], t.nbytes());
    result.outputs.emplace(buf.name, std::move(t));
  }
  if (repeat <= 0) return result;

  // The first run above was the warm-up. The timed runs are queued back to back, an
  // event between each two, and the host waits once at the end (as Triton's do_bench
  // does): on an asynchronous device a wait per run would leave it idle between runs
  // and charge each run a cold start. Run r's time is the span between events r and r+1.
  std::vector<DeviceEvent> marks;
  marks.reserve(static_cast<size_t>(repeat) + 1);
  marks.push_back(device_.record_event());
  for (int r = 0; r < repeat; ++r) {
    launch_all(ck, bb.args);
    marks.push_back(device_.record_event());
  }
  device_.synchronize();
  std::vector<double> samples;
  for (size_t r = 0; r + 1 < marks.size(); ++r) samples.push_back(device_.elapsed_ms(marks[r], marks[r + 1]));
  result.timing = summarize_timing(std::move(samples));
  return result;
}

std::map<std::string, DeviceTensor> Session::run_resident(const CompiledKernel& ck,
                                                          const std::map<std::string, DeviceTensor>& inputs,
                                                          const ParamValues& params) {
  return run_resident_into(ck, inputs, {}, params);
}

std::map<std::string, DeviceTensor> Session::run_resident_into(const CompiledKernel& ck,
                                                               const std::map<std::string, DeviceTensor>& inputs,
                                                               const std::map<std::string, DeviceTensor>& into,
                                                               const ParamValues& params) {
  std::map<std::string, DeviceTensor> outputs;
  std::vector<DeviceBuffer> workspace; // locals, freed after the call
  std::vector<ut_arg> args;
  for (const LoopBuffer& buf : ck.program.buffers) {
    const size_t bytes = shape_numel(buf.shape) * static_cast<size_t>(dtype_bytes(buf.dtype));
    if (buf.role == TensorRole::Input) {
      auto it = inputs.find(buf.name);
      if (it == inputs.end())
        throw UserError(fmt::format("error: kernel {}: no value for input '{}'", ck.kernel_name, buf.name));
      const DeviceTensor& t = it->second;
      if (t.dtype != buf.dtype || t.shape != buf.shape)
        throw UserError(fmt::format("error: kernel {}: input '{}' must be {}{} but is {}{}", ck.kernel_name,
                                    buf.name, dtype_name(buf.dtype), shape_string(buf.shape),
                                    dtype_name(t.dtype), shape_string(t.shape)));
      UT_INTERNAL_ASSERT(t.buffer && t.buffer->bytes() >= bytes, "a device tensor smaller than its shape");
      args.push_back(buffer_arg(buf.dtype, *t.buffer));
    } else if (buf.role == TensorRole::Output && into.count(buf.name)) {
      const DeviceTensor& t = into.at(buf.name);
      UT_INTERNAL_ASSERT(t.dtype == buf.dtype && t.shape == buf.shape && t.buffer && t.buffer->bytes() >= bytes,
                         "an output buffer given to run_resident_into does not fit the output");
      args.push_back(buffer_arg(buf.dtype, *t.buffer));
      outputs.emplace(buf.name, t);
    } else if (buf.role == TensorRole::Output) {
      auto b = std::make_shared<DeviceBuffer>(device_.alloc(bytes));
      args.push_back(buffer_arg(buf.dtype, *b));
      outputs.emplace(buf.name, DeviceTensor{buf.dtype, buf.shape, std::move(b)});
    } else {
      workspace.push_back(device_.alloc(bytes));
      args.push_back(buffer_arg(buf.dtype, workspace.back()));
    }
  }
  bind_params(ck, params, args);
  launch_all(ck, args);
  device_.synchronize();
  return outputs;
}

Timing summarize_timing(std::vector<double> samples_ms) {
  Timing t;
  t.samples_ms = samples_ms;
  if (samples_ms.empty()) return t;
  std::sort(samples_ms.begin(), samples_ms.end());
  const size_t n = samples_ms.size();
  t.median_ms = n % 2 ? samples_ms[n / 2] : (samples_ms[n / 2 - 1] + samples_ms[n / 2]) / 2;
  t.min_ms = samples_ms.front();
  return t;
}

} // namespace unitile
