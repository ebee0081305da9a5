// --numa's strategies as placements: the kernel's CPU lists read back, NUMA
// nodes read from a written sysfs tree, each strategy over two nodes and the
// process's CPUs, and a pool's threads placed by node groups.
#include "core/numa.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "core/cpu_topology.h"
#include "core/thread_pool.h"

namespace llmpack {
namespace {

using Cpus = std::vector<int>;
using Nodes = std::vector<Cpus>;

TEST(CpuList, ReadsTheKernelsListFormat) {
  EXPECT_EQ(*parse_cpu_list("0-3,6"), (Cpus{0, 1, 2, 3, 6}));
  EXPECT_EQ(*parse_cpu_list("5\n"), Cpus{5});  // as a sysfs file ends
  EXPECT_EQ(*parse_cpu_list(""), Cpus{});
  EXPECT_EQ(*parse_cpu_list("8-9,0,9"), (Cpus{0, 8, 9}));
  for (const Cpus& cpus : {Cpus{0, 1, 2, 3, 6}, Cpus{1}, Cpus{0, 2, 4, 5, 6, 7}})
    EXPECT_EQ(*parse_cpu_list(cpu_list_text(cpus)), cpus) << cpu_list_text(cpus);
  struct Bad { const char* text; const char* says; };
  for (const Bad& bad : {Bad{"3-1", "range 3-1 ends before it starts"}, Bad{"a", "'a' is not a number or a range"},
                         Bad{"1,", "ends with a comma"}, Bad{"0-", "'0-' is not a number"},
                         Bad{"99999", "CPUs are numbered below"}}) {
    auto r = parse_cpu_list(bad.text);
    ASSERT_FALSE(r.ok()) << bad.text;
    EXPECT_NE(r.status().message().find(bad.says), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(std::string("got '") + bad.text + "'"), std::string::npos)
        << r.status().message();
  }
}

TEST(Numa, StrategiesAreLlamaCppsNames) {
  EXPECT_EQ(*parse_numa_strategy("distribute"), NumaStrategy::kDistribute);
  EXPECT_EQ(*parse_numa_strategy("isolate"), NumaStrategy::kIsolate);
  EXPECT_EQ(*parse_numa_strategy("numactl"), NumaStrategy::kNumactl);
  for (auto s : {NumaStrategy::kDistribute, NumaStrategy::kIsolate, NumaStrategy::kNumactl})
    EXPECT_EQ(*parse_numa_strategy(numa_strategy_name(s)), s);
  auto mirror = parse_numa_strategy("mirror");
  ASSERT_FALSE(mirror.ok());
  EXPECT_NE(mirror.status().message().find("expected distribute, isolate or numactl, got 'mirror' (llama.cpp"),
            std::string::npos) << mirror.status().message();
  EXPECT_FALSE(parse_numa_strategy("").ok());
}

// A sysfs node directory as Linux writes one.
class NodeTree : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("llmpack_numa_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& relative, const std::string& text) {
    const auto path = dir_ / relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  std::string dir() const { return dir_.string(); }

 private:
  std::filesystem::path dir_;
};

TEST_F(NodeTree, EachOnlineNodesCpusInNodeOrder) {
  write("online", "0-2\n");
  write("node0/cpulist", "0-1,4\n");
  write("node1/cpulist", "2-3,5\n");
  write("node2/cpulist", "\n");  // a memory-only node: no CPUs
  write("node7/cpulist", "6\n");  // not online
  auto nodes = numa_node_cpus(dir());
  ASSERT_TRUE(nodes.ok()) << nodes.status().message();
  EXPECT_EQ(*nodes, (Nodes{{0, 1, 4}, {2, 3, 5}}));
}

TEST_F(NodeTree, NoNodeDirectoryIsNoNodesAndABadListNamesItsFile) {
  auto none = numa_node_cpus(dir() + "/absent");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  write("online", "0\n");
  write("node0/cpulist", "0-x\n");
  auto bad = numa_node_cpus(dir());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("node0/cpulist"), std::string::npos) << bad.status().message();
}

TEST(Numa, DistributeGivesThreadsTheNodesInTurn) {
  const Nodes nodes = {{0, 1}, {2, 3}};
  auto p = numa_placement(NumaStrategy::kDistribute, nodes, {0, 1, 2, 3}, 0);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->groups, nodes);
  EXPECT_EQ(p->cpus_of_thread(0), (Cpus{0, 1}));
  EXPECT_EQ(p->cpus_of_thread(1), (Cpus{2, 3}));
  EXPECT_EQ(p->cpus_of_thread(2), (Cpus{0, 1}));
  EXPECT_EQ(p->all_cpus(), (Cpus{0, 1, 2, 3}));
  // Only the process's CPUs: a node with none of them is left out.
  EXPECT_EQ(numa_placement(NumaStrategy::kDistribute, nodes, {1, 2}, 1)->groups, (Nodes{{1}, {2}}));
  EXPECT_EQ(numa_placement(NumaStrategy::kDistribute, nodes, {2, 3}, 2)->groups, (Nodes{{2, 3}}));
  // Without sysfs nodes, the process's CPUs are one node.
  EXPECT_EQ(numa_placement(NumaStrategy::kDistribute, {}, {0, 1}, 0)->groups, (Nodes{{0, 1}}));
}

