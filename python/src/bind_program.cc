// The Program of Methods (CONTRACT P3, P4, P5) for llmpack.runtime:
// method names, method meta, constant methods and `forward`.
//
// forward(tokens, position) takes tokens [1, n] or [n] (a list, or any
// buffer of integers: array.array, memoryview, numpy) and a start position
// (an int, or a [1] / [n] integer sequence) and returns [logits], a
// read-only float32 memoryview of shape [1, vocab] over a copy that stays
// valid after later calls.
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <cstring>
#include <mutex>

#include "bind_common.h"
#include "format/gguf.h"

namespace llmpack::python {
namespace {

// torch.ScalarType codes, as ExecuTorch's TensorInfo.dtype() reports them.
int scalar_type_code(ScalarType t) {
  switch (t) {
    case ScalarType::kInt64: return 4;
    case ScalarType::kFloat32: return 6;
    case ScalarType::kBool: return 11;
  }
  return -1;
}

size_t scalar_type_size(ScalarType t) { return t == ScalarType::kBool ? 1 : (t == ScalarType::kInt64 ? 8 : 4); }

struct TensorInfo {
  TensorMeta meta;
  std::vector<int64_t> sizes() const { return meta.sizes; }
  int dtype() const { return scalar_type_code(meta.dtype); }
  std::string dtype_name() const { return std::string(scalar_type_name(meta.dtype)); }
  bool is_dynamic() const { return meta.dynamic_dim1; }
  int64_t nbytes() const {
    int64_t n = static_cast<int64_t>(scalar_type_size(meta.dtype));
    for (int64_t s : meta.sizes) n *= s;
    return n;
  }
  std::string repr() const {
    std::string s = "TensorInfo(sizes=[";
    for (size_t i = 0; i < meta.sizes.size(); ++i) {
      if (i > 0) s += ", ";
      s += std::to_string(meta.sizes[i]);
    }
    s += "], dtype=";
    s += dtype_name();
    if (meta.dynamic_dim1) s += ", dynamic";
    s += ")";
    return s;
  }
};

const TensorMeta& meta_at(const std::vector<TensorMeta>& v, int64_t i, const char* what) {
  if (i < 0 || i >= static_cast<int64_t>(v.size())) {
    PyErr_SetString(PyExc_IndexError, (std::string(what) + " index " + std::to_string(i) + " is out of range [0, " +
                                       std::to_string(v.size()) + ")")
                                          .c_str());
    throw py::error_already_set();
  }
  return v[static_cast<size_t>(i)];
}

// Owns a copy of forward's logits and exposes them through the buffer protocol.
struct FloatBuffer {
  std::vector<float> data;
  int64_t rows = 0;
  int64_t cols = 0;
};

bool is_integer_format(const std::string& f) {
  // Struct codes with an optional byte-order prefix: b B h H i I l L q Q n N.
  std::string code = f;
  if (!code.empty() && std::strchr("@=<>!", code[0])) code = code.substr(1);
  return code.size() == 1 && std::strchr("bBhHiIlLqQnN", code[0]);
}

int64_t read_integer(const char* p, const std::string& format, ssize_t itemsize) {
  const char code = format.back();
  const bool is_signed = std::strchr("bhilqn", code) != nullptr;
  switch (itemsize) {
    case 1: return is_signed ? int64_t(*reinterpret_cast<const int8_t*>(p)) : int64_t(*reinterpret_cast<const uint8_t*>(p));
    case 2: { int16_t s; uint16_t u; std::memcpy(&s, p, 2); std::memcpy(&u, p, 2); return is_signed ? s : u; }
    case 4: { int32_t s; uint32_t u; std::memcpy(&s, p, 4); std::memcpy(&u, p, 4); return is_signed ? s : u; }
    default: {
      int64_t s; std::memcpy(&s, p, 8); return s;  // uint64 ids beyond int64 become negative: refused later
    }
  }
}

// tokens: [n] or [1, n] integers from a buffer or a (nested) sequence.
std::vector<int64_t> to_int_vector(const py::handle& obj, const char* what) {
  std::vector<int64_t> out;
  if (py::isinstance<py::bytes>(obj) || PyByteArray_Check(obj.ptr()) || py::isinstance<py::str>(obj)) {
    throw_type_error(std::string(what) + " must be a list of int or an int64 array, got " +
                     std::string(Py_TYPE(obj.ptr())->tp_name));
  }
  if (PyObject_CheckBuffer(obj.ptr())) {
    py::buffer_info info = py::reinterpret_borrow<py::buffer>(obj).request();
    if (!is_integer_format(info.format) || (info.itemsize != 1 && info.itemsize != 2 && info.itemsize != 4 &&
                                             info.itemsize != 8)) {
      throw_type_error(std::string(what) + " must hold integers (int64), got a buffer of format '" + info.format + "'");
    }
    if (info.ndim == 0) return {read_integer(static_cast<const char*>(info.ptr), info.format, info.itemsize)};
    if (info.ndim == 2 && info.shape[0] != 1) {
      throw_value_error(std::string(what) + " must have shape [1, n] or [n], got [" + std::to_string(info.shape[0]) +
                        ", " + std::to_string(info.shape[1]) + "]");
    }
    if (info.ndim != 1 && info.ndim != 2) {
      throw_value_error(std::string(what) + " must have shape [1, n] or [n], got " + std::to_string(info.ndim) +
                        " dimensions");
    }
    const ssize_t n = info.shape[info.ndim - 1];
    const ssize_t stride = info.strides[info.ndim - 1];
    const char* base = static_cast<const char*>(info.ptr);
    out.reserve(static_cast<size_t>(n));
    for (ssize_t i = 0; i < n; ++i) out.push_back(read_integer(base + i * stride, info.format, info.itemsize));
    return out;
  }
  if (PyLong_Check(obj.ptr())) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
    if (overflow) throw_value_error(std::string(what) + " holds a value beyond int64");
    return {v};
  }
  if (!py::isinstance<py::sequence>(obj)) {
    throw_type_error(std::string(what) + " must be a list of int or an int64 array, got " +
                     std::string(Py_TYPE(obj.ptr())->tp_name));
  }
  py::sequence seq = py::reinterpret_borrow<py::sequence>(obj);
  if (seq.size() == 1 && !PyLong_Check(seq[0].ptr())) return to_int_vector(seq[0], what);  // [[...]]: [1, n]
  for (py::handle item : seq) {
    if (!PyLong_Check(item.ptr()) || PyBool_Check(item.ptr())) {
      throw_type_error(std::string(what) + " must hold int values, found " + std::string(Py_TYPE(item.ptr())->tp_name));
    }
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(item.ptr(), &overflow);
    if (overflow) throw_value_error(std::string(what) + " holds a value beyond int64");
    out.push_back(v);
  }
  return out;
}

class PyProgram {
 public:
  explicit PyProgram(LoadedPackage pkg) : pkg_(std::move(pkg)) {}

