// Traced runs of a program's funcs through the cache hierarchy, and the time estimate.
#include "backends/sim/ChipModel.h"

#include <fmt/core.h>

#include <algorithm>

namespace unitile::sim {
namespace {

// Byte addresses of the model's address space: every buffer starts on a 4 KiB page, in
// slot order, so the layout (and with it every conflict miss) is the same on every run.
constexpr uint64_t kPage = 4096;
constexpr uint64_t kFirstAddress = uint64_t{1} << 20;

uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

struct UnitCounters {
  std::array<double, kNumDTypes> scalar{}, vector{};
  double math_calls = 0;
  int64_t loads = 0, stores = 0, load_bytes = 0, store_bytes = 0, register_accesses = 0;
  // Issue slots besides arithmetic: memory instructions, loop control, block starts.
  double overhead_scalar = 0, overhead_vector = 0;
  int64_t blocks = 0;
  bool busy = false;
};

// Where each slot's accesses go.
struct SlotRoute {
  uint64_t base = 0;
  int bytes = 4;
  bool in_registers = false;
  bool streamed = false;    // an output written with streaming stores (`stream Y`)
  int resident_level = -1; // >= 0: served by that level directly (local/shared scope)
};

class ChipTracer final : public Tracer {
public:
  ChipTracer(CacheHierarchy& memory, std::vector<SlotRoute> routes, int unit_count)
      : memory_(memory), routes_(std::move(routes)), counters_(static_cast<size_t>(unit_count)) {
    units = unit_count;
  }

  void access(int slot, int64_t element, bool is_store, bool in_vector) override {
    const SlotRoute& r = routes_[static_cast<size_t>(slot)];
    UnitCounters& c = counters_[static_cast<size_t>(unit)];
    c.busy = true;
    if (r.in_registers) {
      ++c.register_accesses;
      return;
    }
    (in_vector ? c.overhead_vector : c.overhead_scalar) += 1;
    if (is_store) {
      ++c.stores;
      c.store_bytes += r.bytes;
    } else {
      ++c.loads;
      c.load_bytes += r.bytes;
    }
    if (r.resident_level >= 0)
      memory_.access_resident(unit, r.bytes, is_store, static_cast<size_t>(r.resident_level));
    else if (is_store && r.streamed)
      memory_.access_streamed(unit, r.base + static_cast<uint64_t>(element) * static_cast<uint64_t>(r.bytes), r.bytes);
    else
      memory_.access(unit, r.base + static_cast<uint64_t>(element) * static_cast<uint64_t>(r.bytes), r.bytes,
                     is_store);
  }

  void ops(const OpRecord& r) override {
    UnitCounters& c = counters_[static_cast<size_t>(unit)];
    c.busy = true;
    for (size_t i = 0; i < r.scalar.size(); ++i) {
      c.scalar[i] += r.scalar[i];
      c.vector[i] += r.vector[i];
    }
    c.math_calls += r.math_calls;
    if (r.dependent) c.overhead_scalar += kDependentChainOps;
  }

  void loop(int64_t iterations, bool vectorized) override {
    UnitCounters& c = counters_[static_cast<size_t>(unit)];
    (vectorized ? c.overhead_vector : c.overhead_scalar) += static_cast<double>(iterations);
  }

  void block_start() override {
    UnitCounters& c = counters_[static_cast<size_t>(unit)];
    c.overhead_scalar += kBlockStartOps;
    ++c.blocks;
  }

