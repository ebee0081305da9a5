// ChatSession state: undo, reset, save/load (C4), refused packages (C1),
// KV dtypes (C7) and bad input.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "common/tiny_model.h"
#include "unit/chat/session_harness.h"

namespace llmpack {
namespace {

using testing::checked_turn;
using testing::greedy_options;
using testing::make_session;

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/llmpack_session_" + std::to_string(getpid()) + "_" + name;
}

std::vector<int64_t> held(const ChatSession& s) { return {s.tokens().begin(), s.tokens().end()}; }

class SessionState : public ::testing::Test {
 protected:
  void SetUp() override {
    LLMPACK_REQUIRE_FIXTURE(model, "llama2c/stories260K.bin");
    LLMPACK_REQUIRE_FIXTURE(tok, "llama2c/tok512.bin");
    pkg_ = testing::load_stories();
    options_ = greedy_options("chatml", 20);
    options_.system_prompt = "You are a storyteller.";
  }
  std::unique_ptr<ChatSession> session() { return make_session(*pkg_.program, *pkg_.tokenizer, options_); }
  LoadedPackage pkg_;
  ChatSessionOptions options_;
};

TEST_F(SessionState, C4_UndoRestoresTheCacheAndTheNextReplyEqualsAFreshConversation) {
  auto a = session();
  checked_turn(*a, "Hello.");
  checked_turn(*a, "Who is Tom?");
  const std::vector<int64_t> before3 = held(*a);
  const auto messages_before3 = a->messages();
  checked_turn(*a, "Where is the dog?");
  checked_turn(*a, "And the cat?");
  ASSERT_TRUE(a->undo(2).ok());
  EXPECT_EQ(held(*a), before3);
  EXPECT_EQ(a->messages().size(), messages_before3.size());
  EXPECT_EQ(a->n_turns(), 2);
  auto after_undo = checked_turn(*a, "What does Lily like?");

  auto b = session();
  checked_turn(*b, "Hello.");
  checked_turn(*b, "Who is Tom?");
  auto fresh = checked_turn(*b, "What does Lily like?");
  EXPECT_EQ(after_undo.report.reply, fresh.report.reply);
  EXPECT_EQ(held(*a), held(*b));
  EXPECT_TRUE(after_undo.cache_matched_template);
  // The undone turn fed only its own tokens.
  EXPECT_EQ(after_undo.report.tokens_reused, static_cast<int64_t>(before3.size()));
}

TEST_F(SessionState, C4_UndoAndResetLimits) {
  auto s = session();
  EXPECT_FALSE(s->undo(1).ok());
  checked_turn(*s, "Hello.");
  auto too_many = s->undo(2);
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.message().find("has 1"), std::string::npos) << too_many.message();
  EXPECT_FALSE(s->undo(0).ok());
  s->reset();
  EXPECT_TRUE(s->tokens().empty());
  ASSERT_EQ(s->messages().size(), 1u);  // the system prompt stays
  auto again = checked_turn(*s, "Hello.");
  auto fresh = session();
  EXPECT_EQ(again.report.reply, checked_turn(*fresh, "Hello.").report.reply);
}

TEST_F(SessionState, C4_SaveLoadContinueEqualsNeverSaving) {
  const std::string path = temp_path("save.llmchat");
  auto a = session();
  checked_turn(*a, "Hello.");
  checked_turn(*a, "Who is Tom?");
  ASSERT_TRUE(a->save(path).ok());
  auto continued = checked_turn(*a, "Where is the dog?");

  auto b = session();
  checked_turn(*b, "Something else entirely.");
  ASSERT_TRUE(b->load(path).ok());
  EXPECT_EQ(b->messages().size(), 5u);
  auto resumed = checked_turn(*b, "Where is the dog?");
  EXPECT_EQ(resumed.report.reply, continued.report.reply);
  EXPECT_EQ(held(*a), held(*b));
  EXPECT_EQ(resumed.report.tokens_fed, continued.report.tokens_fed);  // nothing re-fed after loading
  // Undo still reaches the turns saved in the file.
  ASSERT_TRUE(b->undo(3).ok());
  EXPECT_EQ(b->messages().size(), 1u);
  std::remove(path.c_str());
}

TEST_F(SessionState, C4_KvDtypeOfTheFileIsConvertedOnLoad) {
  const std::string path = temp_path("f16.llmchat");
  options_.kv.dtype = KvDtype::kF16;
  auto a = session();
  checked_turn(*a, "Hello.");
  ASSERT_TRUE(a->save(path).ok());
  options_.kv.dtype = KvDtype::kF32;
  auto b = session();
  ASSERT_TRUE(b->load(path).ok());
  EXPECT_EQ(held(*a), held(*b));
  std::remove(path.c_str());
}

