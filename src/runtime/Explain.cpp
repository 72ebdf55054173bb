// Printing the schedule a kernel was compiled with, for `unitile compile --explain` and
// Python's `.explain()`.
#include "runtime/Explain.h"

#include <fmt/core.h>

namespace unitile {

std::string schedule_explanation(const std::string& kernel, const Schedule& schedule, const std::string& origin,
                                 const std::vector<std::string>& reasons, const LoopProgram& program) {
  std::string out = fmt::format("// schedule of {} ({}):\n", kernel, origin);
  for (const std::string& r : reasons) out += "//   " + r + "\n";
  out += "schedule {\n";
  const std::string text = to_text(schedule);
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += "  " + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  out += "}\n";
  for (const LoopFunc& f : program.funcs) {
    const LaunchDims d = launch_dims(f);
    out += fmt::format("// launch {}: grid {}x{}x{}, block {}x{}x{}\n", f.name, d.grid[0], d.grid[1], d.grid[2],
                       d.block[0], d.block[1], d.block[2]);
  }
  return out;
}

} // namespace unitile
