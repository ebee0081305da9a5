#include "bench_report.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <utility>

#include "bench_model.h"
#include "build_info.h"
#include "kernels/kernels.h"

namespace llmpack::cli {
namespace {

std::string format(const char* fmt, double a, double b = 0) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, a, b);
  return buf;
}

std::string size_text(uint64_t bytes) {
  const double mib = static_cast<double>(bytes) / (1024.0 * 1024.0);
  return mib >= 1024.0 ? format("%.2f GiB", mib / 1024.0) : format("%.2f MiB", mib);
}

std::string params_text(uint64_t n) {
  const double v = static_cast<double>(n);
  return v >= 1e9 ? format("%.2f B", v / 1e9) : format("%.2f M", v / 1e6);
}

// CSV fields are quoted when they hold a comma or a quote.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

template <typename T>
std::string joined(const std::vector<T>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out.append(i ? ";" : "").append(nlohmann::json(v[i]).dump());
  return out;
}

}  // namespace

double mean_of(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

double stddev_of(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean_of(v);
  double sq = 0;
  for (double x : v) sq += (x - m) * (x - m);
  return std::sqrt(sq / static_cast<double>(v.size() - 1));
}

double BenchRecord::avg_ns() const { return mean_of(std::vector<double>(samples_ns.begin(), samples_ns.end())); }
double BenchRecord::stddev_ns() const {
  return stddev_of(std::vector<double>(samples_ns.begin(), samples_ns.end()));
}
std::vector<double> BenchRecord::samples_ts() const {
  std::vector<double> ts;
  for (int64_t ns : samples_ns) ts.push_back(ns > 0 ? 1e9 * static_cast<double>(n_tokens()) / static_cast<double>(ns) : 0);
  return ts;
}
double BenchRecord::avg_ts() const { return mean_of(samples_ts()); }
double BenchRecord::stddev_ts() const { return stddev_of(samples_ts()); }

std::string markdown_header(TableColumns columns) {
  std::string names = "| model | type | size | params | backend | threads |";
  std::string align = "| --- | --- | ---: | ---: | --- | ---: |";
  for (const auto& [shown, name] : {std::pair{columns.n_batch, " n_batch |"}, {columns.n_ubatch, " n_ubatch |"},
                                    {columns.flash_attn, " fa |"}, {columns.load_mode, " lm |"},
                                    {columns.cpu_mask, " cpu_mask |"}, {columns.cpu_strict, " cpu_strict |"},
                                    {columns.poll, " poll |"}}) {
    if (!shown) continue;
    names += name;
    align += " ---: |";
  }
  return names + " test | t/s |\n" + align + " ---: | ---: |\n";
}

std::string markdown_row(const BenchRecord& r, TableColumns columns) {
  const BenchModel& m = *r.model;
  std::string row = "| " + m.display + " | " + m.type_label + " | " + size_text(m.size_bytes) + " | " +
                    params_text(m.n_params) + " | CPU | " + std::to_string(r.n_threads) + " | ";
  if (columns.n_batch) row.append(std::to_string(r.n_batch)).append(" | ");
  if (columns.n_ubatch) row.append(std::to_string(r.n_ubatch)).append(" | ");
  if (columns.flash_attn) row.append(std::to_string(r.flash_attn)).append(" | ");
  if (columns.load_mode) row.append(r.load_mode).append(" | ");
  if (columns.cpu_mask) row.append(r.cpu_mask).append(" | ");
  if (columns.cpu_strict) row.append(r.cpu_strict ? "1" : "0").append(" | ");
  if (columns.poll) row.append(std::to_string(r.poll)).append(" | ");
  return row + r.test + " | " + format("%.2f ± %.2f", r.avg_ts(), r.stddev_ts()) + " |\n";
}

namespace {
const char* const kCsvFields[] = {
    "build_commit", "build_number", "cpu_info",     "gpu_info",      "backends",   "model_filename",
    "model_type",   "model_size",   "model_n_params", "n_batch",     "n_ubatch",   "n_threads",
    "cpu_mask",     "cpu_strict",   "poll",         "type_k",        "type_v",     "n_gpu_layers",
    "n_cpu_moe",    "split_mode",   "main_gpu",     "no_kv_offload", "flash_attn", "devices",
    "tensor_split", "tensor_buft_overrides", "use_mmap", "load_mode", "lazy_mode", "embeddings",
    "no_op_offload", "no_host",     "repack",       "fit_target",    "fit_min_ctx", "n_prompt",
    "n_gen",        "n_depth",      "test",
    "test_time",    "load_time_ms", "avg_ns",       "stddev_ns",     "avg_ts",     "stddev_ts",
    "samples_ns",   "samples_ts",
};
}  // namespace

std::string csv_header() {
  std::string out;
  for (const char* f : kCsvFields) out.append(out.empty() ? "" : ",").append(f);
  return out + "\n";
}

namespace {
// A field of the record as CSV and SQL write it: arrays as "a;b;c", booleans
// as 0 and 1 (as llama-bench's CSV writes them).
std::string field_text(const BenchRecord& r, const nlohmann::ordered_json& j, const std::string& f) {
  const auto& v = j.at(f);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "1" : "0";
  if (v.is_array()) return f == "samples_ns" ? joined(r.samples_ns) : joined(r.samples_ts());
  return v.dump();
}
}  // namespace

std::string csv_row(const BenchRecord& r) {
  const nlohmann::ordered_json j = json_record(r);
  std::string out;
  for (const char* f : kCsvFields) out.append(out.empty() ? "" : ",").append(csv_field(field_text(r, j, f)));
  return out + "\n";
}

std::string sql_create_table(const BenchRecord& r) {
  const nlohmann::ordered_json j = json_record(r);
  std::string out = "CREATE TABLE IF NOT EXISTS test (\n";
  for (const char* f : kCsvFields) {
    const auto& v = j.at(f);
    const char* type = v.is_number_integer() || v.is_boolean() ? "INTEGER" : v.is_number() ? "REAL" : "TEXT";
    out.append(out.back() == '\n' ? "  " : ",\n  ").append(f).append(" ").append(type);
  }
  return out + "\n);\n";
}

std::string sql_insert(const BenchRecord& r) {
  const nlohmann::ordered_json j = json_record(r);
  std::string names, values;
  for (const char* f : kCsvFields) {
    names.append(names.empty() ? "" : ", ").append(f);
    std::string text = field_text(r, j, f);
    if (j.at(f).is_number() || j.at(f).is_boolean()) {
      values.append(values.empty() ? "" : ", ").append(text);
      continue;
    }
    std::string quoted = "'";
    for (char c : text) quoted.append(c == '\'' ? "''" : std::string(1, c));
    values.append(values.empty() ? "" : ", ").append(quoted).append("'");
  }
  return "INSERT INTO test (" + names + ") VALUES (" + values + ");\n";
}

nlohmann::ordered_json json_record(const BenchRecord& r) {
  const BenchModel& m = *r.model;
  nlohmann::ordered_json j;
  j["build_commit"] = LLMPACK_BUILD_COMMIT;
  j["build_number"] = LLMPACK_BUILD_NUMBER;
  j["cpu_info"] = cpu_model_name();
  j["gpu_info"] = "";  // the GPU fields hold what llama-bench's CPU-only builds write
  j["backends"] = "CPU";
  j["kernel_path"] = std::string(kernels::kernel_path_name(kernels::active_kernel_path()));
  j["model_filename"] = m.filename;
  j["model_type"] = m.model_type;
  j["model_size"] = m.size_bytes;
  j["model_n_params"] = m.n_params;
  j["n_batch"] = r.n_batch;
  j["n_ubatch"] = r.n_ubatch;
  j["n_threads"] = r.n_threads;
  j["cpu_mask"] = r.cpu_mask;
  j["cpu_strict"] = r.cpu_strict;
  j["poll"] = r.poll;
  j["type_k"] = std::string(kv_dtype_name(m.kv_dtype()));  // one element type for keys and values
  j["type_v"] = std::string(kv_dtype_name(m.kv_dtype()));
  j["n_gpu_layers"] = 0;  // no GPU path yet (-ngl is accepted with a notice)
  j["n_cpu_moe"] = 0;     // no mixture-of-experts models
  j["split_mode"] = "layer";
  j["main_gpu"] = 0;
  j["no_kv_offload"] = false;
  j["flash_attn"] = r.flash_attn;
  j["devices"] = "auto";
  j["tensor_split"] = "0.00";
  j["tensor_buft_overrides"] = "none";
  j["use_mmap"] = true;  // the model file is always mapped (older llama-benches' field; newer ones say load_mode)
  j["load_mode"] = r.load_mode;
  j["lazy_mode"] = "auto";
  j["embeddings"] = false;  // bench measures generation
  j["no_op_offload"] = 0;
  j["no_host"] = false;
  j["repack"] = m.repacked;  // whether load regrouped weights for the kernels (llama.cpp: repacked them)
  j["fit_target"] = 0;
  j["fit_min_ctx"] = 0;
  j["n_prompt"] = r.n_prompt;
  j["n_gen"] = r.n_gen;
  j["n_depth"] = r.n_depth;
  j["test"] = r.test;
  j["test_time"] = r.test_time;
  j["load_time_ms"] = m.load_ms;
  j["avg_ns"] = static_cast<int64_t>(std::llround(r.avg_ns()));
  j["stddev_ns"] = static_cast<int64_t>(std::llround(r.stddev_ns()));
  j["avg_ts"] = r.avg_ts();
  j["stddev_ts"] = r.stddev_ts();
  j["samples_ns"] = r.samples_ns;
  j["samples_ts"] = r.samples_ts();
  if (r.bound_share >= 0) j["bound_share"] = r.bound_share;  // JSON only: not a column of CSV or SQL
  return j;
}

void RecordPrinter::add(const BenchRecord& r, TableColumns columns) {
  if (!begun_ && format_ == "md") emit(markdown_header(columns));
  if (!begun_ && format_ == "csv") emit(csv_header());
  if (!begun_ && format_ == "sql") emit(sql_create_table(r));
  begun_ = true;
  if (format_ == "md") emit(markdown_row(r, columns));
  if (format_ == "csv") emit(csv_row(r));
  if (format_ == "json") json_.push_back(json_record(r));
  if (format_ == "jsonl") emit(json_record(r).dump() + "\n");  // one record a line, as it arrives
  if (format_ == "sql") emit(sql_insert(r));
}

void RecordPrinter::end() {
  if (format_ == "json") emit(json_.dump(2) + "\n");
}

void RecordPrinter::emit(const std::string& s) const {
  std::fputs(s.c_str(), stream_);
  std::fflush(stream_);
}

BenchOutput::BenchOutput(const std::string& format, const std::string& err_format, TableColumns columns)
    : columns_(columns) {
  printers_.emplace_back(format, stdout);
  if (!err_format.empty() && err_format != "none") printers_.emplace_back(err_format, stderr);
}

void BenchOutput::add(const BenchRecord& r) {
  for (auto& p : printers_) p.add(r, columns_);
}

// An md table is followed by a blank line and the notes, on its own stream.
void BenchOutput::end() {
  for (auto& p : printers_) p.end();
  if (notes_.empty()) return;
  if (printers_[0].format() == "md") return printers_[0].emit("\n" + notes_);
  const bool err_table = printers_.size() > 1 && printers_[1].format() == "md";
  std::fputs(((err_table ? "\n" : "") + notes_).c_str(), stderr);
}

std::string build_line() {
  return std::string("build: ") + LLMPACK_BUILD_COMMIT + " (" + std::to_string(LLMPACK_BUILD_NUMBER) + ")";
}

std::string utc_now_iso8601() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string cpu_model_name() {
  static const std::string name = [] {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("model name", 0) != 0) continue;
      const size_t colon = line.find(':');
      const size_t start = colon == std::string::npos ? colon : line.find_first_not_of(" \t", colon + 1);
      return start == std::string::npos ? std::string() : line.substr(start);
    }
    return std::string();
  }();
  return name;
}

}  // namespace llmpack::cli
