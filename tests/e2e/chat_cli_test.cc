// `llmpack chat` as a user runs it (C1-C7): scripted sessions through a pipe
// and through a pseudo-terminal (Ctrl-C during a reply, Ctrl-C and Ctrl-D at
// the prompt), and every refused flag combination.
#include <gtest/gtest.h>

#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/cli_runner.h"
#include "common/fixtures.h"

namespace {

using Outcome = llmpack::testing::CliOutcome;
using llmpack::testing::slurp;
using llmpack::testing::temp_stem;

// Runs `llmpack ARGS` with `input` on stdin (a pipe from a file).
Outcome run_chat_cli(const std::string& args, const std::string& input = "") {
  return llmpack::testing::run_llmpack(args, input);
}

class ChatCli : public ::testing::Test {
 protected:
  void SetUp() override {
    LLMPACK_REQUIRE_FIXTURE(model, "llama2c/stories260K.bin");
    LLMPACK_REQUIRE_FIXTURE(tok, "llama2c/tok512.bin");
    plain_ = "chat -m " + model + " --tokenizer_path " + tok + " --temperature 0 -t 1";
    base_ = plain_ + " --chat_template chatml";
  }
  std::string plain_, base_;
};

TEST_F(ChatCli, C2_PipeSessionUndoAndEmptyLinesGiveTheSameRepliesAsAFreshOne) {
  auto one = run_chat_cli(base_ + " -n 16", "Hello.\n");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  ASSERT_GT(one.out.size(), 1u);
  auto two = run_chat_cli(base_ + " -n 16", "Hello.\nWho is Tom?\n");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  ASSERT_EQ(two.out.rfind(one.out, 0), 0u);
  const std::string reply2 = two.out.substr(one.out.size());
  ASSERT_FALSE(reply2.empty());
  // An empty line is ignored, and /undo drops "Where?" with its reply.
  auto undone = run_chat_cli(base_ + " -n 16", "Hello.\n\n   \nWhere?\n/undo\nWho is Tom?\n");
  ASSERT_EQ(undone.exit_code, 0) << undone.err;
  EXPECT_EQ(undone.out.rfind(one.out, 0), 0u);
  EXPECT_EQ(undone.out.substr(undone.out.size() - reply2.size()), reply2);
  EXPECT_NE(undone.err.find("(undid 1 turn)"), std::string::npos) << undone.err;
}

TEST_F(ChatCli, C4_SaveThenLoadInAnotherProcessContinuesTheSame) {
  const std::string file = temp_stem("conv") + ".llmchat";
  auto whole = run_chat_cli(base_ + " -n 16", "Hello.\nWho is Tom?\n");
  auto first = run_chat_cli(base_ + " -n 16", "Hello.\n/save " + file + "\n");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.err.find("(saved 1 turns"), std::string::npos) << first.err;
  auto second = run_chat_cli(base_ + " -n 16", "/load " + file + "\nWho is Tom?\n");
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(first.out + second.out, whole.out);
  // /reset, /help, an unknown command, and a missing or foreign file.
  auto other = run_chat_cli(base_ + " -n 4", "/help\n/bogus\n/load /nonexistent/x\n/reset\n");
  EXPECT_EQ(other.exit_code, 0);
  EXPECT_NE(other.err.find("/undo [N]"), std::string::npos);
  EXPECT_NE(other.err.find("unknown command '/bogus'"), std::string::npos);
  EXPECT_NE(other.err.find("cannot read '/nonexistent/x': No such file or directory"), std::string::npos) << other.err;
  LLMPACK_REQUIRE_FIXTURE(gguf, "gguf/stories260K.gguf");
  auto foreign = run_chat_cli("chat -m " + gguf + " --chat_template chatml -t 1 -n 4", "/load " + file + "\n");
  EXPECT_EQ(foreign.exit_code, 0);
  // The GGUF holds the same weights but another vocabulary file: another identity.
  EXPECT_NE(foreign.err.find("llmpack: loading the conversation"), std::string::npos) << foreign.err;
  std::remove(file.c_str());
}

