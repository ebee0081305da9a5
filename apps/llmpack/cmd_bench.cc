// `llmpack bench`: prompt processing (pp) and generation (tg) speed, flags and
// output as llama-bench's, on package files or on synthetic random-weight
// models of real shapes (--synthetic llama-3.2-1b:q4_0). docs/PERFORMANCE.md
// has the commands and the figures.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <thread>

#include "bench_bandwidth.h"
#include "bench_flags.h"
#include "bench_lists.h"
#include "bench_model.h"
#include "bench_peak.h"
#include "bench_report.h"
#include "bench_runner.h"
#include "cli_common.h"
#include "commands.h"
#include "core/cpu_topology.h"
#include "core/thread_pool.h"
#include "kernels/kernels.h"

namespace llmpack::cli {
namespace {

struct BenchOptions {
  std::vector<std::string> models;
  std::vector<std::string> synthetic;
  std::vector<int64_t> prompts = {512};
  std::vector<int64_t> gens = {128};
  std::vector<int64_t> depths = {0};
  std::vector<PromptGenPair> prompt_gens;  // -pg
  std::vector<int64_t> batches;            // -b; empty: the whole prompt handed over at once
  std::vector<int64_t> ubatches;           // -ub; empty: one chunk of up to B tokens
  std::vector<int64_t> threads;
  int repetitions = 5;
  std::string output = "md";
  std::string output_err;  // -oe: the records again, in this format, on stderr
  int64_t ttft = 0;
  int64_t synthetic_layers = 0;
  int64_t synthetic_vocab = 0;
  uint64_t seed = 1;
  bool bandwidth = false;
  int64_t bandwidth_mib = 1024;  // --bandwidth's sums (tests make them smaller)
  std::string save_path;
  std::string kernel_path;  // empty: the best the CPU supports
  std::string avx512_decode = "auto";
  std::string float_decode_prefetch = "auto";
  std::string regroup = "on";
  std::string kv_dtype;           // --kv_dtype; empty: -ctk / -ctv, else f16
  std::string cache_type_k, cache_type_v;  // -ctk, -ctv
  std::vector<int64_t> gpu_layers;         // -ngl: accepted with a notice
  std::vector<std::string> flash_attn;     // -fa 1|on|auto; empty: auto
  std::vector<std::string> load_modes;     // -lm auto|mmap; empty: auto
  std::vector<std::string> mmap_values;    // -mmp 1 (older llama-bench's; no field of its own here)
  bool peak = false;
  bool profile = false;
  bool progress = false;
  bool no_warmup = false;
  double delay_s = 0;  // --delay: seconds of sleep before each test
};

// The KV cache's element type from --kv_dtype, -ctk and -ctv: llmpack's
// cache holds keys and values in one type, so the flags given must agree.
Result<std::string> chosen_kv_dtype(const BenchOptions& o) {
  std::string chosen;
  for (const auto& [flag, value] : {std::pair<const char*, const std::string*>{"--kv_dtype", &o.kv_dtype},
                                    {"-ctk", &o.cache_type_k}, {"-ctv", &o.cache_type_v}}) {
    if (value->empty()) continue;
    if (!chosen.empty() && *value != chosen)
      return error_status(std::string(flag) + " " + *value + " differs from " + chosen +
                          ": llmpack's KV cache holds keys and values in one element type");
    chosen = *value;
  }
  return chosen.empty() ? std::string(kv_dtype_name(kDefaultKvDtype)) : chosen;
}

// -ngl N > 0 (llama-bench's GPU layers, often pasted with its commands).
std::string gpu_layers_note(const BenchOptions& o) {
  for (int64_t n : o.gpu_layers)
    if (n > 0) return "-ngl " + std::to_string(n) + ": llmpack has no GPU path yet; every layer runs on the CPU";
  return "";
}

// --progress: what is about to run, on stderr (llama-bench's --progress).
void progress(const BenchOptions& o, const std::string& what) {
  if (o.progress) std::fprintf(stderr, "llmpack bench: %s\n", what.c_str());
}

// fp32 peak (flop/s) per thread count, filled when --peak is given.
using PeakByThreads = std::vector<std::pair<int, double>>;

// --kernel_path: runs every test on the named kernel path (scalar, avx2,
// avx_vnni, avx512, neon, neon_dotprod, neon_i8mm), for example to measure the
// AVX2 code on an AVX-512 machine.
Status select_kernel_path(const std::string& name) {
  if (name.empty()) return ok_status();
  for (auto path : {kernels::KernelPath::kScalar, kernels::KernelPath::kAvx2, kernels::KernelPath::kAvxVnni,
                    kernels::KernelPath::kAvx512, kernels::KernelPath::kNeon, kernels::KernelPath::kNeonDotprod,
                    kernels::KernelPath::kNeonI8mm}) {
    if (kernels::kernel_path_name(path) != name) continue;
    if (kernels::set_kernel_path(path)) return ok_status();
    return Status::error("--kernel_path " + name + ": this CPU or build cannot run it (the best here is " +
                                    std::string(kernels::kernel_path_name(kernels::active_kernel_path())) + ")");
  }
  return Status::error(
      "--kernel_path: expected scalar, avx2, avx_vnni, avx512, neon, neon_dotprod or neon_i8mm, got '" + name + "'");
}

// --avx512_decode: which kernels decode on the AVX-512 path.
Status select_avx512_decode(const std::string& name) {
  if (name == "auto") return kernels::set_avx512_decode(kernels::Avx512Decode::kAuto), ok_status();
  if (name == "on") return kernels::set_avx512_decode(kernels::Avx512Decode::kOn), ok_status();
  if (name == "off") return kernels::set_avx512_decode(kernels::Avx512Decode::kOff), ok_status();
  return Status::error("--avx512_decode: expected auto, on or off, got '" + name + "'");
}

// --float_decode_prefetch: bytes ahead the float decode tiles prefetch.
Status select_float_decode_prefetch(const std::string& text) {
  if (text == "auto") return kernels::set_float_decode_prefetch(kernels::kFloatDecodePrefetchAuto), ok_status();
  constexpr int64_t kMax = 1 << 16;
  int64_t bytes = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), bytes);
  if (ec != std::errc() || end != text.data() + text.size() || bytes < 0 || bytes > kMax)
    return Status::error("--float_decode_prefetch: expected auto or a byte count from 0 to " + std::to_string(kMax) +
                         ", got '" + text + "'");
  kernels::set_float_decode_prefetch(bytes);
  return ok_status();
}

