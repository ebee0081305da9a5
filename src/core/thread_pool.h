// A persistent pool of worker threads. parallel_for splits [0, n) into one
// contiguous range per thread; parallel_for_dynamic into grain-sized pieces.
// Either way each piece goes to the first thread free to claim it, and a call
// ends when its pieces are done: a worker the OS does not run at the time
// (another process on its core) leaves its pieces to the others instead of
// holding the call until it is scheduled. The calling thread takes part, so a
// pool of n_threads runs n_threads - 1 workers. No thread is created per call.
// Workers spin (a short pause loop, then yielding, 2 ms in all by default;
// thread_pool.cc says why) on an atomic generation counter
// before sleeping on a condvar, and the caller spins as long for completion
// before blocking, so the calls of a decode token (~130 on the 1B shape, one
// after another) skip kernel wake-ups, which on a VM cost 0.1 ms and more.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/status.h"
#include "core/thread_placement.h"

namespace llmpack {

// Whether a waiting thread spins with `pause` before it spins with yields
// (thread_pool.cc says why): a score that waits ending in the pause phase
// raise by one, up to kMax, and a pause phase that runs out lowers by
// kMissCost; at zero or below the pause phase is skipped, and each skipped
// wait raises the score by one. So pausing stays on while fewer than about
// one wait in kMissCost + 1 misses, and is retried every kMissCost or so
// waits when most miss.
class PauseCredit {
 public:
  static constexpr int kMax = 128;
  static constexpr int kMissCost = 32;
  bool pause_first() const { return score_ > 0; }
  void record(bool ended_in_pause) {
    score_ = ended_in_pause ? std::min(kMax, score_ + 1) : score_ - kMissCost;
  }
  void skip() { ++score_; }
  int score() const { return score_; }

 private:
  int score_ = kMax;
};

class ThreadPool {
 public:
  // How long an idle thread spins before it blocks. At 50 us, a decode token
  // of stories110M on a 2-vCPU VM put a thread to sleep on 2-23 of its ~85 calls
  // (a share that finished more than 50 us before the other, or the gap of
  // sampling between tokens), and decode ran 1.1-1.5x slower than with 2 ms
  // (docs/PERFORMANCE.md section 18). The spin yields, so on an
  // oversubscribed machine other threads still get the core.
  static constexpr std::chrono::microseconds kDefaultSpin{2000};
  explicit ThreadPool(int n_threads, std::chrono::microseconds spin = kDefaultSpin);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int n_threads() const { return n_threads_; }

  // How long a waiting thread spins before it blocks (between calls; 0:
  // block at once). bench's --poll sets it.
  void set_spin(std::chrono::microseconds spin);
  std::chrono::microseconds spin() const { return std::chrono::microseconds(spin_us_.load()); }

  // Places the threads (thread_placement.h) between calls: thread 0 is the
  // calling thread, which runs its share of each call and is placed too;
  // workers 1..n-1 follow. An empty placement puts every thread back on the
  // CPUs the pool was created with (those of the thread that created it),
  // which its CPUs (mask or groups) must lie within: the error names the CPUs
  // outside them. The pool's
  // destructor, run on the thread it placed, puts that thread back too.
  Status place(const ThreadPlacement& placement);
  // Each thread's CPUs as the kernel has them now (thread 0: the calling
  // thread's), to show where place() put them.
  std::vector<std::vector<int>> thread_cpus_now();

  // Calls fn(thread_index, begin, end) over a split of [0, n) into one range
  // per thread, each run by the thread that claims it (thread_index is the
  // running thread's, for its scratch; a thread may run two ranges).
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

  // Calls fn(thread_index, begin, end) on the pieces [k * grain, (k + 1) *
  // grain) of [0, n) (the last one shorter), each piece taken in order by the
  // first thread free to take it. For long pieces (prefill matmuls, ~1 ms
  // each): a thread slowed down (by another tenant of a shared core, say)
  // leaves its share to the others instead of holding them at the barrier.
  // Costs one atomic increment a piece; blocks until every piece is done.
  void parallel_for_dynamic(int64_t n, RangeFn fn, int64_t grain);

 // Tests: called by each worker when it sees a new job, before it claims
  // pieces (set before the first call; a hook that blocks stands in for a
  // worker the OS does not run).
  void set_before_claims_for_test(std::function<void(int)> hook) { before_claims_for_test_ = std::move(hook); }

 private:
  // claim_: the job's generation in the high 32 bits, the next piece to take
  // in the low 32 (kClosed while the job is set up or after it ended).
  static constexpr int kGenerationShift = 32;
  static constexpr uint64_t kPieceMask = 0xffffffffu;
  static constexpr uint64_t kClosed = kPieceMask;

  void worker_loop(int index);
  void take_pieces(int index);
  void piece_range(int64_t piece, int64_t* begin, int64_t* end) const;
  void run_job(const RangeFn& fn, int64_t n, int64_t grain, bool dynamic);

  void wait_for_worker_ids();

  int n_threads_;
  std::atomic<int64_t> spin_us_;
  std::vector<std::thread> workers_;
  std::vector<int> worker_ids_;    // each worker's kernel thread id (0 until it starts), under mutex_
  std::condition_variable started_;
  std::vector<int> created_cpus_;  // the creating thread's CPUs: where workers start, and empty placement
  int placed_caller_ = 0;          // the kernel id of a calling thread place() pinned, 0 if none
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  // The job: written by the caller while claim_ is closed, read by the
  // threads that claim its pieces (atomics, as a thread that looks at a job
  // that has ended may read them while the next one is set up; its claim then
  // fails).
  std::atomic<const RangeFn*> job_{nullptr};
  std::atomic<int64_t> job_n_{0};
  std::atomic<int64_t> job_grain_{1};
  std::atomic<bool> job_dynamic_{false};
  std::atomic<int64_t> job_pieces_{0};
  std::atomic<uint64_t> claim_{kClosed};  // (generation, next piece), see above
  std::atomic<int64_t> done_pieces_{0};   // pieces of the job finished
  std::atomic<uint64_t> generation_{0};   // bumped once per job
  std::atomic<int> sleepers_{0};          // workers blocked (or blocking) on wake_
  std::atomic<bool> caller_waiting_{false};  // caller blocked on done_
  std::atomic<bool> shutting_down_{false};
  PauseCredit caller_credit_;  // the calling thread's, for its completion waits
  std::function<void(int)> before_claims_for_test_;
};

}  // namespace llmpack