// A folder given to /load or /save (read as a file, it threw from the
// stream and aborted the chat): one line each, and the conversation goes on
// as if neither had been typed.
// /set NAME VALUE changes the settings of the following replies as the flag
// of that name would have; a refused value changes nothing; /set alone shows them.
TEST_F(ChatCli, SetChangesTheNextRepliesAsTheFlagWould) {
  auto flags = run_chat_cli(base_ + " -n 6 --frequency_penalty 1.5 --repeat_last_n 8", "Hello.\nWho is Tom?\n");
  ASSERT_EQ(flags.exit_code, 0) << flags.err;
  auto set = run_chat_cli(base_ + " -n 16",
                          "/set max_new_tokens 6\n/set frequency_penalty 1.5\n/set repeat_last_n 8\nHello.\n"
                          "Who is Tom?\n");
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_EQ(set.out, flags.out);
  EXPECT_NE(set.err.find("(frequency_penalty 1.5)"), std::string::npos) << set.err;
  auto plain = run_chat_cli(base_ + " -n 6", "Hello.\nWho is Tom?\n");
  EXPECT_NE(plain.out, flags.out);  // the penalty did change the text

  auto refused = run_chat_cli(base_ + " -n 4",
                              "/set top_p 2\n/set top_k many\n/set nucleus 0.5\n/set min_p 0.1 0.2\n"
                              "/set max_new_tokens 0\n/set\nHi.\n");
  ASSERT_EQ(refused.exit_code, 0) << refused.err;
  for (const char* said : {"/set top_p: top_p must be in (0, 1]", "/set top_k: expected an integer, found 'many'",
                           "/set: unknown setting 'nucleus'; expected one of temperature,",
                           "/set min_p: expected one value, found '0.1 0.2'",
                           "/set max_new_tokens: max_new_tokens 0 leaves no token for a reply",
                           "(temperature 0, top_k 0, top_p 1, min_p 0, top_n_sigma 0, repeat_penalty 1, repeat_last_n 64, "
                           "presence_penalty 0, frequency_penalty 0, max_new_tokens 4)"})
    EXPECT_NE(refused.err.find(said), std::string::npos) << said << "\nin:\n" << refused.err;
  EXPECT_FALSE(refused.out.empty());  // the conversation went on
  auto zero = run_chat_cli(base_ + " -n 0", "Hi.\n");  // the flag as /set: refused at start
  EXPECT_NE(zero.exit_code, 0);
  EXPECT_NE(zero.err.find("max_new_tokens 0 leaves no token for a reply"), std::string::npos) << zero.err;
}

TEST_F(ChatCli, C4_LoadOrSaveOfAFolderIsRefusedAndTheConversationGoesOn) {
  const std::string folder = temp_stem("conv_folder");
  std::filesystem::create_directory(folder);
  auto whole = run_chat_cli(base_ + " -n 16", "Hello.\nWho is Tom?\n");
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  auto refused = run_chat_cli(base_ + " -n 16", "Hello.\n/load " + folder + "\n/save " + folder + "\nWho is Tom?\n");
  EXPECT_EQ(refused.exit_code, 0) << refused.err;
  EXPECT_EQ(refused.out, whole.out);
  EXPECT_NE(refused.err.find("loading the conversation: '" + folder + "' is a directory, expected a file"),
            std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("saving the conversation: '" + folder + "' is a directory"), std::string::npos)
      << refused.err;
  std::filesystem::remove(folder);
}

