"""A ReAct run's state as Pydantic models: the trajectory, a paused run, answered pauses.

A `TrajectoryStep` is one model turn, its tool calls each with the observation sent back; the
trajectory renders as OpenAI tool messages or as plain text (ADR-037). A pause carries the run as
a `PausedRun` (ADR-069), saved with the signed `ResumeState` (ADR-052). A `ResumeStore` keeps
answered pauses by ``pause_id``, so a second resumption from one saved state replays the
observation instead of running the tool again (ADR-036; docs/confirmations.md).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, ValidationError, model_validator

from typedspy._types import Usage, first_error
from typedspy.errors import ConfigurationError, check_int
from typedspy.lm import ChatMessage
from typedspy.signature import Signature
from typedspy.tools import ResumeState, sent_name

__all__ = [
    "ACCEPTED",
    "CONTEXT_KEY",
    "DEFAULT_STORE",
    "FEEDBACK_LABEL",
    "MemoryResumeStore",
    "PausedRun",
    "ResumeRecord",
    "ResumeStore",
    "Trajectory",
    "TrajectoryCall",
    "TrajectoryStep",
]


ACCEPTED = "Done: the final answer was accepted."
"""The observation of a ``finish`` whose outputs were valid."""


# Same spirit as the retry feedback turn: the model must not take it for something a person said.
FEEDBACK_LABEL = "[Automated feedback from typedspy's agent loop, not a message from the user.]"


class TrajectoryCall(BaseModel):
    """One tool call and what came of it (a Pydantic model: it saves and loads as JSON).

    Attributes:
        id: The call id (the model's, or one typedspy made up when it sent none).
        name: The tool's name (``finish`` for the final answer).
        arguments: The arguments as JSON text, as the model wrote them (or as a user edited
            them before approving the call).
        observation: What the tool returned, or the error, as the model reads it; ``None``
            while the call waits for a confirmation.
        failed: Whether the observation reports that a tool call failed or was refused (not
            run, rejected by the person, invalid arguments, no such tool, the tool raised).
    """

    id: str
    name: str
    arguments: str
    observation: str | None = None
    failed: bool = False


class TrajectoryStep(BaseModel):
    """One model turn of an agent run.

    Attributes:
        reasoning: The model's text for this turn, if it wrote any.
        calls: The tool calls of the turn, in order.
        note: Set when the turn produced no usable call (plain text instead of a tool call, or
            a reply that could not be read), or calls past ReAct's bound that were left out:
            the feedback the model is shown for it.
    """

    reasoning: str | None = None
    calls: list[TrajectoryCall] = Field(default_factory=list)
    note: str | None = None


class Trajectory(list[TrajectoryStep]):
    """The steps of one agent run, in order (``pred.trajectory``): a list, and its renderings.

    Example:
        ```python
        pred = agent(question="...")
        for step in pred.trajectory:
            for call in step.calls:
                print(call.name, call.arguments, "->", call.observation)
        ```
    """

    def __repr__(self) -> str:
        return f"Trajectory({len(self)} steps, calls={[c.name for c in self.calls]})"

    @property
    def steps(self) -> list[TrajectoryStep]:
        """The steps (the trajectory itself, kept for code that reads ``.steps``)."""
        return self

    @property
    def calls(self) -> list[TrajectoryCall]:
        """Every tool call of the run, in order."""
        return [c for s in self for c in s.calls]

    def to_messages(self, cut: int = 0) -> list[ChatMessage]:
        """The steps as OpenAI chat messages, the first ``cut`` left out (said in a user turn).

        Each step with calls is an assistant message with ``tool_calls`` followed by one
        ``role: tool`` message per call, answering it by ``tool_call_id``; a name OpenAI refuses
        is sent as `sent_name` makes it (the observation names the model's own). A step's note
        is a user turn after them (a step without calls: after the assistant's text).
        """
        messages: list[ChatMessage] = [{"role": "user", "content": _cut_note(cut)}] if cut else []
        for step in self[cut:]:
            if not step.calls:
                messages.append({"role": "assistant", "content": step.reasoning or ""})
                messages.append({"role": "user", "content": f"{FEEDBACK_LABEL}\n{step.note}"})
                continue
            messages.append(
                {
                    "role": "assistant",
                    "content": step.reasoning,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": sent_name(c.name), "arguments": c.arguments},
                        }
                        for c in step.calls
                    ],
                }
            )
            messages.extend(
                {"role": "tool", "tool_call_id": c.id, "content": c.observation or ""}
                for c in step.calls
            )
            if step.note:
                messages.append({"role": "user", "content": f"{FEEDBACK_LABEL}\n{step.note}"})
        return messages

    def to_text(self, cut: int = 0) -> str:
        """The steps as plain text, for prompts without tool messages (``cut``: as above)."""
        if not self:
            return "(no steps yet)"
        blocks = [_cut_note(cut)] if cut else []
        for number, step in enumerate(self[cut:], cut + 1):
            lines = [f"## Step {number}"]
            if step.reasoning:
                lines.append(f"Reasoning: {step.reasoning}")
            for call in step.calls:
                lines.append(f"Call: {call.name} {call.arguments}")
                lines.append(f"Observation: {call.observation or ''}")
            if step.note:
                lines.append(f"Observation: {step.note}")
            blocks.append("\n".join(lines))
        return "\n\n".join(blocks)


def _cut_note(cut: int) -> str:
    return (
        f"(Steps 1 to {cut} are left out here to fit the model's context window: their calls "
        "were made and their results seen; do not repeat them without a reason.)"
    )


CONTEXT_KEY = "react"
"""The key of ReAct's state in ``ConfirmationRequired.context`` (other keys are left alone)."""


class PausedRun(BaseModel):
    """A ReAct run paused at ``trajectory[step].calls[call]``: ``context["react"]`` of its pause.

    The one record of a pause both ways (ADR-069); its JSON is the format saved since version 1.
    ``pause_id`` keys the answer in the `ResumeStore`; the signature covers it, so it is required
    (ADR-052). ``inner`` is the paused run of a sub-agent inside the pending call's tool, when
    the call that asks is that agent's (ADR-099): the answer goes to the innermost run.
    """

    model_config = ConfigDict(extra="ignore")

    version: Literal[1] = 1
    pause_id: str = Field(min_length=1)
    signature: str
    inputs: dict[str, Any]
    trajectory: list[TrajectoryStep]
    step: NonNegativeInt
    call: NonNegativeInt
    pending_call: TrajectoryCall | None = None
    mode: Literal["tools", "union"]
    tools: list[str]
    usage: Usage = Field(default_factory=Usage)
    inner: PausedRun | None = Field(default=None, exclude_if=lambda inner: inner is None)

    @model_validator(mode="after")
    def _pending(self) -> PausedRun:
        calls = self.trajectory[self.step].calls if self.step < len(self.trajectory) else []
        if self.call >= len(calls) or calls[self.call].observation is not None:
            raise ValueError(
                f"no pending call at trajectory[{self.step}].calls[{self.call}] "
                "(the call that paused has no observation yet)"
            )
        # Saved for readers of the JSON; always the trajectory's own call, never a second truth.
        self.pending_call = calls[self.call]
        return self

    @classmethod
    def read(cls, state: ResumeState, signature: type[Signature]) -> PausedRun:
        """The paused run ``state`` answers (as raised, or read back from JSON), validated anew.

        A fresh copy each time: the resumed run changes its steps, and one state may be
        resumed twice.

        Raises:
            ConfigurationError: The state was not raised by a ReAct run with this signature,
                it is malformed (the message names the path), or its tool call is not the call
                the run paused at.
        """
        saved = state.context.get(CONTEXT_KEY)
        if isinstance(saved, PausedRun):
            saved = saved.model_dump(mode="json")
        if not isinstance(saved, Mapping):
            raise ConfigurationError(
                "resume_state was not raised by a ReAct run: its context has no "
                f"{CONTEXT_KEY!r} entry"
            )
        name = saved.get("signature")
        if name != signature.__name__:
            raise ConfigurationError(
                f"resume_state belongs to a ReAct run over {name!r}, not {signature.__name__!r}"
            )
        try:
            paused = cls.model_validate(saved)
        except ValidationError as exc:
            raise ConfigurationError(
                f"resume_state holds a malformed ReAct state at {first_error(exc)}"
            ) from exc
        # The answer applies to the call it was asked for: the state's tool call is the paused one
        # (the innermost run's, when a sub-agent paused), by its id, unique in its step. Its name
        # may be another tool's: a confirm_first tool the paused call's tool called (ADR-101).
        innermost = paused
        while innermost.inner is not None:
            innermost = innermost.inner
        pending = innermost.trajectory[innermost.step].calls[innermost.call]
        name, given = state.tool_call.get("name"), state.tool_call.get("id")
        if given != pending.id:
            raise ConfigurationError(
                f"resume_state answers a call to {name!r} (id {given!r}), but the run "
                f"paused at a call to {pending.name!r} (id {pending.id!r})"
            )
        return paused


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
        check_int("MemoryResumeStore", "max_entries", max_entries, optional=False)
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


DEFAULT_STORE = MemoryResumeStore()
"""The process-wide store agents use when given none."""
