"""`Trajectory`: what an agent did so far, as chat messages, as text, and as JSON.

One `TrajectoryStep` is one model turn: its reasoning (the assistant's text, if any) and the
tool calls it made, each with the observation the agent sent back. The same record renders as
OpenAI tool messages for endpoints with tool calling and as plain text for the fallback and
for answer extraction, and round-trips through JSON so a paused run can resume elsewhere: calls
and steps are Pydantic models, dumped and validated by Pydantic (ADR-037).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeVar, overload

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from typedspy.errors import ConfigurationError
from typedspy.lm import ChatMessage

__all__ = ["FEEDBACK_LABEL", "Trajectory", "TrajectoryCall", "TrajectoryStep"]

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
    """

    id: str
    name: str
    arguments: str
    observation: str | None = None

    def to_json(self) -> dict[str, Any]:
        """This call as JSON-ready data."""
        return self.model_dump(mode="json")

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TrajectoryCall:
        """Rebuild a call from `to_json` data.

        Raises:
            ConfigurationError: The data is not a call (the message names the field).
        """
        return _validated(cls, data)


class TrajectoryStep(BaseModel):
    """One model turn of an agent run.

    Attributes:
        reasoning: The model's text for this turn, if it wrote any.
        calls: The tool calls of the turn, in order.
        note: Set when the turn produced no usable call (plain text instead of a tool call, or
            a reply that could not be read): the feedback the model is shown for it.
    """

    reasoning: str | None = None
    calls: list[TrajectoryCall] = Field(default_factory=list)
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        """This step as JSON-ready data."""
        return self.model_dump(mode="json")

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TrajectoryStep:
        """Rebuild a step from `to_json` data.

        Raises:
            ConfigurationError: The data is not a step (the message names the field).
        """
        return _validated(cls, data)


M = TypeVar("M", bound=BaseModel)


def _validated(model: type[M], data: object) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        path = ".".join(str(p) for p in first["loc"]) or "(root)"
        raise ConfigurationError(
            f"malformed {model.__name__} data at {path}: {first['msg']}"
        ) from exc


_STEPS: TypeAdapter[list[TrajectoryStep]] = TypeAdapter(list[TrajectoryStep])


class Trajectory(Sequence[TrajectoryStep]):
    """The steps of one agent run, in order (``pred.trajectory``).

    Example:
        ```python
        pred = agent(question="...")
        for step in pred.trajectory:
            for call in step.calls:
                print(call.name, call.arguments, "->", call.observation)
        ```
    """

    def __init__(self, steps: Sequence[TrajectoryStep] = ()) -> None:
        self.steps: list[TrajectoryStep] = list(steps)

    @overload
    def __getitem__(self, index: int) -> TrajectoryStep: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[TrajectoryStep]: ...

    def __getitem__(self, index: int | slice) -> TrajectoryStep | Sequence[TrajectoryStep]:
        return self.steps[index]

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self) -> Iterator[TrajectoryStep]:
        return iter(self.steps)

    def __repr__(self) -> str:
        calls = [c.name for s in self.steps for c in s.calls]
        return f"Trajectory({len(self.steps)} steps, calls={calls})"

    def append(self, step: TrajectoryStep) -> None:
        """Add a step at the end."""
        self.steps.append(step)

    @property
    def calls(self) -> list[TrajectoryCall]:
        """Every tool call of the run, in order."""
        return [c for s in self.steps for c in s.calls]

    def to_messages(self) -> list[ChatMessage]:
        """The steps as OpenAI chat messages.

        Each step with calls is an assistant message with ``tool_calls`` followed by one
        ``role: tool`` message per call, answering it by ``tool_call_id``. A step without calls
        is the assistant's text followed by a user turn holding the note.
        """
        messages: list[ChatMessage] = []
        for step in self.steps:
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
                            "function": {"name": c.name, "arguments": c.arguments},
                        }
                        for c in step.calls
                    ],
                }
            )
            messages.extend(
                {"role": "tool", "tool_call_id": c.id, "content": c.observation or ""}
                for c in step.calls
            )
        return messages

    def to_text(self) -> str:
        """The steps as plain text, for prompts that cannot carry tool messages."""
        if not self.steps:
            return "(no steps yet)"
        blocks = []
        for number, step in enumerate(self.steps, 1):
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

    def to_json(self) -> list[dict[str, Any]]:
        """The steps as JSON-ready data (`from_json` rebuilds them), dumped by Pydantic."""
        dumped: list[dict[str, Any]] = _STEPS.dump_python(self.steps, mode="json")
        return dumped

    @classmethod
    def from_json(cls, data: object) -> Trajectory:
        """Rebuild a trajectory from `to_json` data, validated by Pydantic.

        Raises:
            ConfigurationError: The data is not a list of steps (the message names the path).
        """
        if not isinstance(data, list):
            raise ConfigurationError(f"a trajectory is a list of steps, not {type(data).__name__}")
        try:
            return cls(_STEPS.validate_python(data))
        except ValidationError as exc:
            first = exc.errors()[0]
            path = ".".join(str(p) for p in first["loc"])
            raise ConfigurationError(
                f"malformed trajectory data at {path}: {first['msg']}"
            ) from exc
