"""Usage meters: what the requests sent inside a block cost, for batch items and budgets.

A call's own ``token_budget`` counts on a `Spent`, where a reply that reported no usage counts
at its estimate as it does in a `Budget` (`usage_counted`, ADR-090, ADR-091).
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Generator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

from typedspy._scope import METERS, SPENT, current
from typedspy._types import Usage
from typedspy.lm import EmbeddingResponse, LMRequest, LMResponse

__all__ = [
    "Spent",
    "UsageMeter",
    "completion_cap",
    "estimate_tokens",
    "metering",
    "record",
    "record_sent",
    "spending",
    "usage_counted",
]

T = TypeVar("T")

_CHARS_PER_TOKEN = 4  # a rough average for English text and JSON; only used before a reply


class UsageMeter:
    """Counts the requests sent (and answered from the cache) inside a `metering` block.

    Attributes:
        requests: Requests that went to the endpoint (answered or not).
        cached: Requests answered from the response cache instead.
        usage: Tokens the endpoint reported for the requests it answered.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests = 0
        self.cached = 0
        self.usage = Usage()

    def sent(self) -> None:
        """Count one request sent to the endpoint, whether a reply comes or not."""
        with self._lock:
            self.requests += 1

    def add(self, usage: Usage, *, cached: bool = False) -> None:
        """Count one answered request's usage (counted `sent` before), or one cache hit."""
        with self._lock:
            if cached:
                self.cached += 1
            else:
                self.usage += usage

    def __repr__(self) -> str:
        return f"UsageMeter(requests={self.requests}, cached={self.cached}, usage={self.usage})"


@contextmanager
def metering(meter: UsageMeter) -> Generator[UsageMeter, None, None]:
    """Count every request sent in this block (and in tasks it starts) on ``meter``.

    Blocks nest: a request is counted on every enclosing meter.
    """
    saved = METERS.set((*current().meters, meter))
    try:
        yield meter
    finally:
        METERS.restore(saved)


def record(usage: Usage, *, cached: bool = False) -> None:
    """Count one answered request's usage (or one cache hit) on every meter of the context."""
    for meter in current().meters:
        meter.add(usage, cached=cached)


def record_sent() -> None:
    """Count one request going to the endpoint on every meter of the current context.

    Counted when it is sent, not when it is answered: a request cut by a timeout or answered
    with an error still went to the endpoint.
    """
    for meter in current().meters:
        meter.sent()


def estimate_tokens(request: LMRequest) -> int:
    """Prompt tokens ``request`` will cost, estimated from its size (messages, schema, tools).

    Used before a reply reports the real count: rate limits charge it up front and reconcile,
    budgets refuse a request whose estimate does not fit.
    """
    parts: list[object] = [request.messages]
    if request.response_format is not None:
        parts.append(request.response_format)
    if request.tools:
        parts.append(request.tools)
    size = len(json.dumps(parts, ensure_ascii=False, default=str))
    return max(1, size // _CHARS_PER_TOKEN)


def usage_counted(
    reply: LMResponse | EmbeddingResponse, estimate: int | LMRequest
) -> tuple[Usage, bool]:
    """The usage budgets and rate limits count for ``reply``, and whether the endpoint reported it.

    A reply that reports no tokens at all (llama-cpp-python's streams, servers that leave
    ``usage`` out) still cost some: it counts its prompt's ``estimate`` (or `estimate_tokens`
    of the request given, made only then) and its own text at the same rate per token, so a
    token limit is not passed unseen (ADR-090).
    """
    usage = reply.usage
    if usage.prompt_tokens or usage.completion_tokens or usage.total_tokens:
        return usage, True
    if isinstance(estimate, LMRequest):
        estimate = estimate_tokens(estimate)
    if isinstance(reply, EmbeddingResponse):
        return Usage(estimate, 0, estimate), False
    texts = [reply.text, reply.refusal, reply.reasoning]
    texts += [call.name + call.arguments for call in reply.tool_calls]
    written = -(-sum(len(t) for t in texts if t) // _CHARS_PER_TOKEN)  # rounded up
    return Usage(estimate, written, estimate + written), False


class Spent:
    """The tokens a call's (or a ReAct run's) ``token_budget`` counts (ADR-091).

    Each reply counts what it reported, or its estimate when it reported nothing
    (`usage_counted`). A call made inside a `spending` block counts on that block's too.

    Attributes:
        tokens: The tokens counted so far.
        estimated: Whether some of them are an estimate.
        parent: The `Spent` every reply also counts on (the one of the `spending` block
            this one is made in).
    """

    __slots__ = ("estimated", "parent", "tokens")

    def __init__(self, tokens: int = 0) -> None:
        self.tokens = tokens
        self.estimated = False
        self.parent = current().spent

    def add(self, reply: LMResponse, request: LMRequest) -> None:
        """Count ``reply`` (to ``request``) here and on the enclosing counts."""
        usage, reported = usage_counted(reply, request)
        spent: Spent | None = self
        while spent is not None:
            spent.tokens += usage.total_tokens
            spent.estimated = spent.estimated or not reported
            spent = spent.parent

    def __str__(self) -> str:
        note = ", replies that reported no usage at an estimate" if self.estimated else ""
        return f"{self.tokens} tokens counted{note}"


def spending(spent: Spent, items: AsyncIterator[T]) -> AsyncIterator[T]:
    """Yield ``items``, whose calls (made in the first step) count on ``spent`` too."""
    return SPENT.first_step(spent, items)


def completion_cap(request: LMRequest, defaults: Mapping[str, Any] | None = None) -> int | None:
    """The completion cap ``request`` is sent with, or ``None`` when it has none.

    That is ``max_completion_tokens`` or ``max_tokens`` (the smaller, when both are set) of the
    request's ``params`` over the LM's ``defaults``, as `LM` merges them (``None`` unsets one).
    """
    merged = {**(defaults or {}), **request.params}
    caps = [
        value
        for name in ("max_completion_tokens", "max_tokens")
        if isinstance(value := merged.get(name), int) and not isinstance(value, bool) and value > 0
    ]
    return min(caps, default=None)
