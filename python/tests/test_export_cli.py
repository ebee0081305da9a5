"""The seed scenario on packages written by `llmpack export` (E2, E3), when the
CLI is built: LLMPACK_CLI (set by ctest) or build/apps/llmpack/llmpack."""

import os
import pathlib
import subprocess

import pytest

from conftest import C, REPO, S, fixture_file, prompt_of
from llmpack.runner import GenerationConfig, TextLLMRunner
from llmpack.runtime import Runtime


def cli() -> str:
    candidates = [os.environ.get("LLMPACK_CLI", ""), str(REPO / "build" / "apps" / "llmpack" / "llmpack")]
    for c in candidates:
        if c and pathlib.Path(c).is_file():
            help_run = subprocess.run([c, "export", "--help"], capture_output=True, text=True)
            if help_run.returncode == 0:
                return c
    pytest.skip("llmpack CLI with the export command not built")


@pytest.mark.parametrize("token_bound", [None, S - 1])
def test_exported_package_takes_prompts_around_s(tmp_path, token_bound):
    exe = cli()
    out = tmp_path / "stories.gguf"
    cmd = [exe, "export", "--checkpoint", str(fixture_file("llama2c/stories260K.bin")),
           "--tokenizer_path", str(fixture_file("llama2c/tok512.bin")),
           "--max_seq_length", str(S), "--max_context_length", str(C), "--output", str(out)]
    if token_bound is not None:
        cmd += ["--token_bound", str(token_bound)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr

    program = Runtime.get().load_program(out)
    assert program.load_method("get_max_seq_len").execute([])[0] == S
    bound = program.metadata("forward").input_tensor_meta(0).sizes()[1]
    assert bound == (token_bound or S)

    runner = TextLLMRunner(out)
    for n in (127, 128, 129, 257):
        runner.generate(prompt_of(n), GenerationConfig(max_new_tokens=2, temperature=0, echo=False,
                                                       ignore_eos=True))
        assert runner.stats.num_prompt_tokens == n
        assert runner.stats.num_generated_tokens == 2
        runner.reset()
