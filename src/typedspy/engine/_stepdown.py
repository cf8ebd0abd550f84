"""Stepping down when an endpoint refuses a feature: the one loop `Predict` and ReAct share.

An endpoint that answers that it does not support something (``response_format``, tools,
``parallel_tool_calls``) gets the call again without it, where the caller has a way down: a
`Predict` call steps down its profile's modes, a ReAct step leaves out ``parallel_tool_calls``
or falls back to the union step. The caller decides what changes; the loop is here, bounded.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TypeVar

from typedspy.errors import LMUnsupportedFeatureError
from typedspy.streaming import closing

__all__ = ["MAX_STEP_DOWNS", "stepping_down"]

E = TypeVar("E")

MAX_STEP_DOWNS = 4
"""The most times one call runs again on other terms (more than any profile has ways down)."""


async def stepping_down(
    run: Callable[[], AsyncIterator[E]],
    step_down: Callable[[LMUnsupportedFeatureError], bool],
) -> AsyncIterator[E]:
    """Yield ``run()``'s events; run it again each time ``step_down`` accepts a refusal.

    ``step_down`` changes what the next ``run()`` sends and returns True, or returns False to
    let the refusal end the call.

    Raises:
        LMUnsupportedFeatureError: A refusal ``step_down`` does not take, or the
            `MAX_STEP_DOWNS` + 1st.
    """
    for tried in range(MAX_STEP_DOWNS + 1):
        try:
            async with closing(run()) as events:
                async for event in events:
                    yield event
            return
        except LMUnsupportedFeatureError as exc:
            if tried == MAX_STEP_DOWNS or not step_down(exc):
                raise
