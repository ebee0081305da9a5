"""Text generation with executorch.extension.llm.runner's names.

Example::

    from llmpack.runner import GenerationConfig, TextLLMRunner

    runner = TextLLMRunner("stories.gguf")
    config = GenerationConfig(max_new_tokens=32, temperature=0, echo=False)
    runner.generate("Once upon a time", config, token_callback=lambda s: print(s, end=""))
    print(runner.stats.to_json_string())
"""

import atexit
import time
import weakref

from llmpack import _llmpack
from llmpack._llmpack import GenerationConfig, LlmpackError, ModelLimits, Stats

__all__ = ["GenerationConfig", "LlmpackError", "ModelLimits", "Stats", "TextLLMRunner"]

_live: "weakref.WeakSet[TextLLMRunner]" = weakref.WeakSet()


class TextLLMRunner(_llmpack.TextLLMRunner):
    __doc__ = _llmpack.TextLLMRunner.__doc__

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        _live.add(self)


@atexit.register
def _stop_running_generations(timeout_s: float = 5.0) -> None:
    # A daemon thread still generating when the interpreter exits would be
    # ended while inside the engine. Stop it first and let it return to
    # Python (time.sleep releases the GIL for its callbacks).
    running = [r for r in list(_live) if r._busy()]
    for r in running:
        r.stop()
    deadline = time.monotonic() + timeout_s
    while any(r._busy() for r in running) and time.monotonic() < deadline:
        time.sleep(0.001)
