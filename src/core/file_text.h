// Whole small files read into memory (prompts, JSON configs, chat templates,
// conversation files), with errors that say what went wrong: a missing
// file, a directory given where a file was expected, a read that failed.
// (std::ifstream reads a directory as an empty file, or throws from
// istreambuf_iterator: neither is a message a user can act on.)
#pragma once

#include <string>

#include "core/status.h"

namespace llmpack {

// The bytes of the regular file (or pipe, device) at `path`. Errors:
// "cannot read 'PATH': No such file or directory", "'PATH' is a directory,
// expected a file", "cannot read 'PATH': <errno text>".
Result<std::string> read_file_text(const std::string& path);

}  // namespace llmpack
