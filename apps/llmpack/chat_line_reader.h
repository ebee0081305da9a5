// Reading the user's lines for `llmpack chat`: libedit (line editing and
// history) when stdin is a terminal, plain reads when it is a pipe. A SIGINT
// during a read is reported as kInterrupted so the caller decides (C4).
#pragma once

#include <memory>
#include <string>

namespace llmpack::cli {

enum class ReadStatus { kLine, kEndOfInput, kInterrupted };

class LineReader {
 public:
  virtual ~LineReader() = default;
  // Shows `prompt` (terminals only) and reads one line without its newline.
  virtual ReadStatus read(const std::string& prompt, std::string& line) = 0;
};

// A terminal reader when stdin is a tty (and libedit is built in), else a
// pipe reader. `interrupted` is the flag the SIGINT handler sets.
std::unique_ptr<LineReader> make_line_reader(volatile const int& interrupted);

bool stdin_is_terminal();

}  // namespace llmpack::cli