// "float decode prefetch: 1024 bytes ahead (this CPU's default)" (no line on the scalar path).
std::string float_decode_prefetch_note(const std::string& choice) {
  if (kernels::active_kernel_path() == kernels::KernelPath::kScalar) return "";
  const int64_t bytes = kernels::float_decode_prefetch();
  const std::string what = bytes == 0 ? "none" : std::to_string(bytes) + " bytes ahead";
  return "float decode prefetch: " + what + (choice == "auto" ? " (this CPU's default)" : " (--float_decode_prefetch)");
}

// --regroup: whether loading regroups Q5_0 / Q5_1 matrices (kernels::load_layout).
Status select_regroup(const std::string& choice) {
  if (choice != "on" && choice != "off")
    return Status::error("--regroup: expected on or off, got '" + choice + "'");
  kernels::set_regroup_at_load(choice == "on");
  return ok_status();
}

std::string regroup_note(const std::string& choice) {
  if (kernels::load_layout(DType::kQ5_0) != DType::kQ5_0) return "q5_0 / q5_1 matrices: regrouped at load";
  return std::string("q5_0 / q5_1 matrices: as stored (") +
         (choice == "off" ? "--regroup off)" : "this kernel path reads them so)");
}

// "avx512", and where decode leaves it for the AVX2 kernels, why.
std::string kernel_path_note(const std::string& avx512_decode) {
  std::string note = "kernel path: " + std::string(kernels::kernel_path_name(kernels::active_kernel_path()));
  if (kernels::active_kernel_path() != kernels::KernelPath::kAvx512 || kernels::avx512_decode_in_use()) return note;
  return note + " (decode on the avx2 kernels: " +
         (avx512_decode == "off" ? "--avx512_decode off" : "this CPU runs 512-bit vectors as two halves") +
         ")";
}

Result<std::vector<BenchModelSource>> model_sources(const BenchOptions& o) {
  std::vector<BenchModelSource> sources;
  for (const auto& path : o.models) sources.push_back(BenchModelSource{path, {}, {}, {}});
  for (const auto& spec : o.synthetic) {
    LLMPACK_ASSIGN_OR_RETURN(BenchModelSource s, parse_synthetic_spec(spec));
    s.synthetic.n_layers = o.synthetic_layers;
    s.synthetic.vocab_size = o.synthetic_vocab;
    s.synthetic.seed = o.seed;
    sources.push_back(std::move(s));
  }
  if (sources.empty()) return error_status("bench needs a model: -m FILE or --synthetic NAME:TYPE (for example "
                                           "--synthetic llama-3.2-1b:q4_0)");
  return sources;
}

// Multiply-adds of one prompt token in the layers' weight matrices: what
// prefill computes per token (the embedding is a lookup and the output matrix
// runs for the last token only; attention's own work is not counted).
double layer_macs_per_token(const ModelConfig& c) {
  const double per_layer = static_cast<double>(c.dim) * (2.0 * c.q_dim() + 2.0 * c.kv_dim()) +
                           3.0 * static_cast<double>(c.dim) * static_cast<double>(c.hidden_dim);
  return per_layer * static_cast<double>(c.n_layers);
}

// With --peak: prefill's arithmetic rate (2 flops per multiply-add of the
// layers' matrices per token) as a fraction of the fp32 FMA peak.
void note_peak_fraction(const BenchRecord& r, const PeakByThreads& peaks, BenchOutput& out) {
  for (const auto& [threads, flops] : peaks) {
    if (threads != r.n_threads || flops <= 0) continue;
    const double rate = 2.0 * layer_macs_per_token(r.model->program->model().config()) * r.avg_ts();
    char line[256];
    std::snprintf(line, sizeof(line), "%s %s, %d thread%s: %.1f GFLOP/s in the layers' matrices, %.0f%% of the fp32 peak",
                  r.model->display.c_str(), r.test.c_str(), threads, threads == 1 ? "" : "s", rate / 1e9,
                  100.0 * rate / flops);
    out.note(line);
  }
}

