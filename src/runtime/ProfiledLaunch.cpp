// Profiled launches (see ProfiledLaunch.h).
#include "runtime/ProfiledLaunch.h"

#include "runtime/Session.h"

#include <fmt/core.h>

#include <utility>

namespace unitile {
namespace {

// "K=64,M=64,N=64" from the bindings; a program without any (a .loop file) lists its
// buffers' shapes instead: "A[64,64] B[64,64]".
std::string shapes_text(const CompiledKernel& ck) {
  std::string out;
  if (!ck.bindings.empty()) {
    for (const auto& [name, value] : ck.bindings)
      out += fmt::format("{}{}={}", out.empty() ? "" : ",", name, value);
    return out;
  }
  for (const LoopBuffer& b : ck.program.buffers) {
    if (b.role == TensorRole::Local)
      continue;
    std::string dims;
    for (int64_t d : b.shape)
      dims += fmt::format("{}{}", dims.empty() ? "" : ",", d);
    out += fmt::format("{}{}[{}]", out.empty() ? "" : " ", b.name, dims);
  }
  return out;
}

} // namespace

const LaunchProfiling::KernelFacts& LaunchProfiling::facts(const CompiledKernel& ck) {
  auto it = facts_.find(ck.key);
  if (it != facts_.end())
    return it->second;
  KernelFacts f;
  for (const LoopFunc& func : ck.program.funcs)
    f.costs.push_back(profile::static_launch_cost(ck.program, func));
  f.shapes = shapes_text(ck);
  return facts_.emplace(ck.key, std::move(f)).first->second;
}

void LaunchProfiling::launch_all(const Device& device, const CompiledKernel& ck,
                                 const std::vector<ut_arg>& args, profile::Profiler& profiler) {
  if (epoch_ != profiler.epoch()) {
    device_ = profiler.device_index(device.name(), device.hcd());
    device.synchronize();
    anchor_ = device.record_event();
    anchor_us_ = profiler.host_now_us();
    epoch_ = profiler.epoch();
  }
  const KernelFacts& kernel = facts(ck);
  const std::vector<profile::LaunchCost>& cost = kernel.costs;
  std::vector<std::pair<DeviceEvent, DeviceEvent>> marks;
  marks.reserve(ck.entries.size());
  for (size_t i = 0; i < ck.entries.size(); ++i) {
    DeviceEvent start = device.record_event();
    device.launch(ck.entries[i], ck.launch[i], args,
                  fmt::format("{} (func {})", ck.kernel_name, ck.program.funcs[i].name));
    marks.emplace_back(std::move(start), device.record_event());
  }
  device.synchronize();

  const int64_t call = profiler.next_call();
  for (size_t i = 0; i < marks.size(); ++i) {
    profile::ProfileEvent e;
    e.device = device_;
    e.name = ck.kernel_name;
    e.func = ck.program.funcs[i].name;
    e.shapes = kernel.shapes;
    e.call = call;
    e.start_us = anchor_us_ + device.elapsed_ms(anchor_, marks[i].first) * 1e3;
    e.duration_us = device.elapsed_ms(marks[i].first, marks[i].second) * 1e3;
    e.bytes = cost[i].bytes;
    e.operations = cost[i].operations;
    e.dtype = cost[i].dtype;
    e.grid = ck.launch[i].grid;
    e.block = ck.launch[i].block;
    profiler.record(std::move(e));
  }
}

} // namespace unitile
