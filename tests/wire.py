"""Helpers for tests at the HTTP boundary: the real openai client under respx, and the
signatures of the recorded exchanges in ``tests/fixtures/recorded`` (see its README.md)."""

from __future__ import annotations

import json
import ssl
from pathlib import Path
from typing import Any, Literal, cast

import httpx
import openai
import respx
from pydantic import BaseModel

import typedspy as ts

RECORDED = Path(__file__).resolve().parent / "fixtures" / "recorded"
BASE_URL = "https://llm.test/v1"


def tls_context() -> ssl.SSLContext:
    # Loading the CA bundle costs ~0.2 s per client; respx answers before TLS anyway.
    return ssl.create_default_context()


def make_lm(
    *, max_retries: int = 0, model: str = "gpt-4o-mini", profile: str | ts.Profile | None = None
) -> ts.LM:
    """An LM over the real AsyncOpenAI client, on plain httpx so respx can route it (P1)."""
    client = openai.AsyncOpenAI(
        base_url=BASE_URL,
        api_key="sk-test",
        max_retries=max_retries,
        http_client=cast(Any, httpx.AsyncClient(verify=tls_context())),
    )
    return ts.LM(model, client=client, profile=profile)


def load(name: str) -> dict[str, Any]:
    """One recorded exchange."""
    data: dict[str, Any] = json.loads((RECORDED / name).read_text())
    return data


def sent(route: respx.Route) -> list[dict[str, Any]]:
    """The JSON bodies sent through ``route``, in order."""
    return [json.loads(call.request.content) for call in route.calls]


class Location(ts.Signature):
    """Report the weather."""

    question: str = ts.InputField()
    city: str = ts.OutputField()
    temperature: float = ts.OutputField()
    units: Literal["c", "f"] = ts.OutputField()


class Author(BaseModel):
    first_name: str
    last_name: str


class Book(ts.Signature):
    """Recommend a book."""

    request: str = ts.InputField()
    title: str = ts.OutputField()
    author: Author = ts.OutputField()
    rating: int = ts.OutputField()
