// Thread placement: llama.cpp's CPU masks read and written, a pool's threads
// placed on a mask (each on all of it, or strictly one CPU each), put back,
// refused outside the process's CPUs; priority levels as nice values. Each
// test that places threads runs in a thread of its own, so the test
// runner's thread keeps its CPUs and priority.
#include "core/thread_placement.h"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "core/cpu_topology.h"
#include "core/thread_pool.h"

#if defined(__linux__)
#include <sys/resource.h>
#endif

namespace llmpack {
namespace {

using Cpus = std::vector<int>;

TEST(ThreadPlacement, CpuMasksReadAsLlamaCppWritesThem) {
  EXPECT_EQ(*parse_cpu_mask("0x5"), (Cpus{0, 2}));
  EXPECT_EQ(*parse_cpu_mask("5"), (Cpus{0, 2}));
  EXPECT_EQ(*parse_cpu_mask("0X10"), (Cpus{4}));
  EXPECT_EQ(*parse_cpu_mask("0xF0"), (Cpus{4, 5, 6, 7}));
  EXPECT_EQ(*parse_cpu_mask("0x0"), Cpus{});
  EXPECT_EQ(*parse_cpu_mask("0x10000000000000001"), (Cpus{0, 64})) << "longer than 64 bits";
  for (const char* bad : {"", "0x", "0xg1", "12 ", "-1"}) {
    auto parsed = parse_cpu_mask(bad);
    ASSERT_FALSE(parsed.ok()) << "'" << bad << "'";
    EXPECT_NE(parsed.status().message().find("hexadecimal"), std::string::npos) << parsed.status().message();
  }
  EXPECT_NE(parse_cpu_mask("0xg1").status().message().find("'g' is not one"), std::string::npos);
  auto huge = parse_cpu_mask("0x1" + std::string(300, '0'));
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("CPU 1200"), std::string::npos) << huge.status().message();
}

TEST(ThreadPlacement, MasksAndListsAreWrittenBack) {
  EXPECT_EQ(cpu_mask_text({0, 2}), "0x5");
  EXPECT_EQ(cpu_mask_text({4, 5, 6, 7}), "0xf0");
  EXPECT_EQ(cpu_mask_text({}), "0x0");
  EXPECT_EQ(cpu_mask_text({0, 64}), "0x10000000000000001");
  for (const char* mask : {"0x3", "0x1f0", "0x8000000000000000"})
    EXPECT_EQ(cpu_mask_text(*parse_cpu_mask(mask)), mask);
  EXPECT_EQ(cpu_list_text({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
  EXPECT_EQ(cpu_list_text({3}), "3");
  EXPECT_EQ(cpu_list_text({}), "none");
}

#if defined(__linux__)

// Each thread's CPUs as the pool's threads see them: the caller's directly,
// each worker's from the pool's test hook as it sees the next call.
class PoolCpus {
 public:
  explicit PoolCpus(ThreadPool& pool) : pool_(pool), seen_(static_cast<size_t>(pool.n_threads())) {
    pool.set_before_claims_for_test([this](int worker) {
      std::lock_guard<std::mutex> lock(mutex_);
      seen_[static_cast<size_t>(worker)] = thread_cpus(this_thread_id());
    });
  }
  std::vector<Cpus> after_next_call() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto& s : seen_) s.clear();
    }
    pool_.parallel_for(1000, [](int, int64_t, int64_t) {});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      std::lock_guard<std::mutex> lock(mutex_);
      bool all = true;
      for (size_t i = 1; i < seen_.size(); ++i) all = all && !seen_[i].empty();
      if (all || std::chrono::steady_clock::now() > deadline) break;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<Cpus> out = seen_;
    out[0] = thread_cpus(this_thread_id());
    return out;
  }

 private:
  ThreadPool& pool_;
  std::mutex mutex_;
  std::vector<Cpus> seen_;
};

// Runs `body` on a thread of its own and returns when it ends.
template <typename Body>
void on_own_thread(Body body) {
  std::thread t(body);
  t.join();
}

TEST(ThreadPool, StrictPlacementPutsEachThreadOnOneCpuOfTheMaskInTurn) {
  on_own_thread([] {
    const Cpus usable = usable_cpu_list();
    ThreadPool pool(3);
    PoolCpus cpus(pool);
    ASSERT_TRUE(pool.place({usable, true, {}}).ok());
    const std::vector<Cpus> seen = cpus.after_next_call();
    for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], Cpus{usable[i % usable.size()]}) << "thread " << i;
    ASSERT_TRUE(pool.place({}).ok());
    for (const Cpus& c : cpus.after_next_call()) EXPECT_EQ(c, usable) << "put back";
  });
}

