// Status and Result<T>: the error type of every fallible boundary (files,
// formats, user options, prompts). Messages say what was expected and what
// was found; context is prepended as errors travel up.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace llmpack {

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  static Status ok_status() { return Status(); }
  static Status error(std::string message) {
    Status s;
    s.message_ = std::move(message);
    s.failed_ = true;
    return s;
  }
  bool ok() const { return !failed_; }
  const std::string& message() const { return message_; }
  // "loading tokenizer: <message>"
  Status with_context(std::string_view context) const {
    if (ok()) return *this;
    return error(std::string(context) + ": " + message_);
  }

 private:
  std::string message_;
  bool failed_ = false;
};

inline Status ok_status() { return Status(); }
inline Status error_status(std::string message) { return Status::error(std::move(message)); }

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}                 // NOLINT: implicit on purpose
  Result(Status status) : status_(std::move(status)) {          // NOLINT: implicit on purpose
    assert(!status_.ok() && "Result constructed from an ok Status without a value");
    if (status_.ok()) status_ = Status::error("internal: Result built from ok status");
  }
  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { assert(ok()); return *value_; }
  const T& value() const& { assert(ok()); return *value_; }
  T&& value() && { assert(ok()); return std::move(*value_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  Result with_context(std::string_view context) && {
    if (ok()) return std::move(*this);
    return Result(status_.with_context(context));
  }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace llmpack

#define LLMPACK_CONCAT_INNER(a, b) a##b
#define LLMPACK_CONCAT(a, b) LLMPACK_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function when `expr` fails.
#define LLMPACK_RETURN_IF_ERROR(expr)                    \
  do {                                                   \
    ::llmpack::Status llmpack_status_tmp_ = (expr);      \
    if (!llmpack_status_tmp_.ok()) return llmpack_status_tmp_; \
  } while (0)

// auto x = ...; from a Result<T>, returning its Status on failure.
#define LLMPACK_ASSIGN_OR_RETURN(lhs, expr)                                  \
  auto LLMPACK_CONCAT(llmpack_result_, __LINE__) = (expr);                   \
  if (!LLMPACK_CONCAT(llmpack_result_, __LINE__).ok())                       \
    return LLMPACK_CONCAT(llmpack_result_, __LINE__).status();               \
  lhs = std::move(LLMPACK_CONCAT(llmpack_result_, __LINE__)).value()
