// `llmpack bench`: prompt processing (pp) and generation (tg) speed, flags and
// output as llama-bench's, on package files or on synthetic random-weight
// models of real shapes (--synthetic llama-3.2-1b:q4_0). docs/PERFORMANCE.md
// has the commands and the figures.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "bench_bandwidth.h"
#include "bench_lists.h"
#include "bench_model.h"
#include "bench_modes.h"
#include "bench_options.h"
#include "bench_peak.h"
#include "bench_report.h"
#include "bench_runner.h"
#include "cli_common.h"
#include "commands.h"
#include "core/cpu_topology.h"
#include "core/thread_placement.h"
#include "core/thread_pool.h"
#include "kernels/kernels.h"

namespace llmpack::cli {
namespace {

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
  if (avx512_decode == "off") return note + " (decode on the avx2 kernels: --avx512_decode off)";
  return note + " (the block types' decode on the avx2 kernels: this CPU runs 512-bit vectors as two halves)";
}

// Every -m is checked before the first test: a typo in the third model
// should not surface after the first two have run for minutes.
Result<std::vector<BenchModelSource>> model_sources(const BenchOptions& o) {
  std::vector<BenchModelSource> sources;
  for (const auto& path : o.models) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      return error_status("-m '" + path + "': " +
                          (std::filesystem::is_directory(path, ec) ? "is a directory, expected a model file"
                                                                   : "no such file") +
                          " (every -m is checked before the tests run)");
    sources.push_back(BenchModelSource{path, {}, {}, {}});
  }
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
  double read_rate(int threads, const std::vector<std::vector<int>>* thread_cpus = nullptr) const {
    return measure_ranges_read_rate(ranges, threads, 3, pass_bytes, thread_cpus);
  }
};