// With --profile: the share of each forward stage in a test's repetitions.
class StageNotes {
 public:
  StageNotes(const BenchOptions& o, const BenchModel& m) : model_(o.profile ? &m : nullptr) {
    if (model_) model_->program->bind_profile(&profile_);
  }
  ~StageNotes() {
    if (model_) model_->program->bind_profile(nullptr);
  }
  void begin() { profile_.reset(); }
  void end(const BenchRecord& r, BenchOutput& out) const {
    if (!model_ || profile_.total_ns() == 0) return;
    std::string line = model_->display + " " + r.test + ", " + std::to_string(r.n_threads) + " threads, time per stage:";
    const double total = static_cast<double>(profile_.total_ns());
    for (size_t s = 0; s < ForwardProfile::kStages; ++s) {
      char part[64];
      std::snprintf(part, sizeof(part), "%s %s %.1f%%", s ? "," : "", forward_stage_name(static_cast<ForwardStage>(s)),
                    100.0 * static_cast<double>(profile_.ns[s]) / total);
      line += part;
    }
    const double reps = static_cast<double>(r.samples_ns.size());
    const double calls = static_cast<double>(profile_.forward_calls) / reps;
    char tail[128];
    std::snprintf(tail, sizeof(tail), " (of %.1f ms a repetition, in %.0f forward call%s)", total / 1e6 / reps, calls,
                  calls == 1 ? "" : "s");
    out.note(line + tail);
  }

 private:
  const BenchModel* model_;
  ForwardProfile profile_;
};

// With --bandwidth: the bytes a token of decode reads (each layer's matrices
// and the output), as ranges of the model's own mappings.
struct DecodeReads {
  std::vector<ReadRange> ranges;
  uint64_t per_token = 0;
  uint64_t pass_bytes = uint64_t{1} << 30;
  // The rate a plain sum reads them at: best of 3 passes of at least 1 GiB
  // (a small model's weights are read over again within a pass, so no pass is
  // a few milliseconds that a quiet instant could flatter).
  double read_rate(int threads) const { return measure_ranges_read_rate(ranges, threads, 3, pass_bytes); }
};

// The tg bound measured again just before each repetition, so that a test and
// its bound share the same seconds: this VM's read rate moves by a third
// within minutes (docs/PERFORMANCE.md section 17), and a bound read once per
// model can fall in a faster or slower second than the test. The same sum as
// that bound (DecodeReads::read_rate, so never a kinder bound): about
// 0.15-0.4 s a repetition.
class PairedBound {
 public:
  PairedBound(const DecodeReads* reads, int threads) : reads_(reads), threads_(threads) {}
  void before() {
    if (reads_) rate_ = reads_->read_rate(threads_);
  }
  // tokens generated in ns against the bound of the rate read just before
  void after(int64_t tokens, int64_t ns) {
    if (!reads_ || ns <= 0 || rate_ <= 0) return;
    const double tps = static_cast<double>(tokens) * 1e9 / static_cast<double>(ns);
    fractions_.push_back(tps / (rate_ / static_cast<double>(reads_->per_token)));
  }
  void note(const BenchRecord& r, BenchOutput& out) {
    if (fractions_.empty()) return;
    std::sort(fractions_.begin(), fractions_.end());
    char line[256];
    std::snprintf(line, sizeof(line),
                  "%s %s, %d threads: %.0f%% of the tg bound read just before each repetition (median of %zu; "
                  "%.0f-%.0f%%)",
                  r.model->display.c_str(), r.test.c_str(), r.n_threads, 100.0 * fractions_[fractions_.size() / 2],
                  fractions_.size(), 100.0 * fractions_.front(), 100.0 * fractions_.back());
    out.note(line);
  }

 private:
  const DecodeReads* reads_;
  int threads_;
  double rate_ = 0;
  std::vector<double> fractions_;
};

// Runs `measure` once per repetition into a record.
template <typename Measure>
Result<BenchRecord> repeat(const BenchOptions& o, BenchRecord r, Measure measure) {
  if (o.delay_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(o.delay_s));
  r.test_time = utc_now_iso8601();
  for (int i = 0; i < o.repetitions; ++i) {
    progress(o, r.model->display + " " + r.test + ", " + std::to_string(r.n_threads) + " threads: repetition " +
                    std::to_string(i + 1) + "/" + std::to_string(o.repetitions));
    auto ns = measure();
    if (!ns.ok()) return ns.status().with_context(r.test);
    r.samples_ns.push_back(*ns);
  }
  return r;
}

int64_t max_of(const std::vector<int64_t>& values) {
  return values.empty() ? 0 : *std::max_element(values.begin(), values.end());
}

// The longest prompt any test sends (-p, the prompts of -pg, --ttft).
int64_t longest_prompt(const BenchOptions& o) {
  int64_t n = std::max(max_of(o.prompts), o.ttft);
  for (const auto& pg : o.prompt_gens) n = std::max(n, pg.prompt);
  return n;
}

