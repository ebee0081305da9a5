"""Errors map to Python exceptions carrying the library's message; bad
arguments never crash the interpreter."""

import pathlib

import pytest

import llmpack
from llmpack import LlmpackError
from llmpack.runner import GenerationConfig, TextLLMRunner


def test_llmpack_error_is_a_runtime_error():
    assert issubclass(LlmpackError, RuntimeError)
    assert llmpack.runner.LlmpackError is LlmpackError is llmpack.runtime.LlmpackError


def test_missing_files_raise_file_not_found(tmp_path, package):
    with pytest.raises(FileNotFoundError) as info:
        TextLLMRunner(str(tmp_path / "nope.gguf"))
    assert info.value.filename.endswith("nope.gguf")
    with pytest.raises(FileNotFoundError):
        TextLLMRunner(package, tmp_path / "nope.bin")


def test_damaged_file_raises_with_message(tmp_path):
    bad = tmp_path / "damaged.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 7)
    with pytest.raises(LlmpackError, match="damaged.gguf"):
        TextLLMRunner(bad)


def test_llama2c_checkpoint_needs_its_tokenizer():
    from conftest import fixture_file

    bin_path = fixture_file("llama2c/stories260K.bin")
    with pytest.raises(LlmpackError, match="tokenizer"):
        TextLLMRunner(bin_path)
    runner = TextLLMRunner(bin_path, fixture_file("llama2c/tok512.bin"))
    runner.generate("Once", GenerationConfig(max_new_tokens=3, temperature=0, echo=False, ignore_eos=True))
    assert runner.stats.num_generated_tokens == 3


@pytest.mark.parametrize("args", [(123,), (None,), ("a", 5), ([],)])
def test_wrong_argument_types_raise_type_error(args):
    with pytest.raises(TypeError):
        TextLLMRunner(*args)


def test_wrong_call_arguments(runner):
    with pytest.raises(TypeError):
        runner.generate(42, GenerationConfig())
    with pytest.raises(TypeError):
        runner.generate("Once", {"max_new_tokens": 3})
    with pytest.raises(TypeError, match="token_callback"):
        runner.generate("Once", GenerationConfig(), token_callback=5)
    with pytest.raises(TypeError, match="stats_callback"):
        runner.generate("Once", GenerationConfig(), stats_callback="x")
    with pytest.raises(ValueError):
        runner.warmup("Once", 0)
    with pytest.raises(ValueError):
        TextLLMRunner(runner_path(runner), cpu_threads=-1)


def runner_path(_runner):
    from conftest import FIXTURES

    return str(FIXTURES / "gguf" / "stories260K.gguf")


def test_invalid_utf8_prompt_and_odd_text(runner):
    # Odd but valid text: control characters, non-BMP, an embedded NUL.
    runner.generate("\x00\x01 \U0001F600 é", GenerationConfig(max_new_tokens=2, echo=True))
    assert runner.stats.num_prompt_tokens > 1
    with pytest.raises((UnicodeEncodeError, TypeError, ValueError)):
        runner.generate("\udcff", GenerationConfig(max_new_tokens=1))
