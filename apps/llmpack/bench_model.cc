#include "bench_model.h"

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "format/gguf.h"
#include "format/gguf_file_type.h"
#include "format/llama2c.h"
#include "kernels/grouped_blocks.h"

namespace llmpack::cli {
namespace {

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// "110M", "1.2B": the size word of llama-bench's model description.
std::string params_word(uint64_t n) {
  char buf[32];
  if (n >= 1000000000ull) std::snprintf(buf, sizeof(buf), "%.1fB", static_cast<double>(n) / 1e9);
  else std::snprintf(buf, sizeof(buf), "%.0fM", static_cast<double>(n) / 1e6);
  return buf;
}

Result<bool> starts_with_gguf_magic(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return error_status("cannot open model file '" + path + "': " + std::strerror(errno));
  char magic[4] = {};
  const size_t n = std::fread(magic, 1, 4, f);
  std::fclose(f);
  return n == 4 && std::memcmp(magic, "GGUF", 4) == 0;
}

// The model without its tokenizer: bench feeds random token ids.
Result<std::unique_ptr<Model>> open_model_file(const std::string& path) {
  LLMPACK_ASSIGN_OR_RETURN(bool is_gguf, starts_with_gguf_magic(path));
  if (is_gguf) {
    auto gguf = GgufFile::open(path);
    if (!gguf.ok()) return gguf.status();
    return Model::from_gguf(std::move(gguf).value());
  }
  auto checkpoint = read_llama2c_checkpoint(path);
  if (!checkpoint.ok()) return checkpoint.status();
  return Model::from_llama2c(std::move(checkpoint).value());
}

// Sizes as llama-bench counts them: every tensor of the file.
void count_weights(const Model& model, BenchModel* out) {
  if (const GgufFile* gguf = model.gguf()) {
    for (const auto& t : gguf->tensors()) {
      out->size_bytes += t.n_bytes;
      out->n_params += static_cast<uint64_t>(t.n_elements());
      out->repacked = out->repacked || dtype_is_memory_only(t.dtype);  // regrouped at load (Model)
    }
    return;
  }
  out->size_bytes = model.weight_bytes();  // llama2.c: f32 weights after a 28-byte header
  out->n_params = model.weight_bytes() / 4;
}

}  // namespace

Result<BenchModelSource> parse_synthetic_spec(const std::string& spec) {
  const size_t colon = spec.find(':');
  if (colon == std::string::npos)
    return error_status("--synthetic expects NAME:TYPE (for example stories110m:q4_0), got '" + spec + "'");
  BenchModelSource source;
  LLMPACK_ASSIGN_OR_RETURN(source.shape, find_synthetic_shape(spec.substr(0, colon)));
  LLMPACK_ASSIGN_OR_RETURN(source.type, parse_synthetic_type(spec.substr(colon + 1)));
  return source;
}

Result<BenchModel> load_bench_model(const BenchModelSource& source, int threads, int64_t max_seq_len,
                                    int64_t max_context_len, KvDtype kv_dtype) {
  const auto start = std::chrono::steady_clock::now();
  ContractDefaults defaults;
  defaults.max_seq_len = max_seq_len;
  defaults.max_context_len = max_context_len;
  std::unique_ptr<Model> model;
  BenchModel out;
  if (source.is_synthetic()) {
    ThreadPool pool(threads);
    auto built = build_synthetic_model(source.shape, source.type, source.synthetic, pool);
    if (!built.ok()) return built.status();
    model = std::move(built).value();
    out.filename = "synthetic:" + source.shape.name + ":" + std::string(synthetic_type_name(source.type));
    out.display = source.shape.name + " (synthetic)";
  } else {
    auto opened = open_model_file(source.path);
    if (!opened.ok()) return opened.status().with_context("loading '" + source.path + "'");
    model = std::move(opened).value();
    out.filename = source.path;
    out.display = source.path.substr(source.path.find_last_of('/') + 1);
  }
  // As llama-bench describes a file: by its declared (or guessed) file type;
  // a llama.2c checkpoint by its first layer's type.
  out.type_label = model->gguf() ? describe_file_type(*model->gguf())
                                 : upper(dtype_name(kernels::plain_type(model->weights().layers.at(0).wq.dtype)));
  count_weights(*model, &out);
  out.model_type = model->config().arch_name + " " + params_word(out.n_params) + " " + out.type_label;
  PackageContract contract;
  if (model->gguf()) {
    auto read = read_contract(*model->gguf(), model->config(), defaults);
    if (!read.ok()) return read.status().with_context("reading the package contract");
    contract = std::move(read).value();
  } else {
    contract = default_contract(model->config(), defaults, {});
  }
  ProgramOptions options;
  options.cpu_threads = threads;
  options.defaults = defaults;
  options.kv_dtype = kv_dtype;
  auto program = LlamaProgram::create(std::move(model), std::move(contract), options);
  if (!program.ok()) return program.status();
  out.program = std::move(program).value();
  out.load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

std::vector<ReadRange> decode_weight_ranges(const BenchModel& model) {
  const ModelWeights& w = model.program->model().weights();
  std::vector<ReadRange> ranges;
  auto add = [&](const kernels::WeightMatrix& m) {
    if (m.data == nullptr) return;
    const auto bytes = static_cast<uint64_t>(m.rows * row_bytes(*dtype_info(m.dtype), m.cols));
    ranges.push_back({m.data, bytes});
  };
  for (const LayerWeights& l : w.layers)
    for (const auto* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) add(*m);
  add(w.output);
  return ranges;
}

Status save_model_gguf(const Model& model, const std::string& path) {
  const GgufFile* gguf = model.gguf();
  if (!gguf) return error_status("only a GGUF-backed model can be saved as GGUF");
  GgufWriter writer;
  for (const auto& [key, value] : gguf->metadata()) writer.set(key, value);
  std::vector<std::vector<uint8_t>> plain;  // regrouped matrices in the file's layout again
  for (const auto& t : gguf->tensors()) {
    std::span<const uint8_t> bytes(t.data, t.n_bytes);
    const DType type = kernels::plain_type(t.dtype);
    if (type != t.dtype) {
      const int64_t stride = row_bytes(*dtype_info(type), t.ne[0]);
      auto& out = plain.emplace_back(t.n_bytes);
      for (uint64_t r = 0; r < t.n_bytes / static_cast<uint64_t>(stride); ++r)
        kernels::ungroup_row(t.dtype, t.data + r * stride, t.ne[0], out.data() + r * stride);
      bytes = out;
    }
    LLMPACK_RETURN_IF_ERROR(writer.add_tensor(t.name, type, t.ne, bytes));
  }
  return writer.write(path).with_context("writing '" + path + "'");
}

}  // namespace llmpack::cli
