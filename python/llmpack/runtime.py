"""Programs and methods of an llmpack package, with executorch.runtime's names.

Example::

    from llmpack.runtime import Runtime

    program = Runtime.get().load_program("stories.gguf")
    print(program.method_names)          # {'forward', 'get_max_seq_len', ...}
    s = program.load_method("get_max_seq_len").execute([])[0]
    meta = program.metadata("forward")
    bound = meta.input_tensor_meta(0).sizes()[1]   # B, forward's token bound
    logits = program.load_method("forward").execute([[1, 403, 407], 0])[0]
    row = logits.tolist()[0]             # float32 memoryview [1, vocab] -> list
"""

from __future__ import annotations

import enum
import functools
import os
from typing import Any, BinaryIO, Dict, List, Optional, Sequence, Set, Union

from llmpack._llmpack import LlmpackError, MethodMeta, TensorInfo
from llmpack import _llmpack

__all__ = [
    "LlmpackError",
    "Method",
    "MethodMeta",
    "MethodNotFoundError",
    "Program",
    "Runtime",
    "ScalarType",
    "TensorInfo",
    "Verification",
]


class MethodNotFoundError(LlmpackError, KeyError):
    """An unknown method name; a KeyError too, as ExecuTorch raises for it."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class Verification(enum.IntEnum):
    """Accepted for compatibility; llmpack always validates a package fully."""

    Minimal = 0
    InternalConsistency = 1


class ScalarType(enum.IntEnum):
    """torch.ScalarType codes returned by TensorInfo.dtype()."""

    Long = 4
    Float = 6
    Bool = 11


class Method:
    """One method of a Program: `forward` or a constant method."""

    def __init__(self, program: "_llmpack._Program", name: str) -> None:
        self._program = program
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def execute(self, inputs: Sequence[Any]) -> List[Any]:
        """Runs the method and returns its outputs as a list.

        Constant methods take no inputs and return ``[value]`` (an int, a bool,
        or a list of ints for get_eos_ids). ``forward`` takes
        ``[tokens, start_pos]``: tokens of shape [1, n] or [n] as a list of ints
        or any integer buffer (array.array, memoryview, numpy array), and the
        start position as an int or a one-element sequence; it returns
        ``[logits]``, a read-only float32 memoryview of shape [1, vocab] (a copy:
        it stays valid after later calls; ``numpy.asarray(logits)`` or
        ``logits.tolist()[0]``).
        """
        return self._program.execute(self._name, inputs)

    def __call__(self, inputs: Sequence[Any]) -> List[Any]:
        return self.execute(inputs)

    @property
    def metadata(self) -> MethodMeta:
        return self._program.method_meta(self._name)

    def __repr__(self) -> str:
        return f"Method({self._name!r})"


class Program:
    """A loaded package exposed as methods (CONTRACT P3, P4)."""

    def __init__(self, program: "_llmpack._Program") -> None:
        self._program = program
        self._names: List[str] = list(program.method_names())
        self._methods: Dict[str, Method] = {}

    @property
    def method_names(self) -> Set[str]:
        return set(self._names)

    def load_method(self, name: str) -> Method:
        """Returns the method; raises LlmpackError naming an unknown method."""
        if not isinstance(name, str):
            raise TypeError(f"method name must be a str, got {type(name).__name__}")
        method = self._methods.get(name)
        if method is None:
            if name not in self._names:
                raise MethodNotFoundError(
                    f"program has no method '{name}'; it has {', '.join(sorted(self._names))}"
                )
            method = Method(self._program, name)
            self._methods[name] = method
        return method

    def metadata(self, method_name: str) -> MethodMeta:
        return self._program.method_meta(method_name)


class Runtime:
    """The llmpack runtime; one per process (Runtime.get())."""

    @staticmethod
    @functools.lru_cache(maxsize=1)
    def get() -> "Runtime":
        return Runtime()

    def load_program(
        self,
        data: Union[bytes, bytearray, BinaryIO, "os.PathLike[str]", str],
        *,
        verification: Verification = Verification.InternalConsistency,
        cpu_threads: int = 0,
    ) -> Program:
        """Loads a package (GGUF, or a llama2.c checkpoint by path).

        ``data`` is a path, the package's bytes, or a binary file object.
        Raises FileNotFoundError for a missing path, LlmpackError for a file
        that is not a valid package (the message says what was wrong).
        """
        if not isinstance(verification, int):
            raise TypeError(f"verification must be a Verification, got {type(verification).__name__}")
        if isinstance(data, (str, os.PathLike)):
            return Program(_llmpack._load_program(os.fspath(data), cpu_threads))
        if isinstance(data, (bytes, bytearray, memoryview)):
            return Program(_llmpack._load_program_from_buffer(bytes(data), cpu_threads))
        if hasattr(data, "read"):
            content = data.read()
            if not isinstance(content, (bytes, bytearray)):
                raise TypeError(f"file object must be opened in binary mode, read() gave {type(content).__name__}")
            return Program(_llmpack._load_program_from_buffer(bytes(content), cpu_threads))
        raise TypeError(
            "data must be a path (str or os.PathLike), bytes, bytearray or a binary file object, "
            f"got {type(data).__name__}"
        )
