"""Reading one streamed completion: its chunks decoded, read with the client `Sender` picks.

The SDK decodes the server-sent events and raises error events (ADR-008); the chunks come out
as decoded JSON, checked by `read_chunks` (nesting, a stream without any choice). A sync call's
root task reads them with the blocking client (ADR-049), every other task with the async one;
an injected client is read on typedspy's background loop from a sync call. Closing the iterator
early closes the HTTP response, so the connection is released and the server sees the client go.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

import openai

from typedspy.lm._openai_bounds import check_streamed, read_chunks
from typedspy.lm._openai_send import Sender
from typedspy.streaming import closing

__all__ = ["stream_chunks"]


def stream_chunks(
    sender: Sender, kwargs: dict[str, Any], max_depth: int
) -> AsyncIterator[Mapping[str, Any]]:
    """The decoded chunks of one streamed request (``kwargs`` already ask for a stream)."""
    relayed = sender.relay(lambda: _chunks(sender, kwargs, max_depth))
    return relayed if relayed is not None else _chunks(sender, kwargs, max_depth)


async def _chunks(
    sender: Sender, kwargs: dict[str, Any], max_depth: int
) -> AsyncIterator[Mapping[str, Any]]:
    blocking = sender.blocking() is not None  # what `create` sends with, in this same task
    stream: Any = None
    try:
        raw = await sender.create(kwargs)
        try:
            kind = openai.Stream if blocking else openai.AsyncStream
            stream = raw.parse(to=kind[object])
        except openai.OpenAIError as exc:
            raise sender.translate(exc) from exc
        check_streamed(sender.model, raw.headers.get("content-type", ""), sender.redact)
        items = _each(stream) if blocking else stream
        chunks = read_chunks(items, sender.model, sender.translate, sender.redact, max_depth)
        async with closing(chunks):  # closed here, never left to the loop's finalizer hook
            async for data in chunks:
                yield data
    finally:
        if stream is not None:
            if blocking:
                stream.close()
            else:
                await stream.close()


async def _each(items: Iterable[object]) -> AsyncIterator[object]:
    """A blocking iterable read inside the task (nothing else runs on its loop meanwhile)."""
    for item in items:
        yield item