// A missing, damaged or foreign file is refused and the conversation stays.
TEST_F(SessionState, C4_BadFilesAreRefusedAndLeaveTheConversationUntouched) {
  const std::string path = temp_path("good.llmchat"), damaged = temp_path("damaged.llmchat");
  auto a = session();
  checked_turn(*a, "Hello.");
  ASSERT_TRUE(a->save(path).ok());
  checked_turn(*a, "Who is Tom?");
  const auto tokens = held(*a);
  const auto messages = a->messages();
  auto expect_untouched = [&] {
    EXPECT_EQ(held(*a), tokens);
    EXPECT_EQ(a->messages().size(), messages.size());
  };

  auto missing = a->load(temp_path("nowhere.llmchat"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("cannot read"), std::string::npos) << missing.message();
  expect_untouched();

  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  for (size_t at : {bytes.size() / 2, size_t{70}, bytes.size() - 1}) {
    std::string copy = bytes;
    copy[at] ^= 0x40;
    std::ofstream(damaged, std::ios::binary) << copy;
    auto refused = a->load(damaged);
    ASSERT_FALSE(refused.ok()) << at;
    EXPECT_NE(refused.message().find("damaged"), std::string::npos) << refused.message();
    expect_untouched();
  }
  std::ofstream(damaged, std::ios::binary) << bytes.substr(0, 40);
  auto truncated = a->load(damaged);
  ASSERT_FALSE(truncated.ok());
  expect_untouched();

  // Another model (a tiny random one) refuses stories260K's file, and the
  // reverse. Same tokenizer shape does not matter: the identity differs.
  testing::TinyModelSpec spec;
  spec.vocab_size = 512;
  spec.context_length = 512;
  ProgramOptions po;
  po.cpu_threads = 1;
  auto tiny = testing::load_tiny_package(spec, po);
  ASSERT_TRUE(tiny.ok()) << tiny.status().message();
  auto other = make_session(*tiny->program, *tiny->tokenizer, greedy_options("chatml", 4));
  ASSERT_TRUE(other);
  auto foreign = other->load(path);
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.message().find("another model"), std::string::npos) << foreign.message();
  EXPECT_TRUE(other->tokens().empty());
  EXPECT_NE(other->identity(), a->identity());
  std::remove(path.c_str());
  std::remove(damaged.c_str());
}

TEST_F(SessionState, C7_F16AndQ8CachesKeepTheTemplateEqualityAndUseLessMemory) {
  uint64_t f32_row = 0;
  for (KvDtype dtype : {KvDtype::kF32, KvDtype::kF16, KvDtype::kQ8_0}) {
    options_.kv.dtype = dtype;
    auto s = session();
    ASSERT_TRUE(s);
    auto t1 = checked_turn(*s, "Hello.");
    auto t2 = checked_turn(*s, "Who is Tom?");
    EXPECT_TRUE(t1.cache_matched_template && t2.cache_matched_template) << kv_dtype_name(dtype);
    EXPECT_FALSE(t2.report.reply.empty());
    if (dtype == KvDtype::kF32) f32_row = s->cache().bytes_per_row();
    if (dtype == KvDtype::kF16) {
      EXPECT_EQ(s->cache().bytes_per_row() * 2, f32_row);
    }
    if (dtype == KvDtype::kQ8_0) {
      EXPECT_LT(s->cache().bytes_per_row() * 3, f32_row);
    }
  }
}

TEST_F(SessionState, BadInput_EmptyAndTooLongMessagesChangeNothing) {
  options_.kv.capacity_rows = 96;
  auto s = session();
  checked_turn(*s, "Hi.");
  const auto tokens = held(*s);
  const auto n_messages = s->messages().size();
  auto empty = s->add_user_message("  \t ");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("empty"), std::string::npos);
  auto huge = s->add_user_message(std::string(2000, 'a') + " long");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("96 positions"), std::string::npos) << huge.status().message();
  EXPECT_EQ(held(*s), tokens);
  EXPECT_EQ(s->messages().size(), n_messages);
  // The prompt comes again: a normal message still works.
  auto next = checked_turn(*s, "Bye.");
  EXPECT_TRUE(next.cache_matched_template);
  // generate_reply without a message, and two messages in a row, are errors.
  EXPECT_FALSE(s->generate_reply().ok());
  ASSERT_TRUE(s->add_user_message("One").ok());
  EXPECT_FALSE(s->add_user_message("Two").ok());
}

TEST(SessionPackages, C1_InGraphAndCachelessPackagesAreRejectedClearly) {
  for (const char* kind : {"in_graph", "none"}) {
    testing::TinyModelSpec spec;
    spec.contract = testing::TinyContract{16, 64, 16, true, kind};
    ProgramOptions po;
    po.cpu_threads = 1;
    auto pkg = testing::load_tiny_package(spec, po);
    ASSERT_TRUE(pkg.ok()) << pkg.status().message();
    auto s = ChatSession::create(*pkg->program, *pkg->tokenizer, greedy_options("chatml", 4));
    ASSERT_FALSE(s.ok()) << kind;
    EXPECT_NE(s.status().message().find("--kv_cache off_graph"), std::string::npos) << s.status().message();
  }
  testing::TinyModelSpec spec;
  spec.contract = testing::TinyContract{16, 64, 16, true, "off_graph"};
  auto pkg = testing::load_tiny_package(spec);
  ASSERT_TRUE(pkg.ok());
  ChatSessionOptions no_template = greedy_options("chatml", 4);
  no_template.template_source.clear();
  auto s = ChatSession::create(*pkg->program, *pkg->tokenizer, no_template);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("--chat_template"), std::string::npos);
  ChatSessionOptions too_big = greedy_options("chatml", 4);
  too_big.kv.capacity_rows = 65;
  s = ChatSession::create(*pkg->program, *pkg->tokenizer, too_big);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("exceeds the package's context of 64"), std::string::npos)
      << s.status().message();
}

// C6: max_seq_len caps the conversation like --seq_len caps a run.
TEST_F(SessionState, C6_MaxSeqLenCapsTheConversation) {
  options_.max_seq_len = 100;
  auto s = session();
  EXPECT_EQ(s->capacity(), 100);
  for (int i = 0; i < 4; ++i) {
    auto t = checked_turn(*s, "Tell me more.");
    EXPECT_LT(static_cast<int64_t>(s->tokens().size()), 100);
  }
}

}  // namespace
}  // namespace llmpack
