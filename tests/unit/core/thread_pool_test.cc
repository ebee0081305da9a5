// ThreadPool: coverage of [0, n) (each index exactly once), range shape,
// back-to-back calls across the spin/sleep boundary, and destruction.
#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace llmpack {
namespace {

// Runs one parallel_for (or parallel_for_dynamic) and checks every index in
// [0, n) is visited exactly once, by ranges that start on a multiple of grain,
// from valid thread indices; dynamic pieces are exactly grain long but the last.
void expect_exact_cover(ThreadPool& pool, int64_t n, int64_t grain, bool dynamic = false) {
  std::vector<std::atomic<int>> visits(static_cast<size_t>(std::max<int64_t>(n, 0)));
  std::atomic<int> bad_range{0};
  const auto visit = [&](int thread, int64_t begin, int64_t end) {
    const bool whole_piece = !dynamic || end - begin == grain || end == n;
    if (thread < 0 || thread >= pool.n_threads() || begin >= end || begin % grain != 0 || !whole_piece)
      bad_range.fetch_add(1);
    for (int64_t i = begin; i < end; ++i) visits[i].fetch_add(1);
  };
  if (dynamic) {
    pool.parallel_for_dynamic(n, visit, grain);
  } else {
    pool.parallel_for(n, visit, grain);
  }
  EXPECT_EQ(bad_range.load(), 0) << "n=" << n << " grain=" << grain << " dynamic=" << dynamic;
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(visits[i].load(), 1) << "index " << i << " n=" << n << " grain=" << grain << " dynamic=" << dynamic;
}

// PauseCredit: the pause phase stays on when a wait in about a hundred runs
// out (a decode token: ~85 hand-overs and one sampling gap), turns off when
// most waits run out (an oversubscribed machine), and is tried again after
// about kMissCost skipped waits.
TEST(PauseCredit, StaysOnWhenFewWaitsMissTheirPausePhase) {
  PauseCredit credit;
  for (int token = 0; token < 100; ++token) {
    for (int call = 0; call < 85; ++call) {
      ASSERT_TRUE(credit.pause_first()) << "token " << token << " call " << call;
      credit.record(true);
    }
    ASSERT_TRUE(credit.pause_first());
    credit.record(false);
  }
}

TEST(PauseCredit, TurnsOffWhenMostWaitsMissAndRetriesNowAndThen) {
  PauseCredit credit;
  int paused = 0;
  const int waits = 10000;
  for (int i = 0; i < waits; ++i) {
    if (credit.pause_first()) {
      ++paused;
      credit.record(i % 2 == 0);  // half the pause phases run out
    } else {
      credit.skip();
    }
  }
  // Retried: some waits after the credit was spent still pause, but only about
  // one in kMissCost.
  EXPECT_GT(paused, waits / (4 * PauseCredit::kMissCost));
  EXPECT_LT(paused, waits / 8);
}

TEST(PauseCredit, ComesBackAfterTheMachineQuietsDown) {
  PauseCredit credit;
  for (int i = 0; i < 50; ++i) credit.pause_first() ? credit.record(false) : credit.skip();
  EXPECT_LT(credit.score(), PauseCredit::kMax);
  for (int i = 0; i < 1000; ++i) credit.pause_first() ? credit.record(true) : credit.skip();
  EXPECT_TRUE(credit.pause_first());
  EXPECT_EQ(credit.score(), PauseCredit::kMax);
}

TEST(ThreadPool, EveryIndexOnceForManyShapes) {
  for (int threads : {1, 2, 3, 4, 7}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.n_threads(), threads);
    for (int64_t n : {0, 1, 2, 3, 5, 8, 31, 64, 100, 1000})
      for (int64_t grain : {1, 2, 3, 16, 64, 2000}) expect_exact_cover(pool, n, grain);
  }
}