// The tg bound measured again just before each repetition, so that a test and
// its bound share the same seconds: this VM's read rate moves by a third
// within minutes (docs/PERFORMANCE.md section 17), and a bound read once per
// model can fall in a faster or slower second than the test. The same sum as
// that bound (DecodeReads::read_rate, so never a kinder bound): about
// 0.15-0.4 s a repetition. Its threads run where the test's do (`cpus`, each
// thread's CPUs: a strict -C placement would otherwise leave every one on
// the CPU of the pinned calling thread).
class PairedBound {
 public:
  PairedBound(const DecodeReads* reads, int threads, std::vector<std::vector<int>> cpus)
      : reads_(reads), threads_(threads), cpus_(std::move(cpus)) {}
  void before() {
    if (reads_) rate_ = reads_->read_rate(threads_, &cpus_);
  }
  // tokens generated in ns against the bound of the rate read just before
  void after(int64_t tokens, int64_t ns) {
    if (!reads_ || ns <= 0 || rate_ <= 0) return;
    const double tps = static_cast<double>(tokens) * 1e9 / static_cast<double>(ns);
    fractions_.push_back(tps / (rate_ / static_cast<double>(reads_->per_token)));
  }
  // The median share of the bound (-1 when none was measured).
  double median() {
    if (fractions_.empty()) return -1;
    std::sort(fractions_.begin(), fractions_.end());
    return fractions_[fractions_.size() / 2];
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
  std::vector<std::vector<int>> cpus_;
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
    PairedBound bound(d == 0 ? reads : nullptr, r.n_threads,
                      reads ? r.model->program->thread_pool().thread_cpus_now() : std::vector<std::vector<int>>{});
    LLMPACK_ASSIGN_OR_RETURN(r, repeat(t.o, r, [&]() -> Result<int64_t> {
                               bound.before();
                               auto ns = t.runner.generate_ns(n, d);
                               if (ns.ok()) bound.after(n, *ns);
                               return ns;
                             }));
    r.bound_share = bound.median();
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

// A record's fields for the mode its test runs in.
void set_mode_fields(const BenchMode& mode, BenchRecord* r) {
  r->flash_attn = mode.flash_attn;
  r->load_mode = mode.load_mode;
  r->cpu_mask = mode.numa ? "0x0" : cpu_mask_text(mode.placement.cpus);  // llama-bench's: -C's mask alone
  r->cpu_strict = mode.placement.strict;
  r->poll = mode.poll;
}

// pp, pp+tg, tg and (when asked) time to first token, at each depth, each
// test once a mode (bench_modes.h: the -fa, -lm, -C, --cpu-strict and --poll
// values), its threads placed as the mode says.
Status run_tests(const BenchOptions& o, const BenchModel& m, int threads, const PeakByThreads& peaks,
                 const DecodeReads* reads, BenchOutput& out) {
  LLMPACK_ASSIGN_OR_RETURN(BenchRunner runner, BenchRunner::create(*m.program, o.seed));
  LLMPACK_RETURN_IF_ERROR(runner.check_context(o.depths, longest_test(o), o.ttft));
  // One chunk as long as the longest any test sends (at least 32 tokens, as before, for -p 0).
  if (!o.no_warmup) {
    progress(o, m.display + ", " + std::to_string(threads) + " threads: warmup");
    LLMPACK_RETURN_IF_ERROR(runner.warmup(std::max(longest_prompt(o), int64_t{32})).with_context("warmup"));
  }
  std::vector<std::string> placements;  // where each mode's threads run, when -C places them
  for (const BenchMode& mode : bench_modes(o)) {
    if (mode.placement.empty()) continue;
    LLMPACK_RETURN_IF_ERROR(apply_mode(mode, m.program->thread_pool()));
    const std::string line = m.display + ", " + std::to_string(threads) + " threads, " +
                             placement_note(mode, m.program->thread_pool());
    if (std::find(placements.begin(), placements.end(), line) == placements.end()) placements.push_back(line);
  }
  for (const auto& line : placements) out.note(line);
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
    for (const BenchMode& mode : bench_modes(o)) {
      LLMPACK_RETURN_IF_ERROR(apply_mode(mode, m.program->thread_pool()));
      set_mode_fields(mode, &t.base);
      LLMPACK_RETURN_IF_ERROR(run_prompt_tests(t, at));
      LLMPACK_RETURN_IF_ERROR(run_generation_tests(t, at, reads));
    }
  }
  for (const BenchMode& mode : bench_modes(o)) {
    if (o.ttft == 0) break;
    LLMPACK_RETURN_IF_ERROR(apply_mode(mode, m.program->thread_pool()));
    set_mode_fields(mode, &t.base);
    LLMPACK_RETURN_IF_ERROR(run_ttft_tests(t));
  }
  return ok_status();
}

// --save: writes the synthetic model as a package file instead of measuring.
int save_synthetic(const BenchOptions& o, const BenchModelSource& source) {
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

}  // namespace

int run_bench(const BenchOptions& o) {
  // The flags' conflict first: it holds whatever the -m paths are.
  if (!o.save_path.empty() && !o.models.empty()) return fail("--save needs a --synthetic model, not -m");
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
  if (auto status = check_cpu_masks(o); !status.ok()) return fail(status);
  // Before any pool starts: its threads inherit the level.
  if (auto status = set_this_thread_priority(o.prio); !status.ok()) return fail(status.with_context("--prio"));
  BenchOutput out(o.output, o.output_err,
                  TableColumns{!o.batches.empty(), !o.ubatches.empty(), !o.flash_attn.empty(), !o.load_modes.empty(),
                               !o.cpu_masks.empty(), !o.cpu_strict.empty(), !o.polls.empty()});
  out.note(build_line());
  out.note(kernel_path_note(o.avx512_decode));
  if (auto note = float_decode_prefetch_note(o.float_decode_prefetch); !note.empty()) out.note(note);
  out.note(regroup_note(o.regroup));
  out.note("kv cache: " + *kv_name + " keys and values");
  if (o.threads.empty())
    out.note("threads: " + std::to_string(threads[0]) + " (the default: one per physical performance core of the " +
             std::to_string(usable_cpus()) + (usable_cpus() == 1 ? " CPU" : " CPUs") + " this process may run on)");
  if (auto note = gpu_layers_note(o); !note.empty()) out.note(note);
  if (o.prio != 0) out.note("priority: level " + std::to_string(o.prio) + " (--prio) for every thread");
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

}  // namespace llmpack::cli
