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
  next_.assign(std::max(threads, 1u), 0);
  end_.assign(next_.size(), 0);
  for (unsigned t = 1; t < threads; ++t)
    workers_.emplace_back([this, t] { worker(t); });
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

// Take chunks of the current job until none is left: thread `self`'s own range first,
// in order, then the others' ranges from their ends. Called with mutex_ held.
//
// Each thread owns the same contiguous share of every launch (thread t the chunks
// [t C / T, (t + 1) C / T)), as an OpenMP static schedule gives it, so a kernel launched
// again on the same data finds each thread's share in the caches of the core that read
// it last time; a dynamic queue hands the shares out in a different order each launch.
// (A shared queue also tends to give a thread the same chunks while the blocks take
// equal times, so the gain is in the cases it does not: the 128 x 50257 x 768 bf16 GEMM
// on two threads measured the same either way, docs/PERFORMANCE.md, "The LM head's C
// block, and owned shares".) Stealing keeps uneven blocks and a descheduled thread from
// stalling the launch.
void ThreadPool::drain(unsigned self) {
  const size_t n = next_.size();
  for (size_t k = 0; job_ && k < n; ++k) {
    const size_t owner = (self + k) % n;
    if (next_[owner] >= end_[owner])
      continue;
    // The owner takes its range from the front, a thief from the back: a thread that
    // wakes late still finds the first chunks of its share left for it.
    const uint64_t c = owner == self ? next_[owner]++ : --end_[owner];
    k = static_cast<size_t>(-1); // after each chunk, look at the own range first again
    const auto* job = job_;
    mutex_.unlock();
    (*job)(c);
    mutex_.lock();
    if (finished_.fetch_add(1) + 1 == chunks_)
      done_.notify_all();
  }
}

void ThreadPool::worker(unsigned self) {

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
    drain(self);
  }
}

void ThreadPool::run(uint64_t chunks, const std::function<void(uint64_t)>& chunk_fn) {
  if (chunks == 0)
    return;
  std::lock_guard<std::mutex> exclusive(one_job_);
  std::unique_lock<std::mutex> lock(mutex_);
  job_ = &chunk_fn;
  chunks_ = chunks;
  const uint64_t n = next_.size();
  for (uint64_t t = 0; t < n; ++t) {
    next_[t] = t * chunks / n;
    end_[t] = (t + 1) * chunks / n;
  }
  finished_ = 0;
  ++generation_;
  wake_.notify_all();
  drain(0);
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
