// The reports read from hand-made events: the summary's calls, min/max and shares, the
// table text, the timeline's merging, folding and alignment, the Chrome trace's form
// and the HTML page's self-containment.
#include "profile/ChromeTrace.h"
#include "profile/HtmlReport.h"
#include "profile/Summary.h"
#include "profile/SummaryTable.h"
#include "profile/Timeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace unitile::profile {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::vector<ProfiledDevice> two_devices() {
  hcd::Hcd gpu = hcd::builtin("nvidia-h200");
  hcd::Hcd sim = hcd::builtin("sim");
  return {{"gpu-0", "gpu", 0, gpu}, {"sim-0", "sim", 0, sim}};
}

ProfileEvent event(int device, const std::string& name, int64_t call, double start, double dur,
                   const std::string& func = "") {
  ProfileEvent e;
  e.device = device;
  e.name = name;
  e.func = func.empty() ? name + "_0" : func;
  e.shapes = "N=4";
  e.call = call;
  e.start_us = start;
  e.duration_us = dur;
  e.bytes = 1000;
  e.operations = 2000;
  return e;
}

// Two passes of MatMul (two launches: init + update) then Softmax on each device.
std::vector<ProfileEvent> two_passes() {
  std::vector<ProfileEvent> ev;
  double t = 0;
  int64_t call = 0;
  for (int dev = 0; dev < 2; ++dev)
    for (int pass = 0; pass < 2; ++pass) {
      const double scale = dev == 0 ? 1 : 10;
      ev.push_back(event(dev, "MatMul", call, t, 10 * scale, "MatMul_0_init"));
      ev.push_back(event(dev, "MatMul", call++, t += 10 * scale, 50 * scale, "MatMul_0"));
      ev.push_back(event(dev, "Softmax", call++, t += 50 * scale, (pass == 0 ? 30 : 50) * scale));
      t += 100 * scale;
    }
  return ev;
}

TEST(Summary, CallsGroupLaunchesAndSharesSumToTheDeviceTime) {
  const auto s = summarize(two_devices(), two_passes());
  ASSERT_EQ(s.size(), 2u);
  const DeviceSummary& gpu = s[0];
  EXPECT_EQ(gpu.launches, 6);
  EXPECT_DOUBLE_EQ(gpu.total_us, 2 * 60 + 30 + 50);
  ASSERT_EQ(gpu.rows.size(), 2u);
  EXPECT_EQ(gpu.rows[0].name, "MatMul"); // slowest first
  EXPECT_EQ(gpu.rows[0].calls, 2);
  EXPECT_EQ(gpu.rows[0].launches, 4);
  EXPECT_DOUBLE_EQ(gpu.rows[0].min_us, 60);
  EXPECT_DOUBLE_EQ(gpu.rows[0].percent, 100.0 * 120 / 200);
  EXPECT_DOUBLE_EQ(gpu.rows[1].min_us, 30);
  EXPECT_DOUBLE_EQ(gpu.rows[1].max_us, 50);
  // 4 launches x 2000 operations in 120 us.
  ASSERT_TRUE(gpu.rows[0].gflops().has_value());
  EXPECT_DOUBLE_EQ(*gpu.rows[0].gflops(), 8000 / 120e3);
  EXPECT_DOUBLE_EQ(gpu.rows[0].gbs(), 4000 / 120e3);
}

TEST(Summary, AnUncountedLaunchMakesTheRowsOperationsUnknown) {
  auto ev = two_passes();
  ev[1].operations.reset();
  const auto s = summarize(two_devices(), ev);
  EXPECT_FALSE(s[0].rows[0].gflops().has_value());
  EXPECT_THAT(format_tables(s), HasSubstr(" - "));
}