// The most positions one test writes after its depth (-p, -n, -pg's sum).
int64_t longest_test(const BenchOptions& o) {
  int64_t n = std::max(max_of(o.prompts), max_of(o.gens));
  for (const auto& pg : o.prompt_gens) n = std::max(n, pg.prompt + pg.gen);
  return n;
}

// How a pp or -pg test hands its prompt to forward: pieces of `batch`
// tokens (-b; 0: the whole prompt), each sent in calls of `ubatch` tokens.
struct PrefillSplit {
  int64_t batch = 0;
  int64_t ubatch = 1;
  // The record's n_batch and n_ubatch for a prompt of p tokens.
  void describe(BenchRecord& r, int64_t p) const {
    r.n_ubatch = std::min(ubatch, p);
    r.n_batch = batch > 0 ? std::min(batch, p) : r.n_ubatch;
  }
};

// Each -b with each -ub, in llama-bench's order. A call takes at most the
// token bound B (-ub's default), and no more than its batch: llama.cpp
// lowers n_ubatch to n_batch the same way.
std::vector<PrefillSplit> prefill_splits(const BenchOptions& o, int64_t bound) {
  const std::vector<int64_t> batches = o.batches.empty() ? std::vector<int64_t>{0} : o.batches;
  const std::vector<int64_t> ubatches = o.ubatches.empty() ? std::vector<int64_t>{bound} : o.ubatches;
  std::vector<PrefillSplit> splits;
  for (int64_t b : batches)
    for (int64_t ub : ubatches) splits.push_back({b, std::min({ub, bound, b > 0 ? b : bound})});
  return splits;
}

// What the tests of one model at one thread count share.
struct TestBench {
  const BenchOptions& o;
  BenchRunner& runner;
  StageNotes& stages;
  const PeakByThreads& peaks;
  BenchOutput& out;
  BenchRecord base;  // model, threads, depth
};

// pp N at each prefill chunk, then pp N + tg M (-pg): a prompt, then tokens
// generated after it, timed as one test as llama-bench times them.
Status run_prompt_tests(TestBench& t, const std::string& at) {
  const int64_t d = t.base.n_depth;
  for (const PrefillSplit& split : prefill_splits(t.o, t.runner.token_bound())) {
    const auto prompt_ns = [&](int64_t n) { return t.runner.prompt_ns(n, split.ubatch, d, split.batch); };
    for (int64_t p : t.o.prompts) {
      if (p == 0) continue;  // -p 0: generation tests only, as in llama-bench
      BenchRecord r = t.base;
      r.test = "pp" + std::to_string(p) + at, r.n_prompt = p;
      split.describe(r, p);
      t.stages.begin();
      LLMPACK_ASSIGN_OR_RETURN(r, repeat(t.o, r, [&] { return prompt_ns(p); }));
      t.out.add(r);
      note_peak_fraction(r, t.peaks, t.out);
      t.stages.end(r, t.out);
    }
    for (const auto& pg : t.o.prompt_gens) {
      BenchRecord r = t.base;
      r.test = "pp" + std::to_string(pg.prompt) + "+tg" + std::to_string(pg.gen) + at;
      r.n_prompt = pg.prompt, r.n_gen = pg.gen;
      split.describe(r, pg.prompt);
      t.stages.begin();
      LLMPACK_ASSIGN_OR_RETURN(r, repeat(t.o, r, [&]() -> Result<int64_t> {
                                 LLMPACK_ASSIGN_OR_RETURN(int64_t prompt, prompt_ns(pg.prompt));
                                 LLMPACK_ASSIGN_OR_RETURN(int64_t gen, t.runner.generate_ns(pg.gen, d + pg.prompt));
                                 return prompt + gen;
                               }));
      t.out.add(r);
      t.stages.end(r, t.out);
    }
  }
  return ok_status();
}

// tg N, each repetition paired with the decode bound when --bandwidth is given.
Status run_generation_tests(TestBench& t, const std::string& at, const DecodeReads* reads) {
  const int64_t d = t.base.n_depth;
  for (int64_t n : t.o.gens) {
    if (n == 0) continue;  // -n 0: prompt tests only, as in llama-bench
    BenchRecord r = t.base;
    r.test = "tg" + std::to_string(n) + at, r.n_gen = n, r.n_batch = r.n_ubatch = 1;
    t.stages.begin();
    // The bound counts the weights only: at a depth, decode also reads the
    // cache, so no share is given there.
    PairedBound bound(d == 0 ? reads : nullptr, r.n_threads);
    LLMPACK_ASSIGN_OR_RETURN(r, repeat(t.o, r, [&]() -> Result<int64_t> {
                               bound.before();
                               auto ns = t.runner.generate_ns(n, d);
                               if (ns.ok()) bound.after(n, *ns);
                               return ns;
                             }));
    t.out.add(r);
    t.stages.end(r, t.out);
    bound.note(r, t.out);
  }
  return ok_status();
}

