"""A small shipped classification dataset with a union output: support-ticket routing.

24 tickets, six classes (two per union member), four tickets each; `support_tickets` splits
them into a train and a dev half with every class in both. Pair it with `NearestDemo` (and
`TICKET_STOPWORDS`) for an offline model whose score depends on the demos it is shown.
"""

from __future__ import annotations

from importlib import resources
from typing import Literal

from pydantic import BaseModel

from typedspy.evaluation import Example, load_dataset
from typedspy.signature import InputField, OutputField, Signature

__all__ = [
    "TICKET_FALLBACK",
    "TICKET_STOPWORDS",
    "Account",
    "Billing",
    "Bug",
    "RouteTicket",
    "support_tickets",
]


class Billing(BaseModel):
    """Money: refunds and invoices."""

    kind: Literal["refund", "invoice"]


class Bug(BaseModel):
    """Something is broken."""

    component: Literal["app", "web"]


class Account(BaseModel):
    """Access to or removal of an account."""

    action: Literal["reset_password", "close"]


class RouteTicket(Signature):
    """Route the support ticket to the team that handles it."""

    ticket: str = InputField()
    route: Billing | Bug | Account = OutputField()


TICKET_FALLBACK = '{"route":{"_type":"Bug","component":"app"}}'
"""What `NearestDemo` answers without a helpful demo: right for one class in six."""

TICKET_STOPWORDS = (
    "i", "my", "me", "the", "a", "an", "and", "on", "in", "of", "for", "is", "it", "to",
    "please", "when", "with", "all", "how", "do", "can", "where", "cannot", "never", "after",
)  # fmt: skip


def support_tickets() -> tuple[list[Example], list[Example]]:
    """The dataset as typed examples: (train, dev), 12 each, every class twice in each."""
    path = resources.files("typedspy.testing").joinpath("data", "support_tickets.jsonl")
    with resources.as_file(path) as file:
        examples = load_dataset(file, RouteTicket)
    return examples[:12], examples[12:]