// /save replaces an earlier conversation file but no other file: a mistyped
// `/save model.gguf` must not destroy the model.
TEST_F(ChatCli, C4_SaveReplacesOnlyAConversationFile) {
  LLMPACK_REQUIRE_FIXTURE(gguf, "gguf/stories260K.gguf");
  const std::string other = temp_stem("not_a_conversation") + ".gguf";
  const std::string conv = temp_stem("conv_twice") + ".llmchat";
  std::filesystem::copy_file(gguf, other, std::filesystem::copy_options::overwrite_existing);
  const std::string before = slurp(other);
  auto r = run_chat_cli(base_ + " -n 4", "Hello.\n/save " + other + "\n/save " + conv + "\n/save " + conv + "\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("'" + other + "' exists and is not an llmpack conversation file; it was left as it is"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(slurp(other), before);
  size_t saved = 0;
  for (size_t at = r.err.find("(saved 1 turns"); at != std::string::npos; at = r.err.find("(saved 1 turns", at + 1))
    ++saved;
  EXPECT_EQ(saved, 2u) << r.err;  // the second /save replaced the first file
  std::remove(other.c_str());
  std::remove(conv.c_str());
}

TEST_F(ChatCli, C5_FullContextStartsOverWithANoticeOrShifts) {
  const std::string lines = "Tell me a story.\nAnd then?\nWhat next?\nWho came?\nThe end?\nMore!\n";
  auto fresh = run_chat_cli(base_ + " -n 40 --kv_capacity 160 --system 'Be brief.'", lines);
  ASSERT_EQ(fresh.exit_code, 0) << fresh.err;
  EXPECT_NE(fresh.err.find("a new conversation starts"), std::string::npos) << fresh.err;
  auto shifted = run_chat_cli(base_ + " -n 40 --kv_capacity 160 --kv_initial 16 --context_shift --system 'Be brief.'", lines);
  ASSERT_EQ(shifted.exit_code, 0) << shifted.err;
  EXPECT_NE(shifted.err.find("turns after the system prompt are dropped"), std::string::npos) << shifted.err;
  // A line that cannot fit even an empty cache: an error, and the next line works.
  auto huge = run_chat_cli(base_ + " -n 8 --kv_capacity 64", std::string(3000, 'x') + "\nHi.\n");
  EXPECT_EQ(huge.exit_code, 0);
  EXPECT_NE(huge.err.find("shorten it"), std::string::npos) << huge.err;
  EXPECT_FALSE(huge.out.empty());
}

TEST_F(ChatCli, C6_D15_MaxSeqLengthCapsAndStatsPrintEachTurn) {
  auto r = run_chat_cli(base_ + " -n 500 --max_seq_length 80 --stats", "Hello.\nHi.\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  size_t reports = 0;
  for (size_t at = r.err.find("PyTorchObserver "); at != std::string::npos; at = r.err.find("PyTorchObserver ", at + 1))
    ++reports;
  EXPECT_EQ(reports, 2u) << r.err;
  // The first turn fills the 80 positions: generated = 80 - 1 - prompt tokens.
  EXPECT_NE(r.err.find("Generated tokens: "), std::string::npos);
  EXPECT_NE(r.err.find("a new conversation starts"), std::string::npos) << r.err;
}

struct Refused {
  std::string args;
  std::string fragment;
};

TEST_F(ChatCli, C6_C7_RefusedFlagCombinationsGiveClearErrors) {
  const std::vector<Refused> cases = {
      {"--warmup_prefill", "--warmup_prefill does not apply to chat"},
      {"--dump_first_logits logits.bin", "--dump_first_logits does not apply to chat"},
      {"--kv_dtype q4_0", "KV cache dtype 'q4_0' is unknown"},
      {"--kv_capacity 100000", "exceeds the package's context of 512"},
      {"--kv_initial 64 --kv_capacity 32", "--kv_initial 64 exceeds --kv_capacity 32"},
      {"--chat_template nosuch", "--chat_template"},
      {"--system \"$(printf 'word %.0s' $(seq 600))\"", "system prompt takes"},
  };
  for (const Refused& c : cases) {
    const bool own_template = c.args.find("--chat_template") != std::string::npos;
    auto r = run_chat_cli((own_template ? plain_ : base_) + " " + c.args, "Hello.\n");
    EXPECT_EQ(r.exit_code, 1) << c.args;
    EXPECT_NE(r.err.find(c.fragment), std::string::npos) << c.args << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << c.args;
  }
}

TEST_F(ChatCli, C1_InGraphAndCachelessPackagesAreRefused) {
  LLMPACK_REQUIRE_FIXTURE(model, "llama2c/stories260K.bin");
  LLMPACK_REQUIRE_FIXTURE(tok, "llama2c/tok512.bin");
  for (const char* kind : {"in_graph", "none", "off_graph"}) {
    const std::string pkg = temp_stem(kind) + ".gguf";
    auto e = run_chat_cli("export --checkpoint " + model + " --tokenizer_path " + tok + " --max_seq_length 64 --kv_cache " +
                     kind + " --output " + pkg);
    ASSERT_EQ(e.exit_code, 0) << e.err;
    auto r = run_chat_cli("chat -m " + pkg + " -t 1 -n 4", "Hello.\n");
    EXPECT_EQ(r.exit_code, 1) << kind;
    if (std::string(kind) == "off_graph") {
      // Accepted as a package; this export carries no chat template.
      EXPECT_NE(r.err.find("--chat_template NAME"), std::string::npos) << r.err;
      auto ok = run_chat_cli("chat -m " + pkg + " -t 1 -n 4 --chat_template llama3", "Hello.\n");
      EXPECT_EQ(ok.exit_code, 0) << ok.err;
    } else {
      EXPECT_NE(r.err.find("--kv_cache off_graph"), std::string::npos) << kind << ": " << r.err;
    }
    std::remove(pkg.c_str());
  }
}

// ---- pseudo-terminal sessions ----------------------------------------------

class Pty {
 public:
  explicit Pty(const std::vector<std::string>& args) {
    pid_ = forkpty(&fd_, nullptr, nullptr, nullptr);
    if (pid_ == 0) {
      std::vector<char*> argv;
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      setenv("TERM", "dumb", 1);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  ~Pty() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) close(fd_);
  }
  bool started() const { return pid_ > 0; }
  void send(const std::string& bytes) { ASSERT_EQ(write(fd_, bytes.data(), bytes.size()), (ssize_t)bytes.size()); }
  // Reads until `text` appears after `from` in everything seen, or the deadline.
  bool wait_for(const std::string& text, size_t from = 0, int timeout_ms = 60000) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (seen_.find(text, from) == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !read_some(static_cast<int>(left.count()))) return false;
    }
    return true;
  }
  // Waits for the child to exit (draining output); its exit code or -1.
  int wait_exit(int timeout_ms = 60000) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < end) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      read_some(50);
    }
    return -2;
  }
  // Waits until the line editor has the terminal (canonical mode off): keys
  // sent before it switches modes may be flushed with the old mode's input.
  // On Linux the master's termios are the slave's, so the test reads them.
  bool wait_for_line_editor(int timeout_ms = 60000) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < end) {
      termios t{};
      if (tcgetattr(fd_, &t) != 0) return false;
      if (!(t.c_lflag & ICANON)) return true;
      read_some(1);
    }
    return false;
  }
  const std::string& seen() const { return seen_; }

 private:
  bool read_some(int timeout_ms) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return true;  // nothing yet
    char buf[4096];
    const ssize_t n = read(fd_, buf, sizeof(buf));
    if (n <= 0) return false;  // the child closed the terminal
    seen_.append(buf, static_cast<size_t>(n));
    return true;
  }
  pid_t pid_ = -1;
  int fd_ = -1;
  bool reaped_ = false;
  std::string seen_;
};

