"""llmpack: an on-device LLM runtime, with ExecuTorch's Python names.

Modules:
  llmpack.runtime  Runtime, Program, Method, MethodMeta, TensorInfo, Verification
                   (mirrors executorch.runtime)
  llmpack.runner   TextLLMRunner, GenerationConfig, Stats
                   (mirrors executorch.extension.llm.runner)
  llmpack.chat     ChatSession (multi-turn chat over a runner-owned KV cache)
"""

from llmpack._llmpack import LlmpackError

__version__ = "0.1.0"
__all__ = ["LlmpackError", "__version__"]