  std::vector<std::string> method_names() const { return pkg_.program->method_names(); }

  MethodMeta method_meta(const std::string& name) const {
    auto meta = pkg_.program->method_meta(name);
    if (!meta.ok()) throw_status(meta.status());
    return *meta;
  }

  py::list execute(const std::string& name, const py::object& inputs) {
    if (!py::isinstance<py::sequence>(inputs) || py::isinstance<py::str>(inputs)) {
      throw_type_error("inputs must be a sequence (list or tuple), got " + std::string(Py_TYPE(inputs.ptr())->tp_name));
    }
    py::sequence seq = py::reinterpret_borrow<py::sequence>(inputs);
    if (name == "forward") return forward(seq);
    if (seq.size() != 0) {
      throw_value_error("method '" + name + "' takes no inputs, got " + std::to_string(seq.size()));
    }
    auto value = pkg_.program->execute_constant(name);
    if (!value.ok()) throw_status(value.status());
    py::list out;
    std::visit([&](const auto& v) { out.append(py::cast(v)); }, *value);
    return out;
  }

 private:
  py::list forward(const py::sequence& seq) {
    if (seq.size() != 2) {
      throw_value_error("forward takes 2 inputs (tokens [1, n], start position), got " + std::to_string(seq.size()));
    }
    std::vector<int64_t> tokens = to_int_vector(seq[0], "forward input 0 (tokens)");
    std::vector<int64_t> positions = to_int_vector(seq[1], "forward input 1 (position)");
    if (positions.empty()) throw_value_error("forward input 1 (position) is empty, expected a start position");
    for (size_t i = 1; i < positions.size(); ++i) {
      if (positions[i] != positions[0] + static_cast<int64_t>(i)) {
        throw_value_error("forward input 1 (cache positions) must be consecutive, got " + std::to_string(positions[i]) +
                          " at index " + std::to_string(i) + " after start " + std::to_string(positions[0]));
      }
    }
    auto buffer = std::make_unique<FloatBuffer>();
    Status status = without_gil([&] {
      std::lock_guard<std::mutex> lock(mu_);  // one forward at a time per program
      auto logits = pkg_.program->forward(tokens, positions[0]);
      if (!logits.ok()) return logits.status();
      auto row = logits->last();
      buffer->data.assign(row.begin(), row.end());
      buffer->rows = 1;
      buffer->cols = logits->vocab_size;
      return Status();
    });
    throw_if_error(status);
    py::object owner = py::cast(std::move(buffer));
    py::list out;
    out.append(py::memoryview(owner));
    return out;
  }

