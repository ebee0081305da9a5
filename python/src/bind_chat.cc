// llmpack.chat.ChatSession for Python (CONTRACT C1-C7), the same rules as
// TextLLMRunner: the GIL is released while the engine runs and re-taken only
// to call the token callback. A callback that raises stops the reply (the
// reply keeps what was said and becomes the assistant turn); its exception is
// re-raised when generate_reply() returns. Ctrl-C is noticed after each
// streamed piece: the reply stops and KeyboardInterrupt is raised. One call
// at a time drives a session: a second mutating call from another thread or
// from inside the callback raises LlmpackError; reading tokens()/messages()
// is allowed from the callback (the driving thread) but not from another
// thread while a call runs, since the engine is changing them. stop() is
// allowed at any time, from any thread.
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <cxxabi.h>

#include <exception>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "bind_common.h"
#include "chat/session/chat_session.h"

namespace llmpack::python {
namespace {

py::str utf8_str(const std::string& text) {
  // Model text that is not valid UTF-8 becomes U+FFFD, never an exception.
  PyObject* s = PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace");
  if (!s) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(s);
}

const char* end_name(GenerationEnd end) {
  switch (end) {
    case GenerationEnd::kBudget: return "max_new_tokens";
    case GenerationEnd::kEos: return "eos";
    case GenerationEnd::kStopString: return "stop_string";
    case GenerationEnd::kStopped: return "stopped";
  }
  return "unknown";
}

// Python spellings of ContextAction (C5).
const char* action_name(ContextAction action) {
  switch (action) {
    case ContextAction::kNone: return "none";
    case ContextAction::kNewConversation: return "new_conversation";
    case ContextAction::kShifted: return "shifted";
  }
  return "unknown";
}

void validate_config(const GenerationConfig& cfg) {
  const Status s = cfg.validate();
  if (!s.ok()) throw_value_error(s.message());
}

// The template source as `llmpack chat --chat_template` finds it: a built-in
// name, else a file; None takes the package's tokenizer.chat_template (an
// empty source makes create() say what to pass).
std::string template_source(const std::optional<std::string>& chat_template, const LoadedPackage& pkg) {
  if (chat_template) {
    Result<std::string> builtin = builtin_chat_template(*chat_template);
    if (builtin.ok()) return *builtin;
    std::ifstream in(*chat_template, std::ios::binary);
    if (!in) {
      throw_value_error(
          builtin.status().with_context("chat_template (neither a built-in name nor a readable file)").message());
    }
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  if (const GgufFile* g = pkg.program->model().gguf()) {
    if (auto t = g->get_string("tokenizer.chat_template")) return *t;
  }
  return std::string();
}

std::vector<ChatMessage> to_messages(const py::handle& obj) {
  if (!py::isinstance<py::list>(obj) && !py::isinstance<py::tuple>(obj)) {
    throw_type_error(std::string("messages must be a list of {'role': str, 'content': str} dicts, got ") +
                     Py_TYPE(obj.ptr())->tp_name);
  }
  std::vector<ChatMessage> out;
  for (const py::handle item : obj) {
    if (!py::isinstance<py::dict>(item)) {
      throw_type_error(std::string("each message must be a dict with 'role' and 'content', got ") +
                       Py_TYPE(item.ptr())->tp_name);
    }
    const auto d = py::reinterpret_borrow<py::dict>(item);
    if (!d.contains("role") || !d.contains("content") || !py::isinstance<py::str>(d["role"]) ||
        !py::isinstance<py::str>(d["content"])) {
      throw_type_error("each message must have str values for 'role' and 'content'");
    }
    out.push_back({d["role"].cast<std::string>(), d["content"].cast<std::string>()});
  }
  return out;
}

class PyChatSession {
 public:
  PyChatSession(const std::filesystem::path& model_path, const std::optional<std::filesystem::path>& tokenizer_path,
                const std::optional<std::string>& chat_template, const std::string& system_prompt,
                const std::optional<GenerationConfig>& config, const std::optional<int64_t>& kv_initial,
                int64_t kv_capacity, const std::string& kv_dtype, int64_t max_seq_len, bool context_shift,
                int cpu_threads) {
    ChatSessionOptions so;
    so.generation = config.value_or(GenerationConfig());
    validate_config(so.generation);
    // As the CLI: kv_initial is capped by kv_capacity unless both are given.
    if (kv_initial && *kv_initial < 1) throw_value_error("kv_initial must be >= 1, got " + std::to_string(*kv_initial));
    if (kv_capacity < 0) throw_value_error("kv_capacity must be >= 0 (0: the package's context), got " +
                                           std::to_string(kv_capacity));
    if (kv_initial && kv_capacity > 0 && *kv_initial > kv_capacity) {
      throw_value_error("kv_initial " + std::to_string(*kv_initial) + " exceeds kv_capacity " +
                        std::to_string(kv_capacity));
    }
    if (max_seq_len < -1 || max_seq_len == 0) {
      throw_value_error("max_seq_len must be -1 (none) or >= 1, got " + std::to_string(max_seq_len));
    }
    Result<KvDtype> dtype = parse_kv_dtype(kv_dtype);
    if (!dtype.ok()) throw_value_error(dtype.status().with_context("kv_dtype").message());
    pkg_ = load_package_or_throw(model_path, tokenizer_path ? &*tokenizer_path : nullptr, cpu_threads);
    so.template_source = template_source(chat_template, pkg_);
    so.system_prompt = system_prompt;
    so.kv = {*dtype, kv_initial.value_or(KvCacheOptions().initial_rows), kv_capacity};
    so.max_seq_len = max_seq_len;
    so.context_shift = context_shift;
    auto created = without_gil(
        [&] { return ChatSession::create(*pkg_.program, *pkg_.tokenizer, std::move(so), python_log_sink()); });
    if (!created.ok()) throw_status(created.status().with_context("chat"));
    session_ = std::move(created).value();
  }

  py::dict add_user_message(const std::string& text) {
    Busy busy(*this, "add_user_message");
    auto added = without_gil([&] { return session_->add_user_message(text); });
    if (!added.ok()) throw_status(added.status());
    py::dict d;
    d["action"] = action_name(added->action);
    d["dropped_turns"] = added->dropped_turns;
    d["prompt_tokens"] = added->prompt_tokens;
    return d;
  }

  py::str generate_reply(const py::object& callback) {
    if (!callback.is_none() && !PyCallable_Check(callback.ptr())) {
      throw_type_error(std::string("callback must be callable or None, got ") + Py_TYPE(callback.ptr())->tp_name);
    }
    Busy busy(*this, "generate_reply");
    std::exception_ptr cb_error;
    TokenCallback on_piece = [&](const std::string& piece) {
      guarded_call(cb_error, [&] {
        if (!callback.is_none()) callback(utf8_str(piece));
      });
    };
    auto report = without_gil([&] { return session_->generate_reply(on_piece); });
    if (report.ok()) last_ = std::move(report).value();  // also when the callback raised: the turn is kept
    if (cb_error) std::rethrow_exception(cb_error);
    if (!report.ok()) throw_status(report.status());
    return utf8_str(last_->reply);
  }

  void undo(int64_t n) {
    Busy busy(*this, "undo");
    throw_if_error(session_->undo(n));
  }

  void reset() {
    Busy busy(*this, "reset");
    session_->reset();
    last_.reset();
  }

  void save(const std::filesystem::path& path) {
    Busy busy(*this, "save");
    const std::string p = path.string();
    throw_if_error(without_gil([&] { return session_->save(p); }));
  }

  void load(const std::filesystem::path& path) {
    require_file(path, "chat session file");
    Busy busy(*this, "load");
    const std::string p = path.string();
    throw_if_error(without_gil([&] { return session_->load(p); }));
  }

  void set_generation_config(const GenerationConfig& config) {
    validate_config(config);
    Busy busy(*this, "set_generation_config");
    const Status s = session_->set_generation_config(config);
    if (!s.ok()) throw_value_error(s.message());
  }

  void stop() { session_->stop(); }
  bool busy() const { return busy_; }

  std::vector<int64_t> tokens() const {
    check_readable("tokens");
    return {session_->tokens().begin(), session_->tokens().end()};
  }

  py::list messages() const {
    check_readable("messages");
    py::list out;
    for (const ChatMessage& m : session_->messages()) {
      py::dict d;
      d["role"] = utf8_str(m.role);
      d["content"] = utf8_str(m.content);
      out.append(d);
    }
    return out;
  }

  std::vector<int64_t> conversation_tokens(const py::object& messages, bool add_generation_prompt) const {
    check_readable("conversation_tokens");
    const std::vector<ChatMessage> msgs = messages.is_none() ? session_->messages() : to_messages(messages);
    auto t = session_->conversation_tokens(msgs, add_generation_prompt);
    if (!t.ok()) throw_status(t.status());
    return *t;
  }

  int64_t n_turns() const {
    check_readable("n_turns");
    return session_->n_turns();
  }
  int64_t capacity() const { return session_->capacity(); }

  py::object stats() const {
    check_readable("stats");
    if (!last_) return py::none();
    return py::cast(last_->stats);
  }

  py::object last_turn() const {
    check_readable("last_turn");
    if (!last_) return py::none();
    py::dict d;
    d["reply"] = utf8_str(last_->reply);
    d["end"] = end_name(last_->end);
    d["tokens_fed"] = last_->tokens_fed;
    d["tokens_reused"] = last_->tokens_reused;
    d["generated"] = last_->generated;
    return d;
  }

 private:
  // Marks the session driven by this thread. Taken and released with the GIL
  // held, so busy_ and driver_ need no atomics.
  class Busy {
   public:
    Busy(PyChatSession& s, const char* what) : s_(s) {
      if (s_.busy_) {
        throw_status(error_status(std::string(what) +
                                  ": the chat session is busy (another call is running on another thread or "
                                  "this one was made from the callback)"));
      }
      s_.busy_ = true;
      s_.driver_ = std::this_thread::get_id();
    }
    ~Busy() { s_.busy_ = false; }
    Busy(const Busy&) = delete;
    Busy& operator=(const Busy&) = delete;

   private:
    PyChatSession& s_;
  };

  void check_readable(const char* what) const {
    if (busy_ && driver_ != std::this_thread::get_id()) {
      throw_status(error_status(std::string(what) +
                                ": the chat session is busy on another thread (read it from the callback or "
                                "after the call returns)"));
    }
  }

  // Runs `body` with the GIL, then checks for Ctrl-C. The first exception is
  // kept and the reply is asked to stop; later pieces are dropped.
  template <typename Body>
  void guarded_call(std::exception_ptr& cb_error, Body&& body) {
    if (interpreter_finalizing()) {  // no Python any more: end the reply quietly
      session_->stop();
      return;
    }
    py::gil_scoped_acquire gil;
    if (cb_error) return;
    try {
      body();
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    } catch (abi::__forced_unwind&) {
      throw;  // the interpreter is ending this thread (finalization)
    } catch (...) {
      cb_error = std::current_exception();
      session_->stop();
    }
  }

  LoadedPackage pkg_;                      // outlives the session, which refers to it
  std::unique_ptr<ChatSession> session_;
  std::optional<TurnReport> last_;
  bool busy_ = false;
  std::thread::id driver_;
};

}  // namespace

void bind_chat(py::module_& m) {
  m.def("chat_template_names", &builtin_chat_template_names,
        "The names of the built-in chat templates ChatSession(chat_template=...) takes.");
  py::class_<PyChatSession>(m, "ChatSession",
                            "A multi-turn conversation over a runner-owned KV cache (CONTRACT C1-C7).")
      .def(py::init<const std::filesystem::path&, const std::optional<std::filesystem::path>&,
                    const std::optional<std::string>&, const std::string&, const std::optional<GenerationConfig>&,
                    const std::optional<int64_t>&, int64_t, const std::string&, int64_t, bool, int>(),
           py::arg("model_path"), py::arg("tokenizer_path") = py::none(), py::kw_only(),
           py::arg("chat_template") = py::none(), py::arg("system_prompt") = "", py::arg("config") = py::none(),
           py::arg("kv_initial") = py::none(), py::arg("kv_capacity") = 0, py::arg("kv_dtype") = std::string(kv_dtype_name(kDefaultKvDtype)),
           py::arg("max_seq_len") = -1, py::arg("context_shift") = false, py::arg("cpu_threads") = 0)
      .def("add_user_message", &PyChatSession::add_user_message, py::arg("text"))
      .def("generate_reply", &PyChatSession::generate_reply, py::arg("callback") = py::none())
      .def("undo", &PyChatSession::undo, py::arg("n") = 1)
      .def("reset", &PyChatSession::reset)
      .def("save", &PyChatSession::save, py::arg("path"))
      .def("load", &PyChatSession::load, py::arg("path"))
      .def("stop", &PyChatSession::stop)
      .def("set_generation_config", &PyChatSession::set_generation_config, py::arg("config"))
      .def("tokens", &PyChatSession::tokens)
      .def("messages", &PyChatSession::messages)
      .def("conversation_tokens", &PyChatSession::conversation_tokens, py::arg("messages") = py::none(),
           py::arg("add_generation_prompt") = true)
      .def("_busy", &PyChatSession::busy, "True while a call drives the session.")
      .def_property_readonly("n_turns", &PyChatSession::n_turns)
      .def_property_readonly("capacity", &PyChatSession::capacity)
      .def_property_readonly("stats", &PyChatSession::stats)
      .def_property_readonly("last_turn", &PyChatSession::last_turn);
}

}  // namespace llmpack::python
