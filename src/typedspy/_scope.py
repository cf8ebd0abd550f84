"""One call's scope: what the running call's code reads from its context, in one ContextVar.

A `Scope` holds one field per concern, each owned by one module, which reads and changes it
through its `Field`: the settings overrides (`typedspy.settings.context`), the usage meters
(`typedspy.limits.metering`), the request bound (`typedspy.lm`), the call and stream deadlines
(`typedspy._deadline`), the JSON depth limit (`typedspy._json.depth_limit`), the approvals of
paused tool calls (`typedspy.tools`) and the render flag (`typedspy.pipeline.rendering`).

A scope is immutable: a change makes a new one, so a task or thread that copied the context
keeps its own view, as with a ContextVar per concern. A change is undone field by field:
`Field.restore` puts back that field's previous value and leaves every other field as it is
now. A ``Token.reset`` of the one variable would put back every field, and undo what other
code changed meanwhile out of order (a step of a stream under a deadline that consumed an
approval, a ``ts.context`` block closed before a metering block opened inside it).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

if TYPE_CHECKING:
    from typedspy._deadline import Bound
    from typedspy.limits import UsageMeter
    from typedspy.lm import RequestBound
    from typedspy.tools import Decision

__all__ = [
    "APPROVALS",
    "DEADLINE",
    "JSON_DEPTH",
    "METERS",
    "OVERRIDES",
    "RENDERING",
    "REQUEST_BOUND",
    "STREAM_DEADLINE",
    "Field",
    "Saved",
    "Scope",
    "current",
]

T = TypeVar("T")


class Scope(NamedTuple):
    """The state of the call running in this context (a tuple: cheap to copy with a change)."""

    overrides: Mapping[str, Any]  # `ts.context`'s settings
    meters: tuple[UsageMeter, ...]  # `metering` blocks, outermost first
    request_bound: RequestBound | None  # the HTTP requests the running step may send
    deadline: Bound | None  # the module call's
    stream_deadline: Bound | None  # the streamed request's
    json_depth: int | None  # `depth_limit`'s; None: the default
    approvals: Mapping[str, Decision]  # decisions on paused tool calls, by confirmation id
    rendering: bool  # `render`: the first request is shown, not sent


_EMPTY = Scope(MappingProxyType({}), (), None, None, None, None, MappingProxyType({}), False)
_scope: ContextVar[Scope] = ContextVar("typedspy_scope", default=_EMPTY)
_new = tuple.__new__

Saved = tuple[Scope, Scope]
"""What `Field.set` returns for `Field.restore`: the scope before the change and after it."""


def current() -> Scope:
    """The scope of this context."""
    return _scope.get()


class Field(Generic[T]):
    """One field of the scope, read and changed on its own."""

    __slots__ = ("_index", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._index = Scope._fields.index(name)

    def get(self) -> T:
        """The field's value in this context."""
        values: tuple[Any, ...] = _scope.get()
        value: T = values[self._index]
        return value

    def set(self, value: T) -> Saved:
        """Make ``value`` the field's value in this context; the other fields stay as they are."""
        before = _scope.get()
        if before[self._index] is value:  # nothing to change (a stream step without a bound)
            return before, before
        values: list[Any] = list(before)
        values[self._index] = value
        after: Scope = _new(Scope, values)
        _scope.set(after)
        return before, after

    def restore(self, saved: Saved) -> None:
        """Put back the value this field had before the `set` that returned ``saved``.

        Only this field: what changed the others since (in any order) stays changed.
        """
        before, after = saved
        now = _scope.get()
        if now is after:  # nothing else changed since: the common, nested case
            _scope.set(before)
            return
        values: list[Any] = list(now)
        values[self._index] = before[self._index]
        _scope.set(_new(Scope, values))

    def __repr__(self) -> str:
        return f"Field({self.name!r})"


OVERRIDES: Field[Mapping[str, Any]] = Field("overrides")
METERS: Field[tuple[UsageMeter, ...]] = Field("meters")
REQUEST_BOUND: Field[RequestBound | None] = Field("request_bound")
DEADLINE: Field[Bound | None] = Field("deadline")
STREAM_DEADLINE: Field[Bound | None] = Field("stream_deadline")
JSON_DEPTH: Field[int | None] = Field("json_depth")
APPROVALS: Field[Mapping[str, Decision]] = Field("approvals")
RENDERING: Field[bool] = Field("rendering")