  LoadedPackage pkg_;
  std::mutex mu_;
};

std::unique_ptr<PyProgram> load_program_from_bytes(const py::bytes& data, int cpu_threads) {
  if (cpu_threads < 0) throw_value_error("cpu_threads must be >= 0 (0 = one per performance core), got " + std::to_string(cpu_threads));
  std::string_view view = data;
  ProgramOptions options;
  options.cpu_threads = cpu_threads;
  options.log = python_log_sink();
  Result<LoadedPackage> loaded = without_gil([&]() -> Result<LoadedPackage> {
    auto gguf = GgufFile::from_bytes({reinterpret_cast<const uint8_t*>(view.data()), view.size()});
    if (!gguf.ok()) return gguf.status().with_context("loading a package from bytes");
    return load_gguf_package(std::move(gguf).value(), "", options);
  });
  if (!loaded.ok()) throw_status(loaded.status());
  return std::make_unique<PyProgram>(std::move(loaded).value());
}

}  // namespace

void bind_program(py::module_& m) {
  py::class_<FloatBuffer>(m, "_FloatBuffer", py::buffer_protocol())
      .def_buffer([](FloatBuffer& b) {
        return py::buffer_info(b.data.data(), sizeof(float), py::format_descriptor<float>::format(), 2,
                               {b.rows, b.cols}, {static_cast<int64_t>(sizeof(float)) * b.cols, int64_t(sizeof(float))},
                               /*readonly=*/true);
      });

  py::class_<TensorInfo>(m, "TensorInfo", "Shape and type of one input or output of a method (P4).")
      .def("sizes", &TensorInfo::sizes, "The upper bound of each dimension.")
      .def("dtype", &TensorInfo::dtype, "torch.ScalarType code: 4 int64 (Long), 6 float32 (Float), 11 bool.")
      .def("dtype_name", &TensorInfo::dtype_name)
      .def("is_dynamic", &TensorInfo::is_dynamic,
           "forward's token input: True when dim 1 accepts 1..B tokens, False when exactly B.")
      .def("is_memory_planned", [](const TensorInfo&) { return true; })
      .def("nbytes", &TensorInfo::nbytes, "Bytes at the upper bound of every dimension.")
      .def("__repr__", &TensorInfo::repr);

  py::class_<MethodMeta>(m, "MethodMeta", "Inputs and outputs of one method (P4).")
      .def("name", [](const MethodMeta& mm) { return mm.name; })
      .def("num_inputs", &MethodMeta::num_inputs)
      .def("num_outputs", &MethodMeta::num_outputs)
      .def("input_tensor_meta",
           [](const MethodMeta& mm, int64_t i) { return TensorInfo{meta_at(mm.inputs, i, "input")}; }, py::arg("index"))
      .def("output_tensor_meta",
           [](const MethodMeta& mm, int64_t i) { return TensorInfo{meta_at(mm.outputs, i, "output")}; },
           py::arg("index"))
      .def("__repr__", [](const MethodMeta& mm) {
        return "MethodMeta(name='" + mm.name + "', num_inputs=" + std::to_string(mm.num_inputs()) +
               ", num_outputs=" + std::to_string(mm.num_outputs()) + ")";
      });

  py::class_<PyProgram>(m, "_Program")
      .def("method_names", &PyProgram::method_names)
      .def("method_meta", &PyProgram::method_meta, py::arg("method_name"))
      .def("execute", &PyProgram::execute, py::arg("method_name"), py::arg("inputs"));

  m.def(
      "_load_program",
      [](const std::filesystem::path& path, int cpu_threads) {
        return std::make_unique<PyProgram>(load_package_or_throw(path, nullptr, cpu_threads));
      },
      py::arg("path"), py::arg("cpu_threads") = 0);
  m.def("_load_program_from_buffer", &load_program_from_bytes, py::arg("data"), py::arg("cpu_threads") = 0);
}

}  // namespace llmpack::python