TEST(ThreadPool, ManyBackToBackCalls) {
  ThreadPool pool(4);
  std::atomic<int64_t> sum{0};
  int64_t expected = 0;
  for (int call = 0; call < 5000; ++call) {
    const int64_t n = 1 + call % 97;
    pool.parallel_for(n, [&](int, int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) sum.fetch_add(i + 1);
    });
    expected += n * (n + 1) / 2;
  }
  EXPECT_EQ(sum.load(), expected);
}

// Gaps longer than the spin make workers (and the caller) take the condvar
// path: with a 50 us spin, and with no spin at all (every wait blocks).
TEST(ThreadPool, CallsAfterWorkersSleep) {
  for (auto spin : {std::chrono::microseconds(50), std::chrono::microseconds(0)}) {
    ThreadPool pool(3, spin);
    for (int call = 0; call < 20; ++call) {
      if (call % 4 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      expect_exact_cover(pool, 50 + call, 1 + call % 5);
    }
  }
}

// The default spin outlasts gaps of a sampling step between decode tokens,
// and a gap longer than it still ends in the condvar path (the caller's
// wake-up of sleeping workers).
TEST(ThreadPool, DefaultSpinAcrossShortAndLongGaps) {
  ASSERT_EQ(ThreadPool::kDefaultSpin, std::chrono::microseconds(2000));
  ThreadPool pool(2);
  for (int call = 0; call < 12; ++call) {
    if (call % 4 == 1) std::this_thread::sleep_for(std::chrono::microseconds(200));
    if (call % 4 == 3) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    expect_exact_cover(pool, 40 + call, 1 + call % 3);
  }
}

TEST(ThreadPool, DynamicGivesEveryIndexOnceInGrainPieces) {
  for (int threads : {1, 2, 3, 4, 7}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 2, 3, 5, 8, 31, 64, 100, 1000})
      for (int64_t grain : {1, 2, 3, 16, 64, 2000}) {
        expect_exact_cover(pool, n, grain, /*dynamic=*/true);
        expect_exact_cover(pool, n, grain);  // a static job right after a dynamic one
      }
  }
}

// A thread held up inside a piece leaves the remaining pieces to the others:
// thread 1's first piece waits until every other piece is done, which only
// finishes because thread 0 takes them all (a static split would have given
// thread 1 half of them, and the wait would time out).
TEST(ThreadPool, DynamicLeavesAHeldUpThreadsShareToTheOthers) {
  ThreadPool pool(2);
  constexpr int64_t kPieces = 40;
  std::atomic<int64_t> done_by[2] = {0, 0};
  std::atomic<bool> timed_out{false};
  pool.parallel_for_dynamic(
      kPieces,
      [&](int thread, int64_t, int64_t) {
        if (thread == 1) {
          const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
          while (done_by[0].load() < kPieces - 1 && !timed_out.load()) {
            if (std::chrono::steady_clock::now() > deadline) timed_out.store(true);
            std::this_thread::yield();
          }
        }
        done_by[thread].fetch_add(1);
      },
      1);
  EXPECT_FALSE(timed_out.load());
  EXPECT_EQ(done_by[0].load() + done_by[1].load(), kPieces);
  EXPECT_LE(done_by[1].load(), 1);
}

// A slow piece in a worker's hands makes the caller's spin run out so it
// blocks on completion: the worker's piece sleeps 20 ms.
TEST(ThreadPool, CallerBlocksUntilSlowWorkerFinishes) {
  ThreadPool pool(2, std::chrono::microseconds(50));
  std::atomic<int> done{0};
  std::atomic<bool> worker_started{false};
  // Whichever piece each claims (either may claim first), the worker's
  // sleeps and the caller's waits for it to start, so the caller cannot
  // take both pieces and must then block until the worker's ends.
  pool.parallel_for(2, [&](int thread, int64_t, int64_t) {
    if (thread != 0) {
      worker_started.store(true);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } else {
      while (!worker_started.load()) std::this_thread::yield();
    }
    done.fetch_add(1);
  });
  EXPECT_TRUE(worker_started.load());
  EXPECT_EQ(done.load(), 2);
}

