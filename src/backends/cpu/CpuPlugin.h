// Internal declarations of the cpu device plugin: its handle types, the toolchain calls
// (compile C to a shared object, load one) and the block thread pool.
#pragma once

#include "codegen/CDialectAbi.h"
#include "unitile/device.h"
#include "unitile/host_memory.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

struct ut_buffer {
  void* data;
  size_t bytes;
  bool borrowed = false; // wrapped host memory (host_memory.h): free() leaves `data` alone
};

struct ut_binary {
  std::vector<unsigned char> bytes; // the shared object
};

struct ut_kernel {
  void* library = nullptr;       // dlopen handle
  ut_c_entry_fn entry = nullptr; // the generated function
  // Kept open (or on disk) while loaded: the dynamic loader matches libraries by path, so
  // the path must not be reused by another binary until this one is unloaded.
  int fd = -1;
  std::string temp_path;
};

namespace unitile::cpu {

/// Write `message` into `err` (when given) and return `status`.
ut_status fail(ut_error* err, ut_status status, const std::string& message);

/// First line of `cc --version`, computed once.
const char* toolchain_version();

/// Compile C source with the compiler and flags in `options` into a shared object.
ut_status compile(const char* source, const char* options, ut_binary** out, ut_error* err);

/// Load a shared object's bytes and look up `entry`.
ut_status load(const void* data, size_t size, const char* entry, ut_kernel** out, ut_error* err);
void unload(ut_kernel* k);

/// A persistent pool that runs chunks of work on `threads` threads (the caller is one of
/// them). One job at a time; run() returns when every chunk has finished.
class ThreadPool {
public:
  explicit ThreadPool(unsigned threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned threads() const { return static_cast<unsigned>(workers_.size()) + 1; }
  void run(uint64_t chunks, const std::function<void(uint64_t)>& chunk_fn);

private:
  void worker(unsigned self);
  void drain(unsigned self);

  // Poll `ready` for up to spin_ns_ (a pause between polls) before sleeping on a
  // condition variable: a launch that follows within that time starts on every thread
  // at once instead of after a futex wake-up each.
  template <class Ready> bool spin(Ready ready) const;

  std::vector<std::thread> workers_;
  std::mutex one_job_; // held for a whole run(): launches from several host threads queue
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(uint64_t)>* job_ = nullptr;
  uint64_t chunks_ = 0;
  std::vector<uint64_t> next_, end_; // per thread: the next and the end of its own range
  // Written under mutex_, read without it while spinning.
  std::atomic<uint64_t> finished_{0}, generation_{0};
  std::atomic<bool> stopping_{false};
  int64_t spin_ns_ = 0;
};

} // namespace unitile::cpu
