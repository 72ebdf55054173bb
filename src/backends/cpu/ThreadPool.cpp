// The cpu plugin's persistent thread pool: grid blocks run on it as a GPU runs them.
#include "CpuPlugin.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

namespace unitile::cpu {

ThreadPool::ThreadPool(unsigned threads) {
  // UNITILE_SPIN_US: how long an idle thread polls for the next launch before it sleeps
  // (default 100 us; 0 sleeps at once). Short kernels launched back to back (a model's
  // layers, `--repeat`) otherwise pay a futex wake-up per thread per launch: 256^3 f32
  // GEMM on two threads takes 0.1-0.2 ms, of the order of a wake-up on a VM.
  int64_t us = 100;
  if (const char* env = std::getenv("UNITILE_SPIN_US")) {
    char* end = nullptr;
    const long long v = std::strtoll(env, &end, 10);
    if (end != env && *end == 0 && v >= 0) us = std::min<long long>(v, 1000000);
  }
  spin_ns_ = us * 1000;
  for (unsigned t = 1; t < threads; ++t)
    workers_.emplace_back([this] { worker(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_)
    w.join();
}

template <class Ready> bool ThreadPool::spin(Ready ready) const {
  if (spin_ns_ <= 0 || workers_.empty()) return ready();
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(spin_ns_);
  for (unsigned n = 0;; ++n) {
    if (ready()) return true;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
    if ((n & 63) == 63 && std::chrono::steady_clock::now() >= until) return ready();
  }
}

// Take chunks of the current job until none is left. Called with mutex_ held.
void ThreadPool::drain() {
  while (job_ && next_ < chunks_) {
    uint64_t c = next_++;
    const auto* job = job_;
    mutex_.unlock();
    (*job)(c);
    mutex_.lock();
    if (finished_.fetch_add(1) + 1 == chunks_)
      done_.notify_all();
  }
}

void ThreadPool::worker() {
  std::unique_lock<std::mutex> lock(mutex_);
  uint64_t seen = generation_;
  for (;;) {
    auto woken = [&] { return stopping_ || generation_ != seen; };
    if (!woken()) {
      lock.unlock();
      spin(woken);
      lock.lock();
      wake_.wait(lock, woken);
    }
    if (stopping_)
      return;
    seen = generation_;
    drain();
  }
}

void ThreadPool::run(uint64_t chunks, const std::function<void(uint64_t)>& chunk_fn) {
  if (chunks == 0)
    return;
  std::lock_guard<std::mutex> exclusive(one_job_);
  std::unique_lock<std::mutex> lock(mutex_);
  job_ = &chunk_fn;
  chunks_ = chunks;
  next_ = 0;
  finished_ = 0;
  ++generation_;
  wake_.notify_all();
  drain();
  auto all_done = [&] { return finished_ == chunks_; };
  if (!all_done()) {
    lock.unlock();
    spin(all_done);
    lock.lock();
    done_.wait(lock, all_done);
  }
  job_ = nullptr;
}

} // namespace unitile::cpu
