// The profiler: collects one device-timed event per kernel launch while it runs, and
// hands them to the reports (table, timeline, Chrome trace, HTML).
//
// At most one profiler is active in a process at a time (like torch.profiler's context);
// the runtime asks active_profiler() at every launch, so with none active a launch pays
// one load and one predictable branch. This class is the C++ API the Python package's
// `with tl.profile() as p` wraps: start/stop, events, table(), timeline(),
// export_chrome_trace(path), export_html(path).
#pragma once

#include "profile/ProfileEvent.h"

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace unitile::profile {

class Profiler {
public:
  Profiler() = default;
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;
  ~Profiler(); // stops it if it is active

  /// Become the active profiler; events accumulate until stop(). Starting again after a
  /// stop continues the same recording (and clock). A UserError if another profiler is
  /// active.
  void start();
  void stop();
  bool active() const;

  /// Drop every event and device, and restart the clock at the next start().
  void clear();

  // --- what the runtime calls while this profiler is active --------------------------
  /// The index of a device in devices(), registering it on first use: the same device
  /// name under the same HCD is one device.
  int device_index(const std::string& name, const hcd::Hcd& hcd);
  /// A number for one kernel invocation (all its launches share it).
  int64_t next_call();
  /// Microseconds of host time since the recording started (the first start()).
  double host_now_us() const;
  /// Identifies this recording: changes at clear(), so a device clock anchored to an
  /// earlier recording is anchored again.
  uint64_t epoch() const { return epoch_; }
  void record(ProfileEvent e);

  // --- what the reports read ----------------------------------------------------------
  std::vector<ProfileEvent> events() const; // in the order recorded
  std::vector<ProfiledDevice> devices() const;

  /// The per-device tables and the timeline, as `unitile profile` prints them.
  std::string table() const;
  std::string timeline() const;
  /// Write the Chrome Trace Event JSON / the HTML report; UserError if the file cannot
  /// be written (a partly written file is removed).
  void export_chrome_trace(const std::string& path) const;
  void export_html(const std::string& path) const;

private:
  mutable std::mutex mutex_;
  std::vector<ProfileEvent> events_;
  std::vector<ProfiledDevice> devices_;
  int64_t calls_ = 0;
  uint64_t epoch_ = 0;
  bool clock_started_ = false;
  std::chrono::steady_clock::time_point t0_{};
};

/// The active profiler, or nullptr. Read at every launch.
Profiler* active_profiler();

} // namespace unitile::profile
