// The profiler's recording state and the one active profiler of the process.
#include "profile/Profiler.h"

#include "ir/Diagnostic.h"
#include "profile/ChromeTrace.h"
#include "profile/HtmlReport.h"
#include "profile/OutputFile.h"
#include "profile/SummaryTable.h"
#include "profile/Timeline.h"

#include <atomic>

namespace unitile::profile {
namespace {

std::atomic<Profiler*> g_active{nullptr};
std::atomic<uint64_t> g_next_epoch{1};

} // namespace

Profiler* active_profiler() {
  return g_active.load(std::memory_order_acquire);
}

Profiler::~Profiler() {
  Profiler* self = this;
  g_active.compare_exchange_strong(self, nullptr);
}

void Profiler::start() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!clock_started_) {
      t0_ = std::chrono::steady_clock::now();
      clock_started_ = true;
      epoch_ = g_next_epoch.fetch_add(1);
    }
  }
  Profiler* expected = nullptr;
  if (g_active.compare_exchange_strong(expected, this) || expected == this)
    return;
  throw UserError("error: another profiler is already running in this process; stop it first");
}

void Profiler::stop() {
  Profiler* self = this;
  g_active.compare_exchange_strong(self, nullptr);
}

bool Profiler::active() const {
  return g_active.load() == this;
}

void Profiler::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.clear();
  devices_.clear();
  calls_ = 0;
  clock_started_ = false;
  epoch_ = 0;
}

int Profiler::device_index(const std::string& name, const hcd::Hcd& hcd) {
  std::lock_guard<std::mutex> lock(mutex_);
  int ordinal = 0;
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i].name != name)
      continue;
    if (devices_[i].hcd.hash() == hcd.hash() && devices_[i].hcd.name == hcd.name)
      return static_cast<int>(i);
    ++ordinal;
  }
  devices_.push_back({name + "-" + std::to_string(ordinal), name, ordinal, hcd});
  return static_cast<int>(devices_.size() - 1);
}

int64_t Profiler::next_call() {
  std::lock_guard<std::mutex> lock(mutex_);
  return calls_++;
}

double Profiler::host_now_us() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!clock_started_)
    return 0;
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0_).count();
}

void Profiler::record(ProfileEvent e) {
  std::lock_guard<std::mutex> lock(mutex_);
  UT_INTERNAL_ASSERT(e.device >= 0 && static_cast<size_t>(e.device) < devices_.size(),
                     "a profile event names an unregistered device");
  events_.push_back(std::move(e));
}

std::vector<ProfileEvent> Profiler::events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_;
}

std::vector<ProfiledDevice> Profiler::devices() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return devices_;
}

std::string Profiler::table() const {
  return format_tables(summarize(devices(), events()));
}

std::string Profiler::timeline() const {
  return format_timeline(devices(), events());
}

void Profiler::export_chrome_trace(const std::string& path) const {
  write_output_file(path, chrome_trace(devices(), events()).dump(1) + "\n", "trace");
}

void Profiler::export_html(const std::string& path) const {
  write_output_file(path, html_report(devices(), events()), "HTML report");
}

} // namespace unitile::profile
