"""Human in the loop, the tool side: ``confirm_first``, the pause signal, and resuming.

A tool marked with `confirm_first` does not run on its first call: `Tool.acall` raises
`ConfirmationRequired` with a question and a stable ``confirmation_id`` (a hash of the tool name
and the canonical JSON of its validated arguments). The caller asks a human, wraps the answer in
a `ResumeState`, and calls again inside ``with ts.resume(state):``; the same call now finds its
decision in the current context and runs (approve, or approve with edited arguments) or raises
`ConfirmationRejected` (reject, or free-text feedback for the model).

This module holds the mark and the answer; the signal, the mark's reading and the per-context
record of decisions are in `typedspy.tools._approvals`, which `Tool` uses.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, overload

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    ValidationError,
    field_validator,
)
from pydantic_core import PydanticSerializationError

from typedspy._types import format_path
from typedspy.errors import ConfigurationError, ToolError
from typedspy.program import Module
from typedspy.signature import to_jsonable
from typedspy.tools._approvals import (
    MARK,
    ConfirmationRequired,
    ConfirmMark,
    Question,
    ResumeAction,
    approve,
    reject,
)
from typedspy.tools._tool import Tool

__all__ = ["ResumeState", "confirm_first"]

T = TypeVar("T")

_APPROVE = frozenset({"yes", "y", "approve"})
_REJECT = frozenset({"no", "n", "reject", ""})


@overload
def confirm_first(target: T, /) -> T: ...
@overload
def confirm_first(*, question: Question | None = None) -> Callable[[T], T]: ...
def confirm_first(target: Any = None, /, *, question: Question | None = None) -> Any:
    """Require a person's confirmation before a tool runs.

    Use it bare or with a question, on a `Tool`, a plain function (before or after ``@ts.tool``:
    the order does not matter), a `Module` subclass or a module instance. A function or module
    is only marked: the confirmation happens where it is called as a tool (`Tool.acall`,
    ``Toolset``, ReAct), not when the function is called directly. A `Tool` is copied, so the
    original stays unconfirmed.

    Example:
        ```python
        @ts.confirm_first(question="Delete {path}?")
        @ts.tool
        def delete_file(path: str) -> str:
            ...
        ```

    Args:
        target: What to mark (when used bare).
        question: A ``str.format`` template over the arguments, or a function from the
            arguments to the question; default ``"Run <tool> with <arguments>?"``.

    Raises:
        ToolError: ``target`` cannot carry the mark (a builtin or bound method).
    """
    if target is None:
        return lambda obj: _mark(obj, question)
    return _mark(target, question)


def _mark(obj: T, question: Question | None) -> T:
    if isinstance(obj, Tool):
        return obj.with_confirmation(question)  # type: ignore[return-value]
    if not (isinstance(obj, Module) or callable(obj)):
        raise ToolError(f"confirm_first needs a Tool, Module or function, not {obj!r}")
    try:
        setattr(obj, MARK, ConfirmMark(question))
    except (AttributeError, TypeError) as exc:
        raise ToolError(
            f"confirm_first cannot mark {obj!r}; wrap it first: confirm_first(ts.tool(fn))"
        ) from exc
    return obj


# -- the person's answer -------------------------------------------------------------------


@dataclass
class ResumeState:
    """A paused call and the person's answer to it; JSON round-trips for later resumption.

    The answer decides the action: ``"yes"``/``"y"``/``"approve"`` or True approve;
    ``"no"``/``"n"``/``"reject"``, an empty answer or False reject; a mapping approves with those
    arguments edited (merged over the original ones, validated again); any other text is
    feedback: the tool does not run and the text goes back to the model. Words are matched
    case-insensitively, ignoring surrounding spaces and a trailing ``.`` or ``!``.

    Attributes:
        exception: The `ConfirmationRequired` being answered.
        response: The answer as given.
    """

    exception: ConfirmationRequired
    response: str | Mapping[str, Any] | bool
    action: ResumeAction = field(init=False)

    def __post_init__(self) -> None:
        self.action = _classify(self.response)

    @property
    def confirmation_id(self) -> str:
        """The paused call's id."""
        return self.exception.confirmation_id

    @property
    def question(self) -> str:
        """The question that was asked."""
        return self.exception.question

    @property
    def tool_call(self) -> dict[str, Any]:
        """The paused tool call: name, arguments and, when set, id."""
        return self.exception.tool_call

    @property
    def context(self) -> dict[str, Any]:
        """The orchestrator's saved state."""
        return self.exception.context

    @property
    def approved(self) -> bool:
        """True for approve and edit: the tool will run."""
        return self.action in ("approve", "edit")

    @property
    def rejected(self) -> bool:
        """True for a plain rejection (feedback is neither approved nor rejected)."""
        return self.action == "reject"

    @property
    def edited_arguments(self) -> dict[str, Any] | None:
        """The edited arguments when the answer was a mapping, else None."""
        return dict(self.response) if isinstance(self.response, Mapping) else None

    @property
    def feedback(self) -> str | None:
        """The free-text answer when it was feedback, else None."""
        return (
            self.response.strip()
            if self.action == "feedback" and isinstance(self.response, str)
            else None
        )

    def apply(self) -> None:
        """Record this answer in the current context (what `resume` does on entry)."""
        if self.action == "approve":
            approve(self.confirmation_id)
        elif self.action == "edit":
            approve(self.confirmation_id, self.edited_arguments)
        else:
            reject(self.confirmation_id, self.feedback)

    def to_dict(self) -> dict[str, Any]:
        """The state as JSON-ready data (context values through `to_jsonable`).

        Raises:
            ConfigurationError: Something in the context or tool call is not JSON-ready.
        """
        try:
            saved = SavedResume(
                question=self.question,
                confirmation_id=self.confirmation_id,
                tool_call=to_jsonable(self.tool_call),
                context=to_jsonable(self.context),
                response=to_jsonable(self.response),
            )
            return saved.model_dump(mode="json")
        except (PydanticSerializationError, TypeError, ValueError) as exc:
            raise ConfigurationError(
                f"ResumeState cannot be saved as JSON: {exc} (keep ConfirmationRequired.context "
                "JSON-ready: dicts, lists, strings, numbers, booleans, None, Pydantic models)"
            ) from exc

    def to_json(self) -> str:
        """The state as a JSON string; `from_json` reads it back.

        Raises:
            ConfigurationError: Something in the context or tool call is not JSON-ready.
        """
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_json(cls, data: str | bytes | Mapping[str, Any]) -> ResumeState:
        """Rebuild a state saved with `to_json` (or `to_dict`), validated by Pydantic.

        Models in the context come back as plain dicts (JSON has no classes).

        Raises:
            ConfigurationError: ``data`` is not a saved ResumeState (the message names the
                field that is wrong).
        """
        try:
            if isinstance(data, (str, bytes)):
                saved = SavedResume.model_validate_json(data)
            else:
                saved = SavedResume.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = format_path(tuple(first["loc"]))
            raise ConfigurationError(f"not a saved ResumeState: {where}: {first['msg']}") from exc
        paused = ConfirmationRequired(
            saved.question,
            confirmation_id=saved.confirmation_id,
            tool_call=saved.tool_call,
            context=saved.context,
        )
        return cls(paused, saved.response)


class SavedResume(BaseModel):
    """A `ResumeState` as saved JSON (version 1, the format it has always had)."""

    model_config = ConfigDict(extra="ignore")

    version: Literal[1] = 1
    question: StrictStr
    confirmation_id: StrictStr
    tool_call: dict[str, Any] = Field(default_factory=dict)
    context: dict[str, Any] = Field(default_factory=dict)
    response: StrictStr | StrictBool | dict[str, Any]

    @field_validator("tool_call", "context", mode="before")
    @classmethod
    def _none_is_empty(cls, value: object) -> object:
        return {} if value is None else value


def _classify(response: object) -> ResumeAction:
    if isinstance(response, bool):
        return "approve" if response else "reject"
    if isinstance(response, Mapping):
        return "edit"
    if not isinstance(response, str):
        raise ConfigurationError(
            "a confirmation answer is a str, a mapping of edited arguments or a bool, "
            f"not {response!r}"
        )
    word = response.strip().rstrip(".!").strip().casefold()
    if word in _APPROVE:
        return "approve"
    if word in _REJECT:
        return "reject"
    return "feedback"
