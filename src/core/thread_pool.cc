#include "core/thread_pool.h"

#include <algorithm>

namespace llmpack {

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  workers_.reserve(n_threads_ - 1);
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shutting_down_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_range(int index) {
  const int64_t blocks = (job_n_ + job_grain_ - 1) / job_grain_;
  const int64_t per = blocks / n_threads_;
  const int64_t extra = blocks % n_threads_;
  const int64_t first_block = index * per + std::min<int64_t>(index, extra);
  const int64_t n_blocks = per + (index < extra ? 1 : 0);
  const int64_t begin = first_block * job_grain_;
  const int64_t end = std::min(job_n_, (first_block + n_blocks) * job_grain_);
  if (begin < end) (*job_)(index, begin, end);
}

void ThreadPool::parallel_for(int64_t n, RangeFn fn, int64_t grain) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  if (n_threads_ == 1 || n <= grain) {
    fn(0, 0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    job_n_ = n;
    job_grain_ = grain;
    pending_ = n_threads_ - 1;
    ++generation_;
  }
  wake_.notify_all();
  run_range(0);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return shutting_down_ || generation_ != seen; });
      if (shutting_down_) return;
      seen = generation_;
    }
    run_range(index);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

}  // namespace llmpack