// --ttft N: the first token of an N-token prompt, batched and token by token.
Status run_ttft_tests(TestBench& t) {
  const int64_t n = t.o.ttft, b = t.runner.token_bound();
  BenchRecord batched = t.base, single = t.base;
  batched.n_depth = single.n_depth = 0;
  batched.test = single.test = "ttft" + std::to_string(n);
  batched.n_prompt = single.n_prompt = n;
  batched.n_batch = batched.n_ubatch = std::min(b, n);
  single.n_batch = single.n_ubatch = 1;
  LLMPACK_ASSIGN_OR_RETURN(batched, repeat(t.o, batched, [&] { return t.runner.prompt_ns(n, b); }));
  t.out.add(batched);
  LLMPACK_ASSIGN_OR_RETURN(single, repeat(t.o, single, [&] { return t.runner.prompt_ns(n, 1); }));
  t.out.add(single);
  char line[256];
  std::snprintf(line, sizeof(line),
                "%s, %d threads: time to first token of a %lld-token prompt: batched (chunks of %lld) %.1f ms, "
                "token by token %.1f ms: %.2fx faster batched",
                batched.model->display.c_str(), batched.n_threads, static_cast<long long>(n),
                static_cast<long long>(batched.n_batch), batched.avg_ns() / 1e6, single.avg_ns() / 1e6,
                single.avg_ns() / batched.avg_ns());
  t.out.note(line);
  return ok_status();
}

// The -fa and -lm values, each pair run in turn as llama-bench runs each value
// of a list. Every pair runs the same attention kernel over the same mapped
// file; the records say which was asked for.
struct AskedModes {
  int flash_attn;  // 1 on, -1 auto (llama-bench's numbers)
  std::string load_mode;
};
std::vector<AskedModes> asked_modes(const BenchOptions& o) {
  const auto or_auto = [](const std::vector<std::string>& v) {
    return v.empty() ? std::vector<std::string>{"auto"} : v;
  };
  std::vector<AskedModes> modes;
  for (const auto& fa : or_auto(o.flash_attn))
    for (const auto& lm : or_auto(o.load_modes)) modes.push_back({fa == "auto" ? -1 : 1, lm});
  return modes;
}

// pp, pp+tg, tg and (when asked) time to first token, at each depth, each
// test once for each asked -fa / -lm pair.
Status run_tests(const BenchOptions& o, const BenchModel& m, int threads, const PeakByThreads& peaks,
                 const DecodeReads* reads, BenchOutput& out) {
  LLMPACK_ASSIGN_OR_RETURN(BenchRunner runner, BenchRunner::create(*m.program, o.seed));
  LLMPACK_RETURN_IF_ERROR(runner.check_context(o.depths, longest_test(o), o.ttft));
  // One chunk as long as the longest any test sends (at least 32 tokens, as before, for -p 0).
  if (!o.no_warmup) {
    progress(o, m.display + ", " + std::to_string(threads) + " threads: warmup");
    LLMPACK_RETURN_IF_ERROR(runner.warmup(std::max(longest_prompt(o), int64_t{32})).with_context("warmup"));
  }
  StageNotes stages(o, m);
  TestBench t{o, runner, stages, peaks, out, BenchRecord{}};
  t.base.model = &m;
  t.base.n_threads = threads;
  for (int64_t d : o.depths) {
    if (d > 0)
      progress(o, m.display + ", " + std::to_string(threads) + " threads: filling " + std::to_string(d) +
                      " tokens of context");
    LLMPACK_RETURN_IF_ERROR(runner.fill_context(d, longest_test(o)));
    t.base.n_depth = d;
    const std::string at = d > 0 ? " @ d" + std::to_string(d) : "";  // llama-bench's names
    for (const AskedModes& mode : asked_modes(o)) {
      t.base.flash_attn = mode.flash_attn, t.base.load_mode = mode.load_mode;
      LLMPACK_RETURN_IF_ERROR(run_prompt_tests(t, at));
      LLMPACK_RETURN_IF_ERROR(run_generation_tests(t, at, reads));
    }
  }
  for (const AskedModes& mode : asked_modes(o)) {
    if (o.ttft == 0) break;
    t.base.flash_attn = mode.flash_attn, t.base.load_mode = mode.load_mode;
    LLMPACK_RETURN_IF_ERROR(run_ttft_tests(t));
  }
  return ok_status();
}

// --save: writes the synthetic model as a package file instead of measuring.
int save_synthetic(const BenchOptions& o, const BenchModelSource& source) {
  if (!source.is_synthetic()) return fail("--save needs a --synthetic model, not -m");
  auto model = load_bench_model(source, o.threads.empty() ? 1 : static_cast<int>(o.threads[0]), 1, 32);
  if (!model.ok()) return fail(model.status());
  if (auto status = save_model_gguf(model->program->model(), o.save_path); !status.ok()) return fail(status);
  std::fprintf(stderr, "llmpack: wrote %s (%s, %.1f MiB of weights)\n", o.save_path.c_str(),
               model->model_type.c_str(), static_cast<double>(model->size_bytes) / (1024.0 * 1024.0));
  return 0;
}

// "1 GiB", "64 MiB": the size of --bandwidth's sums.
std::string mib_text(int64_t mib) {
  return mib % 1024 == 0 ? std::to_string(mib / 1024) + " GiB" : std::to_string(mib) + " MiB";
}

