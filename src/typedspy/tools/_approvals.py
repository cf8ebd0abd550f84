"""The pause signal and the per-context record of a person's decisions on paused tool calls.

`require_confirmation` is what a confirm_first tool runs before its implementation: it consumes
the decision recorded for this exact call (tool name plus canonical arguments) or raises
`ConfirmationRequired`. Decisions live in the call scope (`typedspy._scope`), an immutable
mapping that is replaced, never mutated: a decision recorded in one asyncio task or thread is
invisible to every other (a task starts from a copy of its parent's decisions), and each
decision is consumed by the one call that uses it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from typedspy._scope import APPROVALS, current
from typedspy.errors import TypedspyError
from typedspy.signature import to_jsonable

if TYPE_CHECKING:
    from typedspy.tools._resume_state import ResumeState

__all__ = [
    "MARK",
    "ConfirmMark",
    "ConfirmationRejected",
    "ConfirmationRequired",
    "Question",
    "ResumeAction",
    "confirmation_id",
    "confirmation_mark",
    "record",
    "require_confirmation",
    "resume",
]

Question: TypeAlias = "str | Callable[[Mapping[str, Any]], str]"
"""A custom question: a ``str.format`` template over the arguments, or a function of them."""
ResumeAction: TypeAlias = Literal["approve", "reject", "edit", "feedback"]

MARK = "__typedspy_confirm__"
"""The attribute `confirm_first` sets on a function, module or module class."""


@dataclass(frozen=True)
class ConfirmMark:
    """The mark `confirm_first` leaves on a function or module; tools built from it keep it."""

    question: Question | None = None


def confirmation_mark(obj: object) -> ConfirmMark | None:
    """The `confirm_first` mark of a function, module or module class, if it has one."""
    mark = getattr(obj, MARK, None)
    return mark if isinstance(mark, ConfirmMark) else None


class ConfirmationRequired(Exception):
    """A human must confirm a tool call before it runs; raised instead of running it.

    Deliberately an `Exception` and not a `TypedspyError`: it pauses a run, it does not report a
    failure, so ``except TypedspyError`` handlers must not swallow it. Catch it where a person
    can answer, then resume with `ResumeState`.

    Attributes:
        question: What to ask the person.
        confirmation_id: Stable for the same tool and the same (canonical) arguments.
        tool_call: ``{"name": ..., "arguments": {...}}`` (JSON-ready arguments); an
            orchestrator may add ``"id"``, the model's tool-call id.
        context: Free-form state an orchestrator stores to resume where it stopped (for
            example ReAct's trajectory and step). Keep it JSON-ready if it is to be persisted.
    """

    def __init__(
        self,
        question: str,
        *,
        confirmation_id: str,
        tool_call: Mapping[str, Any] | None = None,
        context: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(question)
        self.question = question
        self.confirmation_id = confirmation_id
        self.tool_call: dict[str, Any] = dict(tool_call or {})
        self.context: dict[str, Any] = dict(context or {})

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only arguments: the default Exception pickling would lose them.
        return (
            _rebuild_required,
            (self.question, self.confirmation_id, self.tool_call, self.context),
        )


def _rebuild_required(
    question: str, cid: str, tool_call: dict[str, Any], context: dict[str, Any]
) -> ConfirmationRequired:
    return ConfirmationRequired(question, confirmation_id=cid, tool_call=tool_call, context=context)


@dataclass(eq=False, repr=False, kw_only=True)
class ConfirmationRejected(TypedspyError):
    """The person declined a confirm_first tool call; the tool did not run.

    Attributes:
        confirmation_id: The id of the declined call.
        tool: The tool's name.
        feedback: What the person wrote instead of yes/no, for the model to read; None for a
            plain rejection.
    """

    confirmation_id: str
    tool: str
    feedback: str | None = None


def confirmation_id(tool: str, arguments: Mapping[str, Any]) -> str:
    """The stable id of a tool call: a SHA-256 of the name and the canonical JSON arguments.

    Args:
        tool: The tool's name.
        arguments: The validated arguments (rendered JSON-ready here; keys are sorted).
    """
    canonical = json.dumps(
        to_jsonable(dict(arguments)), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(f"{tool}\n{canonical}".encode()).hexdigest()[:32]


# -- decisions in the current context ------------------------------------------------------


def record(state: ResumeState) -> None:
    """Keep ``state``'s answer in the current context until the call it answers consumes it."""
    # Replace, never mutate: a mapping shared with a parent or sibling context stays unchanged.
    APPROVALS.set(MappingProxyType({**current().approvals, state.confirmation_id: state}))


@contextlib.contextmanager
def resume(*states: ResumeState) -> Generator[None, None, None]:
    """Resume paused calls: ``with ts.tools.resume(state): await tool.acall(args)``.

    Each state's answer is recorded on entry (`ResumeState.apply`); the call with the paused
    arguments then runs (or raises `ConfirmationRejected`) once. Decisions made inside the
    block are forgotten on exit; outer ones are inherited.
    """
    saved = APPROVALS.set(current().approvals)
    try:
        for state in states:
            state.apply()
        yield
    finally:
        APPROVALS.restore(saved)


def require_confirmation(
    tool: str, arguments: Mapping[str, Any], question: Question | None = None
) -> Mapping[str, Any] | None:
    """Consume the decision for this call, or raise `ConfirmationRequired` when there is none.

    Called by `Tool` with the validated, JSON-ready arguments before a confirm_first tool runs.

    Args:
        tool: The tool's name.
        arguments: The call's arguments, JSON-ready.
        question: The tool's custom question, if any.

    Returns:
        None to run the call as made, or the edited arguments to validate and run instead.

    Raises:
        ConfirmationRequired: No decision for this call in the current context.
        ConfirmationRejected: The decision was a rejection or feedback.
    """
    cid = confirmation_id(tool, arguments)
    decisions = current().approvals
    decision = decisions.get(cid)
    if decision is None:
        raise ConfirmationRequired(
            _question(tool, arguments, question),
            confirmation_id=cid,
            tool_call={"name": tool, "arguments": dict(arguments)},
        )
    APPROVALS.set(MappingProxyType({k: v for k, v in decisions.items() if k != cid}))
    if decision.action in ("reject", "feedback"):
        feedback = decision.feedback
        what = f"with feedback: {feedback}" if feedback else "by the user"
        raise ConfirmationRejected(
            f"{tool} was rejected {what}", confirmation_id=cid, tool=tool, feedback=feedback
        )
    return decision.edited_arguments


def _question(tool: str, arguments: Mapping[str, Any], question: Question | None) -> str:
    if callable(question):
        return str(question(arguments))
    if isinstance(question, str):
        try:
            return question.format_map(arguments)
        except (KeyError, IndexError, ValueError, AttributeError):
            return question  # a template naming something else is shown as written
    shown = json.dumps(dict(arguments), ensure_ascii=False)
    return f"Run {tool} with {shown}?"
