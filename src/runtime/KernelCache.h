// The kernel cache: compiled device binaries kept in memory and on disk under
// $UNITILE_CACHE_DIR (default ~/.cache/unitile), so a kernel compiles once per machine.
//
// The key hashes everything the binary depends on (Loop IR, generated source, dialect,
// HCD, toolchain version, options, cache format). Entries are written to a temporary
// file and renamed into place, so concurrent processes never see half an entry; reads
// check a header (magic, version, size, XXH3-64 of the payload) and a bad entry is
// reported, removed and rebuilt, never loaded. The cache cannot break a run: if the
// directory is unusable it degrades to memory only, with a note.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace unitile {

/// Bumped whenever the entry layout or what goes into the key changes.
inline constexpr uint32_t kKernelCacheFormatVersion = 1;

struct CacheKey {
  std::array<uint8_t, 16> bytes{}; // XXH3-128, canonical (big-endian) byte order
  std::string hex() const;         // 32 lowercase hex digits
  auto operator<=>(const CacheKey&) const = default;
};

struct CacheKeyParts {
  std::string loop_ir;  // to_string(LoopProgram)
  std::string source;   // generated source (so a codegen change cannot reuse stale binaries)
  std::string dialect;
  uint64_t hcd_hash = 0;
  std::string toolchain_version;
  std::string options;
};
CacheKey kernel_cache_key(const CacheKeyParts& parts);

/// Entry file bytes: 32-byte header then the payload.
std::vector<uint8_t> encode_cache_entry(const std::vector<uint8_t>& payload);
/// The payload, or nullopt with `why` set when the bytes are not a valid entry.
std::optional<std::vector<uint8_t>> decode_cache_entry(const std::vector<uint8_t>& bytes, std::string* why);

class KernelCache {
public:
  using NoteSink = std::function<void(const std::string&)>;
  using Binary = std::shared_ptr<const std::vector<uint8_t>>;

  /// `dir` nullopt: memory only. Notes ("unitile: note: ...") go to `notes`, stderr by
  /// default.
  explicit KernelCache(std::optional<std::filesystem::path> dir, NoteSink notes = {});

  /// $UNITILE_CACHE_DIR, else $HOME/.cache/unitile, else nullopt.
  static std::optional<std::filesystem::path> default_dir();

  /// The binary for `key`: from memory, else from a valid disk entry, else from
  /// `compile()` (then stored in both).
  Binary get_or_compile(const CacheKey& key, const std::function<std::vector<uint8_t>()>& compile);

  struct Stats {
    int memory_hits = 0;
    int disk_hits = 0;
    int compiles = 0;
    int corrupt_entries = 0;
  };
  Stats stats() const;
  bool disk_enabled() const;
  /// Where `key`'s entry lives (whether or not it exists); empty without a disk cache.
  std::filesystem::path entry_path(const CacheKey& key) const;

private:
  std::optional<std::vector<uint8_t>> read_disk(const CacheKey& key);
  void write_disk(const CacheKey& key, const std::vector<uint8_t>& payload);
  void disable_disk(const std::string& why);
  void note(const std::string& msg) const;

  mutable std::mutex mu_;
  std::optional<std::filesystem::path> kernels_dir_;
  NoteSink notes_;
  std::map<CacheKey, Binary> memory_;
  Stats stats_;
};

} // namespace unitile
