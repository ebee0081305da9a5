// `llmpack chat`: an interactive conversation over a runner-owned KV cache
// (CONTRACT C1-C7). Replies go to stdout; notices, errors and --stats
// reports go to stderr.
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <termios.h>
#include <unistd.h>
#include <cstdio>
#include <sstream>
#include <thread>

#include "chat/session/chat_session.h"
#include "chat_line_reader.h"
#include "cli_common.h"
#include "commands.h"
#include "core/clock.h"

namespace llmpack::cli {
namespace {

struct ChatOptions {
  ModelOptions model;
  std::string system;
  std::string chat_template;
  GenerationConfig config;
  int64_t seq_len = -1;
  int64_t kv_initial = 256;
  int64_t kv_capacity = 0;
  std::string kv_dtype{kv_dtype_name(kDefaultKvDtype)};
  bool context_shift = false;
  bool stats = false;
  int debug_delay_ms = 0;
  std::optional<std::string> warmup_prefill;
  std::optional<std::string> dump_first_logits;
};

// The SIGINT handler's state: a flag, the session to stop, and whether the
// line reader is waiting at the prompt.
volatile sig_atomic_t g_interrupted = 0;
volatile sig_atomic_t g_at_prompt = 0;
volatile sig_atomic_t g_prompt_interrupts = 0;  // Ctrl-Cs since the last line read
ChatSession* volatile g_session = nullptr;
struct termios g_saved_tty {};
volatile sig_atomic_t g_have_saved_tty = 0;

extern "C" void on_sigint(int) {
  g_interrupted = 1;
  if (ChatSession* s = g_session) s->stop();  // an atomic store
  // A second Ctrl-C at the prompt quits from here: a line editor may retry its
  // read after the first signal, so the loop might never see the second one.
  // Only async-signal-safe calls: restore the terminal, end the line, _exit.
  g_prompt_interrupts = g_at_prompt ? g_prompt_interrupts + 1 : g_prompt_interrupts;
  if (g_at_prompt && g_prompt_interrupts >= 2) {
    if (g_have_saved_tty) tcsetattr(STDIN_FILENO, TCSANOW, &g_saved_tty);
    const ssize_t ignored = write(STDOUT_FILENO, "\n", 1);
    (void)ignored;
    _exit(0);
  }
}

void install_sigint_handler() {
  if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &g_saved_tty) == 0) g_have_saved_tty = 1;
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocked read returns EINTR
  sigaction(SIGINT, &sa, nullptr);
}

void notice(const std::string& text) { std::fprintf(stderr, "%s\n", text.c_str()); }

const char* const kHelp =
    "Commands:\n"
    "  /reset        start a new conversation (the system prompt stays)\n"
    "  /undo [N]     drop the last N turns (default 1)\n"
    "  /save FILE    save the conversation and its cache\n"
    "  /load FILE    load a conversation saved with this model\n"
    "  /set NAME VALUE  change a setting for the next replies: temperature, top_k, top_p, min_p, top_n_sigma,\n"
    "                repeat_penalty, repeat_last_n, presence_penalty, frequency_penalty, max_new_tokens\n"
    "  /set          show those settings\n"
    "  /help         this list\n"
    "Ctrl-C stops a reply; Ctrl-C twice at an empty prompt or Ctrl-D quits.";

Result<std::string> template_source(const ChatOptions& o, const LoadedPackage& pkg) {
  if (!o.chat_template.empty()) return chat_template_from_option(o.chat_template);
  if (const GgufFile* g = pkg.program->model().gguf()) {
    if (auto t = g->get_string("tokenizer.chat_template")) return *t;
  }
  return std::string();  // ChatSession explains what to pass
}

