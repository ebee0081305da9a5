// ProgramOptions' thread settings (placement, spin, priority): a program
// places its pool's threads, and the calling thread, where the options say,
// and computes the same logits wherever its threads run.
#include <gtest/gtest.h>

#if defined(__linux__)
#include <sys/resource.h>
#endif

#include <thread>
#include <vector>

#include "common/tiny_model.h"
#include "core/cpu_topology.h"
#include "core/thread_placement.h"

namespace llmpack {
namespace {

#if defined(__linux__)  // placement and priorities are Linux's (core/thread_placement.h)

using Cpus = std::vector<int>;

// Runs `body` on a thread of its own (placement and priority are the calling
// thread's: the test's main thread is left as it was).
template <typename Body>
void on_a_thread_of_its_own(Body body) {
  std::thread t(body);
  t.join();
}

Result<LoadedPackage> load_with_threads(ProgramOptions options) {
  options.cpu_threads = 3;
  return testing::load_tiny_package(testing::TinyModelSpec{}, options);
}

std::vector<float> last_logits_of_a_prompt(LoadedPackage& pkg) {
  const std::vector<int64_t> tokens = {1, 5, 9, 2};
  auto logits = pkg.program->forward(tokens, 0);
  EXPECT_TRUE(logits.ok()) << logits.status().message();
  if (!logits.ok()) return {};
  const std::span<const float> last = logits->last();
  return std::vector<float>(last.begin(), last.end());
}

TEST(ProgramThreads, StrictPlacementPutsEachThreadOnItsCpuAndTheLogitsStayTheSame) {
  on_a_thread_of_its_own([] {
    const Cpus usable = usable_cpu_list();
    auto loose = load_with_threads({});
    ASSERT_TRUE(loose.ok()) << loose.status().message();
    const std::vector<float> expected = last_logits_of_a_prompt(*loose);

    ProgramOptions options;
    options.placement = {usable, true, {}};
    options.spin = std::chrono::microseconds(0);
    {
      auto placed = load_with_threads(options);
      ASSERT_TRUE(placed.ok()) << placed.status().message();
      ThreadPool& pool = placed->program->thread_pool();
      const std::vector<Cpus> cpus = pool.thread_cpus_now();
      ASSERT_EQ(cpus.size(), 3u);
      for (size_t i = 0; i < cpus.size(); ++i) EXPECT_EQ(cpus[i], Cpus{usable[i % usable.size()]}) << "thread " << i;
      EXPECT_EQ(thread_cpus(this_thread_id()), Cpus{usable[0]}) << "the loading thread is thread 0";
      EXPECT_EQ(pool.spin().count(), 0);
      EXPECT_EQ(last_logits_of_a_prompt(*placed), expected);
    }
    EXPECT_EQ(thread_cpus(this_thread_id()), usable) << "the program put its loading thread back";
  });
}

// Groups (--numa distribute's nodes): thread i on groups[i % n]; here each of
// the process's first two CPUs is a group of its own.
TEST(ProgramThreads, GroupPlacementPutsEachThreadOnItsGroup) {
  on_a_thread_of_its_own([] {
    const Cpus usable = usable_cpu_list();
    ProgramOptions options;
    options.placement.groups = usable.size() >= 2 ? std::vector<Cpus>{{usable[0]}, {usable[1]}}
                                                   : std::vector<Cpus>{{usable[0]}};
    auto placed = load_with_threads(options);
    ASSERT_TRUE(placed.ok()) << placed.status().message();
    const std::vector<Cpus> cpus = placed->program->thread_pool().thread_cpus_now();
    ASSERT_EQ(cpus.size(), 3u);
    const auto& groups = options.placement.groups;
    for (size_t i = 0; i < cpus.size(); ++i) EXPECT_EQ(cpus[i], groups[i % groups.size()]) << "thread " << i;
    options.placement.groups.push_back({usable.back() + 1});
    auto refused = load_with_threads(options);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("placing the threads on CPUs "), std::string::npos)
        << refused.status().message();
  });
}

TEST(ProgramThreads, WithoutPlacementTheThreadsStayOnTheProcesssCpus) {
  on_a_thread_of_its_own([] {
    const Cpus usable = usable_cpu_list();
    auto pkg = load_with_threads({});
    ASSERT_TRUE(pkg.ok()) << pkg.status().message();
    for (const Cpus& cpus : pkg->program->thread_pool().thread_cpus_now()) EXPECT_EQ(cpus, usable);
    EXPECT_EQ(pkg->program->thread_pool().spin(), ThreadPool::kDefaultSpin);
  });
}

TEST(ProgramThreads, PlacementOutsideTheProcesssCpusIsRefusedAtLoadNamingThem) {
  on_a_thread_of_its_own([] {
    const Cpus usable = usable_cpu_list();
    ProgramOptions options;
    options.placement = {{usable.back() + 1}, false, {}};
    auto pkg = load_with_threads(options);
    ASSERT_FALSE(pkg.ok());
    const std::string expected = "placing the threads on CPUs " + std::to_string(usable.back() + 1) + ": CPU " +
                                 std::to_string(usable.back() + 1) + " is not among those this process may run on (" +
                                 cpu_list_text(usable) + ")";
    EXPECT_NE(pkg.status().message().find(expected), std::string::npos) << pkg.status().message();
    EXPECT_EQ(thread_cpus(this_thread_id()), usable) << "nothing placed";
  });
}

// The level is set before the pool starts its workers, which inherit it
// (ThreadPlacement.PriorityLevelsAreNiceValuesThatNewThreadsInherit).
TEST(ProgramThreads, PriorityIsSetOnTheLoadingThread) {
  on_a_thread_of_its_own([] {
    const int before = getpriority(PRIO_PROCESS, static_cast<id_t>(this_thread_id()));
    if (before > 5) GTEST_SKIP() << "this test runs at nice " << before << ", below the low level already";
    ProgramOptions options;
    options.priority = -1;  // nice 5: lowering needs no privilege
    auto pkg = load_with_threads(options);
    ASSERT_TRUE(pkg.ok()) << pkg.status().message();
    EXPECT_EQ(getpriority(PRIO_PROCESS, static_cast<id_t>(this_thread_id())), 5);
  });
}

#endif  // __linux__

}  // namespace
}  // namespace llmpack
