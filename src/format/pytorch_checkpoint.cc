#include "format/pytorch_checkpoint.h"

namespace llmpack {
namespace {

std::string shape_string(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// The state dict inside the document: the root, or root["model"] /
// root["state_dict"] for training checkpoints.
const PickleValue* find_state_dict(const PickleDocument& doc) {
  const PickleValue& root = doc.root();
  if (root.kind != PickleKind::kDict) return nullptr;
  for (const char* key : {"model", "state_dict"}) {
    if (const PickleValue* inner = doc.dict_get(root, key); inner && inner->kind == PickleKind::kDict) return inner;
  }
  return &root;
}

void read_model_args(const PickleDocument& doc, TorchCheckpoint* out) {
  const PickleValue* args = doc.dict_get(doc.root(), "model_args");
  if (!args || args->kind != PickleKind::kDict) return;
  for (size_t k = 0; k + 1 < args->items.size(); k += 2) {
    const PickleValue& key = doc.value(args->items[k]);
    const PickleValue& val = doc.value(args->items[k + 1]);
    if (key.kind != PickleKind::kString) continue;
    if (val.kind == PickleKind::kInt) out->model_args[key.s] = static_cast<double>(val.i);
    else if (val.kind == PickleKind::kFloat) out->model_args[key.s] = val.f;
  }
}

// Views the tensor's elements in its storage entry; only contiguous
// row-major tensors are accepted (what a state dict holds).
Status resolve_tensor(ZipArchive& zip, const std::string& prefix, const PickleValue& t, TorchTensor* out) {
  int64_t numel = 1, expected_stride = 1;
  for (size_t d = t.shape.size(); d-- > 0;) {
    if (t.shape[d] != 1 && t.stride[d] != expected_stride)
      return error_status("tensor '" + out->name + "' of shape " + shape_string(t.shape) + " has strides " +
                          shape_string(t.stride) + ": only contiguous tensors are supported");
    if (t.shape[d] != 0 && expected_stride > (int64_t{1} << 40) / t.shape[d])
      return error_status("tensor '" + out->name + "' has too many elements");
    expected_stride *= t.shape[d];
  }
  numel = expected_stride;
  if (t.storage_offset > t.numel || numel > t.numel - t.storage_offset)
    return error_status("tensor '" + out->name + "' of shape " + shape_string(t.shape) + " at offset " +
                        std::to_string(t.storage_offset) + " runs past its storage of " + std::to_string(t.numel) +
                        " elements");
  const std::string entry_name = prefix + "data/" + t.s;
  const ZipEntry* entry = zip.find(entry_name);
  if (!entry) return error_status("tensor '" + out->name + "': storage entry '" + entry_name + "' is missing");
  LLMPACK_ASSIGN_OR_RETURN(auto bytes, zip.read(*entry));
  const int64_t es = torch_dtype_size(t.dtype);
  if (static_cast<uint64_t>(t.numel) * es > bytes.size())
    return error_status("storage '" + entry_name + "' holds " + std::to_string(bytes.size()) + " bytes, expected " +
                        std::to_string(t.numel * es) + " (" + std::to_string(t.numel) + " elements)");
  out->dtype = t.dtype;
  out->shape = t.shape;
  out->storage_key = t.s;
  out->storage_offset = t.storage_offset;
  out->bytes = bytes.subspan(static_cast<size_t>(t.storage_offset * es), static_cast<size_t>(numel * es));
  return ok_status();
}

}  // namespace

int64_t TorchTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

const TorchTensor* TorchCheckpoint::find(std::string_view name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

Result<TorchCheckpoint> read_torch_checkpoint(const std::string& path) {
  auto zip = ZipArchive::open(path);
  if (!zip.ok()) return zip.status().with_context("PyTorch checkpoint " + path);
  return parse_torch_checkpoint(std::move(zip).value()).with_context("PyTorch checkpoint " + path);
}

Result<TorchCheckpoint> parse_torch_checkpoint(std::unique_ptr<ZipArchive> zip) {
  const ZipEntry* pkl = nullptr;
  for (const auto& e : zip->entries()) {
    const std::string& n = e.name;
    if (n.size() >= 8 && n.compare(n.size() - 8, 8, "data.pkl") == 0 &&
        (n.size() == 8 || n[n.size() - 9] == '/')) {
      if (pkl) return error_status("two pickles ('" + pkl->name + "', '" + n + "'), expected one data.pkl");
      pkl = &e;
    }
  }
  if (!pkl) return error_status("no data.pkl entry (not a torch.save zip checkpoint)");
  const std::string prefix = pkl->name.substr(0, pkl->name.size() - 8);
  LLMPACK_ASSIGN_OR_RETURN(auto pkl_bytes, zip->read(*pkl));
  LLMPACK_ASSIGN_OR_RETURN(PickleDocument doc, PickleDocument::parse(pkl_bytes));
  const PickleValue* dict = find_state_dict(doc);
  if (!dict) return error_status("the pickle holds no dict (expected a state dict of tensors)");
  TorchCheckpoint out;
  read_model_args(doc, &out);
  for (size_t k = 0; k + 1 < dict->items.size(); k += 2) {
    const PickleValue& key = doc.value(dict->items[k]);
    const PickleValue& val = doc.value(dict->items[k + 1]);
    if (val.kind != PickleKind::kTensor) continue;  // step counters, optimizer scalars
    if (key.kind != PickleKind::kString) return error_status("a tensor's key is not a string");
    TorchTensor t;
    t.name = key.s;
    // torch.compile wraps modules, prefixing every name.
    if (t.name.rfind("_orig_mod.", 0) == 0) t.name = t.name.substr(10);
    LLMPACK_RETURN_IF_ERROR(resolve_tensor(*zip, prefix, val, &t));
    out.tensors.push_back(std::move(t));
  }
  if (out.tensors.empty()) return error_status("the state dict holds no tensors");
  out.archive = std::move(zip);
  return out;
}

}  // namespace llmpack
