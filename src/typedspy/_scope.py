"""One call's scope: what the running call's code reads from its context, in one ContextVar.

A `Scope` holds one field per concern, each owned by one module, which reads it with
``current().<field>`` and changes it through its `Field`: the settings overrides
(`typedspy.settings.context`), the usage meters (`typedspy.limits.metering`), the request bound
(`typedspy.lm`), the token count of a ReAct run (`typedspy.limits.spending`), the call and
stream deadlines (`typedspy._deadline`), the JSON depth limit (`typedspy._json.depth_limit`),
the approvals of paused tool calls and the depth of nested tool calls (`typedspy.tools`), the
answer a sub-agent paused inside a resumed call takes up (`typedspy.react`) and the render flag
(`typedspy.pipeline.rendering`).

A scope is immutable: a change makes a new one, so a task or thread that copied the context
keeps its own view, as with a ContextVar per concern (``resuming`` holds a list deliberately
shared with them: the one run that takes its answer empties it). A change is undone field by field:
`Field.restore` puts back that field's previous value and leaves every other field as it is
now. A ``Token.reset`` of the one variable would put back every field, and undo what other
code changed meanwhile out of order (a step of a stream under a deadline that consumed an
approval, a ``ts.context`` block closed before a metering block opened inside it).

The scope holds no tracing state: the OpenTelemetry callback finds an attempt's span as
OpenTelemetry's own current span, in the SDK's context variable.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextvars import ContextVar
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

if TYPE_CHECKING:
    from typedspy._deadline import Bound
    from typedspy.limits import Spent, UsageMeter
    from typedspy.lm import RequestBound
    from typedspy.tools import ResumeState

__all__ = [
    "APPROVALS",
    "DEADLINE",
    "JSON_DEPTH",
    "METERS",
    "OVERRIDES",
    "RENDERING",
    "REQUEST_BOUND",
    "RESUMING",
    "SPENT",
    "STREAM_DEADLINE",
    "TOOL_DEPTH",
    "Field",
    "Saved",
    "Scope",
    "current",
]

T = TypeVar("T")
U = TypeVar("U")


class Scope(NamedTuple):
    """The state of the call running in this context (a tuple: cheap to copy with a change)."""

    overrides: Mapping[str, Any]  # `ts.context`'s settings
    meters: tuple[UsageMeter, ...]  # `metering` blocks, outermost first
    request_bound: RequestBound | None  # the HTTP requests the running step may send
    spent: Spent | None  # the token count a call made here counts on too (a ReAct run's)
    deadline: Bound | None  # the module call's
    stream_deadline: Bound | None  # the streamed request's
    json_depth: int | None  # `depth_limit`'s; None: the default
    approvals: Mapping[str, ResumeState]  # answers to paused tool calls, by confirmation id
    tool_depth: int  # how many tool calls the running code is nested in
    resuming: list[ResumeState] | None  # a sub-agent's answer, taken (popped) by its run once
    rendering: bool  # `render`: the first request is shown, not sent


_NONE: Mapping[str, Any] = MappingProxyType({})
_EMPTY = Scope(_NONE, (), None, None, None, None, None, _NONE, 0, None, False)
_scope: ContextVar[Scope] = ContextVar("typedspy_scope", default=_EMPTY)
_get, _set, _new = _scope.get, _scope.set, tuple.__new__  # looked up once: used per chunk

current: Callable[[], Scope] = _get
"""The scope of this context (the variable's own ``get``, no Python frame: read per chunk)."""

Saved = tuple[Scope, Scope]
"""What `Field.set` returns for `Field.restore`: the scope before the change and after it."""


class Field(Generic[T]):
    """One field of the scope, changed on its own (read it with `current`)."""

    __slots__ = ("_index", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._index = Scope._fields.index(name)

    def set(self, value: T, *, last: Saved | None = None) -> Saved:
        """Make ``value`` the field's value in this context; the other fields stay as they are.

        Args:
            value: The new value.
            last: What the previous `set` of a loop returned (each step of a stream sets the
                same value): its scope is reused when nothing changed since, not made again.
        """
        before, index = _get(), self._index
        if last is not None and last[0] is before and last[1][index] is value:
            _set(last[1])
            return last
        if before[index] is value:  # nothing to change (a stream step without a bound)
            return before, before
        values: list[Any] = list(before)
        values[index] = value
        after: Scope = _new(Scope, values)
        _set(after)
        return before, after

    def restore(self, saved: Saved) -> None:
        """Put back the value this field had before the `set` that returned ``saved``.

        Only this field: what changed the others since (in any order) stays changed.
        """
        before, after = saved
        now = _get()
        if now is after:  # nothing else changed since: the common, nested case
            _set(before)
            return
        values: list[Any] = list(now)
        values[self._index] = before[self._index]
        _set(_new(Scope, values))

    async def first_step(self, value: T, items: AsyncIterator[U]) -> AsyncIterator[U]:
        """Yield ``items``, the first step with ``value`` as the field's; ``items`` closed after.

        The first step of a call makes its plan and sends its request, the later ones read the
        body: the change never crosses a ``yield`` into the consumer's code.
        """
        try:
            saved = self.set(value)
            try:
                item = await anext(items)
            except StopAsyncIteration:
                return
            finally:
                self.restore(saved)
            yield item
            async for item in items:
                yield item
        finally:
            aclose = getattr(items, "aclose", None)
            if aclose is not None:
                await aclose()


OVERRIDES: Field[Mapping[str, Any]] = Field("overrides")
METERS: Field[tuple[UsageMeter, ...]] = Field("meters")
REQUEST_BOUND: Field[RequestBound | None] = Field("request_bound")
SPENT: Field[Spent | None] = Field("spent")
DEADLINE: Field[Bound | None] = Field("deadline")
STREAM_DEADLINE: Field[Bound | None] = Field("stream_deadline")
JSON_DEPTH: Field[int | None] = Field("json_depth")
APPROVALS: Field[Mapping[str, ResumeState]] = Field("approvals")
TOOL_DEPTH: Field[int] = Field("tool_depth")
RESUMING: Field[list[ResumeState] | None] = Field("resuming")
RENDERING: Field[bool] = Field("rendering")