// --bandwidth: the machine's read bandwidth for each thread count.
void note_read_bandwidth(const std::vector<int>& threads, int64_t mib, BenchOutput& out) {
  for (int t : threads) {
    const double bandwidth = measure_read_bandwidth(static_cast<uint64_t>(mib) << 20, t, 5);
    char line[128];
    std::snprintf(line, sizeof(line), "memory read bandwidth (sum over %s), %d threads: %.1f GB/s",
                  mib_text(mib).c_str(), t, bandwidth / 1e9);
    out.note(line);
  }
}

// --peak: the fp32 compute peak for each thread count, on the active path's registers.
PeakByThreads note_compute_peaks(const std::vector<int>& threads, BenchOutput& out) {
  PeakByThreads peaks;
  const std::string isa{kernels::kernel_path_name(kernels::active_kernel_path())};
  for (int t : threads) {
    const ComputePeak peak = measure_compute_peak(isa, t, 0.3, 3);
    if (peak.isa.empty()) {
      out.note("compute peak: this CPU has neither AVX2+FMA nor AVX-512");
      break;
    }
    peaks.emplace_back(t, peak.fp32_flops);
    char line[256];
    std::snprintf(line, sizeof(line),
                  "compute peak (%s registers, %d thread%s): fp32 %.1f GFLOP/s, int8 %.1f G multiply-adds/s",
                  peak.isa.c_str(), t, t == 1 ? "" : "s", peak.fp32_flops / 1e9, peak.int8_macs / 1e9);
    out.note(line);
  }
  return peaks;
}

// --bandwidth, per model: the decode bound, measured again next to this
// model's tests (a shared machine's bandwidth moves by a third within
// minutes, and the bound should be the one the tests ran under). It reads
// the very bytes decode reads, through the same mappings: fresh anonymous
// memory sits in 4 KiB pages, a model file's page cache mostly in 2 MiB
// ones, and that alone moves the rate.
DecodeReads note_decode_bound(const BenchModel& model, int threads, int64_t mib, BenchOutput& out) {
  const double fresh = measure_read_bandwidth(static_cast<uint64_t>(mib) << 20, threads, 3);
  DecodeReads reads;
  reads.pass_bytes = static_cast<uint64_t>(mib) << 20;
  reads.ranges = decode_weight_ranges(model);
  for (const auto& r : reads.ranges) reads.per_token += r.bytes;
  const double own = reads.read_rate(threads);
  char line[256];
  std::snprintf(line, sizeof(line),
                "%s: tg bound %.1f t/s (%.1f GB/s reading its %.1f MB of weights a token, just before; "
                "%s of fresh memory: %.1f GB/s)",
                model.display.c_str(), own / static_cast<double>(reads.per_token), own / 1e9,
                static_cast<double>(reads.per_token) / 1e6, mib_text(mib).c_str(), fresh / 1e9);
  out.note(line);
  return reads;
}

int execute(const BenchOptions& o) {
  auto sources = model_sources(o);
  if (!sources.ok()) return fail(sources.status());
  const std::vector<int> threads =
      o.threads.empty() ? std::vector<int>{default_threads()} : std::vector<int>(o.threads.begin(), o.threads.end());
  if (longest_test(o) == 0 && o.ttft == 0)
    return fail("nothing to measure: -p and -n are all 0 and no -pg or --ttft was given");
  const int64_t max_prompt = longest_prompt(o);
  const int64_t max_depth = max_of(o.depths);
  // S = B = the longest prompt (one chunk; at least 512 tokens, or the depth,
  // when a context is filled first, so -p 0 -d 4096 does not fill it token by
  // token); C holds the deepest context plus the longest test, and the warmup.
  const int64_t max_seq_len = std::max<int64_t>({max_prompt, std::min<int64_t>(max_depth, 512), 1});
  const int64_t max_context = max_depth + std::max<int64_t>({max_prompt, longest_test(o), 32});
  if (auto status = select_regroup(o.regroup); !status.ok()) return fail(status);
  if (!o.save_path.empty()) return save_synthetic(o, (*sources)[0]);
  if (auto status = select_kernel_path(o.kernel_path); !status.ok()) return fail(status);
  if (auto status = select_avx512_decode(o.avx512_decode); !status.ok()) return fail(status);
  if (auto status = select_float_decode_prefetch(o.float_decode_prefetch); !status.ok()) return fail(status);
  const auto kv_name = chosen_kv_dtype(o);
  if (!kv_name.ok()) return fail(kv_name.status());
  const auto kv_dtype = parse_kv_dtype(*kv_name);
  const char* kv_flag = !o.kv_dtype.empty() ? "--kv_dtype" : !o.cache_type_k.empty() ? "-ctk" : "-ctv";
  if (!kv_dtype.ok()) return fail(kv_dtype.status().with_context(kv_flag));
  BenchOutput out(o.output, o.output_err,
                  TableColumns{!o.batches.empty(), !o.ubatches.empty(), !o.flash_attn.empty(), !o.load_modes.empty()});
  out.note(build_line());
  out.note(kernel_path_note(o.avx512_decode));
  if (auto note = float_decode_prefetch_note(o.float_decode_prefetch); !note.empty()) out.note(note);
  out.note(regroup_note(o.regroup));
  out.note("kv cache: " + *kv_name + " keys and values");
  if (o.threads.empty())
    out.note("threads: " + std::to_string(threads[0]) + " (the default: one per physical performance core of the " +
             std::to_string(usable_cpus()) + (usable_cpus() == 1 ? " CPU" : " CPUs") + " this process may run on)");
  if (auto note = gpu_layers_note(o); !note.empty()) out.note(note);
  if (o.bandwidth) note_read_bandwidth(threads, o.bandwidth_mib, out);
  const PeakByThreads peaks = o.peak ? note_compute_peaks(threads, out) : PeakByThreads{};
  for (const auto& source : *sources) {
    for (int t : threads) {
      auto model = load_bench_model(source, t, max_seq_len, max_context, *kv_dtype);
      if (!model.ok()) return fail(model.status());
      char line[256];
      std::snprintf(line, sizeof(line), "%s: %s in %.1f ms", model->display.c_str(),
                    source.is_synthetic() ? "built" : "loaded", model->load_ms);
      out.note(line);
      const DecodeReads reads = o.bandwidth ? note_decode_bound(*model, t, o.bandwidth_mib, out) : DecodeReads{};
      if (auto status = run_tests(o, *model, t, peaks, o.bandwidth ? &reads : nullptr, out); !status.ok())
        return fail(status.with_context(model->display));
    }
  }
  out.end();
  return 0;
}

}  // namespace

