"""Which output mode a `Predict` call starts in, and stepping down when an endpoint refuses it.

``mode="auto"`` (the default setting) starts with the first mode of the LM's profile. When the
endpoint rejects ``response_format``, the call steps down the profile's list (the profile
remembers it, so later calls start lower) and runs again; an explicit mode never steps down.
``mode="think_then_format"`` first asks for a free answer, then runs ``auto`` with that answer
to write as the outputs (ADR-086).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from typing import cast, get_args

from typedspy.adapter import Mode
from typedspy.engine import CallPlan, Draft, DraftPlan, Event, run_call, run_draft, stepping_down
from typedspy.errors import ConfigurationError, LMUnsupportedFeatureError
from typedspy.lm import BaseLM
from typedspy.prediction import Prediction
from typedspy.settings import ModeSetting, get_settings
from typedspy.streaming import closing

__all__ = ["MODES", "TWO_STEP", "checked_mode", "run_stepping_down", "start_mode"]

logger = logging.getLogger("typedspy")
MODES: tuple[str, ...] = get_args(ModeSetting)
TWO_STEP = "think_then_format"
_STEPS_DOWN = ("auto", TWO_STEP)  # the modes whose structured request follows the profile


def checked_mode(mode: ModeSetting | None) -> str:
    """``mode``, else the ``mode`` setting.

    Raises:
        ConfigurationError: It is not one of `MODES`.
    """
    mode = mode or get_settings().mode
    if mode not in MODES:
        raise ConfigurationError(f"unknown mode {mode!r}; use one of {list(MODES)}")
    return mode


def start_mode(mode: str, lm: BaseLM) -> Mode:
    """The mode a call's structured request starts in: ``mode`` (checked), or the profile's.

    ``"auto"`` and ``"think_then_format"`` (its second request) start in the profile's mode.
    """
    if mode not in _STEPS_DOWN:
        return cast("Mode", mode)
    return lm.profile.auto_mode()


async def run_stepping_down(
    lm: BaseLM,
    plan: Callable[[Mode, Draft | None], CallPlan],
    *,
    draft: Callable[[], DraftPlan],
    asked: Callable[[], str],
    stream: bool,
) -> AsyncIterator[Event]:
    """Run the call planned for the start mode; step down the profile's modes while refused.

    In ``think_then_format`` the free answer comes first (`run_draft`, not streamed); the
    structured call gets it, and the `Prediction` has it as ``extras["free_answer"]``.

    Args:
        lm: The endpoint (one of a chain's, for a `FallbackLM`).
        plan: The call for a mode, with the free answer in ``think_then_format``.
        draft: The first request of a ``think_then_format`` call.
        asked: The mode asked for (checked): read when the call starts (`start_mode`), and
            again when the endpoint refuses (only ``"auto"`` and ``"think_then_format"`` step
            down).
        stream: Stream the call (events before the `Prediction`).

    Raises:
        LMUnsupportedFeatureError: Refused with an explicit mode, refused for another feature
            than ``response_format``, or refused in the profile's last mode.
    """
    await lm.aidentify()  # ADR-084: the profile is read from here on
    drafted = await run_draft(draft()) if asked() == TWO_STEP else None
    mode: Mode = start_mode(asked(), lm)

    def step_down(exc: LMUnsupportedFeatureError) -> bool:
        nonlocal mode
        if asked() not in _STEPS_DOWN or exc.feature != "response_format":
            return False
        step = lm.profile.next_mode(mode)  # remembered by the LM's profile
        if step is None:
            return False
        logger.warning(
            "%s rejected response_format %s (%s); falling back to %s for this LM",
            lm.model,
            mode,
            exc,
            step,
        )
        mode = step
        return True

    events = stepping_down(lambda: run_call(plan(mode, drafted), stream=stream), step_down)
    async with closing(events):
        async for event in events:
            if drafted is not None and isinstance(event, Prediction):
                event.extras["free_answer"] = drafted.text
            yield event
