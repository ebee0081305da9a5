// PyTorch checkpoints (.pt/.pth, the zip format of torch.save): the
// restricted pickle of `<name>/data.pkl` gives a state dict whose tensors
// are views of storages stored as `<name>/data/<key>`. Nothing is executed
// (see pickle_reader.h). Handles a plain state dict (Meta's consolidated.*.pth)
// and llama2.c's training checkpoint {"model": state_dict, "model_args": {...}}.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "format/pickle_reader.h"
#include "format/zip_archive.h"

namespace llmpack {

struct TorchTensor {
  std::string name;
  TorchDType dtype = TorchDType::kF32;
  std::vector<int64_t> shape;           // row-major, outermost first
  std::span<const uint8_t> bytes;       // the tensor's elements, contiguous
  std::string storage_key;              // tensors sharing a key and offset share weights
  int64_t storage_offset = 0;           // in elements
  int64_t numel() const;
};

struct TorchCheckpoint {
  std::vector<TorchTensor> tensors;     // in the file's order
  // Numbers of the llama2.c "model_args" dict (dim, n_layers, ...), when present.
  std::map<std::string, double> model_args;
  std::unique_ptr<ZipArchive> archive;  // owns the bytes the tensors view

  const TorchTensor* find(std::string_view name) const;
};

Result<TorchCheckpoint> read_torch_checkpoint(const std::string& path);
Result<TorchCheckpoint> parse_torch_checkpoint(std::unique_ptr<ZipArchive> archive);

}  // namespace llmpack
