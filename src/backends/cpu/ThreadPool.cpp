// The cpu plugin's persistent thread pool: grid blocks run on it as a GPU runs them.
#include "CpuPlugin.h"

namespace unitile::cpu {

ThreadPool::ThreadPool(unsigned threads) {
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

// Take chunks of the current job until none is left. Called with mutex_ held.
void ThreadPool::drain() {
  while (job_ && next_ < chunks_) {
    uint64_t c = next_++;
    const auto* job = job_;
    mutex_.unlock();
    (*job)(c);
    mutex_.lock();
    if (++finished_ == chunks_)
      done_.notify_all();
  }
}

void ThreadPool::worker() {
  std::unique_lock<std::mutex> lock(mutex_);
  uint64_t seen = generation_;
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
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
  next_ = finished_ = 0;
  ++generation_;
  wake_.notify_all();
  drain();
  done_.wait(lock, [&] { return finished_ == chunks_; });
  job_ = nullptr;
}

} // namespace unitile::cpu
