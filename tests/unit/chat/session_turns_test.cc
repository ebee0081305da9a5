// ChatSession turns on stories260K (tok512 has no special tokens, so the
// template's markers tokenize as plain text, which round-trips): the C3
// equality after every kind of turn ending, the cache growing from a small
// start (C7), and the C5 context rules.
#include <gtest/gtest.h>

#include <set>

#include "unit/chat/session_harness.h"

namespace llmpack {
namespace {

using testing::checked_turn;
using testing::CheckedTurn;
using testing::greedy_options;
using testing::make_session;

class SessionTurns : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    LLMPACK_REQUIRE_FIXTURE(model, "llama2c/stories260K.bin");
    LLMPACK_REQUIRE_FIXTURE(tok, "llama2c/tok512.bin");
    pkg_ = testing::load_stories();
  }
  LoadedPackage pkg_;
};

// C3 across turns ending on max_new_tokens, on a stop string and on EOS:
// after each turn is fed, the cache equals the rendered conversation, and
// a turn feeds only what is new (everything cached before it is kept).
TEST_P(SessionTurns, C3_D12_CacheEqualsRenderedTemplateAfterEveryKindOfEnding) {
  // Probe: which token does the second reply produce that the first one never did?
  auto probe = make_session(*pkg_.program, *pkg_.tokenizer, greedy_options(GetParam(), 24));
  ASSERT_TRUE(probe);
  CheckedTurn p1 = checked_turn(*probe, "Hello there.");
  CheckedTurn p2 = checked_turn(*probe, "Tell me about the park.");
  const std::vector<int64_t> after2(probe->tokens().begin(), probe->tokens().end());
  std::set<int64_t> seen(after2.begin(), after2.begin() + static_cast<std::ptrdiff_t>(p2.cache_before.size()));
  auto target2 = probe->conversation_tokens({probe->messages().begin(), probe->messages().end() - 1}, true).value();
  int64_t eos = -1, eos_index = -1;
  for (size_t i = target2.size() + 2; i < after2.size(); ++i) {
    if (!seen.count(after2[i])) {
      eos = after2[i];
      eos_index = static_cast<int64_t>(i - target2.size());
      break;
    }
    seen.insert(after2[i]);
  }
  ASSERT_GE(eos, 0) << "no token of reply 2 is new";

  testing::ExtraEosProgram program(*pkg_.program, {eos});
  ChatSessionOptions o = greedy_options(GetParam(), 24);
  auto s = make_session(program, *pkg_.tokenizer, o);
  ASSERT_TRUE(s);
  CheckedTurn t1 = checked_turn(*s, "Hello there.");
  EXPECT_EQ(t1.report.end, GenerationEnd::kBudget);
  EXPECT_EQ(t1.report.generated, 24);
  EXPECT_EQ(t1.report.reply, p1.report.reply);
  CheckedTurn t2 = checked_turn(*s, "Tell me about the park.");
  EXPECT_EQ(t2.report.end, GenerationEnd::kEos);
  EXPECT_EQ(t2.report.generated, eos_index);
  // The EOS that ended the reply was not fed.
  EXPECT_NE(s->tokens().back(), eos);
  // A stop string taken from the middle of the third reply: asked again
  // (after an undo) with that stop string, the reply ends right before it.
  CheckedTurn free3 = checked_turn(*s, "What did you see?");
  ASSERT_GE(free3.report.reply.size(), 4u);
  const std::string stop = free3.report.reply.substr(free3.report.reply.size() / 2, 2);
  ASSERT_TRUE(s->undo(1).ok());
  GenerationConfig g = o.generation;
  g.stop = {stop};
  ASSERT_TRUE(s->set_generation_config(g).ok());
  CheckedTurn t3 = checked_turn(*s, "What did you see?");
  EXPECT_EQ(t3.report.end, GenerationEnd::kStopString);
  EXPECT_EQ(t3.report.reply, free3.report.reply.substr(0, free3.report.reply.find(stop)));
  g.stop.clear();
  ASSERT_TRUE(s->set_generation_config(g).ok());
  CheckedTurn t4 = checked_turn(*s, "Thank you.");

  for (const CheckedTurn* t : {&t1, &t2, &t3, &t4}) {
    EXPECT_TRUE(t->checked);
    EXPECT_TRUE(t->cache_matched_template);
  }
  // Each later turn kept the whole cache of the one before (only new tokens
  // fed), except after a stop string: the tokens of the stop string were fed
  // while generating but are not part of the reply, so they are rewound.
  for (const CheckedTurn* t : {&t2, &t3}) {
    EXPECT_EQ(t->report.tokens_reused, static_cast<int64_t>(t->cache_before.size()));
    EXPECT_GT(t->report.tokens_fed, 0);
  }
  EXPECT_LE(t4.report.tokens_reused, static_cast<int64_t>(t4.cache_before.size()));
  EXPECT_GE(t4.report.tokens_reused, static_cast<int64_t>(t4.cache_before.size() - stop.size()));
  // Turn 1 was cut by the budget: the cache held its 24 tokens but the last
  // (23 fed while generating), and turn 2 fed from right after them.
  EXPECT_EQ(t2.cache_before.size(), t1.cache_before.size() + t1.report.tokens_fed + 23);
}

