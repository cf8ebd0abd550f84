"""Harder output shapes for the engine suites (issue #8's first pass on a real server)."""

from __future__ import annotations

import datetime
import enum
import uuid
from decimal import Decimal
from typing import Literal, Optional

from pydantic import BaseModel, Field

import typedspy as ts


class Note(BaseModel):
    text: str


class Link(BaseModel):
    url: str
    title: str


class Tag(BaseModel):
    label: Literal["red", "green"]


class Board(ts.Signature):
    """A list of a three-way union."""

    items: list[Note | Link | Tag] = ts.OutputField()


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Meeting(ts.Signature):
    """Dates, times, enums and optionals."""

    starts: datetime.datetime = ts.OutputField()
    day: datetime.date = ts.OutputField()
    colour: Colour = ts.OutputField()
    room: Optional[str] = ts.OutputField()  # noqa: UP045


class Node(BaseModel):
    name: str
    children: list[Node] = Field(default_factory=list)


class Outline(ts.Signature):
    """A recursive tree."""

    root: Node = ts.OutputField()


class Tally(ts.Signature):
    """A bounded mapping."""

    counts: dict[str, int] = ts.OutputField()
    total: int = ts.OutputField(ge=0, le=1000)


class Owner(BaseModel):
    email: str


class Invoice(ts.Signature):
    """UUIDs, decimals and an optional model."""

    invoice_id: uuid.UUID = ts.OutputField()
    amount: Decimal = ts.OutputField()
    owner: Owner | None = ts.OutputField()


SHAPES = (Board, Meeting, Outline, Tally, Invoice)
