"""llmpack.chat: ChatSession comes with the chat issue (CONTRACT C1-C7).

The C++ chat layer (src/chat) drives multi-turn conversations; its Python
binding is not written yet. Importing this module works; using ChatSession
raises NotImplementedError until then.
"""

__all__ = ["ChatSession"]


class ChatSession:
    def __init__(self, *args: object, **kwargs: object) -> None:
        raise NotImplementedError("llmpack.chat.ChatSession is not bound yet (see docs/PYTHON.md)")
