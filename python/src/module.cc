// llmpack._llmpack: the extension module behind the `llmpack` package.
// Names follow ExecuTorch's Python API (executorch.runtime and
// executorch.extension.llm.runner) so scripts only change their imports.
#include <cxxabi.h>

#include <cerrno>

#include "bind_common.h"

namespace llmpack::python {
namespace {

PyObject* g_llmpack_error = nullptr;

}  // namespace

PyObject* llmpack_error_type() { return g_llmpack_error; }

void throw_status(const Status& status) {
  PyErr_SetString(g_llmpack_error ? g_llmpack_error : PyExc_RuntimeError, status.message().c_str());
  throw py::error_already_set();
}

void throw_value_error(const std::string& message) {
  PyErr_SetString(PyExc_ValueError, message.c_str());
  throw py::error_already_set();
}

void throw_type_error(const std::string& message) {
  PyErr_SetString(PyExc_TypeError, message.c_str());
  throw py::error_already_set();
}

void require_file(const std::filesystem::path& path, const char* what) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return;
  const std::string message = std::string(what) + " not found";
  py::object err = py::reinterpret_borrow<py::object>(PyExc_FileNotFoundError)(ENOENT, message, path.string());
  PyErr_SetObject(PyExc_FileNotFoundError, err.ptr());
  throw py::error_already_set();
}

LogSink python_log_sink() {
  return [](LogLevel level, std::string_view message) {
    if (!Py_IsInitialized() || interpreter_finalizing()) return;
    py::gil_scoped_acquire gil;
    // A failing logger must not disturb generation: its error is dropped.
    PyObject *type = nullptr, *value = nullptr, *trace = nullptr;
    PyErr_Fetch(&type, &value, &trace);
    try {
      int py_level = 20;
      switch (level) {
        case LogLevel::kDebug: py_level = 10; break;
        case LogLevel::kInfo: py_level = 20; break;
        case LogLevel::kWarning: py_level = 30; break;
        case LogLevel::kError: py_level = 40; break;
      }
      py::module_::import("logging")
          .attr("getLogger")("llmpack")
          .attr("log")(py_level, py::str(std::string(message)));
    } catch (abi::__forced_unwind&) {
      throw;  // the interpreter is ending this thread (finalization)
    } catch (...) {
      PyErr_Clear();
    }
    PyErr_Restore(type, value, trace);
  };
}

LoadedPackage load_package_or_throw(const std::filesystem::path& model_path,
                                    const std::filesystem::path* tokenizer_path, int cpu_threads,
                                    const std::string& kv_dtype) {
  require_file(model_path, "model file");
  if (tokenizer_path) require_file(*tokenizer_path, "tokenizer file");
  if (cpu_threads < 0) throw_value_error("cpu_threads must be >= 0 (0 = one per performance core), got " + std::to_string(cpu_threads));
  Result<KvDtype> dtype = parse_kv_dtype(kv_dtype);
  if (!dtype.ok()) throw_value_error(dtype.status().with_context("kv_dtype").message());
  ProgramOptions options;
  options.cpu_threads = cpu_threads;
  options.kv_dtype = *dtype;
  options.log = python_log_sink();
  const std::string model = model_path.string();
  const std::string tokenizer = tokenizer_path ? tokenizer_path->string() : std::string();
  Result<LoadedPackage> loaded = without_gil([&] { return load_package(model, tokenizer, options); });
  if (!loaded.ok()) throw_status(loaded.status());
  return std::move(loaded).value();
}

}  // namespace llmpack::python

PYBIND11_MODULE(_llmpack, m) {
  namespace lp = llmpack::python;
  m.doc() = "llmpack native bindings (use llmpack.runtime, llmpack.runner and llmpack.chat)";
  // A new reference kept for the life of the process: the type outlives any
  // static destructor order at interpreter shutdown.
  PyObject* error = PyErr_NewExceptionWithDoc("llmpack.LlmpackError",
                                              "An error reported by the llmpack library (its message says what "
                                              "was expected and what was found).",
                                              PyExc_RuntimeError, nullptr);
  if (!error) throw pybind11::error_already_set();
  lp::g_llmpack_error = error;
  m.add_object("LlmpackError", pybind11::reinterpret_borrow<pybind11::object>(error));
  lp::bind_config(m);
  lp::bind_program(m);
  lp::bind_runner(m);
  lp::bind_chat(m);
  lp::bind_testing(m);
}
