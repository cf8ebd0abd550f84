"""Human in the loop, the tool side: the ``confirm_first`` mark (docs/confirmations.md).

The pause signal, the mark's reading and the record of answers are in
`typedspy.tools._approvals`, which `Tool` uses; the answer and its signed JSON in
`typedspy.tools._resume_state`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, overload

from typedspy.errors import ToolError
from typedspy.program import Module
from typedspy.tools._approvals import (
    MARK,
    ConfirmMark,
    Question,
)
from typedspy.tools._tool import Tool

__all__ = ["confirm_first"]

T = TypeVar("T")


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
