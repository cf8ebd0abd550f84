"""`FakeLM`: a scripted `BaseLM` for unit tests at the LM boundary (no HTTP at all)."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable

from typedspy._types import Usage
from typedspy.errors import LMError
from typedspy.lm import BaseLM, LMRequest, LMResponse

__all__ = ["FakeLM", "FakeReply"]

FakeReply = str | LMResponse | BaseException | Callable[[LMRequest], str | LMResponse]
"""One scripted reply: text, a full response, an exception to raise, or a function of the
request that returns text or a response."""

_CHARS_PER_TOKEN = 4  # rough, for usage only


class FakeLM(BaseLM):
    """A language model that answers with scripted replies, in order, and records requests.

    A ``str`` reply becomes a response with that text, ``finish_reason="stop"`` and usage
    estimated from character counts (about four characters per token). An `LMResponse` is
    returned as is, an exception is raised, and a callable is called with the request and its
    result used. Every request is appended to `requests`, also those answered by an exception.

    Example:
        ```python
        from typedspy.errors import LMRateLimitError
        from typedspy.testing import FakeLM

        lm = FakeLM(['{"answer": 4}', LMRateLimitError("slow down")])
        assert lm("What is 2 + 2?") == '{"answer": 4}'
        assert lm.requests[0].messages[-1]["content"] == "What is 2 + 2?"
        ```

    Args:
        replies: The scripted replies, consumed one per request.
        model: The model name to report.

    Attributes:
        requests: Every request received, in order.
    """

    def __init__(self, replies: Iterable[FakeReply], *, model: str = "fake") -> None:
        super().__init__(model)
        self._replies: deque[FakeReply] = deque(replies)
        self._scripted = len(self._replies)
        self._lock = threading.Lock()
        self.requests: list[LMRequest] = []

    @property
    def remaining(self) -> int:
        """How many scripted replies have not been used yet."""
        return len(self._replies)

    async def acomplete(self, request: LMRequest) -> LMResponse:
        """Record the request and answer with the next scripted reply.

        Args:
            request: The request (kept in `requests`).

        Returns:
            The next reply, as a response.

        Raises:
            LMError: The script is exhausted.
            BaseException: Whatever exception was scripted for this request.
        """
        with self._lock:
            self.requests.append(request)
            if not self._replies:
                raise LMError(f"FakeLM has no more replies ({self._scripted} were scripted)")
            reply = self._replies.popleft()
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply):
            reply = reply(request)
        if isinstance(reply, LMResponse):
            return reply
        return _text_response(reply, request, self.model)

    def __repr__(self) -> str:
        return f"FakeLM(model={self.model!r}, remaining={self.remaining})"

    def __getstate__(self) -> dict[str, object]:
        # Replies and requests pickle (scripted callables only if they are importable).
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state: dict[str, object]) -> None:
        vars(self).update(state)
        self._lock = threading.Lock()


def _text_response(text: str, request: LMRequest, model: str) -> LMResponse:
    prompt_chars = sum(len(str(message.get("content") or "")) for message in request.messages)
    prompt_tokens = -(-prompt_chars // _CHARS_PER_TOKEN)
    completion_tokens = -(-len(text) // _CHARS_PER_TOKEN)
    usage = Usage(
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        total_tokens=prompt_tokens + completion_tokens,
    )
    return LMResponse.build(text=text, model=model, usage=usage)
