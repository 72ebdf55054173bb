// The executor: compile a kernel for one device (lower, generate source, cache or
// compile, load every entry) and run it on host tensors, optionally timed.
//
// A Session is one device plus a kernel cache. Compiled kernels are remembered per
// cache key, so compiling the same kernel under the same shapes twice loads nothing new.
// While a profiler is active (profile/Profiler.h) every launch is also timed on the
// device and recorded as a profile event.
#pragma once

#include "codegen/Codegen.h"
#include "ir/Kernel.h"
#include "ir/Loop.h"
#include "runtime/Device.h"
#include "runtime/DeviceTensor.h"
#include "runtime/KernelCache.h"
#include "runtime/Tensor.h"
#include "schedule/Schedule.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace unitile {

/// A kernel compiled and loaded for one device under concrete bindings.
struct CompiledKernel {
  std::string kernel_name;
  ShapeBindings bindings;
  LoopProgram program;
  GeneratedSource source;
  CacheKey key;
  std::vector<DeviceKernel> entries; // one per program.funcs, same order
  std::vector<LaunchDims> launch;    // launch_dims of each func
  Schedule schedule;                 // what was applied (empty: the plain default lowering)
  std::string schedule_origin;       // "default", "kernel", "auto", "given", "tuned"
  std::vector<std::string> reasons;  // the auto-scheduler's explanation, when it chose
};

/// Device-timed runs of `--repeat N`: one warm-up, then N runs each between two timer
/// events; compilation is never included.
struct Timing {
  std::vector<double> samples_ms;
  double median_ms = 0;
  double min_ms = 0;
};

struct RunResult {
  std::map<std::string, Tensor> outputs; // by output name
  std::optional<Timing> timing;
};

/// Runtime param values by name (integers travel as exact values of the double).
using ParamValues = std::map<std::string, double>;

/// A schedule found for a kernel elsewhere (the tuning database, which lives in a layer
/// above this one), with the lines --explain prints about where it came from.
struct FoundSchedule {
  Schedule schedule;
  std::vector<std::string> reasons;
};
using ScheduleLookup =
    std::function<std::optional<FoundSchedule>(const Kernel&, const ShapeBindings&, const hcd::Hcd&)>;

class LaunchProfiling;

class Session {
public:
  Session(Device device, std::shared_ptr<KernelCache> cache);

  const Device& device() const { return device_; }
  /// Consult `lookup` (origin "tuned") before the auto-scheduler when a kernel has no
  /// schedule of its own; a found schedule that no longer lowers falls back to auto.
  void set_schedule_lookup(ScheduleLookup lookup) { lookup_ = std::move(lookup); }
  KernelCache& cache() { return *cache_; }

  /// Lower `k` under `b`, generate source for the device's HCD, then load the binary
  /// from the cache or compile it. `k` must be verified (parse_module does that).
  /// The schedule: `schedule` when given (an empty one means the plain default
  /// lowering, which reference runs use), else the kernel's own `schedule { }` block,
  /// else the best record of the tuning database when one is attached, else the
  /// auto-scheduler's.
  std::shared_ptr<const CompiledKernel> compile(const Kernel& k, const ShapeBindings& b,
                                                const std::optional<Schedule>& schedule = std::nullopt);

  /// Everything compile does short of loading (which needs the device itself, not just
  /// its compiler): the Loop IR, the source and the binary (cached), compiled with
  /// `extra_flags` after the HCD's flags (e.g. its [toolchain] assembly_flags).
  struct Built {
    LoopProgram program;
    GeneratedSource source;
    CacheKey key;
    KernelCache::Binary binary;
    Schedule schedule;
    std::string schedule_origin;
    std::vector<std::string> reasons;
  };
  Built build(const Kernel& k, const ShapeBindings& b,
              const std::vector<std::string>& extra_flags = {},
              const std::optional<Schedule>& schedule = std::nullopt);
  /// build for a Loop IR program as it is (hand-written or scheduled elsewhere). Every
  /// func's launch must fit the HCD's limits (LaunchLimits.h); build checks the same.
  Built build_program(LoopProgram program, const std::vector<std::string>& extra_flags = {});

  /// Compile and load a Loop IR program as it is, like compile.
  std::shared_ptr<const CompiledKernel> compile_program(LoopProgram program);

  /// Run every func in order on `inputs` (every Input buffer, with the declared dtype
  /// and concrete shape) and `params` (every runtime param). With `repeat` > 0 the
  /// kernel is also timed. A missing or mismatched input or param is a UserError.
  RunResult run(const CompiledKernel& ck, const std::map<std::string, Tensor>& inputs,
                const ParamValues& params, int repeat = 0);

  /// Run every func in order on device-resident inputs (each with the declared dtype and
  /// concrete shape, in this session's device memory); the outputs stay on the device,
  /// freshly allocated. Nothing is copied through the host.
  std::map<std::string, DeviceTensor> run_resident(const CompiledKernel& ck,
                                                   const std::map<std::string, DeviceTensor>& inputs,
                                                   const ParamValues& params);
  /// run_resident writing each output named in `into` into that tensor's buffer (the
  /// caller's, e.g. a planned buffer reused between kernels: the declared dtype and
  /// shape, at least that many bytes); the other outputs are freshly allocated. Returns
  /// every output, the given ones included.
  std::map<std::string, DeviceTensor> run_resident_into(const CompiledKernel& ck,
                                                        const std::map<std::string, DeviceTensor>& inputs,
                                                        const std::map<std::string, DeviceTensor>& into,
                                                        const ParamValues& params);

  /// The options string handed to the device compiler: the HCD's compiler and flags.
  std::string compile_options() const;

private:
  // Every func of `ck` in order; through LaunchProfiling when a profiler is active.
  void launch_all(const CompiledKernel& ck, const std::vector<ut_arg>& args);
  std::shared_ptr<const CompiledKernel> load_built(Built built, const std::string& kernel_name,
                                                   const ShapeBindings& b);

  Device device_;
  std::shared_ptr<KernelCache> cache_;
  ScheduleLookup lookup_;
  struct Compiled {
    std::shared_ptr<const CompiledKernel> kernel;
    KernelCache::Binary binary;
  };
  std::map<CacheKey, Compiled> compiled_;
  std::shared_ptr<LaunchProfiling> profiling_; // made at the first profiled launch
};

/// Median of the samples (mean of the middle two for an even count) and the minimum.
Timing summarize_timing(std::vector<double> samples_ms);

} // namespace unitile
