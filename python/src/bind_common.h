// Shared helpers of the llmpack Python bindings: turning a Status into the
// right Python exception, checking paths before the library opens them, and
// the log sink that forwards to Python's `logging`.
#pragma once

#include <pybind11/pybind11.h>

#include <filesystem>
#include <string>

#include "core/log.h"
#include "core/status.h"
#include "engine/llama_program.h"

namespace llmpack::python {

namespace py = pybind11;

// llmpack.LlmpackError (a RuntimeError subclass), created by the module init.
PyObject* llmpack_error_type();

// Raises LlmpackError carrying the library's message.
[[noreturn]] void throw_status(const Status& status);
inline void throw_if_error(const Status& status) {
  if (!status.ok()) throw_status(status);
}
[[noreturn]] void throw_value_error(const std::string& message);
[[noreturn]] void throw_type_error(const std::string& message);

// FileNotFoundError(ENOENT, "<what> not found", path) when `path` does not
// exist, so a missing file is told apart from a damaged one.
void require_file(const std::filesystem::path& path, const char* what);

// Forwards library log lines to logging.getLogger("llmpack"); takes the GIL
// itself, so the engine may log from a thread that released it.
LogSink python_log_sink();

// Loads a package (file path) with the GIL released while it is read.
LoadedPackage load_package_or_throw(const std::filesystem::path& model_path,
                                    const std::filesystem::path* tokenizer_path, int cpu_threads);

void bind_config(py::module_& m);
void bind_program(py::module_& m);
void bind_runner(py::module_& m);
void bind_testing(py::module_& m);

}  // namespace llmpack::python
