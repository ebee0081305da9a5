#include "format/zip_archive.h"

#include <zlib.h>

#include <cstring>

namespace llmpack {
namespace {

constexpr uint32_t kEndOfCentralDir = 0x06054b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint64_t kEocdSize = 22;
constexpr uint64_t kMaxComment = 0xFFFF;
// Refuse to inflate entries claiming more than this (a zip bomb guard).
constexpr uint64_t kMaxInflated = uint64_t{1} << 34;

template <typename T>
T load(std::span<const uint8_t> b, uint64_t pos) {
  T v;
  std::memcpy(&v, b.data() + pos, sizeof(T));
  return v;
}

std::string at(uint64_t pos) { return " at byte " + std::to_string(pos); }

}  // namespace

Result<std::unique_ptr<ZipArchive>> ZipArchive::open(const std::string& path) {
  auto file = MappedFile::open(path);
  if (!file.ok()) return file.status();
  return from_file(std::move(file).value());
}

Result<std::unique_ptr<ZipArchive>> ZipArchive::from_file(std::unique_ptr<MappedFile> file) {
  std::unique_ptr<ZipArchive> zip(new ZipArchive());
  zip->file_ = std::move(file);
  if (auto st = zip->parse(); !st.ok()) return st.with_context("zip archive " + zip->file_->path());
  return zip;
}

const ZipEntry* ZipArchive::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

Status ZipArchive::parse() {
  const std::span<const uint8_t> b = file_->bytes();
  const uint64_t n = b.size();
  if (n < kEocdSize) return error_status("file of " + std::to_string(n) + " bytes is too small for a zip archive");
  // The end record sits in the last 22 + comment bytes; search backwards.
  uint64_t eocd = UINT64_MAX;
  const uint64_t lowest = n - kEocdSize > kMaxComment ? n - kEocdSize - kMaxComment : 0;
  for (uint64_t p = n - kEocdSize + 1; p-- > lowest;) {
    if (load<uint32_t>(b, p) == kEndOfCentralDir) {
      eocd = p;
      break;
    }
  }
  if (eocd == UINT64_MAX) return error_status("no end-of-central-directory record (not a zip file)");
  const uint16_t n_entries = load<uint16_t>(b, eocd + 10);
  const uint32_t cd_size = load<uint32_t>(b, eocd + 12);
  const uint32_t cd_offset = load<uint32_t>(b, eocd + 16);
  if (n_entries == 0xFFFF || cd_offset == 0xFFFFFFFFu || cd_size == 0xFFFFFFFFu)
    return error_status("zip64 archives are not supported (the checkpoint is over 4 GiB)");
  if (uint64_t{cd_offset} + cd_size > eocd)
    return error_status("central directory [" + std::to_string(cd_offset) + ", +" + std::to_string(cd_size) +
                        ") runs past the end record" + at(eocd));
  uint64_t pos = cd_offset;
  const std::span<const uint8_t> cd = b.first(static_cast<size_t>(cd_offset + uint64_t{cd_size}));
  for (uint32_t i = 0; i < n_entries; ++i) LLMPACK_RETURN_IF_ERROR(parse_central_entry(cd, &pos));
  return ok_status();
}

Status ZipArchive::parse_central_entry(std::span<const uint8_t> cd, uint64_t* pos) {
  const std::span<const uint8_t> b = file_->bytes();
  const uint64_t p = *pos;
  if (cd.size() < 46 || p > cd.size() - 46) return error_status("central directory entry" + at(p) + " is truncated");
  if (load<uint32_t>(cd, p) != kCentralHeader) return error_status("expected a central directory entry" + at(p));
  ZipEntry e;
  e.method = load<uint16_t>(cd, p + 10);
  e.compressed_size = load<uint32_t>(cd, p + 20);
  e.size = load<uint32_t>(cd, p + 24);
  const uint64_t name_len = load<uint16_t>(cd, p + 28);
  const uint64_t extra_len = load<uint16_t>(cd, p + 30);
  const uint64_t comment_len = load<uint16_t>(cd, p + 32);
  const uint64_t local = load<uint32_t>(cd, p + 42);
  if (p + 46 + name_len + extra_len + comment_len > cd.size())
    return error_status("central directory entry" + at(p) + " runs past the directory");
  e.name.assign(reinterpret_cast<const char*>(cd.data() + p + 46), name_len);
  *pos = p + 46 + name_len + extra_len + comment_len;
  if (e.compressed_size == 0xFFFFFFFFu || e.size == 0xFFFFFFFFu || local == 0xFFFFFFFFu)
    return error_status("entry '" + e.name + "' uses zip64 sizes, which are not supported");
  if (e.method != 0 && e.method != 8)
    return error_status("entry '" + e.name + "' uses compression method " + std::to_string(e.method) +
                        ", expected 0 (stored) or 8 (deflate)");
  if (e.method == 0 && e.compressed_size != e.size)
    return error_status("stored entry '" + e.name + "' has compressed size " + std::to_string(e.compressed_size) +
                        " but size " + std::to_string(e.size));
  if (local > b.size() || b.size() - local < 30 || load<uint32_t>(b, local) != kLocalHeader)
    return error_status("entry '" + e.name + "': expected a local header" + at(local));
  const uint64_t data = local + 30 + load<uint16_t>(b, local + 26) + load<uint16_t>(b, local + 28);
  if (data > b.size() || e.compressed_size > b.size() - data)
    return error_status("entry '" + e.name + "' data [" + std::to_string(data) + ", +" +
                        std::to_string(e.compressed_size) + ") runs past the end of the file (" +
                        std::to_string(b.size()) + " bytes)");
  e.data_offset = data;
  if (index_.count(e.name)) return error_status("entry '" + e.name + "' appears twice");
  index_.emplace(e.name, entries_.size());
  entries_.push_back(std::move(e));
  return ok_status();
}

Result<std::span<const uint8_t>> ZipArchive::read(const ZipEntry& e) {
  const auto raw = file_->bytes().subspan(static_cast<size_t>(e.data_offset), static_cast<size_t>(e.compressed_size));
  if (e.method == 0) return raw;
  if (auto it = inflated_.find(e.name); it != inflated_.end()) return std::span<const uint8_t>(it->second);
  if (e.size > kMaxInflated)
    return error_status("entry '" + e.name + "' claims " + std::to_string(e.size) + " bytes uncompressed");
  std::vector<uint8_t> out(static_cast<size_t>(e.size));
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) return error_status("zlib: cannot start inflating");
  zs.next_in = const_cast<Bytef*>(raw.data());
  zs.avail_in = static_cast<uInt>(raw.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&zs, Z_FINISH);
  const uint64_t produced = zs.total_out;
  inflateEnd(&zs);
  if (rc != Z_STREAM_END || produced != e.size)
    return error_status("entry '" + e.name + "': deflate data is damaged (expected " + std::to_string(e.size) +
                        " bytes, inflated " + std::to_string(produced) + ")");
  auto& stored = inflated_[e.name] = std::move(out);
  return std::span<const uint8_t>(stored);
}

}  // namespace llmpack
