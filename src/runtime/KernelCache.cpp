// Kernel cache keys, the entry file format, and the atomic write / validating read.
#include "runtime/KernelCache.h"

#include <fmt/core.h>
#include <xxhash.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>

#include <fcntl.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace unitile {

namespace {

constexpr char kMagic[8] = {'U', 'T', 'K', 'C', 'A', 'C', 'H', 'E'};
constexpr size_t kHeaderBytes = 32; // magic[8], u32 version, u32 reserved, u64 size, u64 xxh3-64

void put_le(std::vector<uint8_t>& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

uint64_t get_le(const std::vector<uint8_t>& in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | in[at + static_cast<size_t>(i)];
  return v;
}

// Each part goes in with its length, so ("ab","c") and ("a","bc") hash differently.
void hash_part(XXH3_state_t* st, const void* data, size_t len) {
  const uint64_t n = len;
  XXH3_128bits_update(st, &n, sizeof n);
  XXH3_128bits_update(st, data, len);
}
void hash_part(XXH3_state_t* st, const std::string& s) { hash_part(st, s.data(), s.size()); }

bool write_all(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

} // namespace

std::string CacheKey::hex() const {
  std::string s;
  for (uint8_t b : bytes) s += fmt::format("{:02x}", b);
  return s;
}

CacheKey kernel_cache_key(const CacheKeyParts& parts) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_128bits_reset(st);
  const uint32_t version = kKernelCacheFormatVersion;
  hash_part(st, &version, sizeof version);
  hash_part(st, parts.loop_ir);
  hash_part(st, parts.source);
  hash_part(st, parts.dialect);
  hash_part(st, &parts.hcd_hash, sizeof parts.hcd_hash);
  hash_part(st, parts.toolchain_version);
  hash_part(st, parts.options);
  const XXH128_hash_t h = XXH3_128bits_digest(st);
  XXH3_freeState(st);
  XXH128_canonical_t canon;
  XXH128_canonicalFromHash(&canon, h);
  CacheKey key;
  std::memcpy(key.bytes.data(), canon.digest, key.bytes.size());
  return key;
}

std::vector<uint8_t> encode_cache_entry(const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> out(kMagic, kMagic + sizeof kMagic);
  put_le(out, kKernelCacheFormatVersion, 4);
  put_le(out, 0, 4);
  put_le(out, payload.size(), 8);
  put_le(out, XXH3_64bits(payload.data(), payload.size()), 8);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

std::optional<std::vector<uint8_t>> decode_cache_entry(const std::vector<uint8_t>& bytes, std::string* why) {
  auto fail = [&](std::string w) -> std::optional<std::vector<uint8_t>> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  if (bytes.size() < kHeaderBytes) return fail(fmt::format("{} bytes, shorter than the header", bytes.size()));
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) return fail("bad magic");
  const uint64_t version = get_le(bytes, 8, 4);
  if (version != kKernelCacheFormatVersion)
    return fail(fmt::format("format version {}, expected {}", version, kKernelCacheFormatVersion));
  const uint64_t size = get_le(bytes, 16, 8);
  if (size != bytes.size() - kHeaderBytes)
    return fail(fmt::format("payload is {} bytes, header says {}", bytes.size() - kHeaderBytes, size));
  std::vector<uint8_t> payload(bytes.begin() + kHeaderBytes, bytes.end());
  if (XXH3_64bits(payload.data(), payload.size()) != get_le(bytes, 24, 8)) return fail("payload hash mismatch");
  return payload;
}

KernelCache::KernelCache(std::optional<fs::path> dir, NoteSink notes) : notes_(std::move(notes)) {
  if (!dir) return;
  std::error_code ec;
  const fs::path kernels = *dir / "kernels";
  fs::create_directories(kernels, ec);
  if (ec) {
    kernels_dir_ = kernels;
    disable_disk(ec.message());
    return;
  }
  // create_directories succeeds on an existing read-only directory: probe for writing.
  if (::access(kernels.c_str(), W_OK | X_OK) != 0) {
    kernels_dir_ = kernels;
    disable_disk(std::strerror(errno));
    return;
  }
  kernels_dir_ = kernels;
}

std::optional<fs::path> KernelCache::default_dir() {
  if (const char* d = std::getenv("UNITILE_CACHE_DIR"); d && *d) return fs::path(d);
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".cache" / "unitile";
  return std::nullopt;
}

void KernelCache::note(const std::string& msg) const {
  const std::string line = "unitile: note: " + msg;
  if (notes_)
    notes_(line);
  else
    std::cerr << line << "\n";
}

void KernelCache::disable_disk(const std::string& why) {
  note(fmt::format("kernel cache directory {} is not usable ({}); continuing without a disk cache",
                   kernels_dir_ ? kernels_dir_->string() : "?", why));
  kernels_dir_.reset();
}

bool KernelCache::disk_enabled() const {
  std::lock_guard lock(mu_);
  return kernels_dir_.has_value();
}

KernelCache::Stats KernelCache::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

fs::path KernelCache::entry_path(const CacheKey& key) const {
  if (!kernels_dir_) return {};
  return *kernels_dir_ / (key.hex() + ".bin");
}

std::optional<std::vector<uint8_t>> KernelCache::read_disk(const CacheKey& key) {
  if (!kernels_dir_) return std::nullopt;
  const fs::path path = entry_path(key);
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string why;
  auto payload = decode_cache_entry(bytes, &why);
  if (payload) return payload;
  ++stats_.corrupt_entries;
  note(fmt::format("rebuilding corrupt cache entry {} ({})", path.string(), why));
  std::error_code ec;
  fs::remove(path, ec);
  return std::nullopt;
}

void KernelCache::write_disk(const CacheKey& key, const std::vector<uint8_t>& payload) {
  if (!kernels_dir_) return;
  const fs::path final_path = entry_path(key);
  // A name no other process or thread can pick: pid plus random bits, created exclusively.
  std::random_device rd;
  const fs::path tmp = *kernels_dir_ / fmt::format(".{}.{}.{:08x}.tmp", key.hex(), ::getpid(), rd());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return disable_disk(fmt::format("cannot create {}: {}", tmp.string(), std::strerror(errno)));
  const std::vector<uint8_t> bytes = encode_cache_entry(payload);
  const bool ok = write_all(fd, bytes.data(), bytes.size());
  const int saved = errno;
  ::close(fd);
  if (!ok) {
    ::unlink(tmp.c_str());
    return disable_disk(fmt::format("writing {} failed: {}", tmp.string(), std::strerror(saved)));
  }
  // rename(2) replaces atomically: readers see the old entry, the new one, or none.
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    disable_disk(fmt::format("renaming into {} failed: {}", final_path.string(), std::strerror(e)));
  }
}

KernelCache::Binary KernelCache::get_or_compile(const CacheKey& key,
                                                const std::function<std::vector<uint8_t>()>& compile) {
  {
    std::lock_guard lock(mu_);
    if (auto it = memory_.find(key); it != memory_.end()) {
      ++stats_.memory_hits;
      return it->second;
    }
    if (auto payload = read_disk(key)) {
      ++stats_.disk_hits;
      auto bin = std::make_shared<const std::vector<uint8_t>>(std::move(*payload));
      memory_.emplace(key, bin);
      return bin;
    }
  }
  // Compile outside the lock: it may take seconds, and a compile error must propagate.
  auto bin = std::make_shared<const std::vector<uint8_t>>(compile());
  std::lock_guard lock(mu_);
  ++stats_.compiles;
  write_disk(key, *bin);
  memory_.emplace(key, bin);
  return bin;
}

} // namespace unitile
