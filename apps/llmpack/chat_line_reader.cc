#include "chat_line_reader.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#ifdef LLMPACK_HAVE_LIBEDIT
#include <editline/readline.h>
#endif

namespace llmpack::cli {
namespace {

// Pipes and files: POSIX getline, which returns -1 with EINTR when a SIGINT
// arrives (the handler is installed without SA_RESTART).
class PipeReader final : public LineReader {
 public:
  explicit PipeReader(volatile const int& interrupted) : interrupted_(interrupted) {}
  ~PipeReader() override { std::free(buf_); }
  ReadStatus read(const std::string& prompt, std::string& line) override {
    if (interrupted_) return ReadStatus::kInterrupted;  // a Ctrl-C that came before the read
    if (!prompt.empty() && stdin_is_terminal()) {  // a terminal without libedit
      std::fputs(prompt.c_str(), stdout);
      std::fflush(stdout);
    }
    errno = 0;
    const ssize_t n = ::getline(&buf_, &cap_, stdin);
    if (n < 0) {
      const bool eintr = errno == EINTR || interrupted_;
      std::clearerr(stdin);
      return eintr ? ReadStatus::kInterrupted : ReadStatus::kEndOfInput;
    }
    line.assign(buf_, static_cast<size_t>(n));
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    return ReadStatus::kLine;
  }

 private:
  volatile const int& interrupted_;
  char* buf_ = nullptr;
  size_t cap_ = 0;
};

#ifdef LLMPACK_HAVE_LIBEDIT
// libedit reads characters through this function: a SIGINT makes it return
// EOF (so readline returns) whether the signal came before or during the
// read; libedit's own read would retry after EINTR, or block when the signal
// arrived before it started.
volatile const int* g_terminal_interrupted = nullptr;

int interruptible_getc(FILE*) {
  for (;;) {
    if (g_terminal_interrupted && *g_terminal_interrupted) return EOF;
    unsigned char c = 0;
    const ssize_t n = ::read(STDIN_FILENO, &c, 1);
    if (n == 1) return c;
    if (n == 0 || errno != EINTR) return EOF;
  }
}

class TerminalReader final : public LineReader {
 public:
  explicit TerminalReader(volatile const int& interrupted) : interrupted_(interrupted) {
    g_terminal_interrupted = &interrupted;
    rl_getc_function = interruptible_getc;
    using_history();
  }
  ReadStatus read(const std::string& prompt, std::string& line) override {
    if (interrupted_) {  // a Ctrl-C that came before the read (e.g. while a notice printed)
      std::fputc('\n', stdout);
      return ReadStatus::kInterrupted;
    }
    char* text = ::readline(prompt.c_str());
    if (text == nullptr) {
      if (interrupted_) {
        std::fputc('\n', stdout);
        return ReadStatus::kInterrupted;
      }
      return ReadStatus::kEndOfInput;
    }
    line = text;
    std::free(text);
    if (!line.empty()) add_history(line.c_str());
    return ReadStatus::kLine;
  }

 private:
  volatile const int& interrupted_;
};
#endif

}  // namespace

bool stdin_is_terminal() { return ::isatty(STDIN_FILENO) == 1; }

std::unique_ptr<LineReader> make_line_reader(volatile const int& interrupted) {
#ifdef LLMPACK_HAVE_LIBEDIT
  if (stdin_is_terminal()) return std::make_unique<TerminalReader>(interrupted);
#endif
  return std::make_unique<PipeReader>(interrupted);
}

}  // namespace llmpack::cli