// Issue 6 item 4: three turns with max_new_tokens 24 over a 16-row initial
// cache; turn 1 hits the limit, turn 2 ends on EOS; equality holds and the
// cache grows.
TEST_P(SessionTurns, C7_ThreeTurnsFromA16RowCacheGrowAndKeepEquality) {
  auto probe = make_session(*pkg_.program, *pkg_.tokenizer, greedy_options(GetParam(), 24));
  ASSERT_TRUE(probe);
  checked_turn(*probe, "Hi!");
  const size_t before2 = probe->tokens().size();
  checked_turn(*probe, "Where is Lily?");
  const std::vector<int64_t> all(probe->tokens().begin(), probe->tokens().end());
  const auto target2 = probe->conversation_tokens({probe->messages().begin(), probe->messages().end() - 1}, true).value();
  std::set<int64_t> seen(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(before2));
  int64_t eos = -1;
  for (size_t i = target2.size() + 1; i < all.size() && eos < 0; ++i)
    if (!seen.count(all[i])) eos = all[i]; else seen.insert(all[i]);
  ASSERT_GE(eos, 0);

  testing::ExtraEosProgram program(*pkg_.program, {eos});
  ChatSessionOptions o = greedy_options(GetParam(), 24);
  o.kv.initial_rows = 16;
  auto s = make_session(program, *pkg_.tokenizer, o);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->cache().allocated_rows(), 16);
  CheckedTurn t1 = checked_turn(*s, "Hi!");
  CheckedTurn t2 = checked_turn(*s, "Where is Lily?");
  CheckedTurn t3 = checked_turn(*s, "Goodbye.");
  EXPECT_EQ(t1.report.end, GenerationEnd::kBudget);
  EXPECT_EQ(t2.report.end, GenerationEnd::kEos);
  for (const CheckedTurn* t : {&t1, &t2, &t3}) EXPECT_TRUE(t->cache_matched_template);
  EXPECT_GT(s->cache().allocated_rows(), 16);
  EXPECT_GE(s->cache().allocated_rows(), static_cast<int64_t>(s->tokens().size()));
  // Growth at least doubles (amortized) and never allocates past twice what is held.
  EXPECT_LE(s->cache().allocated_rows(), 2 * static_cast<int64_t>(s->tokens().size()) + 2);
}

TEST_P(SessionTurns, C5_D13_FullCacheStartsANewConversationKeepingTheSystemPrompt) {
  ChatSessionOptions o = greedy_options(GetParam(), 40);
  o.kv.capacity_rows = 256;
  o.system_prompt = "You tell short stories.";
  auto s = make_session(*pkg_.program, *pkg_.tokenizer, o);
  ASSERT_TRUE(s);
  int new_conversations = 0;
  for (int turn = 0; turn < 8; ++turn) {
    auto added = s->add_user_message("Tell me about turn " + std::to_string(turn) + ".");
    ASSERT_TRUE(added.ok()) << added.status().message();
    if (added->action == ContextAction::kNewConversation) {
      ++new_conversations;
      EXPECT_GT(added->dropped_turns, 0);
      EXPECT_EQ(s->n_turns(), 1);
    }
    auto r = s->generate_reply();
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_LT(static_cast<int64_t>(s->tokens().size()), s->capacity());
    EXPECT_EQ(s->messages().front().role, "system");
  }
  EXPECT_GE(new_conversations, 2);
}

// --context_shift over a conversation five times longer than the cache: it
// keeps going, keeps the system prompt first, and drops the oldest turns.
TEST_P(SessionTurns, C5_D14_ContextShiftGoesOnFiveTimesPastTheCache) {
  ChatSessionOptions o = greedy_options(GetParam(), 24);
  o.kv.capacity_rows = 256;
  o.kv.initial_rows = 16;
  o.context_shift = true;
  o.system_prompt = "Be kind.";
  auto s = make_session(*pkg_.program, *pkg_.tokenizer, o);
  ASSERT_TRUE(s);
  std::vector<ChatMessage> sys_only = {{"system", "Be kind."}};
  auto system_prefix = s->conversation_tokens(sys_only, false).value();
  // The last tokens of the system turn may merge with the next turn's marker.
  system_prefix.resize(system_prefix.size() - 3);
  int64_t total = 0, shifts = 0;
  for (int turn = 0; total < 5 * s->capacity(); ++turn) {
    ASSERT_LT(turn, 200);
    auto added = s->add_user_message("Turn " + std::to_string(turn) + ": what next?");
    ASSERT_TRUE(added.ok()) << added.status().message();
    if (added->action == ContextAction::kShifted) {
      ++shifts;
      EXPECT_GE(added->dropped_turns, 1);
      EXPECT_GT(s->n_turns(), 1) << "a shift keeps the newer turns";
    }
    EXPECT_NE(added->action, ContextAction::kNewConversation);
    CheckedTurn t;
    auto r = s->generate_reply([&](const std::string&) {
      if (t.checked) return;
      t.checked = true;
      t.cache_matched_template = std::vector<int64_t>(s->tokens().begin(), s->tokens().end()) ==
                                 s->conversation_tokens(s->messages(), true).value();
    });
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_TRUE(t.cache_matched_template) << "turn " << turn;
    total += r->tokens_fed + r->generated;
    EXPECT_EQ(s->messages().front().content, "Be kind.");
    EXPECT_TRUE(testing::starts_with(s->tokens(), system_prefix)) << "turn " << turn;
  }
  EXPECT_GE(shifts, 3);
}

INSTANTIATE_TEST_SUITE_P(Templates, SessionTurns, ::testing::Values("chatml", "llama3"));

}  // namespace
}  // namespace llmpack
