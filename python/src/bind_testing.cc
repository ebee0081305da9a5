// Test helper: writes a package from a GGUF by copying its metadata and
// tensors and setting the contract keys (P1), so the Python tests can build
// packages with any S, C and B (E3's legacy B = S - 1 included) without the
// export command.
#include <pybind11/stl/filesystem.h>

#include "bind_common.h"
#include "engine/package_contract.h"
#include "format/gguf.h"

namespace llmpack::python {
namespace {

Status write_package(const std::string& src, const std::string& dst, int64_t s, int64_t c, int64_t b, bool dynamic,
                     const std::string& kv_cache) {
  if (s < 1 || c < s || b < 1) {
    return error_status("expected 1 <= S <= C and B >= 1, got S " + std::to_string(s) + ", C " + std::to_string(c) +
                        ", B " + std::to_string(b));
  }
  if (kv_cache != "in_graph" && kv_cache != "off_graph" && kv_cache != "none") {
    return error_status("kv_cache must be in_graph, off_graph or none, got '" + kv_cache + "'");
  }
  LLMPACK_ASSIGN_OR_RETURN(auto gguf, GgufFile::open(src));
  GgufWriter w;
  for (const auto& [key, value] : gguf->metadata()) {
    if (key.rfind("llmpack.", 0) == 0 || key == "general.alignment") continue;
    w.set(key, value);
  }
  w.set_alignment(static_cast<uint32_t>(gguf->alignment()));
  w.set_u32(std::string(contract_keys::kVersion), 1);
  w.set_u32(std::string(contract_keys::kMaxSeqLen), static_cast<uint32_t>(s));
  w.set_u32(std::string(contract_keys::kMaxContextLen), static_cast<uint32_t>(c));
  w.set_u32(std::string(contract_keys::kTokenBound), static_cast<uint32_t>(b));
  w.set_bool(std::string(contract_keys::kDynamicShape), dynamic);
  w.set_bool(std::string(contract_keys::kUseKvCache), kv_cache != "none");
  w.set_string(std::string(contract_keys::kKvCache), kv_cache);
  if (auto eos = gguf->get_int("tokenizer.ggml.eos_token_id")) {
    w.set_i32_array(std::string(contract_keys::kEosIds), {static_cast<int32_t>(*eos)});
  }
  w.set_string(std::string(contract_keys::kPositionInput), "start_pos");
  for (const GgufTensorInfo& t : gguf->tensors()) {
    LLMPACK_RETURN_IF_ERROR(w.add_tensor(t.name, t.dtype, t.ne, {t.data, static_cast<size_t>(t.n_bytes)}));
  }
  return w.write(dst);
}

}  // namespace

void bind_testing(py::module_& m) {
  m.def(
      "_write_package",
      [](const std::filesystem::path& src, const std::filesystem::path& dst, int64_t s, int64_t c, int64_t b,
         bool dynamic, const std::string& kv_cache) {
        require_file(src, "source GGUF");
        Status status;
        status = without_gil([&] { return write_package(src.string(), dst.string(), s, c, b, dynamic, kv_cache); });
        throw_if_error(status);
      },
      py::arg("src_gguf"), py::arg("dst"), py::arg("S"), py::arg("C"), py::arg("B"), py::arg("dynamic") = true,
      py::arg("kv_cache") = "off_graph",
      "Tests only: copies a GGUF and sets the llmpack.* contract keys (S, C, B, shape, KV cache).");
}

}  // namespace llmpack::python
