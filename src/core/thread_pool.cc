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
    : n_threads_(std::max(1, n_threads)),
      spin_us_(std::max<int64_t>(0, spin.count())),
      worker_ids_(n_threads_, 0),
      created_cpus_(thread_cpus(this_thread_id())) {
  workers_.reserve(n_threads_ - 1);
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  if (placed_caller_ != 0 && placed_caller_ == this_thread_id())
    (void)set_thread_cpus(placed_caller_, created_cpus_);  // best effort: nothing to report to
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shutting_down_.store(true);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

// The pieces of the current job: its fields are written before claim_ opens
// it, and stay until every piece is done. A static job has one piece a thread
// (the blocks of `grain` split as evenly as they go), a dynamic one a piece a
// grain.
void ThreadPool::piece_range(int64_t piece, int64_t* begin, int64_t* end) const {
  const int64_t n = job_n_.load(std::memory_order_relaxed), grain = job_grain_.load(std::memory_order_relaxed);
  if (job_dynamic_.load(std::memory_order_relaxed)) {
    *begin = piece * grain;
    *end = std::min(n, *begin + grain);
    return;
  }
  const int64_t blocks = (n + grain - 1) / grain;
  const int64_t per = blocks / n_threads_, extra = blocks % n_threads_;
  const int64_t first_block = piece * per + std::min<int64_t>(piece, extra);
  const int64_t n_blocks = per + (piece < extra ? 1 : 0);
  *begin = first_block * grain;
  *end = std::min(n, (first_block + n_blocks) * grain);
}

// Takes the open job's pieces one at a time until none is left. A piece is
// claimed by advancing claim_ from (generation, k) to (generation, k + 1) in
// one compare-exchange, so a thread that reads the word of a job that has
// since ended (or of one not yet open) claims nothing. Each finished piece
// counts in done_pieces_; whoever finishes the last wakes a blocked caller.
void ThreadPool::take_pieces(int index) {
  uint64_t word = claim_.load(std::memory_order_acquire);
  for (;;) {
    const uint64_t piece = word & kPieceMask;
    if (piece == kClosed || static_cast<int64_t>(piece) >= job_pieces_.load(std::memory_order_relaxed)) return;
    if (!claim_.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel, std::memory_order_acquire))
      continue;  // word now holds the current value: look again
    const int64_t pieces = job_pieces_.load(std::memory_order_relaxed);
    int64_t begin = 0, end = 0;
    piece_range(static_cast<int64_t>(piece), &begin, &end);
    if (begin < end) (*job_.load(std::memory_order_relaxed))(index, begin, end);
    // After the last piece counts, the job (and fn) may be gone: touch only the pool.
    if (done_pieces_.fetch_add(1) + 1 == pieces && caller_waiting_.load()) {
      { std::lock_guard<std::mutex> lock(mutex_); }
      done_.notify_one();
    }
    word = claim_.load(std::memory_order_acquire);
  }
}

void ThreadPool::set_spin(std::chrono::microseconds spin) { spin_us_.store(std::max<int64_t>(0, spin.count())); }

void ThreadPool::wait_for_worker_ids() {
  std::unique_lock<std::mutex> lock(mutex_);
  started_.wait(lock, [this] {
    return std::all_of(worker_ids_.begin() + 1, worker_ids_.end(), [](int id) { return id != 0; });
  });
}

Status ThreadPool::place(const ThreadPlacement& placement) {
  LLMPACK_RETURN_IF_ERROR(check_cpus_within(placement.all_cpus(), created_cpus_));
  wait_for_worker_ids();
  worker_ids_[0] = this_thread_id();
  // Set first, so a placement that fails part way still puts the caller back.
  placed_caller_ = placement.empty() ? 0 : worker_ids_[0];
  for (int i = 0; i < n_threads_; ++i) {
    const std::vector<int> cpus = placement.empty() ? created_cpus_ : placement.cpus_of_thread(i);
    LLMPACK_RETURN_IF_ERROR(set_thread_cpus(worker_ids_[static_cast<size_t>(i)], cpus));
  }
  return ok_status();
}

