// Shared helpers of the llmpack Python bindings: turning a Status into the
// right Python exception, checking paths before the library opens them, and
// the log sink that forwards to Python's `logging`.
#pragma once

#include <pybind11/pybind11.h>

#include <cxxabi.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

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
// kv_dtype: the program's own KV cache ("f16", "f32" or "q8_0"; ValueError otherwise).
LoadedPackage load_package_or_throw(const std::filesystem::path& model_path,
                                    const std::filesystem::path* tokenizer_path, int cpu_threads,
                                    const std::string& kv_dtype = std::string(kv_dtype_name(kDefaultKvDtype)));

// True once the interpreter is shutting down: a thread must then not take
// the GIL (Python would end it with pthread_exit, unwinding C++ frames).
inline bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

// A daemon thread still in the engine when the interpreter ends parks here:
// it never touches Python again and the process exit ends it.
[[noreturn]] inline void park_forever() {
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

// Runs `fn` with the GIL released. Unlike py::gil_scoped_release, taking the
// GIL back happens outside any destructor, so a thread that shutdown ends
// (forced unwind) never throws from a destructor, and a thread that finds
// the interpreter gone parks instead of taking the GIL.
template <typename Fn>
auto without_gil(Fn&& fn) -> decltype(fn()) {
  PyThreadState* state = PyEval_SaveThread();
  try {
    if constexpr (std::is_void_v<decltype(fn())>) {
      fn();
      if (interpreter_finalizing()) park_forever();
      PyEval_RestoreThread(state);
    } else {
      auto result = fn();
      if (interpreter_finalizing()) park_forever();
      PyEval_RestoreThread(state);
      return result;
    }
  } catch (abi::__forced_unwind&) {
    throw;
  } catch (...) {
    if (interpreter_finalizing()) park_forever();
    PyEval_RestoreThread(state);
    throw;
  }
}

void bind_config(py::module_& m);
void bind_program(py::module_& m);
void bind_runner(py::module_& m);
void bind_testing(py::module_& m);
void bind_chat(py::module_& m);

}  // namespace llmpack::python
