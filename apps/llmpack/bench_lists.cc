#include "bench_lists.h"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <iterator>
#include <utility>

namespace llmpack::cli {
namespace {

const char kListForm[] = "a number or a range FIRST-LAST, FIRST-LAST+STEP or FIRST-LAST*FACTOR";

// The whole of `text` as a non-negative integer.
bool read_count(std::string_view text, int64_t* value) {
  if (text.empty() || text.front() == '-' || text.front() == '+') return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && end == text.data() + text.size();
}

// Where a `bench` subcommand's own arguments begin: after the subcommand, the
// first argument that is not an option; args.size() for any other command.
std::ptrdiff_t bench_arguments_begin(const std::vector<std::string>& args) {
  const auto subcommand = std::find_if(args.begin(), args.end(), [](const std::string& a) { return a.rfind('-', 0); });
  if (subcommand == args.end() || *subcommand != "bench") return static_cast<std::ptrdiff_t>(args.size());
  return std::next(subcommand) - args.begin();
}

Status item_error(std::string_view item, const std::string& why) {
  std::string message = "'";  // appended piece by piece: GCC 12 warns (-Wrestrict) on the + chain
  message.append(item).append("': ").append(why);
  return Status::error(message);
}

// One item of the list, appended to `out`.
Status expand_item(std::string_view item, int64_t min, int64_t max, std::vector<int64_t>* out) {
  const size_t dash = item.find('-');
  int64_t first = 0, last = 0, amount = 1;
  char op = '+';
  if (dash == std::string_view::npos) {
    if (!read_count(item, &first)) return item_error(item, std::string("expected ") + kListForm);
    last = first;
  } else {
    const std::string_view tail = item.substr(dash + 1);
    const size_t op_at = tail.find_first_of("+*");
    if (!read_count(item.substr(0, dash), &first) || !read_count(tail.substr(0, op_at), &last) ||
        (op_at != std::string_view::npos && !read_count(tail.substr(op_at + 1), &amount)))
      return item_error(item, std::string("expected ") + kListForm);
    if (op_at != std::string_view::npos) op = tail[op_at];
    if (last < first) return item_error(item, "the range ends before it begins");
    if (op == '+' && amount < 1) return item_error(item, "the step must be at least 1");
    if (op == '*' && (amount < 2 || first < 1))
      return item_error(item, "the factor must be at least 2 and the range must begin at 1 or more");
  }
  for (int64_t v = first; v <= last;) {
    if (v < min || v > max)
      return item_error(item, std::to_string(v) + " is outside " + std::to_string(min) + " to " + std::to_string(max));
    if (out->size() == kMaxBenchListValues)
      return item_error(item, "the list holds more than " + std::to_string(kMaxBenchListValues) + " values");
    out->push_back(v);
    if (op == '+' ? amount > last - v : amount > last / v) break;  // the next value would pass LAST
    v = op == '+' ? v + amount : v * amount;
  }
  return ok_status();
}

}  // namespace

Result<std::vector<int64_t>> parse_bench_list(const std::string& text, int64_t min, int64_t max) {
  std::vector<int64_t> values;
  std::string_view rest = text;
  while (true) {
    const size_t comma = rest.find(',');
    LLMPACK_RETURN_IF_ERROR(expand_item(rest.substr(0, comma), min, max, &values));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return values;
}

Result<PromptGenPair> parse_prompt_gen_pair(const std::string& text) {
  const size_t comma = text.find(',');
  PromptGenPair pair;
  if (comma == std::string::npos || !read_count(std::string_view(text).substr(0, comma), &pair.prompt) ||
      !read_count(std::string_view(text).substr(comma + 1), &pair.gen))
    return Status::error("expected PROMPT,GEN (two token counts, such as 512,128), got '" + text + "'");
  if (pair.prompt < 1 || pair.gen < 1 || pair.prompt > (int64_t{1} << 20) || pair.gen > (int64_t{1} << 20))
    return Status::error("both token counts must be from 1 to 1048576, got '" + text + "'");
  return pair;
}

std::vector<std::string> with_bench_long_names(const std::vector<std::string>& args) {
  static const std::pair<std::string, std::string> kAliases[] = {
      {"-pg", "--pg"},           {"-ub", "--ubatch-size"},  {"-ctk", "--cache-type-k"},
      {"-ctv", "--cache-type-v"}, {"-ngl", "--n-gpu-layers"},  {"-fa", "--flash-attn"},
      {"-mmp", "--mmap"},         {"-lm", "--load-mode"},      {"-oe", "--output-err"},
  };
  std::vector<std::string> out = args;
  for (auto arg = out.begin() + bench_arguments_begin(out); arg != out.end(); ++arg) {
    for (const auto& [one_dash, long_name] : kAliases) {
      if (*arg == one_dash) *arg = long_name;
      else if (arg->rfind(one_dash + "=", 0) == 0) *arg = long_name + arg->substr(one_dash.size());
    }
  }
  return out;
}

std::string llama_bench_flag_not_taken(const std::vector<std::string>& args) {
  static const char kNoGpu[] = "llmpack has no GPU path yet; every layer runs on the CPU";
  static const std::pair<std::vector<std::string>, std::string> kNotTaken[] = {
      {{"-sm", "--split-mode", "-mg", "--main-gpu", "-ts", "--tensor-split", "-dev", "--device", "-nkvo",
        "--no-kv-offload", "-ncmoe", "--n-cpu-moe", "-ot", "--override-tensor", "-nopo", "--no-op-offload",
        "--no-host", "--list-devices", "-fitt", "--fit-target", "-fitc", "--fit-ctx"},
       kNoGpu},
      {{"-hf", "-hfr", "--hf-repo", "-hff", "--hf-file", "-hft", "--hf-token", "--offline"},
       "llmpack bench downloads nothing: give a model file with -m"},
      {{"-embd", "--embeddings"}, "llmpack bench measures generation, not embeddings"},
  };
  for (auto arg = args.begin() + bench_arguments_begin(args); arg != args.end(); ++arg) {
    const std::string name = arg->substr(0, arg->find('='));
    for (const auto& [flags, why] : kNotTaken)
      if (std::find(flags.begin(), flags.end(), name) != flags.end())
        return name + " is a llama-bench flag that llmpack bench does not take: " + why;
  }
  return "";
}

}  // namespace llmpack::cli