std::vector<std::vector<int>> ThreadPool::thread_cpus_now() {
  wait_for_worker_ids();
  std::vector<std::vector<int>> cpus;
  for (int i = 0; i < n_threads_; ++i) cpus.push_back(thread_cpus(i == 0 ? this_thread_id() : worker_ids_[i]));
  return cpus;
}

void ThreadPool::parallel_for(int64_t n, RangeFn fn, int64_t grain) { run_job(fn, n, grain, false); }

void ThreadPool::parallel_for_dynamic(int64_t n, RangeFn fn, int64_t grain) {
  run_job(fn, n, grain, true);
}

// Wake-up protocol (no lost wake-ups without a mutex on the fast path): the
// caller opens the job, then stores generation_ and loads sleepers_; a
// worker about to block stores sleepers_ (under mutex_) and then loads
// generation_ in the wait predicate. All four are seq_cst, so at least one side
// sees the other's store: either the worker sees the new generation and does
// not block, or the caller sees a sleeper and notifies under mutex_. Completion
// uses the same scheme with done_pieces_ and caller_waiting_.
//
// The job is done when its pieces are, not when every worker has come by: a
// worker that the OS has not run since the last job (another process holds its
// core) finds the job taken when it runs, instead of holding the caller, which
// takes the pieces that no thread has claimed. A worker stalled inside a piece
// still holds the call until that piece ends.
void ThreadPool::run_job(const RangeFn& fn, int64_t n, int64_t grain, bool dynamic) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  if (n_threads_ == 1 || n <= grain) {  // one piece: no worker to wake
    fn(0, 0, n);
    return;
  }
  if (dynamic && (n - 1) / grain + 1 >= static_cast<int64_t>(kClosed))  // more pieces than claim_ can number
    grain = (n - 1) / static_cast<int64_t>(kClosed - 1) + 1;
  const uint64_t generation = generation_.load() + 1;
  claim_.store(generation << kGenerationShift | kClosed, std::memory_order_relaxed);  // no claims while it is set up
  job_.store(&fn, std::memory_order_relaxed);
  job_n_.store(n, std::memory_order_relaxed);
  job_grain_.store(grain, std::memory_order_relaxed);
  job_dynamic_.store(dynamic, std::memory_order_relaxed);
  const int64_t pieces = dynamic ? (n + grain - 1) / grain : std::min<int64_t>(n_threads_, (n + grain - 1) / grain);
  job_pieces_.store(pieces, std::memory_order_relaxed);
  done_pieces_.store(0, std::memory_order_relaxed);
  claim_.store(generation << kGenerationShift, std::memory_order_release);  // open: piece 0 is next
  generation_.store(generation);
  if (sleepers_.load() > 0) {
    { std::lock_guard<std::mutex> lock(mutex_); }
    wake_.notify_all();
  }
  take_pieces(0);
  if (!spin_until([this, pieces] { return done_pieces_.load() == pieces; }, spin(), caller_credit_)) {
    std::unique_lock<std::mutex> lock(mutex_);
    caller_waiting_.store(true);
    done_.wait(lock, [this, pieces] { return done_pieces_.load() == pieces; });
    caller_waiting_.store(false);
  }
  job_.store(nullptr, std::memory_order_relaxed);
}

void ThreadPool::worker_loop(int index) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    worker_ids_[static_cast<size_t>(index)] = this_thread_id();
  }
  started_.notify_all();
  uint64_t seen = 0;
  PauseCredit credit;
  for (;;) {
    auto has_news = [&] { return shutting_down_.load() || generation_.load() != seen; };
    if (!spin_until(has_news, spin(), credit)) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, has_news);
      sleepers_.fetch_sub(1);
    }
    if (shutting_down_.load()) return;
    seen = generation_.load();
    if (before_claims_for_test_) before_claims_for_test_(index);
    take_pieces(index);
  }
}

}  // namespace llmpack
