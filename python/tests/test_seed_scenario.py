"""The seed scenario with llmpack's imports: a package with S = 128 and C = 512
accepts prompts of 127, 128, 129 and 257 tokens (CONTRACT R1, R2, R6), and so
does a legacy package whose forward is bounded at B = S - 1."""

import json

import pytest

from conftest import C, S, prompt_of
from llmpack.runner import GenerationConfig, Stats, TextLLMRunner
from llmpack.runtime import Runtime

PROMPT_LENGTHS = [127, 128, 129, 257]


def contract_of(path):
    program = Runtime.get().load_program(str(path))
    max_seq_len = program.load_method("get_max_seq_len").execute([])[0]
    max_context_len = program.load_method("get_max_context_len").execute([])[0]
    token_meta = program.metadata("forward").input_tensor_meta(0)
    return max_seq_len, max_context_len, token_meta


def test_package_publishes_s_and_bound(package):
    max_seq_len, max_context_len, token_meta = contract_of(package)
    print("get_max_seq_len", max_seq_len, "forward token bound", token_meta.sizes()[1])
    assert max_seq_len == S
    assert max_context_len == C
    assert token_meta.sizes() == [1, S]
    assert token_meta.is_dynamic()


def test_legacy_package_publishes_bound_s_minus_1(legacy_package):
    max_seq_len, _, token_meta = contract_of(legacy_package)
    assert max_seq_len == S
    assert token_meta.sizes()[1] == S - 1


def run_lengths(path):
    runner = TextLLMRunner(str(path))
    for n in PROMPT_LENGTHS:
        pieces = []
        config = GenerationConfig(max_new_tokens=4, temperature=0, echo=False, ignore_eos=True)
        runner.generate(prompt_of(n), config, token_callback=pieces.append)
        stats = runner.stats
        assert stats.num_prompt_tokens == n, f"prompt meant to be {n} tokens"
        assert stats.num_generated_tokens == 4
        assert len(pieces) == 4
        runner.reset()
    return runner


@pytest.mark.parametrize("which", ["package", "legacy_package"])
def test_prompts_around_s_succeed(which, request):
    path = request.getfixturevalue(which)
    runner = run_lengths(path)
    assert runner.limits.max_seq_len == S
    assert runner.limits.token_bound == (S if which == "package" else S - 1)


def test_chunking_does_not_change_the_text(package, legacy_package):
    # R8: chunks of 128 and chunks of 127 give the same greedy continuation.
    texts = []
    for path in (package, legacy_package):
        runner = TextLLMRunner(str(path))
        config = GenerationConfig(max_new_tokens=12, temperature=0, echo=False, ignore_eos=True)
        texts.append(runner.generate_text(prompt_of(257), config))
    assert texts[0] == texts[1]
    assert texts[0] != ""


def test_callback_counts_and_stats(runner):
    pieces, reports = [], []
    prompt = "Once upon a time"
    config = GenerationConfig(max_new_tokens=10, temperature=0, ignore_eos=True)  # echo defaults to True
    runner.generate(prompt, config, token_callback=pieces.append, stats_callback=reports.append)
    assert len(pieces) == 10 + 1  # G2: max_new_tokens, plus the echoed prompt
    assert pieces[0] == prompt
    assert len(reports) == 1
    stats = reports[0]
    assert isinstance(stats, Stats)
    assert stats.num_generated_tokens == 10
    assert stats.num_prompt_tokens == runner.stats.num_prompt_tokens > 1
    assert stats.inference_start_ms <= stats.prompt_eval_end_ms <= stats.first_token_ms <= stats.inference_end_ms
    assert stats.model_load_start_ms <= stats.model_load_end_ms
    observed = json.loads(stats.to_json_string())
    assert list(observed) == [
        "prefill_token_per_sec", "decode_token_per_sec", "prompt_tokens", "generated_tokens",
        "model_load_start_ms", "model_load_end_ms", "inference_start_ms", "inference_end_ms",
        "model_execution_start_ms", "model_execution_end_ms", "prompt_eval_end_ms", "first_token_ms",
        "aggregate_sampling_time_ms", "aggregate_model_execution_time_ms", "SCALING_FACTOR_UNITS_PER_SECOND",
    ]
    assert observed["generated_tokens"] == 10
    assert observed["SCALING_FACTOR_UNITS_PER_SECOND"] == Stats.SCALING_FACTOR_UNITS_PER_SECOND == 1000


def test_greedy_text_matches_llama2c_golden(runner, stories_gguf):
    # From BOS alone, greedy decoding reproduces llama2.c's stories260K ids.
    from conftest import fixture_file

    golden = json.loads(fixture_file("llama2c/stories260K_greedy_256.json").read_text())
    program = Runtime.get().load_program(str(stories_gguf))
    forward = program.load_method("forward")
    token, ids = 1, []
    for pos in range(16):
        row = forward.execute([[token], pos])[0].tolist()[0]
        token = max(range(len(row)), key=row.__getitem__)
        ids.append(token)
    assert ids == golden["generated_ids"][:16]


def test_prompt_of_c_tokens_does_not_fit(runner):
    from llmpack import LlmpackError

    with pytest.raises(LlmpackError, match="does not fit"):
        runner.generate(prompt_of(C), GenerationConfig(max_new_tokens=1, echo=False))
    # R6: refused before any call, so the runner is still usable.
    runner.generate(prompt_of(C - 2), GenerationConfig(max_new_tokens=1, temperature=0, echo=False))
    assert runner.stats.num_prompt_tokens == C - 2
