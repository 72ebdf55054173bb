// The set-associative LRU caches and the hierarchy that routes a unit's accesses
// through them (policy in CacheModel.h).
#include "backends/sim/CacheModel.h"

#include "ir/Diagnostic.h"

#include <fmt/core.h>

#include <algorithm>

namespace unitile::sim {

SetAssociativeCache::SetAssociativeCache(int64_t size, int line, int ways) : line_(line) {
  UT_INTERNAL_ASSERT(size > 0 && line > 0 && ways > 0, "cache geometry must be positive");
  int64_t lines = std::max<int64_t>(1, size / line);
  ways_ = static_cast<int>(std::min<int64_t>(ways, lines));
  sets_ = lines / ways_;
  size_t n = static_cast<size_t>(sets_ * ways_);
  tags_.assign(n, 0);
  stamps_.assign(n, 0);
  dirty_.assign(n, 0);
}

SetAssociativeCache::Result SetAssociativeCache::access(uint64_t line_number, bool make_dirty) {
  ++clock_;
  Result r;
  if (last_way_ >= 0 && last_line_ == line_number) {
    stamps_[static_cast<size_t>(last_way_)] = clock_;
    if (make_dirty) dirty_[static_cast<size_t>(last_way_)] = 1;
    r.hit = true;
    return r;
  }
  const uint64_t tag = line_number + 1;
  const size_t base = static_cast<size_t>(line_number % static_cast<uint64_t>(sets_)) * static_cast<size_t>(ways_);
  size_t victim = base;
  for (size_t w = base; w < base + static_cast<size_t>(ways_); ++w) {
    if (tags_[w] == tag) {
      stamps_[w] = clock_;
      if (make_dirty) dirty_[w] = 1;
      last_line_ = line_number;
      last_way_ = static_cast<int64_t>(w);
      r.hit = true;
      return r;
    }
    if (stamps_[w] < stamps_[victim]) victim = w; // invalid ways have stamp 0: taken first
  }
  if (tags_[victim] != 0 && dirty_[victim]) {
    r.evicted_dirty = true;
    r.evicted_line = tags_[victim] - 1;
  }
  tags_[victim] = tag;
  stamps_[victim] = clock_;
  dirty_[victim] = make_dirty ? 1 : 0;
  last_line_ = line_number;
  last_way_ = static_cast<int64_t>(victim);
  return r;
}

std::vector<uint64_t> SetAssociativeCache::take_dirty() {
  std::vector<uint64_t> out;
  for (size_t w = 0; w < tags_.size(); ++w) {
    if (tags_[w] != 0 && dirty_[w]) {
      out.push_back(tags_[w] - 1);
      dirty_[w] = 0;
    }
  }
  return out;
}

namespace {
// Lines of simulated state above which an HCD is refused rather than eating the host's
// memory (each line costs 17 bytes): 2^26 lines is a 4 GiB cache of 64-byte lines.
constexpr int64_t kMaxSimulatedLines = int64_t{1} << 26;
} // namespace

CacheHierarchy::CacheHierarchy(const hcd::Hcd& hcd, int units) : units_(std::max(1, units)) {
  std::vector<hcd::MemoryLevel> memory;
  for (const hcd::MemoryLevel& m : hcd.memory)
    if (m.scope != "register") memory.push_back(m);
  if (memory.empty())
    throw UserError(fmt::format("{}: error: HCD '{}' has no memory level outside registers; the chip "
                                "model needs at least the device memory ([[memory]] with scope "
                                "\"global\")",
                                hcd.source.empty() ? hcd.name : hcd.source, hcd.name));
  int64_t total_lines = 0;
  for (size_t i = 0; i < memory.size(); ++i) {
    Level l;
    l.desc = memory[i];
    l.simulated = i + 1 < memory.size();
    const int shared_by = std::max(1, l.desc.shared_by);
    const size_t instances = static_cast<size_t>((units_ + shared_by - 1) / shared_by);
    l.traffic.assign(instances, {});
    if (l.simulated) {
      total_lines += static_cast<int64_t>(instances) * std::max<int64_t>(1, l.desc.size_bytes / l.desc.line_bytes);
      if (total_lines > kMaxSimulatedLines)
        throw UserError(fmt::format(
            "{}: error: memory level '{}' ({} bytes, {} instances) is too large to simulate: the cached "
            "levels together may hold at most {} lines",
            hcd.source.empty() ? hcd.name : hcd.source, l.desc.name, l.desc.size_bytes, instances,
            kMaxSimulatedLines));
      for (size_t k = 0; k < instances; ++k) l.caches.emplace_back(l.desc.size_bytes, l.desc.line_bytes, kWays);
    }
    levels_.push_back(std::move(l));
  }
  streams_.assign(static_cast<size_t>(units_ * kStreams), 0);
  next_stream_.assign(static_cast<size_t>(units_), 0);
}

bool CacheHierarchy::continues_stream(int unit, uint64_t line_number) {
  uint64_t* table = streams_.data() + static_cast<size_t>(unit) * kStreams;
  const uint64_t key = line_number + 1; // 0 marks an empty slot
  for (int s = 0; s < kStreams; ++s) {
    if (table[s] != 0 && key > table[s] && key - table[s] <= kStreamReach) {
      table[s] = key;
      return true;
    }
    if (table[s] == key) return true; // the same line again (a partial-line refetch)
  }
  uint8_t& next = next_stream_[static_cast<size_t>(unit)];
  table[next] = key;
  next = static_cast<uint8_t>((next + 1) % kStreams);
  return false;
}

size_t CacheHierarchy::instance_of(size_t level, int unit) const {
  const Level& l = levels_[level];
  size_t i = static_cast<size_t>(unit / std::max(1, l.desc.shared_by));
  return std::min(i, l.traffic.size() - 1);
}

void CacheHierarchy::reset_counters() {
  for (Level& l : levels_)
    for (LevelTraffic& t : l.traffic) t = {};
}

void CacheHierarchy::access(int unit, uint64_t address, int bytes, bool is_store, size_t level,
                            bool prefetched) {
  Level& l = levels_[level];
  const size_t inst = instance_of(level, unit);
  LevelTraffic& t = l.traffic[inst];
  (is_store ? t.write_bytes : t.read_bytes) += bytes;
  // A read arriving below the first level: the stream prefetcher's decision, made here
  // and passed down to the level that serves the line. The first level's own hits have
  // no latency term (the pipeline's business), writes back none either.
  auto decide = [&](uint64_t line_number) {
    return level == 1 && !is_store ? continues_stream(unit, line_number) : prefetched;
  };
  if (!l.simulated) {
    ++t.requests;
    ++t.hits;
    const uint64_t line = static_cast<uint64_t>(std::max(1, l.desc.line_bytes));
    t.exposed += level > 0 && !is_store && !decide(address / line);
    return;
  }
  SetAssociativeCache& cache = l.caches[inst];
  const uint64_t line = static_cast<uint64_t>(cache.line());
  const uint64_t first = address / line, last = (address + static_cast<uint64_t>(bytes) - 1) / line;
  for (uint64_t n = first; n <= last; ++n) {
    ++t.requests;
    // A store that covers the whole line needs none of its old bytes: no fetch.
    const bool whole_line = is_store && address <= n * line && address + static_cast<uint64_t>(bytes) >= (n + 1) * line;
    SetAssociativeCache::Result r = cache.access(n, is_store);
    const bool ahead = decide(n);
    if (r.hit) {
      ++t.hits;
      t.exposed += level > 0 && !is_store && !ahead;
      continue;
    }
    if (r.evicted_dirty) access(unit, r.evicted_line * line, static_cast<int>(line), true, level + 1);
    if (!whole_line) access(unit, n * line, static_cast<int>(line), false, level + 1, ahead);
  }
}

void CacheHierarchy::access_resident(int unit, int bytes, bool is_store, size_t level) {
  LevelTraffic& t = levels_[level].traffic[instance_of(level, unit)];
  (is_store ? t.write_bytes : t.read_bytes) += bytes;
  ++t.requests;
  ++t.hits;
}

void CacheHierarchy::access_streamed(int unit, uint64_t address, int bytes) {
  const size_t level = levels_.size() - 1;
  Level& l = levels_[level];
  LevelTraffic& t = l.traffic[instance_of(level, unit)];
  t.write_bytes += bytes;
  const uint64_t line = static_cast<uint64_t>(std::max(1, l.desc.line_bytes));
  const uint64_t end = address + static_cast<uint64_t>(bytes);
  const int64_t lines_done = static_cast<int64_t>(end / line - address / line); // line ends crossed
  t.requests += lines_done;
  t.hits += lines_done;
}

void CacheHierarchy::flush() {
  for (size_t level = 0; level < levels_.size(); ++level) {
    Level& l = levels_[level];
    if (!l.simulated) break;
    const int shared_by = std::max(1, l.desc.shared_by);
    for (size_t inst = 0; inst < l.caches.size(); ++inst) {
      const int unit = static_cast<int>(inst) * shared_by; // any unit under this instance
      const uint64_t line = static_cast<uint64_t>(l.caches[inst].line());
      for (uint64_t n : l.caches[inst].take_dirty())
        access(unit, n * line, static_cast<int>(line), true, level + 1);
    }
  }
}

} // namespace unitile::sim
