// GenerationConfig and Stats (CONTRACT G1, S1, S2) as Python classes.
// Every field is range-checked on assignment: a bad value raises ValueError
// naming the field, the range and the value, and leaves the config unchanged.
#include <pybind11/stl.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "bind_common.h"
#include "runner/generation_config.h"
#include "runner/stats.h"

namespace llmpack::python {
namespace {

using Config = GenerationConfig;

int32_t to_int32(const char* field, int64_t v) {
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
    throw_value_error(std::string(field) + " must fit in 32 bits, got " + std::to_string(v));
  }
  return static_cast<int32_t>(v);
}

std::optional<uint64_t> to_seed(const py::object& v) {
  if (v.is_none()) return std::nullopt;
  if (!PyLong_Check(v.ptr())) {
    throw_type_error("seed must be an int or None, got " + std::string(Py_TYPE(v.ptr())->tp_name));
  }
  const unsigned long long s = PyLong_AsUnsignedLongLong(v.ptr());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    throw_value_error("seed must be an int in [0, 2**64), got " + py::repr(v).cast<std::string>());
  }
  return static_cast<uint64_t>(s);
}

std::vector<std::string> to_stop(const py::object& v) {
  if (v.is_none()) return {};
  if (py::isinstance<py::str>(v)) return {v.cast<std::string>()};
  std::vector<std::string> out;
  if (!py::isinstance<py::iterable>(v) || py::isinstance<py::bytes>(v)) {
    throw_type_error("stop must be a str or a list of str, got " + std::string(Py_TYPE(v.ptr())->tp_name));
  }
  for (py::handle item : v) {
    if (!py::isinstance<py::str>(item)) {
      throw_type_error("stop must be a list of str, found an item of type " +
                       std::string(Py_TYPE(item.ptr())->tp_name));
    }
    out.push_back(item.cast<std::string>());
  }
  return out;
}

// logit_bias as OpenAI's: a mapping of token id to bias (None: none).
std::vector<LogitBias> to_logit_bias(const py::object& v) {
  if (v.is_none()) return {};
  if (!py::isinstance<py::dict>(v))
    throw_type_error("logit_bias must be a dict of int token id to float bias, got " +
                     std::string(Py_TYPE(v.ptr())->tp_name));
  std::vector<LogitBias> out;
  for (auto [key, value] : v.cast<py::dict>()) {
    if (!py::isinstance<py::int_>(key) || py::isinstance<py::bool_>(key))
      throw_type_error("logit_bias keys are int token ids, found " + py::repr(key).cast<std::string>());
    const int64_t id = key.cast<int64_t>();
    if (id < 0 || id > INT32_MAX)
      throw_value_error("logit_bias: token ids are in [0, 2**31), got " + std::to_string(id));
    out.push_back({static_cast<int32_t>(id), static_cast<float>(value.cast<double>())});
  }
  return out;
}

py::dict logit_bias_dict(const Config& c) {
  py::dict d;
  for (const LogitBias& b : c.logit_bias) d[py::int_(b.id)] = py::float_(b.bias);
  return d;
}

void validate_or_value_error(const Config& c) {
  const Status s = c.validate();
  if (!s.ok()) throw_value_error(s.message());
}

// Sets one field through `set`, validates the whole config, and restores the
// old value when the new one is refused.
template <typename Set>
void checked_set(Config& c, Set&& set) {
  Config before = c;
  try {
    set(c);
    validate_or_value_error(c);
  } catch (...) {
    c = std::move(before);
    throw;
  }
}

template <typename Cls>
void int_field(Cls& cls, const char* name, int32_t Config::*member) {
  cls.def_property(
      name, [member](const Config& c) { return static_cast<int64_t>(c.*member); },
      [member, name](Config& c, int64_t v) { checked_set(c, [&](Config& x) { x.*member = to_int32(name, v); }); });
}

template <typename Cls>
void float_field(Cls& cls, const char* name, float Config::*member) {
  cls.def_property(
      name, [member](const Config& c) { return static_cast<double>(c.*member); },
      [member](Config& c, double v) { checked_set(c, [&](Config& x) { x.*member = static_cast<float>(v); }); });
}