// The settings /set changes, by name: a float or an int32 field of GenerationConfig.
struct Setting {
  const char* name;
  float GenerationConfig::*real;
  int32_t GenerationConfig::*integer;
};
constexpr Setting kSettings[] = {
    {"temperature", &GenerationConfig::temperature, nullptr},
    {"top_k", nullptr, &GenerationConfig::top_k},
    {"top_p", &GenerationConfig::top_p, nullptr},
    {"min_p", &GenerationConfig::min_p, nullptr},
    {"top_n_sigma", &GenerationConfig::top_n_sigma, nullptr},
    {"repeat_penalty", &GenerationConfig::repeat_penalty, nullptr},
    {"repeat_last_n", nullptr, &GenerationConfig::repeat_last_n},
    {"presence_penalty", &GenerationConfig::presence_penalty, nullptr},
    {"frequency_penalty", &GenerationConfig::frequency_penalty, nullptr},
    {"max_new_tokens", nullptr, &GenerationConfig::max_new_tokens},
};

std::string settings_text(const GenerationConfig& c) {
  std::string out;
  for (const Setting& s : kSettings) {
    char value[32];
    if (s.real) std::snprintf(value, sizeof value, "%g", static_cast<double>(c.*s.real));
    else std::snprintf(value, sizeof value, "%d", c.*s.integer);
    out += std::string(out.empty() ? "(" : ", ") + s.name + " " + value;
  }
  return out + ")";
}

// `/set NAME VALUE`: the value parsed whole, then checked by the session as
// the flags are (a refused value changes nothing); `/set` alone shows them.
void set_command(ChatSession& session, const std::string& arg) {
  std::istringstream in(arg);
  std::string name, value, extra;
  in >> name >> value >> extra;
  if (name.empty()) {
    notice(settings_text(session.generation_config()));
    return;
  }
  const Setting* setting = nullptr;
  for (const Setting& s : kSettings)
    if (name == s.name) setting = &s;
  if (setting == nullptr) {
    std::string names;
    for (const Setting& s : kSettings) names += std::string(names.empty() ? "" : ", ") + s.name;
    fail("/set: unknown setting '" + name + "'; expected one of " + names);
    return;
  }
  if (value.empty() || !extra.empty()) {
    fail("/set " + name + ": expected one value, found '" + (value.empty() ? "" : arg.substr(arg.find(value))) + "'");
    return;
  }
  GenerationConfig c = session.generation_config();
  char* end = nullptr;
  errno = 0;
  if (setting->real) {
    c.*setting->real = std::strtof(value.c_str(), &end);
  } else {
    const long long v = std::strtoll(value.c_str(), &end, 10);
    if (v < INT32_MIN || v > INT32_MAX) errno = ERANGE;
    c.*setting->integer = static_cast<int32_t>(v);
  }
  if (end == value.c_str() || *end != '\0' || errno == ERANGE) {
    fail("/set " + name + ": expected " + (setting->real ? "a number" : "an integer") + ", found '" + value + "'");
    return;
  }
  if (Status s = session.set_generation_config(c); !s.ok()) {
    fail(s.with_context("/set " + name));
    return;
  }
  notice("(" + name + " " + value + ")");
}

// Runs one slash command; false for an unknown one.
void run_command(ChatSession& session, const std::string& line) {
  std::istringstream in(line);
  std::string cmd, arg;
  in >> cmd;
  std::getline(in >> std::ws, arg);
  if (cmd == "/help") {
    notice(kHelp);
  } else if (cmd == "/reset") {
    session.reset();
    notice("(new conversation)");
  } else if (cmd == "/undo") {
    int64_t n = 1;
    if (!arg.empty()) {
      try {
        size_t used = 0;
        n = std::stoll(arg, &used);
        if (used != arg.size()) n = 0;
      } catch (...) {
        n = 0;
      }
    }
    if (auto s = session.undo(n); !s.ok()) {
      fail(s);
    } else {
      notice("(undid " + std::to_string(n) + (n == 1 ? " turn)" : " turns)"));
    }
  } else if (cmd == "/set") {
    set_command(session, arg);
  } else if (cmd == "/save" || cmd == "/load") {
    if (arg.empty()) {
      fail(cmd + " needs a file name");
      return;
    }
    Status s = cmd == "/save" ? session.save(arg) : session.load(arg);
    if (!s.ok()) {
      fail(s);
    } else {
      notice(std::string(cmd == "/save" ? "(saved " : "(loaded ") + std::to_string(session.n_turns()) + " turns, " +
             std::to_string(session.tokens().size()) + " tokens)");
    }
  } else {
    fail("unknown command '" + cmd + "'; /help lists the commands");
  }
}

