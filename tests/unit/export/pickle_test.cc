// The restricted pickle reader and PyTorch checkpoints: hand-made state dicts
// load; hostile pickles are refused naming the opcode, never executed.
#include <gtest/gtest.h>

#include "export_test_util.h"
#include "format/pickle_reader.h"
#include "format/pytorch_checkpoint.h"

namespace llmpack {
namespace {

using testing::ScratchDir;

// Builds protocol-2 pickles opcode by opcode.
struct Pickle {
  std::string b = "\x80\x02";
  Pickle& op(char c) { b += c; return *this; }
  Pickle& str(const std::string& s) {
    b += 'X';
    u32(static_cast<uint32_t>(s.size()));
    b += s;
    return *this;
  }
  Pickle& u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) b += static_cast<char>((v >> (8 * i)) & 0xFF);
    return *this;
  }
  Pickle& int1(uint8_t v) { b += 'K'; b += static_cast<char>(v); return *this; }
  Pickle& global(const std::string& module, const std::string& name) { b += "c" + module + "\n" + name + "\n"; return *this; }
  // _rebuild_tensor_v2(('storage', FloatStorage, key, 'cpu', numel), offset, (rows, cols), (cols, 1), False, OrderedDict())
  Pickle& tensor(const std::string& key, uint8_t numel, uint8_t offset, uint8_t rows, uint8_t cols, uint8_t s0,
                 uint8_t s1) {
    global("torch._utils", "_rebuild_tensor_v2").op('(');
    op('(').str("storage").global("torch", "FloatStorage").str(key).str("cpu").int1(numel).op('t').op('Q');
    int1(offset).int1(rows).int1(cols).op('\x86').int1(s0).int1(s1).op('\x86').op('\x89');
    global("collections", "OrderedDict").op(')').op('R').op('t').op('R');
    return *this;
  }
  std::span<const uint8_t> bytes() const { return {reinterpret_cast<const uint8_t*>(b.data()), b.size()}; }
};

Status parse_status(const Pickle& p) {
  auto doc = PickleDocument::parse(p.bytes());
  return doc.ok() ? ok_status() : doc.status();
}

TEST(Pickle, ReadsAStateDictOfTensors) {
  Pickle p;
  p.global("collections", "OrderedDict").op(')').op('R').op('q').b += '\x00';
  p.op('(').str("a").tensor("0", 6, 0, 2, 3, 3, 1).str("b").tensor("0", 6, 3, 1, 3, 3, 1).op('u').op('.');
  auto doc = PickleDocument::parse(p.bytes());
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  const PickleValue* a = doc->dict_get(doc->root(), "a");
  const PickleValue* b = doc->dict_get(doc->root(), "b");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->kind, PickleKind::kTensor);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(b->storage_offset, 3);
  EXPECT_EQ(b->s, "0");
}

TEST(Pickle, RefusesGlobalsOutsideTheAllowlistNamingThem) {
  Pickle p;
  p.global("os", "system").str("echo hi").op('\x85').op('R').op('.');
  Status st = parse_status(p);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("'c' GLOBAL"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("os system"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("not allowed"), std::string::npos) << st.message();
}

TEST(Pickle, RefusesUnknownAndUnsupportedOpcodes) {
  for (char op : {'i', 'o', '\x81', 'S', '0', '\xff'}) {
    Pickle p;
    p.op(op).op('.');
    Status st = parse_status(p);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("pickle opcode"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("at byte 2"), std::string::npos) << st.message();
  }
  Pickle inst;
  inst.op('i');
  EXPECT_NE(parse_status(inst).message().find("INST"), std::string::npos);
}

TEST(Pickle, RefusesCallingAStorageTypeOrANonGlobal) {
  Pickle p;
  p.global("torch", "FloatStorage").op(')').op('R').op('.');
  EXPECT_NE(parse_status(p).message().find("cannot be called"), std::string::npos);
  Pickle q;
  q.str("x").op(')').op('R').op('.');
  EXPECT_NE(parse_status(q).message().find("REDUCE"), std::string::npos);
}

TEST(Pickle, RefusesTruncatedAndHugeLengths) {
  Pickle whole;
  whole.str("hello").op('.');
  for (size_t cut = 0; cut < whole.b.size(); ++cut) {
    const std::string part = whole.b.substr(0, cut);
    auto doc = PickleDocument::parse({reinterpret_cast<const uint8_t*>(part.data()), part.size()});
    EXPECT_FALSE(doc.ok()) << "cut at " << cut;
  }
  Pickle huge;
  huge.op('X').u32(0xFFFFFFF0u).op('.');
  Status st = parse_status(huge);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("BINUNICODE"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("runs past the end"), std::string::npos) << st.message();
}

TEST(Pickle, StackUnderflowAndBadMemoAreErrors) {
  for (const std::string body : {"t", "u", "a", "R", "h\x05", ".", "(("}) {
    Pickle p;
    p.b += body;
    p.op('.');
    EXPECT_FALSE(parse_status(p).ok()) << body;
  }
}

TEST(Pickle, SelfReferencingListDoesNotLoop) {
  Pickle p;
  p.op(']').op('q').b += '\x01';
  p.op('h').b += '\x01';
  p.op('a').op('.');  // list.append(list)
  auto doc = PickleDocument::parse(p.bytes());
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  EXPECT_EQ(doc->root().items.size(), 1u);
  EXPECT_EQ(doc->root().items[0], doc->root_index());
}

std::string float_bytes(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), std::data(v), s.size());
  return s;
}

