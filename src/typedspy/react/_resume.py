"""Resuming a paused run once: the store of answered pauses, and the answer applied.

A resumed run is a new `Run` set back to where the saved one paused (`restore`); its first
events are the paused call's, answered once, then the rest of that step's calls
(`resumed_step`).

Each pause of a ReAct run carries a ``pause_id`` (a random id made when the run paused). The
first resumption claims that id in a `ResumeStore` before the approved tool runs and records what
the call returned; a second resumption from the same saved state finds the record and replays
that observation instead of running the tool again (ADR-036). The default store lives in the
process; a web app that resumes in several processes passes a shared one (docs/confirmations.md).
A saved state's signature covers the pause id (ADR-052): a state cannot be given a new id to
pass for another pause.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from typedspy.errors import ConfigurationError, ResumeConflictError
from typedspy.react._calls import finished, started
from typedspy.react._run import Run
from typedspy.react._state import PausedRun, TrajectoryCall
from typedspy.signature import to_jsonable
from typedspy.streaming import StreamEvent, closing
from typedspy.tools import ResumeState, approvals

__all__ = [
    "MemoryResumeStore",
    "ResumeRecord",
    "ResumeStore",
    "answer_once",
    "default_resume_store",
    "restore",
    "resumed_step",
    "show_edits",
]

logger = logging.getLogger("typedspy")


@dataclass(frozen=True)
class ResumeRecord:
    """What a store holds for one answered pause.

    Attributes:
        action: The answer's action (``"approve"``, ``"edit"``, ``"reject"``, ``"feedback"``).
        observation: What the paused call returned, as the model read it; None while the call
            runs (or when the process running it stopped before it was recorded).
        failed: Whether that observation reports an error.
    """

    action: str
    observation: str | None = None
    failed: bool = False


@runtime_checkable
class ResumeStore(Protocol):
    """Where a ReAct agent records answered pauses, so an approval applies once.

    Both methods must be atomic with respect to each other for one key (a database row with the
    key as primary key does it: ``INSERT`` that fails on conflict, then ``UPDATE``).
    """

    async def claim(self, key: str, action: str) -> ResumeRecord | None:
        """Claim ``key`` for an answer with ``action``.

        Returns:
            None when this call claimed the key (the paused call is to run now); otherwise the
            record an earlier claim left.
        """
        ...

    async def record(self, key: str, observation: str, failed: bool) -> None:
        """Record what the paused call claimed under ``key`` returned."""
        ...


class MemoryResumeStore:
    """A `ResumeStore` in this process's memory, bounded to the ``max_entries`` newest keys.

    Args:
        max_entries: The most answered pauses remembered; the oldest are forgotten first.

    Raises:
        ConfigurationError: ``max_entries`` is not a positive int.
    """

    def __init__(self, max_entries: int = 10_000) -> None:
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
            raise ConfigurationError(f"max_entries must be an int >= 1, not {max_entries!r}")
        self.max_entries = max_entries
        self._records: OrderedDict[str, ResumeRecord] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._records)

    async def claim(self, key: str, action: str) -> ResumeRecord | None:
        """See `ResumeStore.claim`."""
        with self._lock:
            known = self._records.get(key)
            if known is not None:
                return known
            self._records[key] = ResumeRecord(action)
            while len(self._records) > self.max_entries:
                self._records.popitem(last=False)
            return None

    async def record(self, key: str, observation: str, failed: bool) -> None:
        """See `ResumeStore.record`."""
        with self._lock:
            known = self._records.get(key)
            action = known.action if known is not None else "approve"
            self._records[key] = ResumeRecord(action, observation, failed)


_DEFAULT = MemoryResumeStore()


def default_resume_store() -> MemoryResumeStore:
    """The process-wide store agents use when given none."""
    return _DEFAULT


def restore(run: Run[Any], point: PausedRun) -> None:
    """Set a new run back to where ``point`` paused: its tokens, its step and its tools.

    Tools the paused run did not have are removed; tools it had (added by module callbacks)
    that the agent lacks now are named in a warning.
    """
    run.usage = point.usage
    run.step = point.step
    for tool in list(run.calls.tools):
        if tool.name not in point.tools:
            run.calls.tools.remove(tool.name)
    missing = sorted(set(point.tools) - {t.name for t in run.calls.tools})
    if missing:
        logger.warning(
            "resuming %s without tools added during the paused run: %s",
            run.signature.__name__,
            ", ".join(missing),
        )


async def resumed_step(
    run: Run[Any], point: PausedRun, state: ResumeState, store: ResumeStore
) -> AsyncIterator[StreamEvent]:
    """The paused call answered (once, see `answer_once`), then the rest of its step's calls."""
    step = run.trajectory[run.step]
    call = step.calls[point.call]
    yield started(call)
    call.observation, failed = await answer_once(run, call, state, point.pause_id, store)
    yield finished(call, failed)
    async with closing(run.run_calls(step, point.call + 1)) as calls:
        async for event in calls:
            yield event


async def answer_once(
    run: Run[Any], call: TrajectoryCall, state: ResumeState, pause_id: str, store: ResumeStore
) -> tuple[str, bool]:
    """The paused call's observation (and whether it failed), once per pause.

    The first resumption claims ``pause_id`` and applies the person's answer; a second one
    with the same answer replays the recorded observation without running the tool.

    Raises:
        ResumeConflictError: The pause was answered differently before, or the earlier
            resumption has not recorded its outcome.
    """
    known = await store.claim(pause_id, state.action)
    if known is None:
        observation, failed = await _answer(run, call, state)
        await store.record(pause_id, observation, failed)
        return observation, failed
    if known.action != state.action:
        raise ResumeConflictError(
            f"this pause of {call.name} was already answered with {known.action!r}; "
            f"it cannot now be answered with {state.action!r}",
            pause_id=pause_id,
            action=known.action,
        )
    if known.observation is None:
        raise ResumeConflictError(
            f"this pause of {call.name} is being resumed elsewhere, or its resumption "
            "stopped while the tool ran; the tool is not run again",
            pause_id=pause_id,
            action=known.action,
        )
    logger.info("pause %s was resumed before: %s is not run again", pause_id, call.name)
    show_edits(call, state)
    return known.observation, known.failed


async def _answer(run: Run[Any], call: TrajectoryCall, state: ResumeState) -> tuple[str, bool]:
    """The paused call's observation, from the person's answer (and whether it failed)."""
    if state.action == "reject":
        return f"The user rejected this call to {call.name}; it was not run.", True
    if state.action == "feedback":
        return (
            f"The user did not run this call to {call.name} and said: {state.feedback}",
            True,
        )
    with approvals(state):  # the decision is consumed by this call, or dropped on exit
        observation, failed = await run.calls.run_checked(call)
    if not show_edits(call, state):
        return observation, failed
    return f"(The user edited the arguments before approving the call.) {observation}", failed


def show_edits(call: TrajectoryCall, state: ResumeState) -> bool:
    """Show the call with the person's edits, if any (and say whether there were any)."""
    edited = state.edited_arguments
    if edited is None:
        return False
    # What ran: the edits over the paused call's validated arguments, as the tools layer
    # merges them; the model then reads the call as it was really made.
    original = state.tool_call.get("arguments")
    merged = {**(original if isinstance(original, Mapping) else {}), **edited}
    call.arguments = json.dumps(to_jsonable(merged), ensure_ascii=False, separators=(",", ":"))
    return True
