// Issue 4 (export): llama-quantize's file types as `--dtype` mixes
// (format/llama_mix.h). The expected types of kCases were recorded from
// llama-quantize (llama.cpp 0.7.0, Debian's build): `llama-quantize --dry-run
// [--imatrix FILE] model.gguf TYPE` on three random models of the shapes of
// kShapes (make_tiny_gguf's, f32), one line per tensor kind, the types of
// layers 0, 1, ... run-length coded ("q6_k*2,q4_k" is q6_k q6_k q4_k). The
// exporter's plan for the same tensors must give the same types: llama.cpp's
// mixes of attn_v / ffn_down by layer, its GQA rules (A: 4 query heads a
// key/value head, B: 1), the tied and untied embedding, the rules that differ
// with an importance matrix, and its fallbacks for rows that are not whole
// super-blocks (C: 192 wide).
#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/synthetic_model.h"
#include "export/export_options.h"
#include "format/gguf.h"
#include "export/tensor_convert.h"

namespace llmpack {
namespace {

struct MixShape {
  char id;
  int64_t dim, hidden_dim, n_heads, n_kv_heads, n_layers;
  bool tied;
};
constexpr MixShape kShapes[] = {
    {'A', 256, 512, 4, 1, 16, true},
    {'B', 256, 512, 4, 4, 16, false},
    {'C', 192, 384, 3, 1, 8, true},
};

struct MixCase {
  char shape;
  const char* dtype;
  bool imatrix;
  const char* types;
};

// clang-format off
constexpr MixCase kCases[] = {
    {'A', "q4_0", true,
     "attn_q=q4_0*16 attn_k=q4_0*16 attn_v=q4_0*16 attn_output=q4_0*16 ffn_gate=q4_0*16 ffn_up=q4_0*16 "
     "ffn_down=q4_1*2,q4_0*14 token_embd=q6_k"},
    {'A', "q4_1", true,
     "attn_q=q4_1*16 attn_k=q4_1*16 attn_v=q4_1*16 attn_output=q4_1*16 ffn_gate=q4_1*16 ffn_up=q4_1*16 "
     "ffn_down=q4_1*16 token_embd=q6_k"},
    {'A', "q5_0", true,
     "attn_q=q5_0*16 attn_k=q5_0*16 attn_v=q5_0*16 attn_output=q5_0*16 ffn_gate=q5_0*16 ffn_up=q5_0*16 "
     "ffn_down=q5_1*2,q5_0*14 token_embd=q6_k"},
    {'A', "q5_1", true,
     "attn_q=q5_1*16 attn_k=q5_1*16 attn_v=q5_1*16 attn_output=q5_1*16 ffn_gate=q5_1*16 ffn_up=q5_1*16 "
     "ffn_down=q5_1*16 token_embd=q6_k"},
    {'A', "q8_0", true,
     "attn_q=q8_0*16 attn_k=q8_0*16 attn_v=q8_0*16 attn_output=q8_0*16 ffn_gate=q8_0*16 ffn_up=q8_0*16 "
     "ffn_down=q8_0*16 token_embd=q8_0"},
    {'A', "q2_k", true,
     "attn_q=q2_k*16 attn_k=q2_k*16 attn_v=q4_k*16 attn_output=q3_k*16 ffn_gate=q2_k*16 ffn_up=q2_k*16 "
     "ffn_down=q3_k*16 token_embd=q6_k"},
    {'A', "q2_k_s", true,
     "attn_q=q2_k*16 attn_k=q2_k*16 attn_v=q4_k*16 attn_output=q2_k*16 ffn_gate=q2_k*16 ffn_up=q2_k*16 "
     "ffn_down=q4_k*2,q2_k*14 token_embd=q6_k"},
    {'A', "q3_k_s", true,
     "attn_q=q3_k*16 attn_k=q3_k*16 attn_v=q3_k*16 attn_output=q3_k*16 ffn_gate=q3_k*16 ffn_up=q3_k*16 "
     "ffn_down=q3_k*16 token_embd=q6_k"},
    {'A', "q3_k_m", true,
     "attn_q=q3_k*16 attn_k=q3_k*16 attn_v=q5_k*2,q4_k*14 attn_output=q4_k*16 ffn_gate=q3_k*16 "
     "ffn_up=q3_k*16 ffn_down=q5_k,q4_k*15 token_embd=q6_k"},
    {'A', "q3_k_l", true,
     "attn_q=q3_k*16 attn_k=q3_k*16 attn_v=q5_k*16 attn_output=q5_k*16 ffn_gate=q3_k*16 ffn_up=q3_k*16 "
     "ffn_down=q5_k*16 token_embd=q6_k"},
    {'A', "q4_k_s", true,
     "attn_q=q4_k*16 attn_k=q4_k*16 attn_v=q5_k*4,q4_k*12 attn_output=q4_k*16 ffn_gate=q4_k*16 "
     "ffn_up=q4_k*16 ffn_down=q5_k*2,q4_k*14 token_embd=q6_k"},
    {'A', "q4_k_m", true,
     "attn_q=q4_k*16 attn_k=q4_k*16 attn_v=q6_k*2,q4_k*2,q6_k,q4_k*2,q6_k,q4_k*2,q6_k,q4_k*2,q6_k*3 "
     "attn_output=q4_k*16 ffn_gate=q4_k*16 ffn_up=q4_k*16 "
     "ffn_down=q6_k*2,q4_k*2,q6_k,q4_k*2,q6_k,q4_k*2,q6_k,q4_k*2,q6_k*3 token_embd=q6_k"},
    {'A', "q5_k_s", true,
     "attn_q=q5_k*16 attn_k=q5_k*16 attn_v=q5_k*16 attn_output=q5_k*16 ffn_gate=q5_k*16 ffn_up=q5_k*16 "
     "ffn_down=q5_k*16 token_embd=q6_k"},
    {'A', "q5_k_m", true,
     "attn_q=q5_k*16 attn_k=q5_k*16 attn_v=q6_k*2,q5_k*2,q6_k,q5_k*2,q6_k,q5_k*2,q6_k,q5_k*2,q6_k*3 "
     "attn_output=q5_k*16 ffn_gate=q5_k*16 ffn_up=q5_k*16 "
     "ffn_down=q6_k*2,q5_k*2,q6_k,q5_k*2,q6_k,q5_k*2,q6_k,q5_k*2,q6_k*3 token_embd=q6_k"},
    {'A', "q6_k", true,
     "attn_q=q6_k*16 attn_k=q6_k*16 attn_v=q6_k*16 attn_output=q6_k*16 ffn_gate=q6_k*16 ffn_up=q6_k*16 "
     "ffn_down=q6_k*16 token_embd=q6_k"},
    {'A', "iq1_s", true,
     "attn_q=iq1_s*16 attn_k=iq1_s*16 attn_v=q4_k*16 attn_output=iq2_xxs*16 ffn_gate=iq1_s*16 "
     "ffn_up=iq1_s*16 ffn_down=q2_k*2,iq1_s*14 token_embd=q5_k"},
    {'A', "iq1_m", true,
     "attn_q=iq1_m*16 attn_k=iq1_m*16 attn_v=q4_k*16 attn_output=iq2_xxs*16 ffn_gate=iq1_m*16 "
     "ffn_up=iq1_m*16 ffn_down=q2_k*2,iq1_m*14 token_embd=q5_k"},
    {'A', "iq2_xxs", true,
     "attn_q=iq2_xxs*16 attn_k=iq2_xxs*16 attn_v=q4_k*16 attn_output=iq2_xxs*16 ffn_gate=iq2_xxs*16 "
     "ffn_up=iq2_xxs*16 ffn_down=q2_k*2,iq2_xxs*14 token_embd=q5_k"},
    {'A', "iq2_xs", true,
     "attn_q=iq2_xs*16 attn_k=iq2_xs*16 attn_v=q4_k*16 attn_output=iq2_xs*16 ffn_gate=iq2_xs*16 "
     "ffn_up=iq2_xs*16 ffn_down=q2_k*2,iq2_xs*14 token_embd=q5_k"},
    {'A', "iq2_s", true,
     "attn_q=iq2_xs*16 attn_k=iq2_xs*16 attn_v=q4_k*16 attn_output=iq3_s*16 ffn_gate=iq2_xs*16 "
     "ffn_up=iq2_xs*16 ffn_down=iq3_s*2,iq2_xs*14 token_embd=q5_k"},
    {'A', "iq2_m", true,
     "attn_q=iq2_s*16 attn_k=iq2_s*16 attn_v=q4_k*16 attn_output=iq3_s*16 ffn_gate=iq2_s*16 "
     "ffn_up=iq2_s*16 ffn_down=iq3_s*2,iq2_s*14 token_embd=q5_k"},
    {'A', "iq3_xxs", true,
     "attn_q=iq2_s*16 attn_k=iq2_s*16 attn_v=q4_k*16 attn_output=iq3_s*16 ffn_gate=iq3_xxs*16 "
     "ffn_up=iq3_xxs*16 ffn_down=iq3_xxs*16 token_embd=q5_k"},
    {'A', "iq3_xs", true,
     "attn_q=iq3_xxs*16 attn_k=iq3_xxs*16 attn_v=q4_k*16 attn_output=iq3_s*16 "
     "ffn_gate=iq3_s*2,iq3_xxs*12,iq3_s*2 ffn_up=iq3_s*2,iq3_xxs*12,iq3_s*2 ffn_down=iq3_s*16 "
     "token_embd=q6_k"},
    {'A', "iq3_s", true,
     "attn_q=iq3_s*16 attn_k=iq3_s*16 attn_v=q4_k*16 attn_output=iq3_s*16 ffn_gate=iq3_s*16 "
     "ffn_up=iq3_s*16 ffn_down=iq3_s*16 token_embd=q6_k"},
    {'A', "iq3_m", true,
     "attn_q=iq3_s*16 attn_k=iq3_s*16 attn_v=q4_k*16 attn_output=q4_k*16 ffn_gate=iq3_s*16 ffn_up=iq3_s*16 "
     "ffn_down=q4_k*2,iq3_s*14 token_embd=q6_k"},
    {'A', "iq4_nl", true,
     "attn_q=iq4_nl*16 attn_k=iq4_nl*16 attn_v=q5_k*16 attn_output=iq4_nl*16 ffn_gate=iq4_nl*16 "
     "ffn_up=iq4_nl*16 ffn_down=iq4_nl*16 token_embd=q6_k"},
    {'A', "iq4_xs", true,
     "attn_q=iq4_xs*16 attn_k=iq4_xs*16 attn_v=q5_k*16 attn_output=iq4_xs*16 ffn_gate=iq4_xs*16 "
     "ffn_up=iq4_xs*16 ffn_down=iq4_xs*16 token_embd=q6_k"},
    {'A', "q4_0", false,
     "attn_q=q4_0*16 attn_k=q4_0*16 attn_v=q4_0*16 attn_output=q4_0*16 ffn_gate=q4_0*16 ffn_up=q4_0*16 "
     "ffn_down=q4_0*16 token_embd=q6_k"},
    {'A', "q5_0", false,
     "attn_q=q5_0*16 attn_k=q5_0*16 attn_v=q5_0*16 attn_output=q5_0*16 ffn_gate=q5_0*16 ffn_up=q5_0*16 "
     "ffn_down=q5_0*16 token_embd=q6_k"},
    {'A', "iq3_xxs", false,
     "attn_q=iq2_s*16 attn_k=iq2_s*16 attn_v=q4_k*16 attn_output=iq3_s*16 ffn_gate=iq3_xxs*16 "
     "ffn_up=iq3_xxs*16 ffn_down=q4_k*2,q3_k*14 token_embd=q5_k"},
    {'A', "iq4_nl", false,
     "attn_q=iq4_nl*16 attn_k=iq4_nl*16 attn_v=q5_k*16 attn_output=iq4_nl*16 ffn_gate=iq4_nl*16 "
     "ffn_up=iq4_nl*16 ffn_down=q5_k*2,iq4_nl*14 token_embd=q6_k"},
    {'A', "iq4_xs", false,
     "attn_q=iq4_xs*16 attn_k=iq4_xs*16 attn_v=q5_k*16 attn_output=iq4_xs*16 ffn_gate=iq4_xs*16 "
     "ffn_up=iq4_xs*16 ffn_down=q5_k*2,iq4_xs*14 token_embd=q6_k"},
    {'B', "q4_0", true,
     "attn_q=q4_0*16 attn_k=q4_0*16 attn_v=q4_0*16 attn_output=q4_0*16 ffn_gate=q4_0*16 ffn_up=q4_0*16 "
     "ffn_down=q4_1*2,q4_0*14 token_embd=q4_0 output=q6_k"},
    {'B', "q4_1", true,
     "attn_q=q4_1*16 attn_k=q4_1*16 attn_v=q4_1*16 attn_output=q4_1*16 ffn_gate=q4_1*16 ffn_up=q4_1*16 "
     "ffn_down=q4_1*16 token_embd=q4_1 output=q6_k"},
    {'B', "q5_0", true,
     "attn_q=q5_0*16 attn_k=q5_0*16 attn_v=q5_0*16 attn_output=q5_0*16 ffn_gate=q5_0*16 ffn_up=q5_0*16 "
     "ffn_down=q5_1*2,q5_0*14 token_embd=q5_0 output=q6_k"},
    {'B', "q5_1", true,
     "attn_q=q5_1*16 attn_k=q5_1*16 attn_v=q5_1*16 attn_output=q5_1*16 ffn_gate=q5_1*16 ffn_up=q5_1*16 "
     "ffn_down=q5_1*16 token_embd=q5_1 output=q6_k"},
    {'B', "q8_0", true,
     "attn_q=q8_0*16 attn_k=q8_0*16 attn_v=q8_0*16 attn_output=q8_0*16 ffn_gate=q8_0*16 ffn_up=q8_0*16 "
     "ffn_down=q8_0*16 token_embd=q8_0 output=q8_0"},
    {'B', "q2_k", true,
     "attn_q=q2_k*16 attn_k=q2_k*16 attn_v=q3_k*16 attn_output=q3_k*16 ffn_gate=q2_k*16 ffn_up=q2_k*16 "
     "ffn_down=q3_k*16 token_embd=q2_k output=q6_k"},
    {'B', "q2_k_s", true,
     "attn_q=q2_k*16 attn_k=q2_k*16 attn_v=q2_k*16 attn_output=q2_k*16 ffn_gate=q2_k*16 ffn_up=q2_k*16 "
     "ffn_down=q4_k*2,q2_k*14 token_embd=q2_k output=q6_k"},
    {'B', "q3_k_s", true,
     "attn_q=q3_k*16 attn_k=q3_k*16 attn_v=q3_k*16 attn_output=q3_k*16 ffn_gate=q3_k*16 ffn_up=q3_k*16 "
     "ffn_down=q3_k*16 token_embd=q3_k output=q6_k"},
    {'B', "q3_k_m", true,
     "attn_q=q3_k*16 attn_k=q3_k*16 attn_v=q5_k*2,q4_k*14 attn_output=q4_k*16 ffn_gate=q3_k*16 "
     "ffn_up=q3_k*16 ffn_down=q5_k,q4_k*15 token_embd=q3_k output=q6_k"},
    {'B', "q3_k_l", true,
     "attn_q=q3_k*16 attn_k=q3_k*16 attn_v=q5_k*16 attn_output=q5_k*16 ffn_gate=q3_k*16 ffn_up=q3_k*16 "
     "ffn_down=q5_k*16 token_embd=q3_k output=q6_k"},
    {'B', "q4_k_s", true,
     "attn_q=q4_k*16 attn_k=q4_k*16 attn_v=q5_k*4,q4_k*12 attn_output=q4_k*16 ffn_gate=q4_k*16 "
     "ffn_up=q4_k*16 ffn_down=q5_k*2,q4_k*14 token_embd=q4_k output=q6_k"},
    {'B', "q4_k_m", true,
     "attn_q=q4_k*16 attn_k=q4_k*16 attn_v=q6_k*2,q4_k*2,q6_k,q4_k*2,q6_k,q4_k*2,q6_k,q4_k*2,q6_k*3 "
     "attn_output=q4_k*16 ffn_gate=q4_k*16 ffn_up=q4_k*16 "
     "ffn_down=q6_k*2,q4_k*2,q6_k,q4_k*2,q6_k,q4_k*2,q6_k,q4_k*2,q6_k*3 token_embd=q4_k output=q6_k"},
    {'B', "q5_k_s", true,
     "attn_q=q5_k*16 attn_k=q5_k*16 attn_v=q5_k*16 attn_output=q5_k*16 ffn_gate=q5_k*16 ffn_up=q5_k*16 "
     "ffn_down=q5_k*16 token_embd=q5_k output=q6_k"},
    {'B', "q5_k_m", true,
     "attn_q=q5_k*16 attn_k=q5_k*16 attn_v=q6_k*2,q5_k*2,q6_k,q5_k*2,q6_k,q5_k*2,q6_k,q5_k*2,q6_k*3 "
     "attn_output=q5_k*16 ffn_gate=q5_k*16 ffn_up=q5_k*16 "
     "ffn_down=q6_k*2,q5_k*2,q6_k,q5_k*2,q6_k,q5_k*2,q6_k,q5_k*2,q6_k*3 token_embd=q5_k output=q6_k"},
    {'B', "q6_k", true,
     "attn_q=q6_k*16 attn_k=q6_k*16 attn_v=q6_k*16 attn_output=q6_k*16 ffn_gate=q6_k*16 ffn_up=q6_k*16 "
     "ffn_down=q6_k*16 token_embd=q6_k output=q6_k"},
    {'B', "iq1_s", true,
     "attn_q=iq1_s*16 attn_k=iq1_s*16 attn_v=q2_k*16 attn_output=iq2_xxs*16 ffn_gate=iq1_s*16 "
     "ffn_up=iq1_s*16 ffn_down=q2_k*2,iq1_s*14 token_embd=q2_k output=q5_k"},
    {'B', "iq1_m", true,
     "attn_q=iq1_m*16 attn_k=iq1_m*16 attn_v=q2_k*16 attn_output=iq2_xxs*16 ffn_gate=iq1_m*16 "
     "ffn_up=iq1_m*16 ffn_down=q2_k*2,iq1_m*14 token_embd=q2_k output=q5_k"},
    {'B', "iq2_xxs", true,
     "attn_q=iq2_xxs*16 attn_k=iq2_xxs*16 attn_v=q2_k*16 attn_output=iq2_xxs*16 ffn_gate=iq2_xxs*16 "
     "ffn_up=iq2_xxs*16 ffn_down=q2_k*2,iq2_xxs*14 token_embd=q2_k output=q5_k"},
    {'B', "iq2_xs", true,
     "attn_q=iq2_xs*16 attn_k=iq2_xs*16 attn_v=q2_k*16 attn_output=iq2_xs*16 ffn_gate=iq2_xs*16 "
     "ffn_up=iq2_xs*16 ffn_down=q2_k*2,iq2_xs*14 token_embd=q2_k output=q5_k"},
    {'B', "iq2_s", true,
     "attn_q=iq2_xs*16 attn_k=iq2_xs*16 attn_v=iq3_s*16 attn_output=iq3_s*16 ffn_gate=iq2_xs*16 "
     "ffn_up=iq2_xs*16 ffn_down=iq3_s*2,iq2_xs*14 token_embd=iq3_s output=q5_k"},
    {'B', "iq2_m", true,
     "attn_q=iq2_s*16 attn_k=iq2_s*16 attn_v=iq3_s*16 attn_output=iq3_s*16 ffn_gate=iq2_s*16 "
     "ffn_up=iq2_s*16 ffn_down=iq3_s*2,iq2_s*14 token_embd=iq3_s output=q5_k"},
    {'B', "iq3_xxs", true,
     "attn_q=iq2_s*16 attn_k=iq2_s*16 attn_v=iq3_xxs*16 attn_output=iq3_s*16 ffn_gate=iq3_xxs*16 "
     "ffn_up=iq3_xxs*16 ffn_down=iq3_xxs*16 token_embd=iq3_s output=q5_k"},
    {'B', "iq3_xs", true,
     "attn_q=iq3_xxs*16 attn_k=iq3_xxs*16 attn_v=iq3_s*16 attn_output=iq3_s*16 "
     "ffn_gate=iq3_s*2,iq3_xxs*12,iq3_s*2 ffn_up=iq3_s*2,iq3_xxs*12,iq3_s*2 ffn_down=iq3_s*16 "
     "token_embd=iq3_s output=q6_k"},
    {'B', "iq3_s", true,
     "attn_q=iq3_s*16 attn_k=iq3_s*16 attn_v=iq3_s*16 attn_output=iq3_s*16 ffn_gate=iq3_s*16 "
     "ffn_up=iq3_s*16 ffn_down=iq3_s*16 token_embd=iq3_s output=q6_k"},
    {'B', "iq3_m", true,
     "attn_q=iq3_s*16 attn_k=iq3_s*16 attn_v=q4_k*16 attn_output=q4_k*16 ffn_gate=iq3_s*16 ffn_up=iq3_s*16 "
     "ffn_down=q4_k*2,iq3_s*14 token_embd=iq3_s output=q6_k"},
    {'B', "iq4_nl", true,
     "attn_q=iq4_nl*16 attn_k=iq4_nl*16 attn_v=iq4_nl*16 attn_output=iq4_nl*16 ffn_gate=iq4_nl*16 "
     "ffn_up=iq4_nl*16 ffn_down=iq4_nl*16 token_embd=iq4_nl output=q6_k"},
    {'B', "iq4_xs", true,
     "attn_q=iq4_xs*16 attn_k=iq4_xs*16 attn_v=iq4_xs*16 attn_output=iq4_xs*16 ffn_gate=iq4_xs*16 "
     "ffn_up=iq4_xs*16 ffn_down=iq4_xs*16 token_embd=iq4_xs output=q6_k"},
    {'B', "q4_0", false,
     "attn_q=q4_0*16 attn_k=q4_0*16 attn_v=q4_0*16 attn_output=q4_0*16 ffn_gate=q4_0*16 ffn_up=q4_0*16 "
     "ffn_down=q4_0*16 token_embd=q4_0 output=q6_k"},
    {'B', "q5_0", false,
     "attn_q=q5_0*16 attn_k=q5_0*16 attn_v=q5_0*16 attn_output=q5_0*16 ffn_gate=q5_0*16 ffn_up=q5_0*16 "
     "ffn_down=q5_0*16 token_embd=q5_0 output=q6_k"},
    {'B', "iq3_xxs", false,
     "attn_q=iq2_s*16 attn_k=iq2_s*16 attn_v=iq3_s*16 attn_output=iq3_s*16 ffn_gate=iq3_xxs*16 "
     "ffn_up=iq3_xxs*16 ffn_down=q4_k*2,q3_k*14 token_embd=iq3_s output=q5_k"},
    {'B', "iq4_nl", false,
     "attn_q=iq4_nl*16 attn_k=iq4_nl*16 attn_v=iq4_nl*16 attn_output=iq4_nl*16 ffn_gate=iq4_nl*16 "
     "ffn_up=iq4_nl*16 ffn_down=q5_k*2,iq4_nl*14 token_embd=iq4_nl output=q6_k"},
    {'B', "iq4_xs", false,
     "attn_q=iq4_xs*16 attn_k=iq4_xs*16 attn_v=iq4_xs*16 attn_output=iq4_xs*16 ffn_gate=iq4_xs*16 "
     "ffn_up=iq4_xs*16 ffn_down=q5_k*2,iq4_xs*14 token_embd=iq4_xs output=q6_k"},
    {'C', "q4_0", true,
     "attn_q=q4_0*8 attn_k=q4_0*8 attn_v=q4_0*8 attn_output=q4_0*8 ffn_gate=q4_0*8 ffn_up=q4_0*8 "
     "ffn_down=q4_1,q4_0*7 token_embd=q8_0"},
    {'C', "q4_1", true,
     "attn_q=q4_1*8 attn_k=q4_1*8 attn_v=q4_1*8 attn_output=q4_1*8 ffn_gate=q4_1*8 ffn_up=q4_1*8 "
     "ffn_down=q4_1*8 token_embd=q8_0"},
    {'C', "q5_0", true,
     "attn_q=q5_0*8 attn_k=q5_0*8 attn_v=q5_0*8 attn_output=q5_0*8 ffn_gate=q5_0*8 ffn_up=q5_0*8 "
     "ffn_down=q5_1,q5_0*7 token_embd=q8_0"},
    {'C', "q5_1", true,
     "attn_q=q5_1*8 attn_k=q5_1*8 attn_v=q5_1*8 attn_output=q5_1*8 ffn_gate=q5_1*8 ffn_up=q5_1*8 "
     "ffn_down=q5_1*8 token_embd=q8_0"},
    {'C', "q8_0", true,
     "attn_q=q8_0*8 attn_k=q8_0*8 attn_v=q8_0*8 attn_output=q8_0*8 ffn_gate=q8_0*8 ffn_up=q8_0*8 "
     "ffn_down=q8_0*8 token_embd=q8_0"},
    {'C', "q2_k", true,
     "attn_q=q4_0*8 attn_k=q4_0*8 attn_v=q4_0*8 attn_output=q4_0*8 ffn_gate=q4_0*8 ffn_up=q4_0*8 "
     "ffn_down=q4_0*8 token_embd=q8_0"},
    {'C', "q2_k_s", true,
     "attn_q=q4_0*8 attn_k=q4_0*8 attn_v=q4_0*8 attn_output=q4_0*8 ffn_gate=q4_0*8 ffn_up=q4_0*8 "
     "ffn_down=q5_0,q4_0*7 token_embd=q8_0"},
    {'C', "q3_k_s", true,
     "attn_q=q4_0*8 attn_k=q4_0*8 attn_v=q4_0*8 attn_output=q4_0*8 ffn_gate=q4_0*8 ffn_up=q4_0*8 "
     "ffn_down=q4_0*8 token_embd=q8_0"},
    {'C', "q3_k_m", true,
     "attn_q=q4_0*8 attn_k=q4_0*8 attn_v=q5_1*2,q5_0*6 attn_output=q5_0*8 ffn_gate=q4_0*8 ffn_up=q4_0*8 "
     "ffn_down=q5_0*8 token_embd=q8_0"},
    {'C', "q3_k_l", true,
     "attn_q=q4_0*8 attn_k=q4_0*8 attn_v=q5_1*8 attn_output=q5_1*8 ffn_gate=q4_0*8 ffn_up=q4_0*8 "
     "ffn_down=q5_1*8 token_embd=q8_0"},
    {'C', "q4_k_s", true,
     "attn_q=q5_0*8 attn_k=q5_0*8 attn_v=q5_1*4,q5_0*4 attn_output=q5_0*8 ffn_gate=q5_0*8 ffn_up=q5_0*8 "
     "ffn_down=q5_1,q5_0*7 token_embd=q8_0"},
    {'C', "q4_k_m", true,
     "attn_q=q5_0*8 attn_k=q5_0*8 attn_v=q8_0,q5_0*2,q8_0,q5_0*2,q8_0*2 attn_output=q5_0*8 ffn_gate=q5_0*8 "
     "ffn_up=q5_0*8 ffn_down=q8_0,q5_0*2,q8_0,q5_0*2,q8_0*2 token_embd=q8_0"},
    {'C', "q5_k_s", true,
     "attn_q=q5_1*8 attn_k=q5_1*8 attn_v=q5_1*8 attn_output=q5_1*8 ffn_gate=q5_1*8 ffn_up=q5_1*8 "
     "ffn_down=q5_1*8 token_embd=q8_0"},
    {'C', "q5_k_m", true,
     "attn_q=q5_1*8 attn_k=q5_1*8 attn_v=q8_0,q5_1*2,q8_0,q5_1*2,q8_0*2 attn_output=q5_1*8 ffn_gate=q5_1*8 "
     "ffn_up=q5_1*8 ffn_down=q8_0,q5_1*2,q8_0,q5_1*2,q8_0*2 token_embd=q8_0"},
    {'C', "q6_k", true,
     "attn_q=q8_0*8 attn_k=q8_0*8 attn_v=q8_0*8 attn_output=q8_0*8 ffn_gate=q8_0*8 ffn_up=q8_0*8 "
     "ffn_down=q8_0*8 token_embd=q8_0"},
    {'C', "iq1_s", true,
     "attn_q=iq4_nl*8 attn_k=iq4_nl*8 attn_v=q4_0*8 attn_output=iq4_nl*8 ffn_gate=iq4_nl*8 ffn_up=iq4_nl*8 "
     "ffn_down=q4_0,iq4_nl*7 token_embd=q8_0"},
    {'C', "iq1_m", true,
     "attn_q=iq4_nl*8 attn_k=iq4_nl*8 attn_v=q4_0*8 attn_output=iq4_nl*8 ffn_gate=iq4_nl*8 ffn_up=iq4_nl*8 "
     "ffn_down=q4_0,iq4_nl*7 token_embd=q8_0"},
    {'C', "iq2_xxs", true,
     "attn_q=iq4_nl*8 attn_k=iq4_nl*8 attn_v=q4_0*8 attn_output=iq4_nl*8 ffn_gate=iq4_nl*8 ffn_up=iq4_nl*8 "
     "ffn_down=q4_0,iq4_nl*7 token_embd=q8_0"},
    {'C', "iq2_xs", true,
     "attn_q=iq4_nl*8 attn_k=iq4_nl*8 attn_v=q4_0*8 attn_output=iq4_nl*8 ffn_gate=iq4_nl*8 ffn_up=iq4_nl*8 "
     "ffn_down=q4_0,iq4_nl*7 token_embd=q8_0"},
    {'C', "iq2_s", true,
     "attn_q=iq4_nl*8 attn_k=iq4_nl*8 attn_v=iq4_nl*8 attn_output=iq4_nl*8 ffn_gate=iq4_nl*8 "
     "ffn_up=iq4_nl*8 ffn_down=iq4_nl*8 token_embd=q8_0"},
    {'C', "iq2_m", true,
     "attn_q=iq4_nl*8 attn_k=iq4_nl*8 attn_v=iq4_nl*8 attn_output=iq4_nl*8 ffn_gate=iq4_nl*8 "
     "ffn_up=iq4_nl*8 ffn_down=iq4_nl*8 token_embd=q8_0"},
    {'C', "iq3_xxs", true,
     "attn_q=iq4_nl*8 attn_k=iq4_nl*8 attn_v=iq4_nl*8 attn_output=iq4_nl*8 ffn_gate=iq4_nl*8 "
     "ffn_up=iq4_nl*8 ffn_down=iq4_nl*8 token_embd=q8_0"},
    {'C', "iq3_xs", true,
     "attn_q=iq4_nl*8 attn_k=iq4_nl*8 attn_v=iq4_nl*8 attn_output=iq4_nl*8 ffn_gate=iq4_nl*8 "
     "ffn_up=iq4_nl*8 ffn_down=iq4_nl*8 token_embd=q8_0"},
    {'C', "iq3_s", true,
     "attn_q=iq4_nl*8 attn_k=iq4_nl*8 attn_v=iq4_nl*8 attn_output=iq4_nl*8 ffn_gate=iq4_nl*8 "
     "ffn_up=iq4_nl*8 ffn_down=iq4_nl*8 token_embd=q8_0"},
    {'C', "iq3_m", true,
     "attn_q=iq4_nl*8 attn_k=iq4_nl*8 attn_v=q5_0*8 attn_output=q5_0*8 ffn_gate=iq4_nl*8 ffn_up=iq4_nl*8 "
     "ffn_down=q5_0,iq4_nl*7 token_embd=q8_0"},
    {'C', "iq4_nl", true,
     "attn_q=iq4_nl*8 attn_k=iq4_nl*8 attn_v=iq4_nl*8 attn_output=iq4_nl*8 ffn_gate=iq4_nl*8 "
     "ffn_up=iq4_nl*8 ffn_down=iq4_nl*8 token_embd=q8_0"},
    {'C', "iq4_xs", true,
     "attn_q=iq4_nl*8 attn_k=iq4_nl*8 attn_v=iq4_nl*8 attn_output=iq4_nl*8 ffn_gate=iq4_nl*8 "
     "ffn_up=iq4_nl*8 ffn_down=iq4_nl*8 token_embd=q8_0"},
    {'C', "q4_0", false,
     "attn_q=q4_0*8 attn_k=q4_0*8 attn_v=q4_0*8 attn_output=q4_0*8 ffn_gate=q4_0*8 ffn_up=q4_0*8 "
     "ffn_down=q4_0*8 token_embd=q8_0"},
    {'C', "q5_0", false,
     "attn_q=q5_0*8 attn_k=q5_0*8 attn_v=q5_0*8 attn_output=q5_0*8 ffn_gate=q5_0*8 ffn_up=q5_0*8 "
     "ffn_down=q5_0*8 token_embd=q8_0"},
    {'C', "iq3_xxs", false,
     "attn_q=iq4_nl*8 attn_k=iq4_nl*8 attn_v=iq4_nl*8 attn_output=iq4_nl*8 ffn_gate=iq4_nl*8 "
     "ffn_up=iq4_nl*8 ffn_down=q5_0,q4_0*7 token_embd=q8_0"},
    {'C', "iq4_nl", false,
     "attn_q=iq4_nl*8 attn_k=iq4_nl*8 attn_v=iq4_nl*8 attn_output=iq4_nl*8 ffn_gate=iq4_nl*8 "
     "ffn_up=iq4_nl*8 ffn_down=q5_1,iq4_nl*7 token_embd=q8_0"},
    {'C', "iq4_xs", false,
     "attn_q=iq4_nl*8 attn_k=iq4_nl*8 attn_v=iq4_nl*8 attn_output=iq4_nl*8 ffn_gate=iq4_nl*8 "
     "ffn_up=iq4_nl*8 ffn_down=q5_1,iq4_nl*7 token_embd=q8_0"},
};
// clang-format on

constexpr const char* kKinds[] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};

// The matrices of a model of `s`, as make_tiny_gguf names and shapes them
// (ne[0] the row length); no bytes: the plan reads names and shapes only.
std::vector<SourceTensor> matrices_of(const MixShape& s) {
  const int64_t head_dim = s.dim / s.n_heads, kv = s.n_kv_heads * head_dim, vocab = 300;
  std::vector<SourceTensor> out;
  auto add = [&](std::string name, int64_t cols, int64_t rows) {
    SourceTensor t;
    t.name = std::move(name), t.dtype = DType::kF32, t.ne = {cols, rows};
    out.push_back(std::move(t));
  };
  add("token_embd.weight", s.dim, vocab);
  if (!s.tied) add("output.weight", s.dim, vocab);
  for (int64_t l = 0; l < s.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    add(b + "attn_q.weight", s.dim, s.dim);
    add(b + "attn_k.weight", s.dim, kv);
    add(b + "attn_v.weight", s.dim, kv);
    add(b + "attn_output.weight", s.dim, s.dim);
    add(b + "ffn_gate.weight", s.dim, s.hidden_dim);
    add(b + "ffn_up.weight", s.dim, s.hidden_dim);
    add(b + "ffn_down.weight", s.hidden_dim, s.dim);
  }
  return out;
}

// The summary of kCases' form for each matrix's type, `type_of` by name.
std::string summary(const MixShape& s, std::map<std::string, std::string> type_of) {
  std::string out;
  for (const char* kind : kKinds) {
    out += std::string(out.empty() ? "" : " ") + kind + "=";
    std::vector<std::pair<std::string, int>> runs;
    for (int64_t l = 0; l < s.n_layers; ++l) {
      const std::string& t = type_of["blk." + std::to_string(l) + "." + kind + ".weight"];
      if (!runs.empty() && runs.back().first == t) ++runs.back().second;
      else runs.emplace_back(t, 1);
    }
    for (size_t i = 0; i < runs.size(); ++i)
      out += (i ? "," : "") + runs[i].first + (runs[i].second > 1 ? "*" + std::to_string(runs[i].second) : "");
  }
  out += " token_embd=" + type_of["token_embd.weight"];
  if (!s.tied) out += " output=" + type_of["output.weight"];
  return out;
}

// The plan's types in that form.
std::string planned_types(const MixShape& s, const DTypePlan& plan) {
  SourceHyperparameters hp;
  hp.n_layers = s.n_layers, hp.n_heads = s.n_heads, hp.n_kv_heads = s.n_kv_heads;
  const std::string output_name = s.tied ? "token_embd.weight" : "output.weight";
  std::map<std::string, std::string> type_of;
  for (const SourceTensor& t : matrices_of(s))
    type_of[t.name] = std::string(dtype_name(plan_tensor_type(t, plan, hp, output_name).type));
  return summary(s, type_of);
}

// bench --synthetic's types in that form (engine/synthetic_model.h).
std::string synthetic_types(const MixShape& s, SyntheticType type) {
  std::map<std::string, std::string> type_of;
  for (const SourceTensor& t : matrices_of(s)) {
    const size_t dot = t.name.find('.', 4);
    const bool in_layer = t.name.rfind("blk.", 0) == 0;
    const int64_t layer = in_layer ? std::stoll(t.name.substr(4, dot - 4)) : -1;
    const std::string base = in_layer ? t.name.substr(dot + 1) : t.name;
    const std::string kind = base.substr(0, base.size() - std::string(".weight").size());
    type_of[t.name] = std::string(dtype_name(
        synthetic_matrix_type(type, kind, layer, s.n_layers, t.ne[0], s.tied, s.n_heads / s.n_kv_heads)));
  }
  return summary(s, type_of);
}

TEST(LlamaMix, EachFileTypesTensorTypesEqualLlamaQuantizes) {
  for (const MixCase& c : kCases) {
    const MixShape* shape = nullptr;
    for (const MixShape& s : kShapes)
      if (s.id == c.shape) shape = &s;
    ASSERT_NE(shape, nullptr);
    ExportOptions o;
    o.checkpoint = "model.gguf", o.output = "out.gguf", o.dtype = c.dtype, o.llama_mix = true;
    if (c.imatrix) o.imatrix = "imatrix.gguf";
    auto resolved = resolve_export_options(o);
    ASSERT_TRUE(resolved.ok()) << c.dtype << ": " << resolved.status().message();
    EXPECT_EQ(planned_types(*shape, resolved->dtype), c.types)
        << "shape " << c.shape << ", " << c.dtype << (c.imatrix ? " with" : " without") << " an imatrix";
  }
}

// `bench --synthetic NAME:TYPE` lays a model out as llama-quantize's file of
// that type: the exporter's plan for it (held to llama-quantize's above),
// with an imatrix where llama-quantize writes the type only with one.
TEST(LlamaMix, SyntheticModelsAreLaidOutAsLlamaQuantizesFiles) {
  int compared = 0;
  for (const MixCase& c : kCases) {
    auto type = parse_synthetic_type(c.dtype);
    ASSERT_TRUE(type.ok()) << c.dtype << ": " << type.status().message();
    if (c.imatrix != llama_file_type_needs_imatrix(*find_llama_file_type(c.dtype))) {
      bool rules_differ = false;  // the two cases of a type whose rules read the imatrix
      for (const MixCase& other : kCases)
        rules_differ |= other.shape == c.shape && std::string(other.dtype) == c.dtype && other.imatrix != c.imatrix;
      if (rules_differ) continue;
    }
    for (const MixShape& s : kShapes)
      if (s.id == c.shape) {
        EXPECT_EQ(synthetic_types(s, *type), c.types) << "shape " << c.shape << ", " << c.dtype;
        ++compared;
      }
  }
  EXPECT_EQ(compared, 81);  // 27 types on 3 shapes
}

// The files llama-quantize wrote of the eco fixture (tests/data/
// llama_cpp_lowbit: 256 wide, 2 layers, 8 heads on 4 key/value heads, an
// output matrix of its own; the codebook files with an importance matrix):
// the plan for their tensors under their file type gives each the type the
// file holds.
TEST(LlamaMix, TheTypesOfLlamaQuantizesFilesInTestData) {
  const char* kFiles[] = {"Q2_K",  "Q3_K_M",  "IQ4_XS", "IQ4_NL", "Q5_0",  "Q5_1",
                          "IQ2_XXS", "IQ2_XS", "IQ2_M", "IQ3_XXS", "IQ1_S", "IQ1_M"};
  for (const std::string type : kFiles) {
    auto gguf = GgufFile::open(std::string(LLMPACK_TEST_DATA_DIR) + "/llama_cpp_lowbit/eco-llama-" + type + ".gguf");
    ASSERT_TRUE(gguf.ok()) << gguf.status().message();
    const GgufFile& f = **gguf;
    ExportOptions o;
    o.checkpoint = "model.gguf", o.output = "out.gguf", o.llama_mix = true;
    for (char c : type) o.dtype += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (f.find("quantize.imatrix.file") != nullptr) o.imatrix = "imatrix.gguf";
    auto resolved = resolve_export_options(o);
    ASSERT_TRUE(resolved.ok()) << type << ": " << resolved.status().message();
    EXPECT_EQ(f.get_uint("general.file_type"), gguf_file_type(resolved->dtype)) << type;
    SourceHyperparameters hp;
    hp.n_layers = static_cast<int64_t>(f.get_uint("llama.block_count").value_or(0));
    hp.n_heads = static_cast<int64_t>(f.get_uint("llama.attention.head_count").value_or(0));
    hp.n_kv_heads = static_cast<int64_t>(f.get_uint("llama.attention.head_count_kv").value_or(0));
    ASSERT_EQ(hp.n_heads / hp.n_kv_heads, 2) << type;
    int matrices = 0;
    for (const auto& info : f.tensors()) {
      if (info.ne.size() < 2) continue;
      SourceTensor t;
      t.name = info.name, t.dtype = info.dtype, t.ne = info.ne;
      EXPECT_EQ(plan_tensor_type(t, resolved->dtype, hp, "output.weight").type, info.dtype)
          << type << ": " << info.name;
      ++matrices;
    }
    EXPECT_EQ(matrices, 16) << type;
  }
}

// The names: llama-quantize's mixes by their own names; a single type's name
// stays that one type unless --llama_mix asks for its file type (whose base
// may be another type: IQ2_S files are mostly IQ2_XS); general.file_type is
// llama.cpp's number for each.
TEST(LlamaMix, NamesGiveTheFileTypeAndItsNumber) {
  struct Name {
    const char* dtype;
    bool llama_mix;
    bool is_mix;
    DType base;
    uint32_t file_type;
  };
  const Name names[] = {
      {"q4_0", false, false, DType::kQ4_0, 2},     {"q4_0", true, true, DType::kQ4_0, 2},
      {"q2_k", false, false, DType::kQ2_K, 10},    {"q2_k", true, true, DType::kQ2_K, 10},
      {"q2_k_s", false, true, DType::kQ2_K, 21},   {"q3_k_s", false, true, DType::kQ3_K, 11},
      {"q3_k_m", false, true, DType::kQ3_K, 12},   {"q3_k_l", false, true, DType::kQ3_K, 13},
      {"q3_k", true, true, DType::kQ3_K, 12},      {"q4_k_s", false, true, DType::kQ4_K, 14},
      {"Q4_K_M", false, true, DType::kQ4_K, 15},   {"q4_k", true, true, DType::kQ4_K, 15},
      {"q4_k", false, false, DType::kQ4_K, 14},    {"q5_k_s", false, true, DType::kQ5_K, 16},
      {"q5_k_m", false, true, DType::kQ5_K, 17},   {"q6_k", true, true, DType::kQ6_K, 18},
      {"iq2_xxs", true, true, DType::kIQ2_XXS, 19}, {"iq2_xs", true, true, DType::kIQ2_XS, 20},
      {"iq3_xs", false, true, DType::kIQ3_S, 22},  {"iq3_xxs", true, true, DType::kIQ3_XXS, 23},
      {"iq1_s", true, true, DType::kIQ1_S, 24},    {"iq4_nl", true, true, DType::kIQ4_NL, 25},
      {"iq3_s", true, true, DType::kIQ3_S, 26},    {"iq3_m", false, true, DType::kIQ3_S, 27},
      {"iq2_s", true, true, DType::kIQ2_XS, 28},   {"iq2_s", false, false, DType::kIQ2_S, 28},
      {"iq2_m", false, true, DType::kIQ2_S, 29},   {"iq4_xs", true, true, DType::kIQ4_XS, 30},
      {"iq1_m", true, true, DType::kIQ1_M, 31},    {"f16", true, false, DType::kF16, 1},
  };
  for (const Name& n : names) {
    ExportOptions o;
    o.checkpoint = "model.gguf", o.output = "out.gguf", o.dtype = n.dtype, o.llama_mix = n.llama_mix;
    auto resolved = resolve_export_options(o);
    ASSERT_TRUE(resolved.ok()) << n.dtype << ": " << resolved.status().message();
    const DTypePlan& plan = resolved->dtype;
    EXPECT_EQ(plan.mix != nullptr, n.is_mix) << n.dtype << (n.llama_mix ? " --llama_mix" : "");
    EXPECT_EQ(plan.matrix, n.base) << n.dtype;
    EXPECT_EQ(gguf_file_type(plan), n.file_type) << n.dtype;
  }
}

}  // namespace
}  // namespace llmpack
