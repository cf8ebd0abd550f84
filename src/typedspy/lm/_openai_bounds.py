"""Bounds around the SDK's requests and streams: the request bound, stream sanity, chunk limits.

Helpers of `LM` (ADR-028, ADR-029): how many transport retries the SDK may take under the call's
`RequestBound` and how many requests a ``create`` counted; a streamed request answered with
something else than SSE, or whose chunks never hold a choice, is the endpoint's fault
(`LMResponseError` after one request, never a feedback turn to the model); a chunk the SDK
cannot decode for nesting or number length, or one nested past ``max_json_depth``, is
`LMResponseLimitError`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, TypeVar

import openai
from openai import AsyncOpenAI, OpenAI

from typedspy._json import JSONLimitError, depth_exceeded, number_too_long, too_deep
from typedspy.errors import LMResponseError, LMResponseLimitError
from typedspy.lm._bound import RequestBound

C = TypeVar("C", AsyncOpenAI, OpenAI)

__all__ = ["check_streamed", "count", "limit_error", "read_chunks", "within"]


def within(bound: RequestBound | None, client: C) -> tuple[C, int]:
    """The client for the next request, its SDK retries cut to what ``bound`` has left."""
    if bound is None:
        return client, client.max_retries
    retries = bound.retries(client.max_retries)  # raises when no request is left
    if retries < client.max_retries:
        client = client.with_options(max_retries=retries)
    return client, retries


def count(bound: RequestBound | None, outcome: object, retries: int) -> None:
    """Count the requests one ``create`` sent: exact on success, an upper bound on failure."""
    if bound is None:
        return
    if not isinstance(outcome, BaseException):
        bound.add(1 + int(getattr(outcome, "retries_taken", 0) or 0))
    elif isinstance(outcome, openai.APIStatusError) and not _retried(outcome.status_code):
        bound.add(1)
    elif isinstance(outcome, (openai.APIConnectionError, openai.APIStatusError)):
        bound.add(1 + retries)
    else:
        bound.add(1)  # refused before or after sending, never retried by the SDK


def _retried(status: int) -> bool:
    # The statuses the SDK retries (408, 409, 429, 5xx); others end at the first request.
    return status in (408, 409, 429) or status >= 500


def _chunk_too_deep(max_depth: int) -> JSONLimitError:
    limit = sys.getrecursionlimit()
    if max_depth < limit:  # the decoder gave up past the limit: the limit is what was passed
        return too_deep(max_depth)
    return JSONLimitError(
        f"a chunk nested deeper than the JSON decoder can read (about {limit} levels, "
        f"below max_json_depth {max_depth})",
        limit="max_json_depth",
        allowed=limit,
        offset=0,
        path=(),
    )


def check_streamed(model: str, content_type: str, redact: Callable[[str], str]) -> None:
    """Refuse a streamed request answered with something else than SSE (``stream`` ignored)."""
    if "text/event-stream" not in content_type.lower():
        raise LMResponseError(
            f"{model}: asked to stream, the endpoint answered with "
            f"{redact(content_type[:80]) or 'no content type'!r} instead of "
            "'text/event-stream' (does it ignore stream=true?)"
        )


def limit_error(model: str, exc: JSONLimitError, what: str) -> LMResponseLimitError:
    """The `LMResponseLimitError` for a body or chunk past a decoding limit."""
    return LMResponseLimitError(
        f"{model}: the endpoint {what} past a limit: {exc}", limit=exc.limit, allowed=exc.allowed
    )


async def read_chunks(
    stream: AsyncIterator[object],
    model: str,
    translate: Callable[[openai.OpenAIError], Exception],
    redact: Callable[[str], str],
    max_depth: int,
) -> AsyncIterator[Mapping[str, Any]]:
    """The decoded chunks of ``stream``; raises when none of them held a choice.

    The SDK decodes each chunk; one nested past ``max_depth`` is refused here (a walk over its
    few containers, ADR-048), one past what the decoder can read when it raises.
    """
    chose = False
    while True:
        try:
            data = await stream.__anext__()
        except StopAsyncIteration:
            break
        except openai.OpenAIError as exc:
            raise translate(exc) from exc
        except RecursionError:  # a chunk nested past what the SDK's json.loads can read
            raise limit_error(model, _chunk_too_deep(max_depth), "streamed a chunk") from None
        except ValueError as exc:  # a data line that is not JSON
            if "digits" in str(exc) and not isinstance(exc, json.JSONDecodeError):
                raise limit_error(model, number_too_long("", 0), "streamed a chunk") from None
            raise LMResponseError(
                f"{model}: the endpoint streamed a chunk that is not JSON: {redact(str(exc))[:200]}"
            ) from exc
        if isinstance(data, (dict, list)) and depth_exceeded(data, max_depth):
            raise limit_error(model, too_deep(max_depth), "streamed a chunk")
        if isinstance(data, Mapping):
            chose = chose or bool(data.get("choices"))
            yield data
    if not chose:  # the endpoint's fault, not the model's: no feedback turn (issue 10)
        raise LMResponseError(
            f"{model}: the endpoint streamed no choice (no chunk had a 'choices' entry): "
            "not a chat-completion stream"
        )
