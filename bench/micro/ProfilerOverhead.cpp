// What the profiler costs per launch (Google Benchmark): a one-launch kernel call through
// Session::run on a device with no profiler active, and with one recording; and the
// check every launch makes when none is active. docs/PERFORMANCE.md records the numbers.
//   build/bin/unitile-profiler-overhead --benchmark_repetitions=5
//   --benchmark_report_aggregates_only=true
#include "ir/Parser.h"
#include "profile/Profiler.h"
#include "runtime/DeviceRegistry.h"
#include "runtime/Inputs.h"
#include "runtime/Session.h"
#include "schedule/Lower.h"

#include <benchmark/benchmark.h>

#include <memory>
#include <string>

namespace {

using namespace unitile;

constexpr const char* kSource = R"(
kernel Relu {
  input:  f32[N] X
  output: f32[N] Y
  operation: Y[i] = max(X[i], 0.0)
}
)";

void run_calls(benchmark::State& state, const std::string& device, bool profiled) {
  const Module m = parse_module(SourceFile{"relu.ut", kSource});
  const Kernel& k = m.kernels.front();
  const ShapeBindings b = bind_shapes(k, {}, {{"N", 64}});
  Session s(open_device(device), std::make_shared<KernelCache>(std::nullopt));
  auto ck = s.compile(k, b, Schedule{}); // one launch per call
  const auto inputs = complete_inputs(k, b, {}, 0);
  s.run(*ck, inputs, {}, 0);
  profile::Profiler p;
  if (profiled)
    p.start();
  int64_t calls = 0;
  for (auto _ : state) {
    // Each iteration: bind buffers, one launch, synchronize, copy the output back.
    benchmark::DoNotOptimize(s.run(*ck, inputs, {}, 0));
    if (profiled && ++calls % 50000 == 0)
      p.clear(); // bounded memory in long runs
  }
  p.stop();
  state.SetItemsProcessed(state.iterations());
}

void BM_CallCpuProfilerOff(benchmark::State& state) {
  run_calls(state, "cpu", false);
}
void BM_CallCpuProfilerOn(benchmark::State& state) {
  run_calls(state, "cpu", true);
}
void BM_CallSimProfilerOff(benchmark::State& state) {
  run_calls(state, "sim", false);
}
void BM_CallSimProfilerOn(benchmark::State& state) {
  run_calls(state, "sim", true);
}

// What a launch pays when no profiler is active: one atomic load and a branch.
void BM_ActiveProfilerCheck(benchmark::State& state) {
  for (auto _ : state)
    benchmark::DoNotOptimize(profile::active_profiler());
}

BENCHMARK(BM_CallCpuProfilerOff)->UseRealTime();
BENCHMARK(BM_CallCpuProfilerOn)->UseRealTime();
BENCHMARK(BM_CallSimProfilerOff)->UseRealTime();
BENCHMARK(BM_CallSimProfilerOn)->UseRealTime();
BENCHMARK(BM_ActiveProfilerCheck);

} // namespace

BENCHMARK_MAIN();