std::vector<std::string> pty_args(const std::string& extra_delay) {
  using llmpack::testing::fixture_path;
  return {LLMPACK_BINARY_PATH, "chat", "-m", fixture_path("llama2c/stories260K.bin"), "--tokenizer_path",
          fixture_path("llama2c/tok512.bin"), "--chat_template", "chatml", "--temperature", "0", "-t", "1", "-n",
          "300", "--debug_delay_ms", extra_delay};
}

TEST_F(ChatCli, C4_TerminalCtrlCStopsTheReplyAndCtrlDQuits) {
  Pty pty(pty_args("40"));
  ASSERT_TRUE(pty.started());
  ASSERT_TRUE(pty.wait_for("> ")) << pty.seen();
  size_t mark = pty.seen().size();
  ASSERT_TRUE(pty.wait_for_line_editor()) << pty.seen();
  pty.send("Hello there.\r");
  ASSERT_TRUE(pty.wait_for("Hello there.", mark)) << pty.seen();  // the echo of the line
  mark = pty.seen().find("Hello there.", mark) + 12;
  ASSERT_TRUE(pty.wait_for("Here", mark)) << pty.seen();          // the reply is streaming
  pty.send("\x03");
  ASSERT_TRUE(pty.wait_for("(stopped)", mark)) << pty.seen();
  const size_t stopped = pty.seen().find("(stopped)", mark);
  ASSERT_TRUE(pty.wait_for("> ", stopped)) << pty.seen();          // back at the prompt
  // 300 tokens at 40 ms each would take 12 s: the reply was cut short.
  EXPECT_LT(stopped - mark, 400u) << pty.seen();
  ASSERT_TRUE(pty.wait_for_line_editor()) << pty.seen();
  pty.send("\x04");  // Ctrl-D at an empty prompt
  EXPECT_EQ(pty.wait_exit(), 0) << pty.seen();
}

TEST_F(ChatCli, C4_TerminalTwoCtrlCAtAnEmptyPromptQuit) {
  Pty pty(pty_args("0"));
  ASSERT_TRUE(pty.started());
  ASSERT_TRUE(pty.wait_for("> ")) << pty.seen();
  const size_t mark = pty.seen().size();
  ASSERT_TRUE(pty.wait_for_line_editor()) << pty.seen();
  pty.send("\x03");
  ASSERT_TRUE(pty.wait_for("Ctrl-C again", mark)) << pty.seen();
  ASSERT_TRUE(pty.wait_for_line_editor()) << pty.seen();
  pty.send("\x03");
  EXPECT_EQ(pty.wait_exit(), 0) << pty.seen();
}

}  // namespace
