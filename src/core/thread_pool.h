// A persistent pool of worker threads. parallel_for splits [0, n) into one
// contiguous range per thread; the calling thread takes part, so a pool of
// n_threads runs n_threads - 1 workers. No thread is created per call.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
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
  // A non-owning reference to a callable, so a call allocates nothing
  // (std::function would heap-allocate for larger captures; P6).
  class RangeFn {
   public:
    template <typename F>
    RangeFn(const F& f)  // NOLINT: implicit on purpose
        : object_(&f), call_([](const void* o, int t, int64_t b, int64_t e) {
            (*static_cast<const F*>(o))(t, b, e);
          }) {}
    void operator()(int t, int64_t b, int64_t e) const { call_(object_, t, b, e); }

   private:
    const void* object_;
    void (*call_)(const void*, int, int64_t, int64_t);
  };
  void parallel_for(int64_t n, RangeFn fn, int64_t grain = 1);

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
