// The Hcd queries passes use: lanes per dtype, memory levels by name, the content hash.
#include "hcd/Hcd.h"

#include <algorithm>
#include <xxhash.h>

namespace unitile::hcd {

int Hcd::lanes_for(DType t) const {
  if (auto it = lanes.find(t); it != lanes.end()) return it->second;
  // A vector narrower than the element still holds one of it.
  return std::max(1, vector_bits / (8 * dtype_bytes(t)));
}

const MemoryLevel* Hcd::level(const std::string& level_name) const {
  for (const auto& l : memory)
    if (l.name == level_name) return &l;
  return nullptr;
}

int64_t Hcd::kept_cache_bytes() const {
  constexpr int64_t kKeptPerCpu = int64_t{16} * 1024 * 1024;
  int64_t kept = 0;
  for (const MemoryLevel& l : memory) {
    if (l.scope == "register" || l.scope == "global") continue;
    kept = std::max(kept, kind == DeviceKind::Cpu ? std::min(l.size_bytes, kKeptPerCpu * std::max(1, l.shared_by))
                                                  : l.size_bytes);
  }
  return kept;
}

uint64_t Hcd::hash() const {
  // The TOML text covers every schema field in a fixed order and format, so hashing it
  // is stable across runs and machines; `source` is left out on purpose (the same
  // device loaded from two paths must hash the same).
  Hcd without_source = *this;
  without_source.source.clear();
  std::string text = to_toml(without_source);
  return XXH64(text.data(), text.size(), /*seed=*/0);
}

} // namespace unitile::hcd
