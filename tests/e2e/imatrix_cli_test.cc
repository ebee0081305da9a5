// `llmpack imatrix` as a user runs it, on a tiny random package: the file it
// writes reads back with every weight's entry and the calibration's numbers,
// in both forms, and bad input gets one clear line and a non-zero exit.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/cli_runner.h"
#include "common/tiny_model.h"
#include "format/imatrix_file.h"

namespace {

using llmpack::testing::run_llmpack;
using llmpack::testing::temp_stem;

constexpr int64_t kContext = 16;

// A tiny random package (two layers) and a text of `words` words, in temp files.
struct Inputs {
  std::string model, text;
  int64_t n_tokens = 0;  // the text's tokens, with the BOS the windows start from

  Inputs(const std::string& words, bool tied = false) {
    llmpack::testing::TinyModelSpec spec;
    spec.tied_output = tied;
    model = temp_stem("imatrix_model") + ".gguf";
    const std::vector<uint8_t> bytes = llmpack::testing::make_tiny_gguf(spec);
    std::ofstream(model, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    text = temp_stem("imatrix_text") + ".txt";
    std::ofstream(text) << words;
    auto pkg = llmpack::testing::load_tiny_package(spec);
    EXPECT_TRUE(pkg.ok()) << pkg.status().message();
    auto ids = pkg->tokenizer->encode(words, 1, 0);
    EXPECT_TRUE(ids.ok());
    n_tokens = static_cast<int64_t>(ids->size());
  }
  ~Inputs() {
    std::filesystem::remove(model);
    std::filesystem::remove(text);
  }
};

std::string story() {
  std::string text;
  for (int i = 0; i < 8; ++i) text += "once upon a time a small fox found a red ball in the tall grass and ";
  return text;
}

std::vector<std::string> layer_weights(bool with_output, const std::string& output_name = "output.weight") {
  std::vector<std::string> names;
  for (int layer = 0; layer < 2; ++layer)
    for (const char* kind : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"})
      names.push_back("blk." + std::to_string(layer) + "." + kind + ".weight");
  if (with_output) names.push_back(output_name);
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> entry_names(const llmpack::ImportanceMatrix& m) {
  std::vector<std::string> names;
  for (const auto& [name, e] : m.entries) names.push_back(name);
  return names;
}

TEST(ImatrixCli, WritesTheGgufFormWithEveryLayerWeight) {
  const Inputs in(story());
  const int64_t windows = in.n_tokens / kContext;
  ASSERT_GE(windows, 2);
  const std::string out = temp_stem("imatrix_out") + ".gguf";
  auto r = run_llmpack("imatrix -m " + in.model + " -f " + in.text + " -c 16 -t 2 -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[1]"), std::string::npos) << "running perplexity line: " << r.out;
  EXPECT_NE(r.out.find("Final estimate: PPL = "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("imatrix: 14 entries from " + std::to_string(windows) + " windows of 16 tokens written to " +
                       out + "\n"),
            std::string::npos)
      << r.out;
  auto m = llmpack::read_imatrix(out);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(entry_names(*m), layer_weights(false));
  EXPECT_EQ(m->chunk_count, windows);
  EXPECT_EQ(m->chunk_size, kContext);
  EXPECT_EQ(m->datasets, std::vector<std::string>{in.text});
  for (const auto& [name, e] : m->entries) EXPECT_EQ(e.count, windows * kContext) << name;
  EXPECT_EQ(llmpack::testing::slurp(out).substr(0, 4), "GGUF");
  std::filesystem::remove(out);
}

// --output_format dat (or an -o ending in .dat), --chunks and --process_output;
// a tied output is collected under the embedding's name.
TEST(ImatrixCli, WritesTheLegacyFormWithChunksAndTheOutputMatrix) {
  for (const bool tied : {false, true}) {
    const Inputs in(story(), tied);
    const std::string out = temp_stem("imatrix_out") + ".imatrix";
    auto r = run_llmpack("imatrix -m " + in.model + " -f " + in.text + " -c 16 --chunks 2 --process_output " +
                         "--output_format dat -o " + out);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("imatrix: 15 entries from 2 windows of 16 tokens written to " + out), std::string::npos)
        << r.out;
    EXPECT_NE(llmpack::testing::slurp(out).substr(0, 4), "GGUF");
    auto m = llmpack::read_imatrix(out);
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_EQ(entry_names(*m), layer_weights(true, tied ? "token_embd.weight" : "output.weight"));
    EXPECT_EQ(m->chunk_count, 2);
    EXPECT_EQ(m->datasets, std::vector<std::string>{in.text});
    for (const auto& [name, e] : m->entries) EXPECT_EQ(e.count, 2 * kContext) << name;
    std::filesystem::remove(out);
  }
  const Inputs in(story());
  const std::string dat = temp_stem("imatrix_out") + ".dat";
  auto r = run_llmpack("imatrix -m " + in.model + " -f " + in.text + " -c 16 --chunks 1 -o " + dat);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(llmpack::testing::slurp(dat).substr(0, 4), "GGUF") << "an -o ending in .dat writes the legacy form";
  auto m = llmpack::read_imatrix(dat);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->chunk_count, 1);
  std::filesystem::remove(dat);
}

// --in_file (llama-imatrix's --in-file): files in either form add up entry by
// entry, alone or on top of a run, and files of another width are refused.
TEST(ImatrixCli, InFilesAddUpEntryByEntry) {
  const Inputs in(story());
  const std::string a = temp_stem("imatrix_a") + ".gguf", b = temp_stem("imatrix_b") + ".dat";
  const std::string both = temp_stem("imatrix_both") + ".gguf", more = temp_stem("imatrix_more") + ".gguf";
  const std::string base = "imatrix -m " + in.model + " -f " + in.text + " -c 16";
  ASSERT_EQ(run_llmpack(base + " --chunks 1 -o " + a).exit_code, 0);
  ASSERT_EQ(run_llmpack(base + " --chunks 2 -o " + b).exit_code, 0);
  auto r = run_llmpack("imatrix --in_file " + a + " --in_file " + b + " -o " + both);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("from 2 files (3 windows)"), std::string::npos) << r.out;
  auto ma = llmpack::read_imatrix(a), mb = llmpack::read_imatrix(b), mboth = llmpack::read_imatrix(both);
  ASSERT_TRUE(ma.ok() && mb.ok() && mboth.ok());
  EXPECT_EQ(mboth->chunk_count, 3);
  EXPECT_EQ(mboth->datasets.size(), 2u);
  ASSERT_EQ(entry_names(*mboth), layer_weights(false));
  for (const auto& [name, e] : mboth->entries) {
    const auto &ea = ma->entries.at(name), &eb = mb->entries.at(name);
    EXPECT_EQ(e.count, ea.count + eb.count) << name;
    ASSERT_EQ(e.sum_sq.size(), ea.sum_sq.size());
    for (size_t j = 0; j < e.sum_sq.size(); ++j) EXPECT_FLOAT_EQ(e.sum_sq[j], ea.sum_sq[j] + eb.sum_sq[j]) << name;
  }
  // On top of a run: the run's sums plus the file's (the same window twice: twice its sums).
  r = run_llmpack(base + " --chunks 1 --in_file " + a + " -o " + more);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto mmore = llmpack::read_imatrix(more);
  ASSERT_TRUE(mmore.ok());
  EXPECT_EQ(mmore->chunk_count, 2);
  for (const auto& [name, e] : mmore->entries) {
    EXPECT_EQ(e.count, 2 * ma->entries.at(name).count) << name;
    EXPECT_FLOAT_EQ(e.sum_sq[0], 2 * ma->entries.at(name).sum_sq[0]) << name;
  }
  // Neither -m nor an --in_file; a file of another model.
  auto bare = run_llmpack("imatrix -f " + in.text + " -o " + both);
  EXPECT_EQ(bare.exit_code, 1);
  EXPECT_NE(bare.err.find("imatrix needs -m MODEL and -f TEXT"), std::string::npos) << bare.err;
  llmpack::ImportanceMatrix other;
  other.entries["blk.0.attn_q.weight"] = llmpack::ImatrixEntry{std::vector<float>(7, 1.0f), 1};
  ASSERT_TRUE(llmpack::write_imatrix(more, other).ok());
  auto mixed = run_llmpack("imatrix --in_file " + a + " --in_file " + more + " -o " + both);
  EXPECT_EQ(mixed.exit_code, 1);
  EXPECT_NE(mixed.err.find("'blk.0.attn_q.weight' has 7 columns in one file and 48 in another"), std::string::npos)
      << mixed.err;
  for (const auto& f : {a, b, both, more}) std::filesystem::remove(f);
}

TEST(ImatrixCli, BadInputGetsOneClearLineAndNonZeroExit) {
  const Inputs in("the fox");
  const std::string out = temp_stem("imatrix_out") + ".gguf";
  const std::string base = "imatrix -m " + in.model + " -f " + in.text;
  auto short_text = run_llmpack(base + " -c 16 -o " + out);
  EXPECT_EQ(short_text.exit_code, 1);
  EXPECT_NE(short_text.err.find("the text has " + std::to_string(in.n_tokens) +
                                " tokens, at least 16 are needed for one window of -c 16"),
            std::string::npos)
      << short_text.err;
  EXPECT_FALSE(std::filesystem::exists(out));

  auto one = run_llmpack(base + " -c 1 -o " + out);
  EXPECT_NE(one.exit_code, 0);
  EXPECT_NE(one.err.find("--ctx_size"), std::string::npos) << one.err;
  EXPECT_NE(one.err.find("not in range 2"), std::string::npos) << one.err;

  const Inputs long_enough(story());
  const std::string nowhere = "/no/such/folder/imatrix.gguf";
  auto unwritable = run_llmpack("imatrix -m " + long_enough.model + " -f " + long_enough.text + " -c 16 -o " + nowhere);
  EXPECT_EQ(unwritable.exit_code, 1);
  EXPECT_NE(unwritable.err.find("-o " + nowhere + ": cannot write there, the folder /no/such/folder does not exist"),
            std::string::npos)
      << unwritable.err;
  auto folder = run_llmpack("imatrix -m " + long_enough.model + " -f " + long_enough.text + " -o " +
                            ::testing::TempDir());
  EXPECT_EQ(folder.exit_code, 1);
  EXPECT_NE(folder.err.find("is a folder, expected a file to write"), std::string::npos) << folder.err;

  auto format = run_llmpack(base + " --output_format txt");
  EXPECT_NE(format.exit_code, 0);
  EXPECT_NE(format.err.find("--output_format"), std::string::npos) << format.err;
  auto missing = run_llmpack("imatrix -m " + in.model + " -f /no/such/text.txt");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("/no/such/text.txt"), std::string::npos) << missing.err;
}

}  // namespace
