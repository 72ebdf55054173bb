// Aggregating profile events per device and kernel.
#include "profile/Summary.h"

#include <algorithm>
#include <map>

namespace unitile::profile {

std::optional<double> KernelRow::gflops() const {
  if (!operations || total_us <= 0)
    return std::nullopt;
  return *operations / (total_us * 1e3);
}

double KernelRow::gbs() const {
  return total_us > 0 ? bytes / (total_us * 1e3) : 0;
}

std::optional<double> KernelRow::intensity() const {
  if (!operations || bytes <= 0)
    return std::nullopt;
  return *operations / bytes;
}

std::vector<DeviceSummary> summarize(const std::vector<ProfiledDevice>& devices,
                                     const std::vector<ProfileEvent>& events) {
  std::vector<DeviceSummary> out;
  for (size_t d = 0; d < devices.size(); ++d) {
    DeviceSummary s;
    s.device = devices[d];
    s.index = static_cast<int>(d);
    std::map<std::pair<std::string, std::string>, size_t> row_of; // (name, shapes) -> row
    std::vector<std::map<int64_t, double>> call_time;             // per row: call -> us
    for (const ProfileEvent& e : events) {
      if (e.device != static_cast<int>(d))
        continue;
      auto key = std::make_pair(e.name, e.shapes);
      auto it = row_of.find(key);
      if (it == row_of.end()) {
        it = row_of.emplace(key, s.rows.size()).first;
        KernelRow r;
        r.name = e.name;
        r.shapes = e.shapes;
        r.dtype = e.dtype;
        r.operations = 0.0;
        s.rows.push_back(r);
        call_time.emplace_back();
      }
      KernelRow& r = s.rows[it->second];
      r.launches += 1;
      r.total_us += e.duration_us;
      r.bytes += e.bytes;
      if (e.operations && r.operations)
        *r.operations += *e.operations;
      else
        r.operations.reset();
      call_time[it->second][e.call] += e.duration_us;
      s.total_us += e.duration_us;
      s.launches += 1;
    }
    if (s.rows.empty())
      continue;
    for (size_t i = 0; i < s.rows.size(); ++i) {
      KernelRow& r = s.rows[i];
      r.calls = static_cast<int64_t>(call_time[i].size());
      r.min_us = r.max_us = call_time[i].begin()->second;
      for (const auto& [call, us] : call_time[i]) {
        r.min_us = std::min(r.min_us, us);
        r.max_us = std::max(r.max_us, us);
      }
      r.percent = s.total_us > 0 ? 100 * r.total_us / s.total_us : 0;
    }
    std::stable_sort(s.rows.begin(), s.rows.end(), [](const KernelRow& a, const KernelRow& b) {
      return a.total_us > b.total_us;
    });
    out.push_back(std::move(s));
  }
  return out;
}

std::optional<double> peak_gflops(const hcd::Hcd& hcd, DType dtype) {
  if (auto it = hcd.peak_gflops.find(dtype); it != hcd.peak_gflops.end() && it->second > 0)
    return it->second;
  if (auto it = hcd.peak_gflops.find(DType::F32); it != hcd.peak_gflops.end() && it->second > 0)
    return it->second;
  return std::nullopt;
}

std::optional<double> memory_bandwidth_gbps(const hcd::Hcd& hcd) {
  if (hcd.memory.empty() || hcd.memory.back().bandwidth_gbps <= 0)
    return std::nullopt;
  return hcd.memory.back().bandwidth_gbps;
}

} // namespace unitile::profile
