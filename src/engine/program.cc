#include "engine/program.h"

namespace llmpack {

std::string_view scalar_type_name(ScalarType t) {
  switch (t) {
    case ScalarType::kInt64: return "int64";
    case ScalarType::kFloat32: return "float32";
    case ScalarType::kBool: return "bool";
  }
  return "?";
}

namespace {
Status no_off_graph_cache() {
  return error_status("this program keeps its KV cache inside the graph; an off-graph cache needs a package "
                      "exported with --kv_cache off_graph");
}
}  // namespace

Result<std::unique_ptr<KvCache>> Program::create_kv_cache(const KvCacheOptions&) const {
  return no_off_graph_cache();
}

Status Program::bind_kv_cache(KvCache* cache) { return cache == nullptr ? ok_status() : no_off_graph_cache(); }

Result<int64_t> get_int_constant(const Program& program, std::string_view method) {
  auto value = program.execute_constant(method);
  if (!value.ok()) return value.status();
  if (const auto* v = std::get_if<int64_t>(&value.value())) return *v;
  if (const auto* b = std::get_if<bool>(&value.value())) return static_cast<int64_t>(*b);
  return error_status(std::string(method) + " returned a list, expected an integer");
}

Result<bool> get_bool_constant(const Program& program, std::string_view method) {
  auto value = program.execute_constant(method);
  if (!value.ok()) return value.status();
  if (const auto* b = std::get_if<bool>(&value.value())) return *b;
  if (const auto* v = std::get_if<int64_t>(&value.value())) return *v != 0;
  return error_status(std::string(method) + " returned a list, expected a boolean");
}

}  // namespace llmpack
