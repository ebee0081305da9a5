// A persistent pool of worker threads. parallel_for splits [0, n) into one
// contiguous range per thread; the calling thread takes part, so a pool of
// n_threads runs n_threads - 1 workers. No thread is created per call.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace llmpack {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int n_threads() const { return n_threads_; }

  // Calls fn(thread_index, begin, end) once per thread over a split of [0, n).
  // Ranges are multiples of `grain` (except the last); empty ranges are skipped.
  // fn must not throw. Blocks until every range is done.
  using RangeFn = std::function<void(int thread_index, int64_t begin, int64_t end)>;
  void parallel_for(int64_t n, const RangeFn& fn, int64_t grain = 1);

 private:
  void worker_loop(int index);
  void run_range(int index);

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const RangeFn* job_ = nullptr;
  int64_t job_n_ = 0;
  int64_t job_grain_ = 1;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool shutting_down_ = false;
};

}  // namespace llmpack
