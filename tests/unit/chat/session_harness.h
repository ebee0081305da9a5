// Shared pieces of the ChatSession tests: stories260K loaded once per test,
// a program wrapper that adds EOS ids (so a reply can end on EOS at a chosen
// token), and the C3 check taken at the first piece of a reply.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "chat/session/chat_session.h"
#include "common/fixtures.h"
#include "engine/llama_program.h"

namespace llmpack::testing {

// Delegates everything to `inner`; get_eos_ids also returns `extra_eos`.
class ExtraEosProgram final : public Program {
 public:
  ExtraEosProgram(Program& inner, std::vector<int64_t> extra_eos) : inner_(inner), extra_(std::move(extra_eos)) {}
  std::vector<std::string> method_names() const override { return inner_.method_names(); }
  Result<MethodMeta> method_meta(std::string_view m) const override { return inner_.method_meta(m); }
  Result<ConstantValue> execute_constant(std::string_view m) const override {
    auto v = inner_.execute_constant(m);
    if (m != "get_eos_ids" || !v.ok()) return v;
    auto ids = std::get<std::vector<int64_t>>(*v);
    ids.insert(ids.end(), extra_.begin(), extra_.end());
    return ConstantValue(ids);
  }
  Result<LogitsView> forward(std::span<const int64_t> t, int64_t pos, bool all, int64_t n_valid) override {
    return inner_.forward(t, pos, all, n_valid);
  }
  void reset_cache() override { inner_.reset_cache(); }
  Result<std::unique_ptr<KvCache>> create_kv_cache(const KvCacheOptions& o) const override {
    return inner_.create_kv_cache(o);
  }
  Status bind_kv_cache(KvCache* c) override { return inner_.bind_kv_cache(c); }
  uint64_t model_fingerprint() const override { return inner_.model_fingerprint(); }

 private:
  Program& inner_;
  std::vector<int64_t> extra_;
};

inline LoadedPackage load_stories() {
  ProgramOptions po;
  po.cpu_threads = 1;
  auto pkg = load_package(fixture_path("llama2c/stories260K.bin"), fixture_path("llama2c/tok512.bin"), po);
  EXPECT_TRUE(pkg.ok()) << pkg.status().message();
  return std::move(pkg).value();
}

inline ChatSessionOptions greedy_options(const std::string& template_name, int32_t max_new_tokens) {
  ChatSessionOptions o;
  o.template_source = builtin_chat_template(template_name).value();
  o.generation.temperature = 0.0f;
  o.generation.max_new_tokens = max_new_tokens;
  return o;
}

inline std::unique_ptr<ChatSession> make_session(Program& program, const Tokenizer& tokenizer,
                                                 const ChatSessionOptions& o) {
  auto s = ChatSession::create(program, tokenizer, o);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? std::move(s).value() : nullptr;
}

// One turn. Records, at the reply's first piece (prefill done, nothing
// generated fed yet), whether the cache equals the tokenization of the
// template rendered over the conversation with the generation prompt (C3).
struct CheckedTurn {
  TurnReport report;
  bool checked = false;
  bool cache_matched_template = false;
  std::vector<int64_t> cache_before;  // tokens() before the user message
};

inline CheckedTurn checked_turn(ChatSession& s, const std::string& message) {
  CheckedTurn t;
  t.cache_before.assign(s.tokens().begin(), s.tokens().end());
  auto added = s.add_user_message(message);
  EXPECT_TRUE(added.ok()) << added.status().message();
  auto on_piece = [&](const std::string&) {
    if (t.checked) return;
    t.checked = true;
    auto expected = s.conversation_tokens(s.messages(), true);
    EXPECT_TRUE(expected.ok());
    const std::vector<int64_t> held(s.tokens().begin(), s.tokens().end());
    t.cache_matched_template = expected.ok() && held == *expected;
  };
  auto r = s.generate_reply(on_piece);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (r.ok()) t.report = *r;
  return t;
}

inline bool starts_with(std::span<const int64_t> all, const std::vector<int64_t>& prefix) {
  return all.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), all.begin());
}

}  // namespace llmpack::testing
