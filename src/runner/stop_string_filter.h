// Holds back streamed text that could still become a stop string (CONTRACT
// G4): text is released once no stop string can match through it, and a
// matched stop string (with anything after it) is never released.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace llmpack {

class StopStringFilter {
 public:
  explicit StopStringFilter(std::vector<std::string> stops) : stops_(std::move(stops)) {}

  struct Output {
    std::string text;      // safe to emit now
    bool matched = false;  // a stop string completed: generation should end
  };
  // Appends `text` (whole UTF-8 characters) and returns what may be emitted.
  Output push(std::string_view text);
  // Releases the held text (when generation ends without a match).
  std::string flush();
  const std::string& held() const { return held_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
};

}  // namespace llmpack
