"""Text generation with executorch.extension.llm.runner's names.

Example::

    from llmpack.runner import GenerationConfig, TextLLMRunner

    runner = TextLLMRunner("stories.gguf")
    config = GenerationConfig(max_new_tokens=32, temperature=0, echo=False)
    runner.generate("Once upon a time", config, token_callback=lambda s: print(s, end=""))
    print(runner.stats.to_json_string())
"""

from llmpack._llmpack import GenerationConfig, LlmpackError, ModelLimits, Stats, TextLLMRunner

__all__ = ["GenerationConfig", "LlmpackError", "ModelLimits", "Stats", "TextLLMRunner"]