std::string config_repr(const Config& c) {
  std::ostringstream o;
  o << "GenerationConfig(echo=" << (c.echo ? "True" : "False") << ", max_new_tokens=" << c.max_new_tokens
    << ", seq_len=" << c.seq_len << ", temperature=" << c.temperature << ", top_k=" << c.top_k
    << ", top_p=" << c.top_p << ", min_p=" << c.min_p << ", top_n_sigma=" << c.top_n_sigma
    << ", repeat_penalty=" << c.repeat_penalty
    << ", repeat_last_n=" << c.repeat_last_n << ", presence_penalty=" << c.presence_penalty
    << ", frequency_penalty=" << c.frequency_penalty << ", logit_bias="
    << py::repr(logit_bias_dict(c)).cast<std::string>() << ", seed=";
  if (c.seed) o << *c.seed; else o << "None";
  o << ", ignore_eos=" << (c.ignore_eos ? "True" : "False") << ", warming=" << (c.warming ? "True" : "False")
    << ", num_bos=" << c.num_bos << ", num_eos=" << c.num_eos << ", stop=[";
  for (size_t i = 0; i < c.stop.size(); ++i) o << (i ? ", " : "") << py::repr(py::str(c.stop[i])).cast<std::string>();
  o << "])";
  return o.str();
}

void bind_generation_config(py::module_& m) {
  const Config d;  // the C++ defaults are the Python defaults
  py::class_<Config> cls(m, "GenerationConfig",
                         "What one generate() call should do (CONTRACT G1). Keyword arguments only; "
                         "the defaults are the C++ ones.");
  cls.def(py::init([](bool echo, int64_t max_new_tokens, int64_t seq_len, double temperature, int64_t top_k,
                      double top_p, double min_p, double top_n_sigma, double repeat_penalty, int64_t repeat_last_n,
                      double presence_penalty, double frequency_penalty, const py::object& logit_bias,
                      const py::object& seed, bool ignore_eos, bool warming, int64_t num_bos, int64_t num_eos,
                      const py::object& stop) {
            Config c;
            c.echo = echo;
            c.max_new_tokens = to_int32("max_new_tokens", max_new_tokens);
            c.seq_len = to_int32("seq_len", seq_len);
            c.temperature = static_cast<float>(temperature);
            c.top_k = to_int32("top_k", top_k);
            c.top_p = static_cast<float>(top_p);
            c.min_p = static_cast<float>(min_p);
            c.top_n_sigma = static_cast<float>(top_n_sigma);
            c.repeat_penalty = static_cast<float>(repeat_penalty);
            c.repeat_last_n = to_int32("repeat_last_n", repeat_last_n);
            c.presence_penalty = static_cast<float>(presence_penalty);
            c.frequency_penalty = static_cast<float>(frequency_penalty);
            c.logit_bias = to_logit_bias(logit_bias);
            c.seed = to_seed(seed);
            c.ignore_eos = ignore_eos;
            c.warming = warming;
            c.num_bos = to_int32("num_bos", num_bos);
            c.num_eos = to_int32("num_eos", num_eos);
            c.stop = to_stop(stop);
            validate_or_value_error(c);
            return c;
          }),
          py::kw_only(), py::arg("echo") = d.echo, py::arg("max_new_tokens") = d.max_new_tokens,
          py::arg("seq_len") = d.seq_len, py::arg("temperature") = d.temperature, py::arg("top_k") = d.top_k,
          py::arg("top_p") = d.top_p, py::arg("min_p") = d.min_p, py::arg("top_n_sigma") = d.top_n_sigma,
          py::arg("repeat_penalty") = d.repeat_penalty,
          py::arg("repeat_last_n") = d.repeat_last_n, py::arg("presence_penalty") = d.presence_penalty,
          py::arg("frequency_penalty") = d.frequency_penalty, py::arg("logit_bias") = py::none(),
          py::arg("seed") = py::none(),
          py::arg("ignore_eos") = d.ignore_eos, py::arg("warming") = d.warming, py::arg("num_bos") = d.num_bos,
          py::arg("num_eos") = d.num_eos, py::arg("stop") = py::none());
  cls.def_readwrite("echo", &Config::echo);
  cls.def_readwrite("ignore_eos", &Config::ignore_eos);
  cls.def_readwrite("warming", &Config::warming);
  int_field(cls, "max_new_tokens", &Config::max_new_tokens);
  int_field(cls, "seq_len", &Config::seq_len);
  int_field(cls, "top_k", &Config::top_k);
  int_field(cls, "repeat_last_n", &Config::repeat_last_n);
  int_field(cls, "num_bos", &Config::num_bos);
  int_field(cls, "num_eos", &Config::num_eos);
  float_field(cls, "temperature", &Config::temperature);
  float_field(cls, "top_p", &Config::top_p);
  float_field(cls, "min_p", &Config::min_p);
  float_field(cls, "top_n_sigma", &Config::top_n_sigma);
  float_field(cls, "repeat_penalty", &Config::repeat_penalty);
  float_field(cls, "presence_penalty", &Config::presence_penalty);
  float_field(cls, "frequency_penalty", &Config::frequency_penalty);
  cls.def_property(
      "seed", [](const Config& c) -> py::object { if (c.seed) return py::int_(*c.seed); return py::none(); },
      [](Config& c, const py::object& v) { c.seed = to_seed(v); });
  cls.def_property(
      "logit_bias", [](const Config& c) { return logit_bias_dict(c); },
      [](Config& c, const py::object& v) { checked_set(c, [&](Config& x) { x.logit_bias = to_logit_bias(v); }); });
  cls.def_property(
      "stop", [](const Config& c) { return c.stop; },
      [](Config& c, const py::object& v) { checked_set(c, [&](Config& x) { x.stop = to_stop(v); }); });
  cls.def(
      "resolve_max_new_tokens",
      [](const Config& c, int64_t max_context_len, int64_t num_prompt_tokens) {
        auto r = c.resolve_max_new_tokens(max_context_len, num_prompt_tokens);
        if (!r.ok()) throw_value_error(r.status().message());
        return *r;
      },
      py::arg("max_context_len"), py::arg("num_prompt_tokens"),
      "The number of new tokens one generate may produce given C and the positions taken (G1); "
      "raises ValueError when that budget is <= 0.");
  cls.def("__repr__", &config_repr);
  cls.def("__copy__", [](const Config& c) { return c; });
  cls.def("__deepcopy__", [](const Config& c, py::dict) { return c; }, py::arg("memo"));
}

