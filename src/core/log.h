// An injectable log sink: the library never prints; apps decide where logs go.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace llmpack {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

using LogSink = std::function<void(LogLevel, std::string_view)>;

// A sink that drops everything; the default for library objects.
inline LogSink null_log_sink() {
  return [](LogLevel, std::string_view) {};
}

inline std::string_view log_level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kError: return "error";
  }
  return "?";
}

}  // namespace llmpack
