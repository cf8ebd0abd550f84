"""A stand-in server with an LM on it, closed at the end (for evaluate and optimizer tests)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import typedspy as ts
from typedspy.testing import TICKET_FALLBACK, TICKET_STOPWORDS, NearestDemo, StandIn


@contextmanager
def served(
    answer: Callable[[dict[str, Any]], str] | None = None, **options: object
) -> Iterator[tuple[StandIn, ts.LM]]:
    """``(server, lm)``; the LM is the configured one inside the block."""
    with StandIn(answer=answer, **options) as server:  # type: ignore[arg-type]
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-standin", max_retries=0)
        try:
            with ts.context(lm=lm):
                yield server, lm
        finally:
            lm.close()


def nearest() -> NearestDemo:
    """The honest ticket model: answers like its closest demo (see NearestDemo)."""
    return NearestDemo(TICKET_FALLBACK, ignore=TICKET_STOPWORDS)
