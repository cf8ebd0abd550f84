"""What a cache entry holds: small Pydantic models, validated on every read.

An entry is JSON text: ``{"version", "created", "model", "completion"}`` for a chat completion
(the body as received), ``{"version", "created", "embeddings": {"model", "vectors", "usage"}}``
for an ``/v1/embeddings`` reply. Entries written before the version and the time were stored
(``{"model", "completion"}``) still read. Text is decoded with the bounded decoder
(`typedspy._json.loads`), as every other JSON path, then validated: text that is not JSON, is
nested past `MAX_JSON_DEPTH`, or does not fit the model is a `BadEntry`, which the cache turns
into a miss (or, in ``"replay"`` mode, a `CacheError`). Never a pickle, never a crash.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from typedspy._json import MAX_JSON_DEPTH, loads
from typedspy._types import Usage, first_error
from typedspy.errors import LMResponseError
from typedspy.lm import EmbeddingResponse, LMResponse

__all__ = [
    "ENTRY_VERSION",
    "BadEntry",
    "CompletionEntry",
    "EmbeddingsEntry",
    "completion_text",
    "embeddings_text",
    "read_completion",
    "read_embeddings",
]

ENTRY_VERSION: Literal[1] = 1
"""Version of the entries' layout, stored in each."""


class BadEntry(ValueError):
    """An entry's text that cannot be read: a miss (a `CacheError` in ``"replay"`` mode)."""


class _Entry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    version: Literal[1] = ENTRY_VERSION
    created: float | None = None  # seconds since the epoch; None in entries before version 1


_E = TypeVar("_E", bound=_Entry)


class CompletionEntry(_Entry):
    """A chat completion as received, and the model it was asked of."""

    model: str
    completion: dict[str, Any]


class _Vectors(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    vectors: list[list[float]]
    usage: tuple[int, int]  # prompt tokens, total tokens


class EmbeddingsEntry(_Entry):
    """An ``/v1/embeddings`` reply: its vectors and usage."""

    embeddings: _Vectors


def completion_text(response: LMResponse, created: float) -> str:
    """The entry text storing ``response``."""
    entry = CompletionEntry(model=response.model, completion=dict(response.raw), created=created)
    return entry.model_dump_json()


def embeddings_text(response: EmbeddingResponse, created: float) -> str:
    """The entry text storing an embeddings reply."""
    usage = (response.usage.prompt_tokens, response.usage.total_tokens)
    vectors = _Vectors(model=response.model, vectors=response.vectors, usage=usage)
    return EmbeddingsEntry(embeddings=vectors, created=created).model_dump_json()


def read_completion(text: str) -> LMResponse:
    """The response an entry holds.

    Raises:
        BadEntry: The text is not such an entry (the reason says why).
    """
    entry = _validated(CompletionEntry, text)
    try:
        return LMResponse.from_completion(entry.completion, model=entry.model)
    except LMResponseError as exc:
        raise BadEntry(f"not a chat completion: {exc}") from None


def read_embeddings(text: str) -> EmbeddingResponse:
    """The embeddings reply an entry holds.

    Raises:
        BadEntry: The text is not such an entry.
    """
    found = _validated(EmbeddingsEntry, text).embeddings
    prompt, total = found.usage
    return EmbeddingResponse(found.vectors, Usage(prompt, 0, total), found.model)


def _validated(model: type[_E], text: str) -> _E:
    try:
        return model.model_validate(loads(text, max_depth=MAX_JSON_DEPTH))
    except ValidationError as exc:
        count = exc.error_count()
        raise BadEntry(f"not a {model.__name__} ({count} errors; {first_error(exc)})") from None
    except ValueError as exc:  # not JSON, or past a limit (JSONLimitError names it)
        raise BadEntry(f"not JSON: {exc}") from None