void bind_stats(py::module_& m) {
  py::class_<Stats> cls(m, "Stats",
                        "Statistics of the last generate() (CONTRACT S1, S2): wall-clock timestamps in ms "
                        "since the epoch, aggregates in ms.");
  cls.def(py::init<>());
  cls.attr("SCALING_FACTOR_UNITS_PER_SECOND") = Stats::kScalingFactorUnitsPerSecond;
  cls.def_readwrite("model_load_start_ms", &Stats::model_load_start_ms);
  cls.def_readwrite("model_load_end_ms", &Stats::model_load_end_ms);
  cls.def_readwrite("inference_start_ms", &Stats::inference_start_ms);
  cls.def_readwrite("model_execution_start_ms", &Stats::model_execution_start_ms);
  cls.def_readwrite("model_execution_end_ms", &Stats::model_execution_end_ms);
  cls.def_readwrite("prompt_eval_end_ms", &Stats::prompt_eval_end_ms);
  cls.def_readwrite("first_token_ms", &Stats::first_token_ms);
  cls.def_readwrite("inference_end_ms", &Stats::inference_end_ms);
  cls.def_readwrite("aggregate_sampling_time_ms", &Stats::aggregate_sampling_time_ms);
  cls.def_readwrite("aggregate_model_execution_time_ms", &Stats::aggregate_model_execution_time_ms);
  cls.def_readwrite("num_prompt_tokens", &Stats::num_prompt_tokens);
  cls.def_readwrite("num_generated_tokens", &Stats::num_generated_tokens);
  cls.def("prefill_tokens_per_second", &Stats::prefill_tokens_per_second);
  cls.def("decode_tokens_per_second", &Stats::decode_tokens_per_second);
  cls.def("to_json_string", &Stats::to_json_string, "The PyTorchObserver JSON object (S1 keys, S1 order).");
  cls.def("report", &Stats::report, "The multi-line human report the CLI prints (S1).");
  cls.def(
      "reset",
      [](Stats& s, bool all_stats) {
        if (all_stats) {
          s = Stats();
        } else {
          s.reset_inference();
        }
      },
      py::arg("all_stats") = false, "Clears the per-generate fields (and the load times with all_stats=True).");
  cls.def("__repr__", [](const Stats& s) {
    return "Stats(num_prompt_tokens=" + std::to_string(s.num_prompt_tokens) +
           ", num_generated_tokens=" + std::to_string(s.num_generated_tokens) + ", " + s.to_json_string() + ")";
  });
}

}  // namespace

void bind_config(py::module_& m) {
  bind_generation_config(m);
  bind_stats(m);
}

}  // namespace llmpack::python