TEST(SummaryTable, PrintsHeaderAndRows) {
  const std::string text = format_tables(summarize(two_devices(), two_passes()));
  EXPECT_THAT(text, HasSubstr("gpu-0 (nvidia-h200): 2 kernels, 6 launches, device time 0.200 ms"));
  EXPECT_THAT(text, HasSubstr("name     calls    total_ms     avg_ms     min_ms     max_ms  time%  "
                              " GFLOP/s     GB/s  shapes"));
  EXPECT_THAT(text, HasSubstr("  MatMul       2      0.1200     0.0600     0.0600     0.0600   "
                              "60.0      0.07     0.03  N=4"));
}

TEST(Timeline, MergesLaunchesFoldsRepeatsAndAlignsDevices) {
  const auto devices = two_devices();
  const auto ev = two_passes();
  const auto steps = timeline_steps(0, ev);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].name, "MatMul");
  EXPECT_DOUBLE_EQ(steps[0].percent, 60);
  EXPECT_EQ(format_timeline(devices, ev), "gpu-0: MatMul(60%) -> Softmax(40%)\n"
                                          "sim-0: MatMul(60%) -> Softmax(40%)\n");
}

TEST(Timeline, ArrowsLineUpAcrossDevicesWithDifferentNames) {
  std::vector<ProfiledDevice> devices = two_devices();
  devices[1].label = "sim-10";
  std::vector<ProfileEvent> ev = {event(0, "A", 0, 0, 1), event(0, "LongName", 1, 1, 3),
                                  event(1, "Bbbbbbb", 2, 0, 1), event(1, "C", 3, 1, 1),
                                  event(1, "D", 4, 2, 2)};
  EXPECT_EQ(format_timeline(devices, ev), "gpu-0:  A(25%)       -> LongName(75%)\n"
                                          "sim-10: Bbbbbbb(25%) -> C(25%)        -> D(50%)\n");
}

TEST(Timeline, AnIrregularSequenceIsShownWhole) {
  std::vector<ProfileEvent> ev = {event(0, "A", 0, 0, 1), event(0, "B", 1, 1, 1),
                                  event(0, "A", 2, 2, 2)};
  EXPECT_EQ(format_timeline(two_devices(), ev), "gpu-0: A(25%) -> B(25%) -> A(50%)\n");
}

TEST(ChromeTrace, HasCompleteEventsAndMetadataPerDeviceAndQueue) {
  const nlohmann::json t = chrome_trace(two_devices(), two_passes());
  ASSERT_TRUE(t.contains("traceEvents"));
  int complete = 0, process_names = 0, thread_names = 0;
  for (const auto& e : t["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("tid") && e.contains("name"));
    if (e["ph"] == "X") {
      ++complete;
      EXPECT_GT(e["dur"].get<double>(), 0);
      EXPECT_GE(e["ts"].get<double>(), 0);
      EXPECT_TRUE(e["args"].contains("func"));
      EXPECT_TRUE(e["args"].contains("operations"));
    } else if (e["name"] == "process_name") {
      ++process_names;
    } else if (e["name"] == "thread_name") {
      ++thread_names;
    }
  }
  EXPECT_EQ(complete, 12);
  EXPECT_EQ(process_names, 2);
  EXPECT_EQ(thread_names, 2);
}

TEST(HtmlReport, IsSelfContainedAndCarriesEveryKernel) {
  std::vector<ProfileEvent> ev = two_passes();
  ev[0].name = "Evil</script><b>";
  const std::string page = html_report(two_devices(), ev);
  EXPECT_THAT(page, HasSubstr("<!DOCTYPE html>"));
  // Nothing to fetch: no external scripts, styles, images or requests.
  for (const char* fetch :
       {"src=", "<link", "@import", "url(", "fetch(", "XMLHttpRequest", "https:"})
    EXPECT_THAT(page, Not(HasSubstr(fetch))) << fetch;
  EXPECT_THAT(page, Not(HasSubstr("Evil</script>"))); // JSON cannot close its script element
  EXPECT_THAT(page, HasSubstr("Evil<\\/script>"));
  EXPECT_THAT(page, HasSubstr("\"Softmax\""));
}

} // namespace
} // namespace unitile::profile
