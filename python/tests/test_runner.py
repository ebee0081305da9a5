"""TextLLMRunner behaviour through Python: prefill/generate (R7), reset (G6),
warmup (G7), seeds (G5), stop strings, callbacks and error mapping."""

import pytest

from conftest import prompt_of
from llmpack import LlmpackError
from llmpack.runner import GenerationConfig, TextLLMRunner

GREEDY = dict(temperature=0, echo=False, ignore_eos=True)


def test_prefill_then_generate_empty_continues(runner):
    # prefill samples the first new token with its own config: greedy here too
    # (a default config samples it at temperature 0.8 with a fresh seed, so it
    # was "," in most runs and " there" in some)
    runner.prefill("Once upon a time", GenerationConfig(**GREEDY))
    assert runner.position > 1
    pieces = []
    runner.generate("", GenerationConfig(max_new_tokens=5, **GREEDY), token_callback=pieces.append)
    assert len(pieces) == 5
    # The same text as generating from the prompt directly.
    runner.reset()
    direct = runner.generate_text("Once upon a time", GenerationConfig(max_new_tokens=5, **GREEDY))
    assert "".join(pieces) == direct


def test_generate_empty_without_prefill_is_an_error(runner):
    with pytest.raises(LlmpackError, match="prefill"):
        runner.generate("", GenerationConfig(max_new_tokens=3))


def test_reset_gives_a_fresh_runner(runner, package):
    config = GenerationConfig(max_new_tokens=8, **GREEDY)
    first = runner.generate_text("Lily", config)
    runner.generate_text("Tom", config)
    runner.reset()
    assert runner.position == 0
    assert runner.generate_text("Lily", config) == first
    assert TextLLMRunner(str(package)).generate_text("Lily", config) == first


def test_warmup_leaves_no_trace(runner):
    runner.warmup("Once", 4)
    assert runner.position == 0
    assert runner.is_loaded()


def test_seed_repeats_and_temperature_above_one(runner):
    config = GenerationConfig(max_new_tokens=20, temperature=1.5, seed=1234, echo=False, ignore_eos=True)
    a = runner.generate_text("Once", config)
    runner.reset()
    b = runner.generate_text("Once", config)
    assert a == b and a != ""


def test_stop_string_ends_generation(runner):
    full = runner.generate_text("Once upon a time", GenerationConfig(max_new_tokens=30, **GREEDY))
    words = full.split()
    assert len(words) > 3
    stop = words[2]
    runner.reset()
    cut = runner.generate_text("Once upon a time",
                               GenerationConfig(max_new_tokens=30, stop=[stop], **GREEDY))
    assert stop not in cut
    assert full.startswith(cut)
    assert len(cut) < len(full)


def test_budget_error_names_the_numbers(runner):
    with pytest.raises(LlmpackError, match="budget"):
        runner.generate(prompt_of(10), GenerationConfig(seq_len=5, echo=False))


def test_generate_accepts_default_config(runner):
    runner.generate("Once", None, token_callback=None)
    assert runner.stats.num_generated_tokens >= 1


def test_callback_exception_propagates_and_stops(runner):
    seen = []

    def callback(piece):
        seen.append(piece)
        if len(seen) == 3:
            raise ValueError("boom from the callback")

    with pytest.raises(ValueError, match="boom from the callback"):
        runner.generate("Once", GenerationConfig(max_new_tokens=100, **GREEDY), token_callback=callback)
    assert len(seen) == 3  # nothing is delivered after the exception
    # The runner is still usable.
    runner.reset()
    assert runner.generate_text("Once", GenerationConfig(max_new_tokens=2, **GREEDY)) != ""


def test_stats_callback_exception_propagates(runner):
    def bad_stats(stats):
        raise KeyError("stats")

    with pytest.raises(KeyError):
        runner.generate("Once", GenerationConfig(max_new_tokens=2, **GREEDY), stats_callback=bad_stats)


def test_reentrant_call_from_callback_is_refused(runner):
    def callback(piece):
        runner.generate("again", GenerationConfig(max_new_tokens=1))

    with pytest.raises(LlmpackError, match="busy"):
        runner.generate("Once", GenerationConfig(max_new_tokens=5, **GREEDY), token_callback=callback)


def test_keyboard_interrupt_stops_generation(runner):
    import _thread

    seen = []

    def callback(piece):
        seen.append(piece)
        if len(seen) == 5:
            _thread.interrupt_main()  # what Ctrl-C does

    with pytest.raises(KeyboardInterrupt):
        runner.generate("Once", GenerationConfig(max_new_tokens=200, **GREEDY), token_callback=callback)
    assert len(seen) == 5
    assert runner.stats.num_generated_tokens < 200


def test_limits_and_eos(runner):
    runner.load()
    assert runner.limits.max_context_len == 512
    assert runner.limits.prefill_chunk() == 128
    assert 2 in runner.eos_ids


def test_kv_dtype_picks_the_cache_and_unknown_is_refused(package):
    # f16 is the default cache; f32 and q8_0 give nearly the same greedy text
    # (stories260K's first tokens agree across the three), an unknown name is a ValueError.
    config = GenerationConfig(max_new_tokens=12, **GREEDY)
    texts = {}
    for kv in ("f16", "f32", "q8_0"):
        texts[kv] = TextLLMRunner(str(package), kv_dtype=kv).generate_text("Once upon a time", config)
        assert texts[kv]
    assert TextLLMRunner(str(package)).generate_text("Once upon a time", config) == texts["f16"]
    assert texts["f32"] == texts["f16"]
    with pytest.raises(ValueError, match="kv_dtype"):
        TextLLMRunner(str(package), kv_dtype="f64")
