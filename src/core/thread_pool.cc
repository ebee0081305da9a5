#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace llmpack {

namespace {

// Spins until done() or `spin` passes; returns done(). Two phases:
//  - first, for up to kPauseSpin, a `pause` loop: the decode calls of a token
//    follow one another a few microseconds apart, and a yield is a system
//    call that costs about 1.2 us on a paravirtualized VM, so a thread that
//    yields between checks sees a new job or a finished one about a
//    microsecond late; with pause the hand-over takes a few cache-line
//    transfers. (An empty parallel_for on 2 threads of a Zen 5 VM: 1.65-2.07
//    us with yields only, 1.14-1.15 us with the pause phase.)
//  - then a yielding loop to the end of `spin`, which gives the core to any
//    runnable thread and costs ~1 us a check.
// On an oversubscribed machine the thread being waited for is often not
// running at all, and every pause phase is lost time: with a 20 us phase on
// every wait, stories110M decode on 2 threads beside a busy process ran at
// half the speed of yields only (docs/PERFORMANCE.md section 22). So each
// waiting thread keeps a PauseCredit: waits that end during the pause phase
// earn it, a pause phase that runs out costs many of them, and the phase is
// skipped while the credit is spent (each skipped wait earns one back, so it
// is tried again now and then).
constexpr int kChecksPerClockRead = 8;
constexpr std::chrono::microseconds kPauseSpin{10};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

template <typename Done>
bool pause_until(Done done, std::chrono::steady_clock::time_point end) {
  for (;;) {
    for (int i = 0; i < kChecksPerClockRead; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= end) return done();
  }
}

template <typename Done>
bool spin_until(Done done, std::chrono::microseconds spin, PauseCredit& credit) {
  const auto start = std::chrono::steady_clock::now();
  if (credit.pause_first()) {
    const bool ended = pause_until(done, start + std::min(spin, kPauseSpin));
    credit.record(ended);
    if (ended) return true;
  } else {
    credit.skip();
  }
  const auto deadline = start + spin;
  for (;;) {
    for (int i = 0; i < kChecksPerClockRead; ++i) {
      if (done()) return true;
      std::this_thread::yield();
    }
    if (std::chrono::steady_clock::now() >= deadline) return done();
  }
}

}  // namespace

ThreadPool::ThreadPool(int n_threads, std::chrono::microseconds spin)
    : n_threads_(std::max(1, n_threads)), spin_(std::max(spin, std::chrono::microseconds(0))) {
  workers_.reserve(n_threads_ - 1);
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shutting_down_.store(true);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_range(int index) {
  if (job_dynamic_) {
    for (;;) {
      const int64_t begin = next_piece_.fetch_add(1, std::memory_order_relaxed) * job_grain_;
      if (begin >= job_n_) return;
      (*job_)(index, begin, std::min(job_n_, begin + job_grain_));
    }
  }
  const int64_t blocks = (job_n_ + job_grain_ - 1) / job_grain_;
  const int64_t per = blocks / n_threads_;
  const int64_t extra = blocks % n_threads_;
  const int64_t first_block = index * per + std::min<int64_t>(index, extra);
  const int64_t n_blocks = per + (index < extra ? 1 : 0);
  const int64_t begin = first_block * job_grain_;
  const int64_t end = std::min(job_n_, (first_block + n_blocks) * job_grain_);
  if (begin < end) (*job_)(index, begin, end);
}

void ThreadPool::parallel_for(int64_t n, RangeFn fn, int64_t grain) { run_job(fn, n, grain, false); }

void ThreadPool::parallel_for_dynamic(int64_t n, RangeFn fn, int64_t grain) {
  run_job(fn, n, grain, true);
}

// Wake-up protocol (no lost wake-ups without a mutex on the fast path): the
// caller publishes the job, then stores generation_ and loads sleepers_; a
// worker about to block stores sleepers_ (under mutex_) and then loads
// generation_ in the wait predicate. All four are seq_cst, so at least one side
// sees the other's store: either the worker sees the new generation and does
// not block, or the caller sees a sleeper and notifies under mutex_. Completion
// uses the same scheme with pending_ and caller_waiting_.
void ThreadPool::run_job(const RangeFn& fn, int64_t n, int64_t grain, bool dynamic) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  if (n_threads_ == 1 || n <= grain) {  // one piece: no worker to wake
    fn(0, 0, n);
    return;
  }
  job_ = &fn;
  job_n_ = n;
  job_grain_ = grain;
  job_dynamic_ = dynamic;
  next_piece_.store(0, std::memory_order_relaxed);
  pending_.store(n_threads_ - 1);
  generation_.fetch_add(1);
  if (sleepers_.load() > 0) {
    { std::lock_guard<std::mutex> lock(mutex_); }
    wake_.notify_all();
  }
  run_range(0);
  if (!spin_until([this] { return pending_.load() == 0; }, spin_, caller_credit_)) {
    std::unique_lock<std::mutex> lock(mutex_);
    caller_waiting_.store(true);
    done_.wait(lock, [this] { return pending_.load() == 0; });
    caller_waiting_.store(false);
  }
  job_ = nullptr;
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  PauseCredit credit;
  for (;;) {
    auto has_news = [&] { return shutting_down_.load() || generation_.load() != seen; };
    if (!spin_until(has_news, spin_, credit)) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, has_news);
      sleepers_.fetch_sub(1);
    }
    if (shutting_down_.load()) return;
    seen = generation_.load();
    run_range(index);
    // After this decrement the job (and fn) may be gone: touch only the pool.
    if (pending_.fetch_sub(1) == 1 && caller_waiting_.load()) {
      { std::lock_guard<std::mutex> lock(mutex_); }
      done_.notify_one();
    }
  }
}

}  // namespace llmpack
