// Results of `llmpack bench` and their three printed forms, with llama-bench's
// field names so its users' scripts read them: a markdown table, CSV, JSON.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace llmpack::cli {

struct BenchModel;

// One measured test of one model at one thread count.
struct BenchRecord {
  const BenchModel* model = nullptr;
  int n_threads = 0;
  std::string test;           // "pp512", "tg128", "ttft98", "tg128 @ d4096"
  int64_t n_prompt = 0;
  int64_t n_gen = 0;
  int64_t n_depth = 0;        // tokens of context in the KV cache before the test (-d)
  int64_t n_batch = 0;        // tokens handed over at once: -b's batch (capped at the prompt), else n_ubatch
  int64_t n_ubatch = 0;       // tokens per forward call (the prefill chunk; 1 for generation)
  int flash_attn = -1;        // -fa as llama-bench records it: 1 on, -1 auto (the attention is the same)
  std::string load_mode = "auto";  // -lm: auto or mmap (the file is mapped either way)
  std::string cpu_mask = "0x0";    // -C: the CPUs the threads ran on; 0x0: where the OS put them
  bool cpu_strict = false;         // --cpu-strict: each thread on one CPU of the mask
  int poll = 50;                   // --poll: how long waiting threads spin (0: they block at once)
  std::string test_time;      // UTC, ISO 8601, when the test started
  std::vector<int64_t> samples_ns;  // one per repetition
  double bound_share = -1;          // --bandwidth, tg at depth 0: median share of the decode bound; -1: none

  int64_t n_tokens() const { return n_prompt + n_gen; }
  double avg_ns() const;
  double stddev_ns() const;
  std::vector<double> samples_ts() const;  // tokens per second of each repetition
  double avg_ts() const;
  double stddev_ts() const;
};

// Mean and sample standard deviation (0 for fewer than two values).
double mean_of(const std::vector<double>& v);
double stddev_of(const std::vector<double>& v);

// The table's optional columns, shown as llama-bench shows them: where the
// flag was given (-b: n_batch, -ub: n_ubatch, -fa: fa, -lm: lm, -C:
// cpu_mask, --cpu-strict: cpu_strict, --poll: poll).
struct TableColumns {
  bool n_batch = false;
  bool n_ubatch = false;
  bool flash_attn = false;
  bool load_mode = false;
  bool cpu_mask = false;
  bool cpu_strict = false;
  bool poll = false;
};
std::string markdown_header(TableColumns columns);
std::string markdown_row(const BenchRecord& r, TableColumns columns);
std::string csv_header();
std::string csv_row(const BenchRecord& r);
nlohmann::ordered_json json_record(const BenchRecord& r);
// llama-bench's -o sql: a table `test` with the CSV's columns (created from
// the first record's field types, if it does not exist), then an INSERT a
// record, for `llmpack bench -o sql | sqlite3 results.sqlite`.
std::string sql_create_table(const BenchRecord& r);
std::string sql_insert(const BenchRecord& r);

// One printed form of the records: -o's on stdout, -oe's on stderr. Prints
// as results arrive (md, csv, jsonl, sql) or all at the end (json).
class RecordPrinter {
 public:
  RecordPrinter(std::string format, std::FILE* stream) : format_(std::move(format)), stream_(stream) {}
  const std::string& format() const { return format_; }
  void add(const BenchRecord& r, TableColumns columns);
  void end();
  void emit(const std::string& s) const;

 private:
  std::string format_;
  std::FILE* stream_;
  nlohmann::ordered_json json_ = nlohmann::ordered_json::array();
  bool begun_ = false;  // the header waits for the first result, so errors print alone
};

// The records in -o's format on stdout and, with -oe, in a second format on
// stderr (llama-bench's -oe); the notes follow an md table on stdout, else
// go to stderr after the records.
class BenchOutput {
 public:
  // columns: the flags that give the table a column of their own were given.
  BenchOutput(const std::string& format, const std::string& err_format, TableColumns columns);
  void add(const BenchRecord& r);
  void note(const std::string& line) { notes_ += line + "\n"; }
  void end();

 private:
  TableColumns columns_;
  std::vector<RecordPrinter> printers_;
  std::string notes_;
};

// "build: f29ddbb (580)", as llama-bench ends its table: the commit and the
// number of commits this binary was built from.
std::string build_line();

// "2024-05-01T12:00:00Z"
std::string utc_now_iso8601();
// The CPU's model name from /proc/cpuinfo ("" when unavailable).
std::string cpu_model_name();

}  // namespace llmpack::cli
