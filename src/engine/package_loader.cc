// load_package: tells a GGUF package from a llama2.c checkpoint by content,
// binds the model, reads the contract and loads the tokenizer.
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "engine/llama_program.h"
#include "format/gguf.h"
#include "format/llama2c.h"
#include "tokenizer/tokenizer_loader.h"

namespace llmpack {
namespace {

Result<bool> file_starts_with_gguf_magic(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return error_status("model file '" + path + "' does not exist");
  if (std::filesystem::is_directory(path, ec))
    return error_status("model path '" + path + "' is a directory, expected a .gguf or llama2.c .bin file");
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return error_status("cannot open model file '" + path + "': " + std::strerror(errno));
  char magic[4] = {};
  const size_t n = std::fread(magic, 1, 4, f);
  std::fclose(f);
  return n == 4 && std::memcmp(magic, "GGUF", 4) == 0;
}

Status check_tokenizer_matches(const Tokenizer& tokenizer, const Model& model) {
  const int64_t vocab = model.config().vocab_size;
  if (tokenizer.vocab_size() != vocab)
    return error_status("tokenizer has " + std::to_string(tokenizer.vocab_size()) +
                        " tokens, the model's vocabulary has " + std::to_string(vocab));
  return ok_status();
}

Result<LoadedPackage> load_llama2c_package(const std::string& model_path, const std::string& tokenizer_path,
                                           const ProgramOptions& options) {
  if (tokenizer_path.empty())
    return error_status("a llama2.c checkpoint needs --tokenizer_path (its tokenizer.bin)");
  auto checkpoint = read_llama2c_checkpoint(model_path);
  if (!checkpoint.ok()) return checkpoint.status().with_context("loading '" + model_path + "'");
  auto model = Model::from_llama2c(std::move(checkpoint).value());
  if (!model.ok()) return model.status();
  auto tokenizer = load_tokenizer(tokenizer_path);
  if (!tokenizer.ok()) return tokenizer.status().with_context("loading tokenizer '" + tokenizer_path + "'");
  LLMPACK_RETURN_IF_ERROR(check_tokenizer_matches(**tokenizer, **model));
  std::vector<int64_t> eos;
  if ((*tokenizer)->eos_id() >= 0) eos.push_back((*tokenizer)->eos_id());
  PackageContract contract = default_contract((*model)->config(), options.defaults, eos);
  contract.bos_id = (*tokenizer)->bos_id();
  auto program = LlamaProgram::create(std::move(model).value(), contract, options);
  if (!program.ok()) return program.status();
  return LoadedPackage{std::move(program).value(), std::move(tokenizer).value()};
}

}  // namespace

Result<LoadedPackage> load_gguf_package(std::unique_ptr<GgufFile> gguf, const std::string& tokenizer_path,
                                        const ProgramOptions& options) {
  std::unique_ptr<Tokenizer> tokenizer;
  if (tokenizer_path.empty()) {
    auto own = load_tokenizer_from_gguf(*gguf);
    if (!own.ok()) return own.status().with_context("loading the package's tokenizer");
    tokenizer = std::move(own).value();
  }
  auto model = Model::from_gguf(std::move(gguf));
  if (!model.ok()) return model.status();
  if (!tokenizer_path.empty()) {
    auto other = load_tokenizer(tokenizer_path);
    if (!other.ok()) return other.status().with_context("loading tokenizer '" + tokenizer_path + "'");
    tokenizer = std::move(other).value();
  }
  LLMPACK_RETURN_IF_ERROR(check_tokenizer_matches(*tokenizer, **model));
  auto contract = read_contract(*(*model)->gguf(), (*model)->config(), options.defaults);
  if (!contract.ok()) return contract.status().with_context("reading the package contract");
  contract->bos_id = tokenizer->bos_id();
  if (contract->eos_ids.empty() && tokenizer->eos_id() >= 0) contract->eos_ids.push_back(tokenizer->eos_id());
  auto program = LlamaProgram::create(std::move(model).value(), std::move(contract).value(), options);
  if (!program.ok()) return program.status();
  return LoadedPackage{std::move(program).value(), std::move(tokenizer)};
}

Result<LoadedPackage> load_package(const std::string& model_path, const std::string& tokenizer_path,
                                   const ProgramOptions& options) {
  LLMPACK_ASSIGN_OR_RETURN(bool is_gguf, file_starts_with_gguf_magic(model_path));
  if (!is_gguf) return load_llama2c_package(model_path, tokenizer_path, options);
  auto gguf = GgufFile::open(model_path);
  if (!gguf.ok()) return gguf.status().with_context("loading '" + model_path + "'");
  auto loaded = load_gguf_package(std::move(gguf).value(), tokenizer_path, options);
  if (!loaded.ok()) return loaded.status().with_context("loading '" + model_path + "'");
  return loaded;
}

}  // namespace llmpack