  const std::vector<UnitCounters>& counters() const { return counters_; }

private:
  CacheHierarchy& memory_;
  std::vector<SlotRoute> routes_;
  std::vector<UnitCounters> counters_;
};

// The innermost level whose scope is `scope`'s name; else the innermost level.
int resident_level(const CacheHierarchy& memory, MemScope scope) {
  const auto& levels = memory.levels();
  for (size_t i = 0; i < levels.size(); ++i)
    if (levels[i].desc.scope == mem_scope_name(scope)) return static_cast<int>(i);
  return 0;
}

// Peak operations per second of one unit for dtype `t`: its own rate, else f32's (the
// ALUs every device has), else the fastest given; 0 when the HCD gives none.
double unit_peak(const hcd::Hcd& h, DType t) {
  double gflops = 0;
  if (auto it = h.peak_gflops.find(t); it != h.peak_gflops.end())
    gflops = it->second;
  else if (auto f = h.peak_gflops.find(DType::F32); f != h.peak_gflops.end())
    gflops = f->second;
  else
    for (const auto& [dt, v] : h.peak_gflops) gflops = std::max(gflops, v);
  return gflops * 1e9 / std::max(1, h.units);
}

LaunchReport estimate(const LoopFunc& f, const hcd::Hcd& h, const CacheHierarchy& memory,
                      const std::vector<UnitCounters>& units) {
  LaunchReport r;
  r.func = f.name;
  const LaunchDims d = launch_dims(f);
  r.blocks = int64_t{d.grid[0]} * d.grid[1] * d.grid[2];
  for (const UnitCounters& u : units) {
    if (!u.busy) continue;
    ++r.busy_units;
    double t = 0;
    for (size_t i = 0; i < u.scalar.size(); ++i) {
      r.scalar_ops[i] += u.scalar[i];
      r.vector_ops[i] += u.vector[i];
      if (u.scalar[i] == 0 && u.vector[i] == 0) continue;
      const DType dt = static_cast<DType>(i);
      const double peak = unit_peak(h, dt);
      if (peak <= 0) {
        r.compute_known = false;
        continue;
      }
      t += u.vector[i] / peak + u.scalar[i] / (peak / h.lanes_for(dt));
    }
    // Loads, stores, loop control and block starts take issue slots like f32 operations.
    if (const double peak = unit_peak(h, DType::F32); peak > 0)
      t += u.overhead_vector / peak + u.overhead_scalar / (peak / h.lanes_for(DType::F32));
    r.overhead_ops += u.overhead_scalar + u.overhead_vector;
    r.compute_time_s = std::max(r.compute_time_s, t);
    r.math_calls += u.math_calls;
    r.loads += u.loads;
    r.stores += u.stores;
    r.load_bytes += u.load_bytes;
    r.store_bytes += u.store_bytes;
    r.register_accesses += u.register_accesses;
  }
  r.time_s = r.compute_time_s;
  r.bound = "compute";
  for (size_t li = 0; li < memory.levels().size(); ++li) {
    const CacheHierarchy::Level& l = memory.levels()[li];
    LevelReport lr;
    lr.desc = l.desc;
    lr.simulated = l.simulated;
    lr.instances = l.traffic.size();
    for (size_t inst = 0; inst < l.traffic.size(); ++inst) {
      const LevelTraffic& t = l.traffic[inst];
      lr.requests += t.requests;
      lr.hits += t.hits;
      lr.exposed += t.exposed;
      lr.read_bytes += t.read_bytes;
      lr.write_bytes += t.write_bytes;
      // Units under this instance that worked: they share its bandwidth and overlap misses.
      int busy = 0;
      for (size_t u = 0; u < units.size(); ++u)
        busy += units[u].busy && memory.instance_of(li, static_cast<int>(u)) == inst;
      const double bw = l.desc.bandwidth_gbps * 1e9;
      const double t_bw = bw > 0 ? static_cast<double>(t.bytes()) / bw : 0;
      // The innermost level's hits are the pipeline's business (its bandwidth bounds
      // them); outer levels serve misses, whose latency kMissesInFlight hide, and
      // reads a stream prefetcher fetched ahead (not exposed) wait for none.
      const double t_lat = li == 0 ? 0
                                   : static_cast<double>(t.exposed) * l.desc.latency_ns * 1e-9 /
                                         (kMissesInFlight * std::max(1, busy));
      const double ti = std::max(t_bw, t_lat);
      if (ti > lr.time_s) {
        lr.time_s = ti;
        lr.latency_bound = t_lat > t_bw;
      }
    }
    if (lr.time_s > r.time_s) {
      r.time_s = lr.time_s;
      r.bound = l.desc.name + (lr.latency_bound ? " latency" : "");
    }
    r.levels.push_back(std::move(lr));
  }
  return r;
}

} // namespace

KernelReport model_program(const LoopProgram& p, const hcd::Hcd& hcd, const std::vector<BufferArg>& buffers,
                           const std::vector<ParamArg>& params, const ChipModelOptions& options) {
  KernelReport report;
  report.kernel = p.kernel;
  report.device = hcd.name;
  report.units = std::max(1, hcd.units);
  report.warm = options.warm;
  CacheHierarchy memory(hcd, report.units);

  std::vector<std::unique_ptr<SimKernel>> kernels;
  for (const LoopFunc& f : p.funcs) kernels.push_back(std::make_unique<SimKernel>(p, f.name));

  // Program buffers keep their addresses across launches; each func's allocations go
  // after them (a launch's workspace is gone when the next one starts).
  uint64_t next = kFirstAddress;
  std::vector<SlotRoute> buffer_routes;
  for (const LoopBuffer& b : p.buffers) {
    SlotRoute r;
    r.base = next;
    r.bytes = dtype_bytes(b.dtype);
    r.streamed = b.stream;
    uint64_t elements = 1;
    for (int64_t e : b.shape) elements *= static_cast<uint64_t>(std::max<int64_t>(e, 0));
    next = round_up(next + std::max<uint64_t>(elements * static_cast<uint64_t>(r.bytes), 1), kPage);
    buffer_routes.push_back(r);
  }

  for (int pass = 0; pass < (options.warm ? 2 : 1); ++pass) {
    report.launches.clear();
    report.time_s = 0;
    for (size_t fi = 0; fi < p.funcs.size(); ++fi) {
      const SimKernel& k = *kernels[fi];
      std::vector<SlotRoute> routes = buffer_routes;
      uint64_t workspace = next;
      for (size_t s = buffer_routes.size(); s < k.slots().size(); ++s) {
        const SlotInfo& info = k.slots()[s];
        SlotRoute r;
        r.bytes = dtype_bytes(info.dtype);
        r.base = workspace;
        workspace = round_up(workspace + static_cast<uint64_t>(std::max<int64_t>(info.elements, 1)) *
                                             static_cast<uint64_t>(r.bytes),
                             kPage);
        if (info.scope == MemScope::Register)
          r.in_registers = true;
        else if (info.scope != MemScope::Global)
          r.resident_level = resident_level(memory, info.scope);
        routes.push_back(r);
      }
      memory.reset_counters();
      ChipTracer tracer(memory, std::move(routes), report.units);
      k.run(buffers, params, &tracer);
      memory.flush();
      LaunchReport lr = estimate(p.funcs[fi], hcd, memory, tracer.counters());
      report.time_s += lr.time_s;
      report.launches.push_back(std::move(lr));
    }
  }
  return report;
}

} // namespace unitile::sim