TEST(Numa, IsolateKeepsEveryThreadOnTheCurrentNode) {
  const Nodes nodes = {{0, 1}, {2, 3}};
  auto p = numa_placement(NumaStrategy::kIsolate, nodes, {0, 1, 2, 3}, 3);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->groups.empty());
  EXPECT_EQ(p->cpus, (Cpus{2, 3}));
  EXPECT_FALSE(p->strict);
  EXPECT_EQ(p->cpus_of_thread(5), (Cpus{2, 3}));
  EXPECT_EQ(numa_placement(NumaStrategy::kIsolate, nodes, {0, 1, 2, 3}, 0)->cpus, (Cpus{0, 1}));
  EXPECT_EQ(numa_placement(NumaStrategy::kIsolate, nodes, {0, 1, 2, 3}, -1)->cpus, (Cpus{0, 1})) << "unknown CPU";
  EXPECT_EQ(numa_placement(NumaStrategy::kIsolate, nodes, {1, 3}, 3)->cpus, Cpus{3});
}

TEST(Numa, NumactlKeepsTheProcesssCpus) {
  auto p = numa_placement(NumaStrategy::kNumactl, {{0, 1}, {2, 3}}, {1, 2}, 1);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->cpus, (Cpus{1, 2}));
  EXPECT_TRUE(p->groups.empty());
}

TEST(Numa, NoNodeWithAUsableCpuIsAnError) {
  auto p = numa_placement(NumaStrategy::kDistribute, {{0, 1}}, {4, 5}, 4);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("distribute: no NUMA node has a CPU this process may run on (4-5)"),
            std::string::npos)
      << p.status().message();
}

TEST(Numa, ThisMachinesPlacementsLieWithinTheProcesssCpus) {
  const Cpus usable = usable_cpu_list();
  for (auto s : {NumaStrategy::kDistribute, NumaStrategy::kIsolate, NumaStrategy::kNumactl}) {
    auto p = this_machine_numa_placement(s);
    ASSERT_TRUE(p.ok()) << numa_strategy_name(s) << ": " << p.status().message();
    EXPECT_FALSE(p->empty()) << numa_strategy_name(s);
    EXPECT_TRUE(check_cpus_within(p->all_cpus(), usable).ok()) << numa_strategy_name(s);
  }
  EXPECT_EQ(this_machine_numa_placement(NumaStrategy::kNumactl)->cpus, usable);
}

#if defined(__linux__)
// Groups place thread i on groups[i % n]: here each of the process's first two
// CPUs is a group of its own (one group on a one-CPU machine).
TEST(Numa, APoolPlacedByGroupsPutsEachThreadOnItsGroup) {
  std::thread([] {
    const Cpus usable = usable_cpu_list();
    ThreadPlacement placement;
    placement.groups = usable.size() >= 2 ? Nodes{{usable[0]}, {usable[1]}} : Nodes{{usable[0]}};
    ThreadPool pool(3);
    ASSERT_TRUE(pool.place(placement).ok());
    const std::vector<Cpus> seen = pool.thread_cpus_now();
    ASSERT_EQ(seen.size(), 3u);
    for (size_t i = 0; i < seen.size(); ++i)
      EXPECT_EQ(seen[i], placement.groups[i % placement.groups.size()]) << "thread " << i;
    placement.groups.push_back({usable.back() + 1});
    const Status outside = pool.place(placement);
    ASSERT_FALSE(outside.ok());
    EXPECT_NE(outside.message().find("CPU " + std::to_string(usable.back() + 1) + " is not among"),
              std::string::npos) << outside.message();
    ASSERT_TRUE(pool.place({}).ok());
    for (const Cpus& c : pool.thread_cpus_now()) EXPECT_EQ(c, usable) << "put back";
  }).join();
}
#endif

}  // namespace
}  // namespace llmpack
