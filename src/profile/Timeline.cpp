// Building and aligning the per-device timeline lines.
#include "profile/Timeline.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

namespace unitile::profile {

std::vector<TimelineStep> timeline_steps(int device, const std::vector<ProfileEvent>& events) {
  std::vector<const ProfileEvent*> mine;
  for (const ProfileEvent& e : events)
    if (e.device == device)
      mine.push_back(&e);
  std::stable_sort(mine.begin(), mine.end(), [](const ProfileEvent* a, const ProfileEvent* b) {
    return a->start_us < b->start_us;
  });
  std::vector<TimelineStep> steps;
  double total = 0;
  for (const ProfileEvent* e : mine) {
    total += e->duration_us;
    if (steps.empty() || steps.back().name != e->name)
      steps.push_back({e->name, 0, 0});
    steps.back().time_us += e->duration_us;
  }
  // The shortest period that the whole sequence repeats exactly.
  const size_t n = steps.size();
  size_t period = n;
  for (size_t p = 1; p < n; ++p) {
    if (n % p)
      continue;
    bool repeats = true;
    for (size_t i = p; i < n && repeats; ++i)
      repeats = steps[i].name == steps[i % p].name;
    if (repeats) {
      period = p;
      break;
    }
  }
  std::vector<TimelineStep> folded(steps.begin(),
                                   steps.begin() + static_cast<std::ptrdiff_t>(period));
  for (size_t i = period; i < n; ++i)
    folded[i % period].time_us += steps[i].time_us;
  for (TimelineStep& s : folded)
    s.percent = total > 0 ? 100 * s.time_us / total : 0;
  return folded;
}

std::string format_timeline(const std::vector<ProfiledDevice>& devices,
                            const std::vector<ProfileEvent>& events) {
  std::vector<std::string> labels;
  std::vector<std::vector<std::string>> cells;
  for (size_t d = 0; d < devices.size(); ++d) {
    std::vector<TimelineStep> steps = timeline_steps(static_cast<int>(d), events);
    if (steps.empty())
      continue;
    labels.push_back(devices[d].label + ":");
    cells.emplace_back();
    for (const TimelineStep& s : steps)
      cells.back().push_back(
          fmt::format("{}({}%)", s.name, static_cast<long>(std::lround(s.percent))));
  }
  size_t label_w = 0, columns = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    label_w = std::max(label_w, labels[i].size());
    columns = std::max(columns, cells[i].size());
  }
  std::vector<size_t> width(columns, 0);
  for (const auto& row : cells)
    for (size_t c = 0; c < row.size(); ++c)
      width[c] = std::max(width[c], row[c].size());
  std::string out;
  for (size_t i = 0; i < labels.size(); ++i) {
    std::string line = fmt::format("{:<{}}", labels[i], label_w);
    for (size_t c = 0; c < cells[i].size(); ++c) {
      line += c == 0 ? " " : " -> ";
      // Pad every cell but a line's last, so the arrows of all lines line up.
      line += c + 1 < cells[i].size() ? fmt::format("{:<{}}", cells[i][c], width[c]) : cells[i][c];
    }
    out += line + "\n";
  }
  return out;
}

} // namespace unitile::profile
