// TextLLMRunner for Python (CONTRACT G1-G8, R1-R9).
//
// The GIL is released while the engine runs and re-taken only to call the
// Python callbacks. A callback that raises stops generation; its exception
// is re-raised when generate() returns. Ctrl-C (SIGINT) is noticed after each
// streamed piece: generation stops through stop() and KeyboardInterrupt is
// raised. One call at a time drives a runner: a second generate/prefill/
// reset/warmup from another thread or from inside a callback raises
// LlmpackError instead of racing; stop() is allowed at any time.
#include <pybind11/functional.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <cxxabi.h>

#include <atomic>
#include <exception>
#include <optional>

#include "bind_common.h"
#include "runner/text_llm_runner.h"

namespace llmpack::python {
namespace {

class BusyGuard {
 public:
  BusyGuard(std::atomic<bool>& busy, const char* what) : busy_(busy) {
    bool expected = false;
    if (!busy_.compare_exchange_strong(expected, true)) {
      throw_status(error_status(std::string(what) +
                                ": the runner is busy (another generate, prefill, warmup or reset is running on "
                                "another thread or called from a callback)"));
    }
  }
  ~BusyGuard() { busy_.store(false); }
  BusyGuard(const BusyGuard&) = delete;
  BusyGuard& operator=(const BusyGuard&) = delete;

 private:
  std::atomic<bool>& busy_;
};

// The first exception raised by a callback (or a pending KeyboardInterrupt).
struct CallbackError {
  std::exception_ptr error;
  bool failed() const { return static_cast<bool>(error); }
};

py::str decode_piece(const std::string& piece) {
  // Pieces are whole UTF-8 characters (G4); bytes a model emits that are not
  // valid UTF-8 become U+FFFD rather than an exception.
  PyObject* s = PyUnicode_DecodeUTF8(piece.data(), static_cast<Py_ssize_t>(piece.size()), "replace");
  if (!s) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(s);
}

void check_callable(const py::object& cb, const char* name) {
  if (!cb.is_none() && !PyCallable_Check(cb.ptr())) {
    throw_type_error(std::string(name) + " must be callable or None, got " + std::string(Py_TYPE(cb.ptr())->tp_name));
  }
}

class PyRunner {
 public:
  PyRunner(const std::filesystem::path& model_path, const std::optional<std::filesystem::path>& tokenizer_path,
           int cpu_threads, const std::string& kv_dtype) {
    LoadedPackage pkg =
        load_package_or_throw(model_path, tokenizer_path ? &*tokenizer_path : nullptr, cpu_threads, kv_dtype);
    runner_ = std::make_unique<TextLLMRunner>(std::move(pkg.program), std::move(pkg.tokenizer), python_log_sink());
  }

  void load() {
    BusyGuard busy(busy_, "load");
    Status s;
    s = without_gil([&] { return runner_->load(); });
    throw_if_error(s);
  }

  void generate(const std::string& prompt, const std::optional<GenerationConfig>& config,
                const py::object& token_callback, const py::object& stats_callback) {
    check_callable(token_callback, "token_callback");
    check_callable(stats_callback, "stats_callback");
    const GenerationConfig cfg = config.value_or(GenerationConfig());
    validate(cfg);
    BusyGuard busy(busy_, "generate");
    CallbackError cb_error;
    TokenCallback on_piece = [&](const std::string& piece) {
      guarded_call(cb_error, [&] {
        if (!token_callback.is_none()) token_callback(decode_piece(piece));
      });
    };
    StatsCallback on_stats = [&](const Stats& stats) {
      guarded_call(cb_error, [&] {
        if (!stats_callback.is_none()) stats_callback(stats);
      });
    };
    Status s;
    s = without_gil([&] { return runner_->generate(prompt, cfg, on_piece, on_stats); });
    if (cb_error.failed()) std::rethrow_exception(cb_error.error);
    throw_if_error(s);
  }

  std::string generate_text(const std::string& prompt, const std::optional<GenerationConfig>& config) {
    GenerationConfig cfg = config.value_or(GenerationConfig());
    cfg.echo = false;
    std::string text;
    py::cpp_function append([&text](const std::string& piece) { text += piece; });
    generate(prompt, cfg, append, py::none());
    return text;
  }

  void prefill(const std::string& prompt, const std::optional<GenerationConfig>& config) {
    const GenerationConfig cfg = config.value_or(GenerationConfig());
    validate(cfg);
    BusyGuard busy(busy_, "prefill");
    Status s;
    s = without_gil([&] { return runner_->prefill(prompt, cfg); });
    throw_if_error(s);
  }