void print_stats(const TurnReport& r, int64_t load_start, int64_t load_end) {
  Stats st = r.stats;
  st.model_load_start_ms = load_start;
  st.model_load_end_ms = load_end;
  std::fprintf(stderr, "%s", st.report().c_str());
  std::fprintf(stderr, "PyTorchObserver %s\n", st.to_json_string().c_str());
}

void chat_turn(ChatSession& session, const ChatOptions& o, const std::string& line, int64_t load_start,
               int64_t load_end) {
  auto added = session.add_user_message(line);
  if (!added.ok()) {
    fail(added.status());
    return;
  }
  if (added->action == ContextAction::kNewConversation)
    notice("(the context is full: a new conversation starts; " + std::to_string(added->dropped_turns) +
           " earlier turns are forgotten)");
  if (added->action == ContextAction::kShifted)
    notice("(the context is full: the oldest " + std::to_string(added->dropped_turns) +
           " turns after the system prompt are dropped)");
  auto on_piece = [&](const std::string& piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    if (g_interrupted) session.stop();  // a SIGINT that came before the reply started
    if (o.debug_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o.debug_delay_ms));
  };
  auto report = session.generate_reply(on_piece);
  std::fputc('\n', stdout);
  std::fflush(stdout);
  if (!report.ok()) {
    fail(report.status());
    return;
  }
  if (report->end == GenerationEnd::kStopped) notice("(stopped)");
  if (o.stats) print_stats(*report, load_start, load_end);
}

Status check_flags(const ChatOptions& o, bool kv_initial_given, bool kv_capacity_given) {
  if (o.warmup_prefill)
    return error_status("--warmup_prefill does not apply to chat: every turn's prefill is part of the "
                        "conversation; llmpack run --warmup N and bench (warmed up by default) warm up before measuring");
  if (o.dump_first_logits)
    return error_status("--dump_first_logits does not apply to chat: the logits of a turn depend on the whole "
                        "conversation; use llmpack run -p PROMPT --dump_first_logits");
  if (kv_initial_given && kv_capacity_given && o.kv_capacity > 0 && o.kv_initial > o.kv_capacity)
    return error_status("--kv_initial " + std::to_string(o.kv_initial) + " exceeds --kv_capacity " +
                        std::to_string(o.kv_capacity));
  return o.config.validate();
}

