// Running one benchmark case: check Unitile against each baseline, then time both sides.
#include "harness/BenchRunner.h"

#include "ir/Diagnostic.h"
#include "runtime/DeviceRegistry.h"
#include "runtime/Inputs.h"
#include "runtime/KernelCache.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

namespace unitile::bench {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Lets spinning worker threads of the side just measured (OpenMP and OpenBLAS spin for a
// while after each call) fall asleep before the other side is timed on the same cores.
// --quick is a smoke test, so it waits less.
void settle(bool quick) { std::this_thread::sleep_for(std::chrono::milliseconds(quick ? 20 : 200)); }

// Calls `run` until `quick ? 10 : 100` ms have passed (at least once), right before a
// side is timed: after settle() the other cores sit idle, and on a VM the first calls
// that wake them pay for it (a 1 ms two-thread GEMM ran at its one-thread time for the
// first few calls, so a median of 9 read 1.6 ms where 100 runs read 0.95). Warming up by
// time, as Triton's do_bench does, makes both sides start from busy cores.
template <typename F> void warm_up(bool quick, F&& run) {
  const Clock::time_point start = Clock::now();
  do {
    run();
  } while (ms_since(start) < (quick ? 10.0 : 100.0));
}

} // namespace

double median(std::vector<double> s) {
  UT_INTERNAL_ASSERT(!s.empty(), "median of no samples");
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

std::string tolerance_text(const Tolerance& tol) {
  return fmt::format("rtol={:.3g} atol={:.3g}", tol.rtol, tol.atol);
}

Agreement compare(const Tensor& got, const Tensor& ref, const Tolerance& tol) {
  UT_INTERNAL_ASSERT(got.dtype == ref.dtype && got.shape == ref.shape, "compared tensors differ in type");
  Agreement a;
  size_t bad = 0, first = 0;
  const size_t n = got.numel();
  for (size_t i = 0; i < n; ++i) {
    const double g = got.get(i), r = ref.get(i);
    if (std::isnan(g) && std::isnan(r)) continue;
    const double err = std::fabs(g - r);
    if (!(err <= tol.atol + tol.rtol * std::fabs(r))) {
      if (bad++ == 0) first = i;
    }
    if (std::isnan(err)) a.max_abs_err = err;
    else if (!std::isnan(a.max_abs_err)) a.max_abs_err = std::max(a.max_abs_err, err);
  }
  if (bad) {
    a.ok = false;
    a.first_bad = fmt::format("{}: got {:.7g}, expected {:.7g} ({} of {} outside)",
                              index_string(got.shape, first), got.get(first), ref.get(first), bad, n);
  }
  return a;
}

BenchRunner::BenchRunner(BenchOptions options, std::ostream& progress)
    : options_(std::move(options)), progress_(progress) {
  session_ = std::make_unique<Session>(open_device("cpu"),
                                       std::make_shared<KernelCache>(KernelCache::default_dir()));
  if (options_.schedule_lookup) session_->set_schedule_lookup(options_.schedule_lookup);
}

const BaselineLibrary* BenchRunner::library(const std::string& name, std::string* why) {
  auto it = libraries_.find(name);
  if (it == libraries_.end()) {
    std::string reason;
    std::optional<BaselineLibrary> lib = BaselineLibrary::open(name, &reason);
    if (lib) {
      const int in_effect = lib->set_threads(options_.threads);
      progress_ << fmt::format("bench: baseline {}: {}; threads {}\n", name, lib->describe(), in_effect);
      if (in_effect != options_.threads)
        progress_ << fmt::format("bench: note: {} uses {} threads, not the {} asked for\n", name,
                                 in_effect, options_.threads);
    } else {
      progress_ << fmt::format("bench: baseline {} unavailable: {}\n", name, reason);
      unavailable_[name] = reason;
    }
    it = libraries_.emplace(name, std::move(lib)).first;
  }
  if (!it->second) {
    *why = unavailable_[name];
    return nullptr;
  }
  return &*it->second;
}

std::optional<double> BenchRunner::measure_triad_gbs(int64_t elements, std::string* why) {
  const BaselineLibrary* lib = library("loops", why);
  if (!lib) return std::nullopt;
  std::unique_ptr<BaselineOp> op = lib->create("triad", "f32", {elements}, {3.0}, why);
  if (!op) return std::nullopt;
  // Arrays from the cpu device's allocator, like the kernels' (see run_case).
  const Device& device = session_->device();
  const size_t n = static_cast<size_t>(elements), bytes = n * sizeof(float);
  const DeviceBuffer bb = device.alloc(bytes), cb = device.alloc(bytes), ab = device.alloc(bytes);
  auto* b = static_cast<float*>(device.host_pointer(bb));
  auto* c = static_cast<float*>(device.host_pointer(cb));
  auto* a = static_cast<float*>(device.host_pointer(ab));
  std::fill(b, b + n, 1.0f);
  std::fill(c, c + n, 2.0f);
  std::fill(a, a + n, 0.0f);
  std::vector<double> samples;
  for (int i = 0; i <= options_.repeat; ++i) {
    const Clock::time_point start = Clock::now();
    if (auto err = op->run({b, c}, {a})) {
      *why = *err;
      return std::nullopt;
    }
    if (i > 0) samples.push_back(ms_since(start)); // run 0 is the warm-up
  }
  if (a[n - 1] != 7.0f) {
    *why = "the triad loop computed a wrong value";
    return std::nullopt;
  }
  return 12.0 * static_cast<double>(elements) / (median(samples) * 1e6);
}

void BenchRunner::add_record(BenchRecord r) {
  progress_ << fmt::format("bench: {} {} {} vs {}: {}{}\n", r.op, r.shape, r.dtype, r.baseline,
                           status_name(r.status), r.note.empty() ? "" : " (" + r.note + ")");
  records_.push_back(std::move(r));
}

void BenchRunner::run_case(const BenchCase& c) {
  const int repeat = options_.repeat;
  // Unitile's result first (compiled through the ordinary runtime path).
  auto compiled = session_->compile(*c.kernel, c.bindings);
  const std::string schedule_origin = compiled->schedule_origin;
  auto base_record = [&](const BaselineSpec& b) {
    BenchRecord r;
    r.op = c.op;
    r.shape = c.shape;
    r.dtype = c.dtype;
    r.threads = options_.threads;
    r.baseline = b.record_name;
    r.tolerance = tolerance_text(c.tolerance);
    r.schedule = schedule_origin;
    r.huge_pages = options_.huge_pages;
    return r;
  };

  const std::map<std::string, Tensor> inputs = complete_inputs(*c.kernel, c.bindings, {}, options_.seed);
  const Clock::time_point first_start = Clock::now();
  RunResult first = session_->run(*compiled, inputs, c.params, 0);
  const double first_run_s = ms_since(first_start) / 1000;
  const Tensor& unitile_out = first.outputs.at(c.output);

  // The baselines read the same bytes from memory the cpu device allocated, as Unitile's
  // kernels do (large buffers on transparent huge pages where the kernel gives them: see
  // CpuDevice.cpp), so neither side gets a different page size.
  const Device& device = session_->device();
  UT_INTERNAL_ASSERT(device.shares_host_memory(), "bench runs on the cpu device, whose buffers are host memory");
  std::vector<DeviceBuffer> in_buffers;
  std::vector<const void*> in_ptrs;
  for (const std::string& name : c.inputs) {
    const Tensor& t = inputs.at(name);
    in_buffers.push_back(device.alloc(t.nbytes()));
    device.copy_in(in_buffers.back(), t.data.data(), t.nbytes());
    in_ptrs.push_back(device.host_pointer(in_buffers.back()));
  }
  const DeviceBuffer ref_buffer = device.alloc(unitile_out.nbytes());
  void* ref_ptr = device.host_pointer(ref_buffer);

  std::vector<BenchRecord> pending;
  bool any_agreed = false;
  settle(options_.quick);
  for (const BaselineSpec& b : c.baselines) {
    BenchRecord r = base_record(b);
    std::string why;
    const BaselineLibrary* lib = library(b.library, &why);
    std::unique_ptr<BaselineOp> op = lib ? lib->create(b.op, c.dtype, c.dims, b.params, &why) : nullptr;
    if (!op) {
      r.status = RecordStatus::Unavailable;
      r.note = fmt::format("{}: {}", b.library, why);
      pending.push_back(std::move(r));
      continue;
    }
    r.note = fmt::format("{}: {}", b.library, op->impl());
    Tensor ref = Tensor::zeros(unitile_out.dtype, unitile_out.shape);
    std::memset(ref_ptr, 0, ref.nbytes());
    if (auto err = op->run(in_ptrs, {ref_ptr})) {
      r.status = RecordStatus::Failed;
      r.note = fmt::format("{} failed: {}", b.library, *err);
      pending.push_back(std::move(r));
      continue;
    }
    std::memcpy(ref.data.data(), ref_ptr, ref.nbytes());
    const Agreement agree = compare(unitile_out, ref, c.tolerance);
    r.max_abs_err = agree.max_abs_err;
    if (!agree.ok) {
      r.status = RecordStatus::Failed;
      r.note = fmt::format("Unitile's {} disagrees with {} at {}", c.output, b.library, agree.first_bad);
      pending.push_back(std::move(r));
      continue;
    }
    any_agreed = true;
    if (b.at_triad_bandwidth) {
      UT_INTERNAL_ASSERT(c.bytes.has_value(), "a triad-relative case needs its bytes");
      const auto elements = static_cast<int64_t>(shape_numel(unitile_out.shape));
      std::string triad_why;
      const std::optional<double> gbs = measure_triad_gbs(elements, &triad_why);
      if (!gbs) {
        r.status = RecordStatus::Unavailable;
        r.note = "no triad bandwidth: " + triad_why;
        pending.push_back(std::move(r));
        continue;
      }
      r.baseline_gbs = *gbs;
      r.baseline_ms = *c.bytes / (*gbs * 1e9) * 1e3;
      r.note = fmt::format("checked against {}; baseline_ms = bytes at the triad bandwidth just measured", b.library);
    } else {
      warm_up(options_.quick, [&] { (void)op->run(in_ptrs, {ref_ptr}); });
      std::vector<double> samples;
      for (int i = 0; i < repeat; ++i) {
        const Clock::time_point start = Clock::now();
        if (auto err = op->run(in_ptrs, {ref_ptr})) {
          r.status = RecordStatus::Failed;
          r.note = fmt::format("{} failed: {}", b.library, *err);
          break;
        }
        samples.push_back(ms_since(start));
      }
      if (r.status == RecordStatus::Ok) {
        r.baseline_ms = median(samples);
        if (c.bytes) r.baseline_gbs = *c.bytes / (*r.baseline_ms * 1e6);
      }
    }
    pending.push_back(std::move(r));
  }

  std::optional<double> unitile_ms;
  int runs = 0;
  std::string skipped;
  if (any_agreed && first_run_s > options_.max_run_s) {
    skipped = fmt::format("one Unitile run took {:.1f} s (> --max-run-s {:g}); not timed", first_run_s,
                          options_.max_run_s);
  } else if (any_agreed) {
    settle(options_.quick);
    warm_up(options_.quick, [&] { session_->run(*compiled, inputs, c.params, 0); });
    RunResult timed = session_->run(*compiled, inputs, c.params, repeat);
    unitile_ms = timed.timing->median_ms;
    runs = repeat;
    if (options_.profiler) {
      options_.profiler->start();
      for (int i = 0; i < repeat; ++i) session_->run(*compiled, inputs, c.params, 0);
      options_.profiler->stop();
    }
    settle(options_.quick);
  }
  for (BenchRecord& r : pending) {
    if (r.status == RecordStatus::Ok && !skipped.empty()) {
      r.status = RecordStatus::Skipped;
      r.note = skipped;
    }
    if (r.status == RecordStatus::Ok) {
      r.unitile_ms = unitile_ms;
      r.runs = runs;
      if (c.bytes) r.unitile_gbs = *c.bytes / (*unitile_ms * 1e6);
    }
    add_record(std::move(r));
  }
}

} // namespace unitile::bench
