"""Multi-turn chat over a runner-owned KV cache (CONTRACT C1-C7).

Each turn feeds only its new tokens: the session re-renders the conversation
with the chat template and keeps what the cache already holds (C3).

Example::

    from llmpack.chat import ChatSession
    from llmpack.runner import GenerationConfig

    chat = ChatSession("model.gguf", chat_template="chatml", system_prompt="Be brief.",
                       config=GenerationConfig(max_new_tokens=128, temperature=0.7))
    chat.add_user_message("Hello!")
    reply = chat.generate_reply(callback=lambda piece: print(piece, end="", flush=True))
    chat.save("conversation.llmchat")
"""

import atexit
import time
import weakref

from llmpack import _llmpack
from llmpack._llmpack import GenerationConfig, LlmpackError, Stats, chat_template_names

__all__ = ["ChatSession", "GenerationConfig", "LlmpackError", "Stats", "chat_template_names"]

_live: "weakref.WeakSet[ChatSession]" = weakref.WeakSet()


class ChatSession(_llmpack.ChatSession):
    __doc__ = _llmpack.ChatSession.__doc__

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        _live.add(self)


@atexit.register
def _stop_running_replies(timeout_s: float = 5.0) -> None:
    # As for TextLLMRunner: a daemon thread still generating a reply when the
    # interpreter exits is stopped and given time to return to Python.
    running = [s for s in list(_live) if s._busy()]
    for s in running:
        s.stop()
    deadline = time.monotonic() + timeout_s
    while any(s._busy() for s in running) and time.monotonic() < deadline:
        time.sleep(0.001)
