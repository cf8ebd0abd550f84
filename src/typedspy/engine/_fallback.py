"""One module call over a `FallbackLM`: the whole call on each endpoint in turn (ADR-022).

Each endpoint gets a request built for its own profile and its own feedback retries; the chain
moves on only when that call ends in a trigger the user chose, and never once an event has
reached a streaming caller.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable

from typedspy.engine._attempts import Event
from typedspy.lm import BaseLM, FallbackLM, Skipped
from typedspy.prediction import Prediction
from typedspy.streaming import closing

__all__ = ["over_chain"]

logger = logging.getLogger("typedspy")


async def over_chain(
    chain: FallbackLM,
    call: Callable[[BaseLM], AsyncIterator[Event]],
    *,
    schema_sent: Callable[[BaseLM], bool],
    stream: bool,
) -> AsyncIterator[Event]:
    """Run ``call`` on each endpoint of ``chain`` until one ends without a chosen trigger.

    The `Prediction` gets ``extras["fallback"]``: a `FallbackTrace` naming the endpoint that
    answered and the ones skipped.

    Raises:
        Whatever the last endpoint's call raised, or a failure that is not a chosen trigger.
    """
    skipped: list[Skipped] = []
    last = len(chain.lms) - 1
    for index, lm in enumerate(chain.lms):
        started = False
        try:
            async with closing(call(lm)) as events:
                async for event in events:
                    if isinstance(event, Prediction):
                        event.extras["fallback"] = chain.trace(index, skipped)
                    else:  # without streaming, events never reach the caller
                        started = stream
                    yield event
            return
        except Exception as exc:
            trigger = chain.trigger(exc, schema_sent=schema_sent(lm))
            if started or index == last or trigger is None:
                raise
            logger.warning(
                "fallback: %s failed (%s: %s); trying %s",
                lm.model,
                trigger,
                type(exc).__name__,
                chain.lms[index + 1].model,
            )
            skipped.append(Skipped(index, lm.model, trigger, exc))