int execute(ChatOptions& o, bool kv_initial_given, bool kv_capacity_given) {
  if (auto s = check_flags(o, kv_initial_given, kv_capacity_given); !s.ok()) return fail(s);
  auto dtype = parse_kv_dtype(o.kv_dtype);
  if (!dtype.ok()) return fail(dtype.status().with_context("--kv_dtype"));

  const int64_t load_start = time_in_ms();
  const ProgramOptions options = program_options(o.model);
  auto loaded = load_package(o.model.model_path, o.model.tokenizer_path, options);
  if (!loaded.ok()) return fail(loaded.status());
  note_thread_placement(*loaded->program, o.model, options);
  ChatSessionOptions so;
  auto source = template_source(o, *loaded);
  if (!source.ok()) return fail(source.status());
  so.template_source = *source;
  so.system_prompt = o.system;
  so.kv = {*dtype, o.kv_initial, o.kv_capacity};
  so.max_seq_len = o.seq_len;
  so.context_shift = o.context_shift;
  so.generation = o.config;
  auto session = ChatSession::create(*loaded->program, *loaded->tokenizer, so, stderr_log_sink());
  if (!session.ok()) return fail(session.status().with_context("chat"));
  const int64_t load_end = time_in_ms();
  ChatSession& chat = **session;

  g_session = &chat;
  install_sigint_handler();
  auto reader = make_line_reader(g_interrupted);
  if (stdin_is_terminal()) notice("llmpack chat: type a message, /help for commands, Ctrl-D to quit.");
  std::string line;
  // The flag is cleared only where a Ctrl-C is consumed, so one that arrives
  // between two reads (while a notice prints) is not lost.
  g_interrupted = 0;
  while (true) {
    g_at_prompt = 1;  // stays set while the Ctrl-C notice prints
    const ReadStatus status = reader->read("> ", line);
    if (status == ReadStatus::kEndOfInput) break;
    if (status == ReadStatus::kInterrupted) {
      g_interrupted = 0;
      if (g_prompt_interrupts >= 2) break;
      notice("(Ctrl-C again or Ctrl-D to quit)");
      continue;
    }
    g_at_prompt = 0;
    g_prompt_interrupts = 0;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // an empty line is ignored
    if (line[0] == '/') {
      run_command(chat, line);
      g_interrupted = 0;
      continue;
    }
    chat_turn(chat, o, line, load_start, load_end);
    g_interrupted = 0;  // a Ctrl-C during the reply stopped it
  }
  g_session = nullptr;
  if (stdin_is_terminal()) std::fputc('\n', stdout);
  return 0;
}


}  // namespace

void register_chat(CLI::App& app, std::function<int()>& action) {
  auto* cmd = app.add_subcommand("chat", "Interactive chat, one turn per line of stdin");
  auto o = std::make_shared<ChatOptions>();
  add_model_options(*cmd, o->model);
  GenerationConfig& c = o->config;
  cmd->add_option("--system", o->system, "System prompt");
  cmd->add_option("--chat_template", o->chat_template,
                  "Template name (llama3, chatml, llama2, gemma, phi3, mistral, smollm2) or a .jinja file; "
                  "default: the package's");
  cmd->add_option("-n,--max_new_tokens", c.max_new_tokens, "Tokens per reply at most (-1: until the context is full)")
      ->default_val(-1)->check(CLI::Range(-1, 1 << 24));
  cmd->add_option("--seq_len,--max_seq_length", o->seq_len,
                  "Cap on the conversation's tokens, as --seq_len caps a run (-1: the context)")
      ->default_val(-1)->check(CLI::Range(int64_t{-1}, int64_t{1} << 24));
  add_sampling_options(*cmd, c);
  cmd->add_option("--stop", c.stop, "End a reply before this string (repeatable)");
  auto* initial = cmd->add_option("--kv_initial", o->kv_initial, "KV cache rows allocated at start (grows as needed)")
                      ->default_val(256)->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  auto* capacity = cmd->add_option("--kv_capacity", o->kv_capacity, "KV cache rows at most (0: the package's context C)")
                       ->default_val(0)->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  cmd->add_option("--kv_dtype", o->kv_dtype, "KV cache element type: f16 (default), f32 or q8_0")->default_val(std::string(kv_dtype_name(kDefaultKvDtype)));
  cmd->add_flag("--context_shift", o->context_shift,
                "When the context is full, drop the oldest turns after the system prompt instead of starting over");
  cmd->add_flag("--stats", o->stats, "Print each turn's report (stderr)");
  // Accepted only to be refused with a clear message (C6).
  cmd->add_option("--warmup_prefill", o->warmup_prefill)->expected(0, 1)->group("");
  cmd->add_option("--dump_first_logits", o->dump_first_logits)->expected(0, 1)->group("");
  // Tests: a pause after each streamed piece, so a Ctrl-C lands mid-reply.
  cmd->add_option("--debug_delay_ms", o->debug_delay_ms)->check(CLI::Range(0, 10000))->group("");
  cmd->callback([&action, o, initial, capacity] {
    const bool initial_given = initial->count() > 0, capacity_given = capacity->count() > 0;
    action = [o, initial_given, capacity_given] { return execute(*o, initial_given, capacity_given); };
  });
}

}  // namespace llmpack::cli