void register_bench(CLI::App& app, std::function<int()>& action) {
  auto* cmd = app.add_subcommand("bench", "Measure prompt processing and generation speed (llama-bench's flags)");
  auto o = std::make_shared<BenchOptions>();
  cmd->add_option("-m,--model", o->models, "Model file (.gguf or llama2.c .bin); repeatable");
  cmd->add_option("--synthetic", o->synthetic,
                  "Random-weight model NAME:TYPE built in memory; repeatable. NAME: stories110m, smollm2-135m, "
                  "qwen2.5-0.5b, qwen3-0.6b, llama-3.2-1b; TYPE: f32, f16, bf16, q8_0, q4_0, q4_k_m, q5_k_m, q3_k_m, "
                  "iq4_xs, iq3_xxs, iq2_xxs, iq1_m");
  add_list_option(*cmd, "-p,--n-prompt", "-p", o->prompts, 0,
                  "Prompt sizes, comma-separated, each a number or a range (64-512*2, 32-128+32); 0 skips (default "
                  "512)");
  add_list_option(*cmd, "-n,--n-gen", "-n", o->gens, 0, "Generation lengths, comma-separated; 0 skips (default 128)");
  add_list_option(*cmd, "-d,--n-depth", "-d", o->depths, 0,
                  "Tokens of context in the KV cache before each test, comma-separated (default 0); a test at "
                  "depth D is named as llama-bench names it (tg128 @ d4096); the deepest plus the longest test must "
                  "fit the model's context, checked before any test runs");
  add_list_option(*cmd, "-t,--threads", "-t", o->threads, 1,
                  "Thread counts, comma-separated (default: one per performance core)", 1024);
  cmd->add_option_function<std::vector<std::string>>(
         "--pg",
         [o](const std::vector<std::string>& pairs) {
           o->prompt_gens.clear();
           for (const auto& text : pairs) {
             auto pair = parse_prompt_gen_pair(text);
             if (!pair.ok()) throw CLI::ValidationError("-pg", pair.status().message());
             o->prompt_gens.push_back(*pair);
           }
         },
         "-pg PP,TG: a prompt of PP tokens then TG generated ones, timed as one test named ppPP+tgTG "
         "(llama-bench's -pg; t/s counts both); repeatable")
      ->type_name("PP,TG");
  add_list_option(*cmd, "-b,--batch-size", "-b", o->batches, 1,
                  "Tokens handed over at once, comma-separated (llama-bench's -b): a pp or -pg test sends its prompt "
                  "in pieces of this many tokens, each in calls of -ub tokens (at most -b); each test runs at each "
                  "(default: the whole prompt at once)");
  add_list_option(*cmd, "--ubatch-size", "-ub", o->ubatches, 1,
                  "-ub N: tokens per prefill call, comma-separated (llama-bench's -ub); each pp and -pg test runs at "
                  "each, capped at the model's token bound (default: the whole prompt in one call, up to the bound)");
  cmd->add_option("-r,--repetitions", o->repetitions, "Repetitions of each test (default 5)")
      ->check(CLI::Range(1, 10000));
  cmd->add_option("-o,--output", o->output,
                  "Output format: md, csv, json, jsonl (a JSON record a line, as each test ends) or sql (a table "
                  "`test` and an INSERT a test, for sqlite3) (default md)")
      ->check(CLI::IsMember({"md", "csv", "json", "jsonl", "sql"}));
  cmd->add_option("--output-err", o->output_err,
                  "-oe FORMAT: the records also in this format (md, csv, json, jsonl, sql or none) on stderr, as "
                  "llama-bench's -oe")
      ->check(CLI::IsMember({"md", "csv", "json", "jsonl", "sql", "none"}));
  cmd->add_option("--ttft", o->ttft,
                  "Also time the first token of an N-token prompt, batched and token by token")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  cmd->add_flag("--bandwidth", o->bandwidth,
                "Also measure memory read bandwidth and each model's decode bound (the rate a plain sum reads "
                "its per-token weights at / their bytes), and each tg test as a share of the bound read again just "
                "before each repetition");
  cmd->add_option("--save", o->save_path,
                  "Write the --synthetic model to this GGUF file (to time loading it with -m) and exit");
  cmd->add_flag("--peak", o->peak,
                "Also measure the CPU's fp32 and int8 compute peaks and give prefill's share of the fp32 peak");
  cmd->add_flag("--profile", o->profile,
                "Also give each pp and tg test's time per forward stage (projections, attention, other)");
  cmd->add_option("--kernel_path", o->kernel_path,
                  "Kernel path: scalar, avx2, avx_vnni, avx512, neon, neon_dotprod or neon_i8mm (default: the best "
                  "this CPU supports)");
  cmd->add_option("--avx512_decode", o->avx512_decode,
                  "Decode kernels on the avx512 path: auto (the AVX2 ones where the CPU runs 512-bit vectors "
                  "as two halves, as Zen 4 does), on (the AVX-512 ones) or off (the AVX2 ones)");
  cmd->add_option("--float_decode_prefetch", o->float_decode_prefetch,
                  "Bytes ahead that one-token decode of long F16/BF16/F32 rows prefetches each row: auto "
                  "(this CPU's default: 1024 on Zen 5, none elsewhere) or 0 to 65536");
  cmd->add_option("--regroup", o->regroup,
                  "Regroup Q5_0 / Q5_1 matrices at load for the x86 decode kernels: on (default) or off "
                  "(the file's layout)");
  cmd->add_option("--kv_dtype", o->kv_dtype,
                  "KV cache element type: f16 (default, as llama-bench's -ctk f16 -ctv f16), f32 or q8_0");
  cmd->add_option("--cache-type-k", o->cache_type_k,
                  "-ctk TYPE: llama-bench's name for the keys' type; llmpack's cache has one type for keys and "
                  "values, so -ctk, -ctv and --kv_dtype must agree");
  cmd->add_option("--cache-type-v", o->cache_type_v, "-ctv TYPE: llama-bench's name for the values' type (as -ctk)");
  add_list_option(*cmd, "--n-gpu-layers", "-ngl", o->gpu_layers, 0,
                  "-ngl N: accepted from llama-bench's commands with a notice: llmpack runs every layer on the CPU",
                  1 << 20);
  add_fixed_choice_option(*cmd, "--flash-attn", "-fa", o->flash_attn, {"1", "on", "auto"},
                          "llmpack's attention is always one fused kernel over the KV cache (prefill: blocks of "
                          "keys with a running softmax, as flash attention) and has no other path: give 1, on or auto",
                          "-fa 1|on|auto, comma-separated: accepted from llama-bench's commands: llmpack's attention "
                          "is always one fused kernel (flash attention in prefill); each test runs once a value, "
                          "recorded as flash_attn 1 (1, on) or -1 (auto); 0 or off is refused");
  add_fixed_choice_option(*cmd, "--mmap", "-mmp", o->mmap_values, {"1"},
                          "llmpack always maps the model file (weights are not copied): give 1",
                          "-mmp 1: accepted from llama-bench's commands (llmpack always maps the model file); 0 is "
                          "refused");
  add_fixed_choice_option(*cmd, "--load-mode", "-lm", o->load_modes, {"auto", "mmap"},
                          "llmpack always maps the model file (weights are not copied): give auto or mmap",
                          "-lm auto|mmap, comma-separated: accepted from llama-bench's commands (llmpack always maps "
                          "the model file); each test runs once a value, recorded as load_mode; other modes are "
                          "refused");
  cmd->add_flag("--progress", o->progress, "Say on stderr what runs next (each test's repetitions)");
  cmd->add_flag("--no-warmup", o->no_warmup,
                "Skip the untimed prefill and decode step before a model's tests (its first repetitions then pay "
                "the page faults of the weights and buffers)");
  cmd->add_option("--delay", o->delay_s, "Seconds to sleep before each test (llama-bench's --delay), to let the "
                                         "CPU cool down")
      ->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("--seed", o->seed, "Seed of the synthetic weights and the random tokens");
  cmd->add_option("--synthetic_layers", o->synthetic_layers, "Layers of synthetic models (tests)")
      ->check(CLI::Range(int64_t{0}, int64_t{4096}))
      ->group("");
  cmd->add_option("--bandwidth_mib", o->bandwidth_mib, "MiB of each --bandwidth sum (tests; default 1024)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->group("");
  cmd->add_option("--synthetic_vocab", o->synthetic_vocab, "Vocabulary of synthetic models (tests)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24))
      ->group("");
  cmd->callback([&action, o] { action = [o] { return execute(*o); }; });
}

}  // namespace llmpack::cli
