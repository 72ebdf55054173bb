// Queries for the Kernel IR rewriting primitives (see KernelEdit.h).
#include "schedule/KernelEdit.h"

#include <fmt/core.h>

namespace unitile {

size_t only_writer(const Kernel& k, const std::string& buffer,
                   const std::function<UserError(const std::string&)>& fail) {
  size_t at = k.body.size();
  for (size_t n = 0; n < k.body.size(); ++n)
    if (k.body[n].output == buffer) {
      if (at != k.body.size()) throw fail(fmt::format("'{}' is written by more than one statement", buffer));
      at = n;
    }
  if (at == k.body.size()) throw fail(fmt::format("no statement writes '{}'", buffer));
  return at;
}

std::string unused_name(const Kernel& k, const std::string& base) {
  auto taken = [&](const std::string& n) {
    if (k.find_tensor(n) || k.find_param(n)) return true;
    for (const Comprehension& s : k.body)
      if (s.ranges.count(n)) return true;
    return false;
  };
  std::string name = base;
  for (int n = 2; taken(name); ++n) name = fmt::format("{}{}", base, n);
  return name;
}

} // namespace unitile
