// Writing profile events in the Chrome Trace Event format (the JSON object form).
#include "profile/ChromeTrace.h"

#include <fmt/core.h>

#include <algorithm>

namespace unitile::profile {

nlohmann::json chrome_trace(const std::vector<ProfiledDevice>& devices,
                            const std::vector<ProfileEvent>& events) {
  nlohmann::json list = nlohmann::json::array();
  for (size_t d = 0; d < devices.size(); ++d) {
    const ProfiledDevice& dev = devices[d];
    const int pid = static_cast<int>(d);
    list.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", pid},
                    {"tid", 0},
                    {"args", {{"name", fmt::format("{} ({})", dev.label, dev.hcd.name)}}}});
    list.push_back({{"name", "process_sort_index"},
                    {"ph", "M"},
                    {"pid", pid},
                    {"tid", 0},
                    {"args", {{"sort_index", pid}}}});
    // The ABI gives a device one in-order queue; name every queue events use.
    std::vector<int> queues;
    for (const ProfileEvent& e : events)
      if (e.device == pid && std::find(queues.begin(), queues.end(), e.queue) == queues.end())
        queues.push_back(e.queue);
    if (queues.empty())
      queues.push_back(0);
    for (int q : queues)
      list.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", q},
                      {"args", {{"name", fmt::format("queue {}", q)}}}});
  }
  for (const ProfileEvent& e : events) {
    nlohmann::json args = {{"func", e.func},
                           {"shapes", e.shapes},
                           {"call", e.call},
                           {"grid", e.grid},
                           {"block", e.block},
                           {"bytes", e.bytes},
                           {"dtype", std::string(dtype_name(e.dtype))}};
    if (e.operations) {
      args["operations"] = *e.operations;
      if (e.duration_us > 0)
        args["gflops"] = *e.operations / (e.duration_us * 1e3);
    }
    if (e.duration_us > 0)
      args["gbs"] = e.bytes / (e.duration_us * 1e3);
    list.push_back({{"name", e.name},
                    {"cat", "kernel"},
                    {"ph", "X"},
                    {"ts", e.start_us},
                    {"dur", e.duration_us},
                    {"pid", e.device},
                    {"tid", e.queue},
                    {"args", args}});
  }
  return {{"traceEvents", list},
          {"displayTimeUnit", "ms"},
          {"otherData",
           {{"producer", "unitile profile"},
            {"clock", "each device's own timer, in us from the profile's start"}}}};
}

} // namespace unitile::profile