TEST(TorchCheckpoint, ResolvesViewsIntoStorages) {
  Pickle p;
  p.op('}').op('(').str("w").tensor("0", 6, 0, 2, 3, 3, 1).str("v").tensor("0", 6, 3, 1, 3, 3, 1).op('u').op('.');
  testing::ZipBuilder zip;
  zip.add("ck/data.pkl", p.b);
  zip.add("ck/data/0", float_bytes({1, 2, 3, 4, 5, 6}));
  auto bytes = zip.finish();
  auto archive = ZipArchive::from_file(MappedFile::from_bytes(bytes));
  ASSERT_TRUE(archive.ok()) << archive.status().message();
  auto ck = parse_torch_checkpoint(std::move(archive).value());
  ASSERT_TRUE(ck.ok()) << ck.status().message();
  ASSERT_EQ(ck->tensors.size(), 2u);
  const TorchTensor* v = ck->find("v");
  ASSERT_TRUE(v);
  float got[3];
  ASSERT_EQ(v->bytes.size(), 12u);
  std::memcpy(got, v->bytes.data(), 12);
  EXPECT_EQ(got[0], 4.0f);
  EXPECT_EQ(got[2], 6.0f);
}

TEST(TorchCheckpoint, RefusesNonContiguousAndOutOfRangeViews) {
  struct Case {
    uint8_t numel, offset, rows, cols, s0, s1;
    const char* mentions;
  };
  for (const Case& c : {Case{6, 0, 2, 3, 1, 2, "only contiguous"}, Case{6, 4, 1, 3, 3, 1, "runs past its storage"},
                        Case{200, 0, 10, 20, 20, 1, "holds 24 bytes"}}) {
    Pickle p;
    p.op('}').op('(').str("w").tensor("0", c.numel, c.offset, c.rows, c.cols, c.s0, c.s1).op('u').op('.');
    testing::ZipBuilder zip;
    zip.add("ck/data.pkl", p.b);
    zip.add("ck/data/0", float_bytes({1, 2, 3, 4, 5, 6}));
    auto bytes = zip.finish();
    auto ck = parse_torch_checkpoint(ZipArchive::from_file(MappedFile::from_bytes(bytes)).value());
    ASSERT_FALSE(ck.ok()) << c.mentions;
    EXPECT_NE(ck.status().message().find(c.mentions), std::string::npos) << ck.status().message();
  }
}

TEST(TorchCheckpoint, MissingStorageAndDamagedZipAreErrors) {
  Pickle p;
  p.op('}').op('(').str("w").tensor("7", 6, 0, 2, 3, 3, 1).op('u').op('.');
  testing::ZipBuilder zip;
  zip.add("ck/data.pkl", p.b);
  auto bytes = zip.finish();
  auto ck = parse_torch_checkpoint(ZipArchive::from_file(MappedFile::from_bytes(bytes)).value());
  ASSERT_FALSE(ck.ok());
  EXPECT_NE(ck.status().message().find("ck/data/7"), std::string::npos) << ck.status().message();
  // Every truncation of the archive is refused or read consistently, never a crash.
  for (size_t cut = 0; cut < bytes.size(); cut += 7) {
    auto z = ZipArchive::from_file(MappedFile::from_bytes(std::span(bytes).first(cut)));
    if (z.ok()) {
      EXPECT_FALSE(parse_torch_checkpoint(std::move(z).value()).ok());
    }
  }
}

TEST(TorchCheckpoint, HostileCheckpointFileIsRefusedByExport) {
  Pickle p;
  p.global("os", "system").str("touch /tmp/pwned").op('\x85').op('R').op('.');
  testing::ZipBuilder zip;
  zip.add("evil/data.pkl", p.b);
  ScratchDir dir;
  auto bytes = zip.finish();
  testing::write_file(dir.file("evil.pt"), bytes);
  ExportOptions o;
  o.checkpoint = dir.file("evil.pt");
  o.params_path = testing::fixture_path("pytorch/params.json");
  o.output = dir.file("out.gguf");
  auto report = export_package(o);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("GLOBAL"), std::string::npos) << report.status().message();
  EXPECT_FALSE(std::filesystem::exists(o.output));
}

}  // namespace
}  // namespace llmpack
