"""Signatures and inputs the real-engine suite and its benchmark share."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

import typedspy as ts


class Person(BaseModel):
    name: str
    age: int


class Company(BaseModel):
    name: str
    employees: int


class Extract(ts.Signature):
    """Extract the entity the text is about."""

    text: str = ts.InputField()
    entity: Person | Company = ts.OutputField()


class Classify(ts.Signature):
    """Classify the sentiment of the review."""

    review: str = ts.InputField()
    sentiment: Literal["positive", "negative", "neutral"] = ts.OutputField()


TEXTS = [
    "Ada Lovelace was 36 when she died.",
    "Acme Corp employs 1200 people in Berlin.",
    "Grace Hopper, aged 85, was a computer pioneer.",
    "Initech has 300 staff.",
    "Linus is 28 years old and writes kernels.",
    "Globex Corporation has 5000 employees worldwide.",
    "Marie, 66, won two Nobel prizes.",
    "Umbrella Inc. employs 80 researchers.",
    "Alan Turing was 41.",
    "Hooli employs 20000 engineers.",
]

REVIEWS = [
    "I loved it, would buy again.",
    "Terrible. Broke after a day.",
    "It is a chair.",
    "Absolutely fantastic service!",
    "Worst purchase of my life.",
]