  void warmup(const std::string& prompt, int64_t max_new_tokens) {
    if (max_new_tokens < 1 || max_new_tokens > INT32_MAX) {
      throw_value_error("warmup: max_new_tokens must be in [1, 2**31), got " + std::to_string(max_new_tokens));
    }
    BusyGuard busy(busy_, "warmup");
    Status s;
    s = without_gil([&] { return runner_->warmup(prompt, static_cast<int32_t>(max_new_tokens)); });
    throw_if_error(s);
  }

  void reset() {
    BusyGuard busy(busy_, "reset");
    runner_->reset();
  }

  void stop() { runner_->stop(); }
  bool busy() const { return busy_.load(); }
  bool is_loaded() const { return runner_->is_loaded(); }
  Stats stats() const { return runner_->stats(); }
  int64_t position() const { return runner_->position(); }
  std::vector<int32_t> eos_ids() const { return runner_->eos_ids(); }
  const ModelLimits& limits() { return runner_->limits(); }

 private:
  static void validate(const GenerationConfig& cfg) {
    const Status s = cfg.validate();
    if (!s.ok()) throw_value_error(s.message());
  }

  // Runs `body` with the GIL, then checks for Ctrl-C. The first exception is
  // kept and generation is asked to stop; later pieces are dropped.
  template <typename Body>
  void guarded_call(CallbackError& cb_error, Body&& body) {
    if (interpreter_finalizing()) {  // no Python any more: end generation quietly
      runner_->stop();
      return;
    }
    py::gil_scoped_acquire gil;
    if (cb_error.failed()) return;
    try {
      body();
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    } catch (abi::__forced_unwind&) {
      throw;  // the interpreter is ending this thread (finalization): let it unwind
    } catch (...) {
      cb_error.error = std::current_exception();
      runner_->stop();
    }
  }

  std::unique_ptr<TextLLMRunner> runner_;
  std::atomic<bool> busy_{false};
};

}  // namespace

void bind_runner(py::module_& m) {
  py::class_<ModelLimits>(m, "ModelLimits", "What the runner read from the program (S, C, B, ...).")
      .def_readonly("max_seq_len", &ModelLimits::max_seq_len)
      .def_readonly("max_context_len", &ModelLimits::max_context_len)
      .def_readonly("token_bound", &ModelLimits::token_bound)
      .def_readonly("dynamic_shape", &ModelLimits::dynamic_shape)
      .def_readonly("use_kv_cache", &ModelLimits::use_kv_cache)
      .def_readonly("vocab_size", &ModelLimits::vocab_size)
      .def_readonly("eos_ids", &ModelLimits::eos_ids)
      .def("prefill_chunk", &ModelLimits::prefill_chunk)
      .def("context_len", &ModelLimits::context_len)
      .def("__repr__", [](const ModelLimits& l) { return "ModelLimits(" + l.describe() + ")"; });

  py::class_<PyRunner>(m, "TextLLMRunner", "Prompt in, streamed text out (CONTRACT G1-G8, R1-R9).")
      .def(py::init<const std::filesystem::path&, const std::optional<std::filesystem::path>&, int,
                    const std::string&>(),
           py::arg("model_path"), py::arg("tokenizer_path") = py::none(), py::kw_only(), py::arg("cpu_threads") = 0,
           py::arg("kv_dtype") = std::string(kv_dtype_name(kDefaultKvDtype)))
      .def("load", &PyRunner::load)
      .def("is_loaded", &PyRunner::is_loaded)
      .def("generate", &PyRunner::generate, py::arg("prompt"), py::arg("config") = py::none(),
           py::arg("token_callback") = py::none(), py::arg("stats_callback") = py::none())
      .def("generate_text", &PyRunner::generate_text, py::arg("prompt"), py::arg("config") = py::none())
      .def("prefill", &PyRunner::prefill, py::arg("prompt"), py::arg("config") = py::none())
      .def("warmup", &PyRunner::warmup, py::arg("prompt") = "Once upon a time", py::arg("max_new_tokens") = 16)
      .def("stop", &PyRunner::stop)
      .def("_busy", &PyRunner::busy, "True while a generate/prefill/warmup/reset runs.")
      .def("reset", &PyRunner::reset)
      .def_property_readonly("stats", &PyRunner::stats)
      .def_property_readonly("position", &PyRunner::position)
      .def_property_readonly("eos_ids", &PyRunner::eos_ids)
      .def_property_readonly("limits", &PyRunner::limits, py::return_value_policy::copy);
}

}  // namespace llmpack::python