TEST(ThreadPool, PlacementOnAMaskLetsEachThreadRunOnAllOfIt) {
  on_own_thread([] {
    const Cpus usable = usable_cpu_list();
    const Cpus mask = usable.size() >= 2 ? Cpus{usable[0], usable[1]} : usable;
    ThreadPool pool(3);
    PoolCpus cpus(pool);
    ASSERT_TRUE(pool.place({mask, false, {}}).ok());
    for (const Cpus& c : cpus.after_next_call()) EXPECT_EQ(c, mask);
    ASSERT_TRUE(pool.place({{usable.back()}, false, {}}).ok());
    for (const Cpus& c : cpus.after_next_call()) EXPECT_EQ(c, Cpus{usable.back()}) << "placed again";
  });
}

TEST(ThreadPool, PlacementOutsideTheProcesssCpusIsRefusedNamingThem) {
  on_own_thread([] {
    const Cpus usable = usable_cpu_list();
    ThreadPool pool(2);
    const int outside = usable.back() + 1;
    const Status status = pool.place({{usable[0], outside}, true, {}});
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.message().find("CPU " + std::to_string(outside) + " is not among"), std::string::npos)
        << status.message();
    EXPECT_EQ(thread_cpus(this_thread_id()), usable) << "nothing placed";
  });
}

TEST(ThreadPool, DestroyedOnThePlacedThreadItPutsThatThreadBack) {
  on_own_thread([] {
    const Cpus usable = usable_cpu_list();
    {
      ThreadPool pool(2);
      ASSERT_TRUE(pool.place({{usable.back()}, true, {}}).ok());
      EXPECT_EQ(thread_cpus(this_thread_id()), Cpus{usable.back()});
    }
    EXPECT_EQ(thread_cpus(this_thread_id()), usable);
  });
}

// A lowered priority is inherited by the threads a pool starts afterwards.
TEST(ThreadPlacement, PriorityLevelsAreNiceValuesThatNewThreadsInherit) {
  on_own_thread([] {
    const int before = getpriority(PRIO_PROCESS, static_cast<id_t>(this_thread_id()));
    if (before > 5) GTEST_SKIP() << "this test runs at nice " << before << ", below the low level already";
    ASSERT_TRUE(set_this_thread_priority(-1).ok());
    EXPECT_EQ(getpriority(PRIO_PROCESS, static_cast<id_t>(this_thread_id())), 5);
    std::mutex mutex;
    int worker_nice = 100;
    ThreadPool pool(2);
    pool.set_before_claims_for_test([&](int) {
      std::lock_guard<std::mutex> lock(mutex);
      worker_nice = getpriority(PRIO_PROCESS, static_cast<id_t>(this_thread_id()));
    });
    pool.parallel_for(1000, [](int, int64_t, int64_t) {});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (bool seen = false; !seen && std::chrono::steady_clock::now() < deadline;) {
      std::lock_guard<std::mutex> lock(mutex);
      seen = worker_nice != 100;
    }
    std::lock_guard<std::mutex> lock(mutex);
    EXPECT_EQ(worker_nice, 5);
  });
  const Status high = set_this_thread_priority(3);
  ASSERT_FALSE(high.ok());
  EXPECT_NE(high.message().find("got 3"), std::string::npos) << high.message();
  EXPECT_TRUE(set_this_thread_priority(0).ok()) << "normal leaves the priority as it is";
}

#endif

}  // namespace
}  // namespace llmpack
