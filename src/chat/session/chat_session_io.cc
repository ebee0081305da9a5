// ChatSession::save / load: the cache rows and tokens through
// save_kv_cache_file, and the conversation (messages, turn boundaries) as
// JSON metadata inside the same checksummed file.
#include <nlohmann/json.hpp>

#include "chat/session/chat_session.h"

namespace llmpack {

std::string ChatSession::encode_metadata() const {
  nlohmann::json j;
  j["format"] = "llmpack-chat";
  j["messages"] = nlohmann::json::array();
  for (const ChatMessage& m : messages_) j["messages"].push_back({{"role", m.role}, {"content", m.content}});
  j["turns"] = nlohmann::json::array();
  for (const Turn& t : turns_) j["turns"].push_back({t.first_message, t.synced_from});
  j["awaiting_reply"] = awaiting_reply_;
  return j.dump();
}

Status ChatSession::decode_metadata(const std::string& text, int64_t n_tokens, std::vector<ChatMessage>& messages,
                                    std::vector<Turn>& turns) const {
  const auto bad = [](const std::string& what) { return error_status("the conversation record " + what); };
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || j.value("format", "") != "llmpack-chat") return bad("is missing or not a chat record");
  if (!j.contains("messages") || !j["messages"].is_array()) return bad("has no messages");
  for (const auto& m : j["messages"]) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
        !m["content"].is_string())
      return bad("has a message without a role and a content");
    messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
  }
  if (!j.contains("turns") || !j["turns"].is_array()) return bad("has no turns");
  for (const auto& t : j["turns"]) {
    if (!t.is_array() || t.size() != 2 || !t[0].is_number_unsigned() || !t[1].is_number_integer())
      return bad("has a malformed turn");
    Turn turn{t[0].get<size_t>(), t[1].get<int64_t>()};
    if (turn.first_message >= messages.size() || messages[turn.first_message].role != "user" ||
        turn.synced_from > n_tokens || turn.synced_from < -1)
      return bad("has a turn that does not match its messages or its cache");
    turns.push_back(turn);
  }
  if (j.value("awaiting_reply", false)) return bad("was saved while a reply was pending");
  return ok_status();
}

Status ChatSession::save(const std::string& path) const {
  if (awaiting_reply_) return error_status("cannot save while a user message waits for its reply");
  KvCacheFile contents;
  contents.model_identity = identity_;
  contents.tokens = seq_.tokens;
  contents.metadata = encode_metadata();
  return save_kv_cache_file(path, *cache_, contents).with_context("saving the conversation");
}

Status ChatSession::load(const std::string& path) {
  if (awaiting_reply_) return error_status("cannot load while a user message waits for its reply");
  // Everything is read into a new cache and checked before anything of the
  // current conversation changes.
  auto fresh = program_.create_kv_cache(options_.kv);
  if (!fresh.ok()) return fresh.status();
  std::unique_ptr<KvCache> cache = std::move(fresh).value();
  auto file = load_kv_cache_file(path, *cache, identity_);
  if (!file.ok()) return file.status().with_context("loading the conversation");
  const auto n = static_cast<int64_t>(file->tokens.size());
  if (n >= capacity_)
    return error_status("loading the conversation: '" + path + "' holds " + std::to_string(n) +
                        " tokens, the chat context is " + std::to_string(capacity_) + " positions");
  for (int64_t t : file->tokens)
    if (t < 0 || t >= tokenizer_.vocab_size())
      return error_status("loading the conversation: '" + path + "' holds token id " + std::to_string(t) +
                          ", outside the vocabulary of " + std::to_string(tokenizer_.vocab_size()));
  std::vector<ChatMessage> messages;
  std::vector<Turn> turns;
  if (auto status = decode_metadata(file->metadata, n, messages, turns); !status.ok())
    return status.with_context("loading the conversation from '" + path + "'");
  LLMPACK_RETURN_IF_ERROR(program_.bind_kv_cache(cache.get()));
  cache_ = std::move(cache);
  messages_ = std::move(messages);
  turns_ = std::move(turns);
  seq_.tokens = std::move(file->tokens);
  seq_.pos = n;
  awaiting_reply_ = false;
  return ok_status();
}

}  // namespace llmpack
