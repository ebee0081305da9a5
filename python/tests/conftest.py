"""Shared fixtures for the llmpack Python tests.

Packages are written once per session from ../shared/fixtures/gguf/stories260K.gguf
with the contract keys set (S = 128, C = 512, B = 128, and the legacy B = 127).
Every test needing a fixture skips cleanly when ../shared/fixtures is absent.
"""

import os
import pathlib

import pytest

import llmpack._llmpack as native

REPO = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = pathlib.Path(os.environ.get("LLMPACK_FIXTURES", REPO.parent / "shared" / "fixtures"))

S = 128
C = 512


def fixture_file(relative: str) -> pathlib.Path:
    path = FIXTURES / relative
    if not path.exists():
        pytest.skip(f"fixture not found: {path} (../shared/fixtures absent)")
    return path


@pytest.fixture(scope="session")
def stories_gguf() -> pathlib.Path:
    return fixture_file("gguf/stories260K.gguf")


@pytest.fixture(scope="session")
def package(stories_gguf, tmp_path_factory) -> pathlib.Path:
    """S 128, C 512, B 128, dynamic shape, off-graph KV cache."""
    out = tmp_path_factory.mktemp("pkg") / "s128_c512.gguf"
    native._write_package(stories_gguf, out, S, C, S)
    return out


@pytest.fixture(scope="session")
def legacy_package(stories_gguf, tmp_path_factory) -> pathlib.Path:
    """The legacy export: B = S - 1 = 127 while S = 128 is published."""
    out = tmp_path_factory.mktemp("pkg") / "s128_c512_b127.gguf"
    native._write_package(stories_gguf, out, S, C, S - 1)
    return out


@pytest.fixture()
def runner(package):
    from llmpack.runner import TextLLMRunner

    return TextLLMRunner(str(package))


def prompt_of(n_tokens: int) -> str:
    """A prompt that tok512 encodes as exactly n_tokens with BOS: BOS + n - 1
    times '▁a' (SentencePiece pieces never span a space). Tests confirm the
    count with stats.num_prompt_tokens."""
    assert n_tokens >= 2
    return " ".join(["a"] * (n_tokens - 1))
