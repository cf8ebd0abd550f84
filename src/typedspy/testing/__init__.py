"""Test helpers: an offline OpenAI-compatible server, wire-format builders, schema data."""

from __future__ import annotations

from typing import TYPE_CHECKING

from typedspy.testing._datagen import generate_instance
from typedspy.testing._embeddings import embed_text
from typedspy.testing._fake_lm import FakeLM, FakeReply
from typedspy.testing._nearest import NearestDemo
from typedspy.testing._payloads import chat_chunk, chat_completion, error_body, sse_body
from typedspy.testing._quirks import Quirks
from typedspy.testing._tickets import (
    TICKET_FALLBACK,
    TICKET_STOPWORDS,
    Account,
    Billing,
    Bug,
    RouteTicket,
    support_tickets,
)

if TYPE_CHECKING:
    from typedspy.testing.standin import Reply, StandIn

__all__ = [
    "TICKET_FALLBACK",
    "TICKET_STOPWORDS",
    "Account",
    "Billing",
    "Bug",
    "FakeLM",
    "FakeReply",
    "NearestDemo",
    "Quirks",
    "Reply",
    "RouteTicket",
    "StandIn",
    "chat_chunk",
    "chat_completion",
    "embed_text",
    "error_body",
    "generate_instance",
    "sse_body",
    "support_tickets",
]


def __getattr__(name: str) -> object:
    # Imported on first use so `python -m typedspy.testing.standin` does not find the module
    # already loaded by this package (runpy warns about that on stderr).
    if name in ("Reply", "StandIn"):
        from typedspy.testing import standin

        return getattr(standin, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
