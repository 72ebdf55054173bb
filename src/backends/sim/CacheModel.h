// A simulated memory hierarchy: one set-associative LRU cache per instance of every
// cached level an HCD describes, fed the byte addresses a traced run produces.
//
// Policy (the same for every device, since an HCD says nothing finer):
//  - Levels are the HCD's [[memory]] tables minus "register" scope ones; the last one
//    is the backing memory and is not simulated (it always hits).
//  - A unit's access goes to the instance of each level it sits under (unit / shared_by).
//  - Write-back, write-allocate: a store miss fetches the line like a load (a CPU's
//    read-for-ownership) and marks it dirty; evicting a dirty line writes it to the next
//    level as a full-line write, which allocates there without a fetch.
//  - Levels are neither inclusive nor exclusive: a miss fills every level on the way.
//  - Associativity is not in the HCD: kWays ways, or fully associative when a level
//    has fewer lines; sets are indexed by line address modulo the set count.
//  - Hardware stream prefetchers: per unit, the reads that miss the first level are
//    followed as kStreams streams (the last line of each); a read within kStreamReach
//    lines after a stream's last line continues it, and the latency of whichever level
//    serves it is taken as hidden (a core's L2 streamer fetches such lines ahead from
//    L3 or memory). Only the other reads are "exposed" (LevelTraffic::exposed), the ones
//    the time model charges latency for. Writes back are never exposed.
// Traffic is counted per instance: requests arriving at a level and the bytes that
// crossed its upper edge (reads into the level above, writes back from it).
#pragma once

#include "hcd/Hcd.h"

#include <cstdint>
#include <string>
#include <vector>

namespace unitile::sim {

/// One cache instance: `size` bytes in lines of `line` bytes, LRU within each set.
class SetAssociativeCache {
public:
  SetAssociativeCache(int64_t size, int line, int ways);

  struct Result {
    bool hit = false;
    bool evicted_dirty = false;
    uint64_t evicted_line = 0; // line number (address / line) of the dirty victim
  };
  /// Look up the line holding byte `line_number * line`; on a miss, allocate it (the
  /// caller fetches it) and evict the least recently used line of the set.
  Result access(uint64_t line_number, bool make_dirty);
  /// Every dirty line, marked clean; the caller writes them back.
  std::vector<uint64_t> take_dirty();

  int line() const { return line_; }
  int ways() const { return ways_; }
  int64_t sets() const { return sets_; }

private:
  int line_, ways_;
  int64_t sets_;
  uint64_t clock_ = 0;
  std::vector<uint64_t> tags_;   // line number + 1 per way (0 = invalid)
  std::vector<uint64_t> stamps_; // last use per way
  std::vector<uint8_t> dirty_;
  uint64_t last_line_ = 0;       // the most recent line: hits again without a search
  int64_t last_way_ = -1;
};

/// Counters of one instance of one level.
struct LevelTraffic {
  int64_t requests = 0, hits = 0;
  int64_t exposed = 0;     // reads served here that no stream prefetcher predicted
  int64_t read_bytes = 0;  // bytes read from this level by the one above (or the core)
  int64_t write_bytes = 0; // bytes written into this level from above
  int64_t bytes() const { return read_bytes + write_bytes; }
};

class CacheHierarchy {
public:
  static constexpr int kWays = 8;
  /// Streams a unit's prefetcher follows, and how many lines ahead of a
  /// stream's last line a read may land and still continue it (a stride of two lines
  /// is a stream too: every other line of rows of 128-byte pieces).
  static constexpr int kStreams = 16;
  static constexpr uint64_t kStreamReach = 2;

  /// The levels of `hcd` for `units` compute units. Throws UserError when the HCD has
  /// no memory level or a level too large to simulate.
  CacheHierarchy(const hcd::Hcd& hcd, int units);

  /// An access of `bytes` bytes at byte address `address` by compute unit `unit`,
  /// entering at level `level` (0: the innermost simulated level).
  /// `prefetched`: the line was fetched ahead (set on the way down from the level
  /// below the first, which decides it).
  void access(int unit, uint64_t address, int bytes, bool is_store, size_t level = 0, bool prefetched = false);
  /// Write every dirty line back to the backing memory (the end of a launch).
  void flush();

  struct Level {
    hcd::MemoryLevel desc;
    bool simulated = false;                // false: the backing memory
    std::vector<SetAssociativeCache> caches; // one per instance (when simulated)
    std::vector<LevelTraffic> traffic;       // one per instance
  };
  const std::vector<Level>& levels() const { return levels_; }
  size_t instance_of(size_t level, int unit) const;
  /// Zero every counter, keeping the caches' contents.
  void reset_counters();

  /// An access served by level `level` itself, with no caching behind it: a buffer the
  /// Loop IR placed in that level's scope (an NPU's local memory, GPU shared memory).
  void access_resident(int unit, int bytes, bool is_store, size_t level);

  /// A streaming (non-temporal) store: its bytes go to the backing memory through a
  /// write-combining buffer, allocating in no cache and reading nothing first; one
  /// request per line completed. (A cached copy of the line is not invalidated: the
  /// outputs streamed are ones the launch never reads.)
  void access_streamed(int unit, uint64_t address, int bytes);

private:
  /// Whether a read of line `line_number` by `unit`, missing the first level, continues
  /// one of the unit's streams; either way the stream table learns it.
  bool continues_stream(int unit, uint64_t line_number);

  int units_;
  std::vector<Level> levels_;
  // streams_[unit * kStreams + s]: the last line (+1) of stream s (0: none), and per
  // unit the round-robin slot the next new stream takes.
  std::vector<uint64_t> streams_;
  std::vector<uint8_t> next_stream_;
};

} // namespace unitile::sim
