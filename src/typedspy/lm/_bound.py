"""One bound on the HTTP requests of a call, the SDK's transport retries included (ADR-029).

typedspy retries a call's output (``max_retries`` semantic attempts) and the SDK retries each
request (``LM(max_retries=)`` transport attempts), so by default one call could send 9
requests. A `RequestBound` counts every request a call sends, retries included, and `LM` asks
it before each one: the SDK is given at most the retries the bound has left
(``client.with_options(max_retries=...)``, only when that is fewer than its own), and a request
the bound has no room for is not sent (`RequestLimitError`).

The bound of the running call lives in the call scope (`typedspy._scope`), set only around each
step that can send (never across a ``yield``), so it is never left behind in a consumer's
context. Bounds nest: a call made inside a step of a bounded run (a ReAct run's union step or
extraction) counts on its own bound and on the run's, and stops at whichever has less room
(ADR-043).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

from typedspy._scope import REQUEST_BOUND, current
from typedspy.errors import RequestLimitError

__all__ = ["RequestBound", "counted", "counted_stream"]

T = TypeVar("T")


class RequestBound:
    """How many requests one call may send, and how many it has sent.

    Args:
        limit: The most requests, transport retries included.
        owner: What the error names (the signature, the agent).
        parent: An enclosing bound every request also counts on (by default the bound active
            where this one is made: a call made inside a step of a bounded run).
        setting: How the user raises the limit, for the error message.
    """

    def __init__(
        self,
        limit: int,
        owner: str,
        *,
        parent: RequestBound | None = None,
        setting: str = "ts.context(max_requests=...)",
    ) -> None:
        self.limit = limit
        self.owner = owner
        self.parent = parent if parent is not None else current().request_bound
        self.setting = setting
        self.sent = 0

    def retries(self, wanted: int) -> int:
        """The SDK retries the next request may use (at most ``wanted``).

        Raises:
            RequestLimitError: The bound has no room for another request.
        """
        left = self.limit - self.sent
        if left <= 0:
            raise RequestLimitError(
                f"{self.owner}: max_requests={self.limit} reached ({self.sent} requests sent, "
                f"transport retries included); the next request was not sent. Raise it with "
                f"{self.setting}, or None for no bound",
                allowed=self.limit,
                requests=self.sent,
            )
        allowed = min(wanted, left - 1)
        return allowed if self.parent is None else self.parent.retries(allowed)

    def add(self, requests: int) -> None:
        """Count ``requests`` sent (on the enclosing bounds too)."""
        self.sent += requests
        if self.parent is not None:
            self.parent.add(requests)


async def counted(bound: RequestBound | None, send: Callable[[], Awaitable[T]]) -> T:
    """``await send()`` with ``bound`` active."""
    if bound is None:
        return await send()
    saved = REQUEST_BOUND.set(bound)
    try:
        return await send()
    finally:
        REQUEST_BOUND.restore(saved)


def counted_stream(bound: RequestBound | None, items: AsyncIterator[T]) -> AsyncIterator[T]:
    """Yield ``items``, the first step with ``bound`` active.

    The first step sends the request (the SDK's retries included); the later ones read its body
    and send nothing.
    """
    return REQUEST_BOUND.first_step(bound, items)