// A worker that does not come to a job (the OS runs another process on its
// core) does not hold it: the caller takes every piece and returns while the
// worker is still held back, and the job after it runs in full too; each
// index is covered once, by the thread that ran it.
TEST(ThreadPool, AWorkerThatDoesNotComeLeavesItsPiecesToTheCaller) {
  for (bool dynamic : {false, true}) {
    ThreadPool pool(3);
    std::atomic<bool> release{false};
    std::atomic<int> held{0};
    pool.set_before_claims_for_test([&](int worker) {
      if (worker != 2) return;
      held.fetch_add(1);
      while (!release.load()) std::this_thread::yield();
    });
    std::vector<std::atomic<int>> visits(64);
    std::atomic<int> by_worker_2{0};
    const auto visit = [&](int thread, int64_t begin, int64_t end) {
      if (thread == 2) by_worker_2.fetch_add(1);
      for (int64_t i = begin; i < end; ++i) visits[i].fetch_add(1);
    };
    for (int call = 0; call < 2; ++call) {
      if (dynamic)
        pool.parallel_for_dynamic(64, visit, 4);
      else
        pool.parallel_for(64, visit, 4);
    }
    for (int i = 0; i < 64; ++i) EXPECT_EQ(visits[i].load(), 2) << "index " << i << " dynamic=" << dynamic;
    // The worker saw a job and is held (or has not run at all yet: wait for it).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (held.load() == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    EXPECT_EQ(held.load(), 1) << "dynamic=" << dynamic;
    EXPECT_EQ(by_worker_2.load(), 0) << "dynamic=" << dynamic;
    release.store(true);
    // Released, the worker finds the jobs taken; the next one runs as ever.
    expect_exact_cover(pool, 100, 3, dynamic);
  }
}

TEST(ThreadPool, OneThreadRunsInlineOnCaller) {
  ThreadPool pool(1);
  const auto caller = std::this_thread::get_id();
  int calls = 0;
  pool.parallel_for(100, [&](int thread, int64_t b, int64_t e) {
    EXPECT_EQ(thread, 0);
    EXPECT_EQ(b, 0);
    EXPECT_EQ(e, 100);
    EXPECT_EQ(std::this_thread::get_id(), caller);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
  ThreadPool clamped(0);  // <= 0 threads means one
  EXPECT_EQ(clamped.n_threads(), 1);
}

// Destroying a pool right after construction, right after a call (workers
// still spinning) and after they fell asleep must join cleanly.
TEST(ThreadPool, DestructionWhileSpinningOrSleeping) {
  for (int i = 0; i < 50; ++i) {
    ThreadPool idle(3);
  }
  for (int i = 0; i < 50; ++i) {
    ThreadPool pool(3);
    expect_exact_cover(pool, 10, 1);
  }
  ThreadPool sleepy(3, std::chrono::microseconds(50));
  expect_exact_cover(sleepy, 10, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ThreadPool sleepy_default(3);  // the default spin (2 ms) runs out in the 10 ms
  expect_exact_cover(sleepy_default, 10, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

// Several pools used and destroyed from different threads at once.
TEST(ThreadPool, IndependentPoolsOnConcurrentThreads) {
  std::atomic<int> failures{0};
  std::vector<std::thread> users;
  for (int u = 0; u < 3; ++u) {
    users.emplace_back([&failures, u] {
      for (int round = 0; round < 20; ++round) {
        ThreadPool pool(2 + u);
        std::atomic<int64_t> count{0};
        for (int call = 0; call < 20; ++call)
          pool.parallel_for(64, [&](int, int64_t b, int64_t e) { count.fetch_add(e - b); });
        if (count.load() != 64 * 20) failures.fetch_add(1);
      }
    });
  }
  for (auto& t : users) t.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace llmpack
