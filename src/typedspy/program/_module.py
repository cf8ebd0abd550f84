"""`Module`: the base of every typedspy program; `aforward` is the method to override (ADR-035)."""

from __future__ import annotations

import json
import os
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Coroutine,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeAlias, TypeVar, cast, final, overload

from pydantic import ValidationError
from typing_extensions import ParamSpec, Unpack

from typedspy import callbacks, pipeline
from typedspy._deadline import bounded
from typedspy._files import write_atomically
from typedspy._runtime import in_thread, iterate_sync, run_sync
from typedspy._types import FieldError
from typedspy.batch import BatchOptions, BatchResult, run_batch
from typedspy.errors import ConfigurationError, InputError, OutputError, SavedStateError
from typedspy.lm import ChatMessage
from typedspy.parse import field_errors
from typedspy.program._state import (
    ProgramState,
    ScoreRecord,
    read_state,
    read_state_file,
    state_error,
    under,
)
from typedspy.settings import context, get_settings
from typedspy.streaming import StreamEvent, closing

if TYPE_CHECKING:  # types of the built-ins' calls only (layers above: no import at run time)
    from typedspy.modules import History
    from typedspy.tools import ResumeState

    _History: TypeAlias = History | Sequence[ChatMessage] | None

__all__ = ["Module", "no_positional"]

P = ParamSpec("P")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)
E = TypeVar("E")
E_co = TypeVar("E_co", covariant=True)


@final
class _Derived:
    """Never built: the event type of `Module.aexecute` as `_Async` asks for it (ADR-080)."""


class _Async(Protocol[P, R_co]):
    """A user module with its own ``aforward``: the calls take its parameters (ADR-080).

    Its ``aexecute`` is `Module`'s (or derived, events `Any`): a built-in module's own
    ``aexecute`` yields typed events, so `Predict` and `ReAct` do not match: they are `_Typed`.
    """

    def aforward(self, *args: P.args, **kwargs: P.kwargs) -> Awaitable[R_co]: ...

    def aexecute(self, *, stream: bool = ..., **inputs: Any) -> AsyncIterator[_Derived]: ...


class _Sync(Protocol[P, R_co]):
    """A user module without an ``aforward`` of its own (ADR-067): typed from its ``forward``.

    A module whose ``aforward`` takes typed parameters does not match (it does not take any
    arguments), so a misspelled keyword does not fall through to `Module`'s untyped
    ``forward``.
    """

    def aforward(self, *args: object, **kwargs: object) -> object: ...

    def forward(self, *args: P.args, **kwargs: P.kwargs) -> R_co: ...


class _Typed(Protocol[P, R_co, E_co]):
    """A built-in module (`Predict`, `ChainOfThought`, `ReAct`), typed from its signature.

    Its calls take the signature's inputs (ADR-015) and return its prediction, its stream yields
    its events: each built-in declares the three, for the checkers only (ADR-080).
    """

    def _typed_call(self, *args: P.args, **kwargs: P.kwargs) -> R_co: ...

    def _typed_event(self) -> E_co: ...


class _Resumable(Protocol[R_co, E_co]):
    """A built-in module whose run resumes from a `ResumeState` (`ReAct`)."""

    def _typed_resume(self, state: ResumeState) -> R_co: ...

    def _typed_event(self) -> E_co: ...


class Module:
    """Base class for composable LLM programs.

    Subclasses implement ``async def aforward(self, **inputs)``. ``module(**inputs)`` and
    ``module.forward(**inputs)`` run it synchronously (on the calling thread's own event loop,
    or typedspy's background loop inside a running one: ADR-049); ``await module.acall(**inputs)``
    runs it in the caller's loop. Sub-modules assigned as
    attributes are discovered by `named_modules` and `named_predictors`.

    The extension contract (ADR-035): override `aforward` to change what a module returns,
    on any module, `Predict`, `ChainOfThought` and `ReAct` included; ``super().aforward(...)``
    runs the built-in behaviour. Override `aexecute` only to change the stream of events. A
    class that overrides one of the two gets the other derived from it when it is defined, so
    every entry point (``__call__``, `forward`, `acall`, `astream`, `abatch`, tools) runs the
    override.
    """

    _learnable: ClassVar[bool] = False
    """Whether instances hold learnable state of their own (`Predict` sets it)."""

    _state_model: ClassVar[type[ProgramState]] = ProgramState
    """The model of this class's saved state (a `KNNProgram`'s adds its examples)."""

    score_record: ScoreRecord | None = None
    """The score this program reached on a dev set, set by an optimizer given a ``valset``;
    saved and loaded with its state, checked by `ts.optimize.verify` (ADR-083)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = vars(cls)
        if "forward" in own and "aforward" not in own and "aexecute" not in own:
            _refuse_sync_override(cls)
            if cls.aforward is Module.aforward:  # a DSPy-style program: its sync forward is it
                cls.aforward = _threaded(cls)  # type: ignore[method-assign]
                cls.aexecute = _executing(cls)  # type: ignore[method-assign]
        if "aforward" in own and "aexecute" not in own:
            cls.aexecute = _executing(cls)  # type: ignore[method-assign]
        elif "aexecute" in own and "aforward" not in own:
            cls.aforward = _forwarding(cls)  # type: ignore[method-assign]

    if TYPE_CHECKING:
        # Declared not awaitable (ADR-080): a class that did not override `aforward` does not
        # match `_Async`, so its calls are typed from its synchronous `forward` instead.
        def aforward(self, *args: Any, **inputs: Any) -> object:
            """The module's logic: override this (see the runtime definition)."""

    else:

        async def aforward(self, *args: Any, **inputs: Any) -> Any:
            """The module's logic: override this.

            An override may declare its inputs as typed keyword-only parameters
            (``async def aforward(self, *, task: str) -> ts.Prediction[Decide]``): this gradual
            signature accepts any override under mypy and pyright, and the override's
            parameters and result then type ``module(...)``, `acall`, `try_call`, `stream` and
            `batch` (ADR-080).
            """
            del args
            raise NotImplementedError(f"{type(self).__name__} does not implement aforward()")

    async def aexecute(self, *, stream: bool = False, **inputs: Any) -> AsyncIterator[Any]:
        """The one execution path: an async generator of events, the result last.

        The default runs `aforward` and yields its result; modules that stream (`Predict`,
        `ReAct`) override this and yield `typedspy.streaming` events before the result.
        """
        del stream  # nothing to stream: the result is the only event
        yield await cast("Awaitable[Any]", self.aforward(**inputs))

    # The entry points below are typed from the subclass's `aforward` when it wrote one, from
    # the signature for the built-in modules (`_Typed`: a call passing ``history=`` or, to a
    # ReAct, ``resume_state=`` takes its inputs unchecked), else from its synchronous `forward`
    # (ADR-080): ``pipe(tikcet=...)`` is a type error, and an untyped `aforward` keeps every
    # call `Any`.

    @overload
    def acall(self: _Async[P, R], *args: P.args, **inputs: P.kwargs) -> Coroutine[Any, Any, R]: ...

    @overload
    def acall(
        self: _Typed[P, R, Any], *args: P.args, **inputs: P.kwargs
    ) -> Coroutine[Any, Any, R]: ...

    @overload
    def acall(
        self: _Typed[..., R, Any], *, history: _History, **inputs: Any
    ) -> Coroutine[Any, Any, R]: ...

    @overload
    def acall(
        self: _Resumable[R, Any],
        *,
        history: _History = None,
        resume_state: ResumeState | None,
        **inputs: Any,
    ) -> Coroutine[Any, Any, R]: ...

    @overload
    def acall(self: _Sync[P, R], *args: P.args, **inputs: P.kwargs) -> Coroutine[Any, Any, R]: ...

    async def acall(self, *args: Any, **inputs: Any) -> Any:
        """Run the module in the current event loop and return its result."""
        no_positional(self, args)
        result: Any = None
        async with closing(self._observed(stream=False, **inputs)) as events:
            async for event in events:
                result = event
        return result

    @overload
    def astream(
        self: _Async[P, R], *args: P.args, **inputs: P.kwargs
    ) -> AsyncIterator[StreamEvent | R]: ...

    @overload
    def astream(self: _Typed[P, Any, E], *args: P.args, **inputs: P.kwargs) -> AsyncIterator[E]: ...

    @overload
    def astream(
        self: _Typed[..., Any, E], *, history: _History, **inputs: Any
    ) -> AsyncIterator[E]: ...

    @overload
    def astream(
        self: _Resumable[Any, E],
        *,
        history: _History = None,
        resume_state: ResumeState | None,
        **inputs: Any,
    ) -> AsyncIterator[E]: ...

    @overload
    def astream(
        self: _Sync[P, R], *args: P.args, **inputs: P.kwargs
    ) -> AsyncIterator[StreamEvent | R]: ...

    async def astream(self, *args: Any, **inputs: Any) -> AsyncIterator[Any]:
        """Yield `typedspy.streaming` events as the call runs, then the final result.

        Closing the iterator early (or cancelling the consuming task) stops the call and closes
        its HTTP stream.
        """
        no_positional(self, args)
        # closing: when the consumer stops early, the call (and its HTTP stream) is closed now,
        # not whenever the abandoned generator is garbage collected.
        async with closing(self._observed(stream=True, **inputs)) as events:
            async for event in events:
                yield event

    def _observed(self, *, stream: bool, **inputs: Any) -> AsyncIterator[Any]:
        """`aexecute` under the ``deadline`` setting (and the enclosing call's), observed."""
        events = bounded(
            self.aexecute(stream=stream, **inputs), get_settings().deadline, repr(self)
        )
        return callbacks.module_call(self, inputs, events)

    @overload
    def stream(
        self: _Async[P, R], *args: P.args, **inputs: P.kwargs
    ) -> Iterator[StreamEvent | R]: ...

    @overload
    def stream(self: _Typed[P, Any, E], *args: P.args, **inputs: P.kwargs) -> Iterator[E]: ...

    @overload
    def stream(self: _Typed[..., Any, E], *, history: _History, **inputs: Any) -> Iterator[E]: ...

    @overload
    def stream(
        self: _Resumable[Any, E],
        *,
        history: _History = None,
        resume_state: ResumeState | None,
        **inputs: Any,
    ) -> Iterator[E]: ...

    @overload
    def stream(
        self: _Sync[P, R], *args: P.args, **inputs: P.kwargs
    ) -> Iterator[StreamEvent | R]: ...

    def stream(self, *args: Any, **inputs: Any) -> Iterator[Any]:
        """Synchronous `astream`: iterate events from a plain ``for`` loop.

        Leaving the loop early (``break``, an exception) closes the call and its HTTP stream
        once the iterator is released; ``with contextlib.closing(module.stream(...)) as
        events:`` closes it at the end of the block on every Python implementation.

        Raises:
            ConfigurationError: Called, or ``next()`` called, from code typedspy runs on its
                own event loop (a module's ``aforward``, an async tool), which would wait for
                itself, or ``next()`` inside another running loop on a stream started where none
                ran (ADR-097); use `astream`.
        """
        no_positional(self, args)
        return iterate_sync(
            lambda: self.astream(**inputs), async_name=f"{type(self).__name__}.astream"
        )

    @overload
    def forward(self: _Async[P, R], *args: P.args, **inputs: P.kwargs) -> R: ...

    @overload
    def forward(self, *args: Any, **inputs: Any) -> Any: ...

    def forward(self, *args: Any, **inputs: Any) -> Any:
        """Run the module synchronously.

        Raises:
            ConfigurationError: Called from code typedspy runs on its own event loop (a
                module's ``aforward``, an async tool), which would wait for itself; use `acall`.
        """
        no_positional(self, args)
        return run_sync(lambda: self.acall(**inputs), async_name=f"{type(self).__name__}.acall")

    @overload
    def __call__(self: _Async[P, R], *args: P.args, **inputs: P.kwargs) -> R: ...

    @overload
    def __call__(self: _Typed[P, R, Any], *args: P.args, **inputs: P.kwargs) -> R: ...

    @overload
    def __call__(self: _Typed[..., R, Any], *, history: _History, **inputs: Any) -> R: ...

    @overload
    def __call__(
        self: _Resumable[R, Any],
        *,
        history: _History = None,
        resume_state: ResumeState | None,
        **inputs: Any,
    ) -> R: ...

    @overload
    def __call__(self: _Sync[P, R], *args: P.args, **inputs: P.kwargs) -> R: ...

    def __call__(self, *args: Any, **inputs: Any) -> Any:
        no_positional(self, args)
        return self.forward(**inputs)

    @overload
    def atry_call(
        self: _Async[P, R], *args: P.args, **inputs: P.kwargs
    ) -> Coroutine[Any, Any, R | OutputError]: ...

    @overload
    def atry_call(
        self: _Typed[P, R, Any], *args: P.args, **inputs: P.kwargs
    ) -> Coroutine[Any, Any, R | OutputError]: ...

    @overload
    def atry_call(
        self: _Typed[..., R, Any], *, history: _History, **inputs: Any
    ) -> Coroutine[Any, Any, R | OutputError]: ...

    @overload
    def atry_call(
        self: _Resumable[R, Any],
        *,
        history: _History = None,
        resume_state: ResumeState | None,
        **inputs: Any,
    ) -> Coroutine[Any, Any, R | OutputError]: ...

    @overload
    def atry_call(
        self: _Sync[P, R], *args: P.args, **inputs: P.kwargs
    ) -> Coroutine[Any, Any, R | OutputError]: ...

    async def atry_call(self, *args: Any, **inputs: Any) -> Any:
        """Like `acall`, but an output failure is returned (an `OutputError`), not raised.

        Input and endpoint errors (`InputError`, `LMError`) are still raised: only the model's
        answer can fail here.
        """
        no_positional(self, args)
        try:
            return await self.acall(**inputs)
        except OutputError as exc:
            return exc

    @overload
    def try_call(self: _Async[P, R], *args: P.args, **inputs: P.kwargs) -> R | OutputError: ...

    @overload
    def try_call(self: _Typed[P, R, Any], *args: P.args, **inputs: P.kwargs) -> R | OutputError: ...

    @overload
    def try_call(
        self: _Typed[..., R, Any], *, history: _History, **inputs: Any
    ) -> R | OutputError: ...

    @overload
    def try_call(
        self: _Resumable[R, Any],
        *,
        history: _History = None,
        resume_state: ResumeState | None,
        **inputs: Any,
    ) -> R | OutputError: ...

    @overload
    def try_call(self: _Sync[P, R], *args: P.args, **inputs: P.kwargs) -> R | OutputError: ...

    def try_call(self, *args: Any, **inputs: Any) -> Any:
        """Synchronous `atry_call`."""
        no_positional(self, args)
        return run_sync(
            lambda: self.atry_call(**inputs), async_name=f"{type(self).__name__}.atry_call"
        )

    async def arender(self, **inputs: Any) -> dict[str, Any]:
        """The JSON body of the first request ``self(**inputs)`` would send; nothing is sent.

        The messages, ``response_format`` or tools, and the parameters after the profile's
        rules, exactly as the endpoint would receive them (``json.dumps`` it for the wire
        text). Only the first request: later ones depend on the model's replies. An LM still
        to identify its server asks it first (one ``GET /models``, ADR-084), so the body is
        its profile's.

        The call runs as it would (inputs checked, the profile's rules, demos, history) up to
        its first request, which is returned instead of sent: no callbacks, cache, budget, rate
        limit or history take part.

        Raises:
            ConfigurationError: The call sends no request to a model (a code-backed module).
            InputError: Missing, unexpected or invalid inputs.
        """
        with pipeline.rendering(), context(callbacks=()):
            try:
                async with closing(self.aexecute(stream=False, **inputs)) as events:
                    async for _ in events:
                        pass
            except pipeline.Rendered as shown:
                return shown.body
        raise ConfigurationError(f"{self!r} sent no request to a model: there is nothing to render")

    def render(self, **inputs: Any) -> dict[str, Any]:
        """Synchronous `arender`: ``predict.render(question="...")["messages"]``."""
        return run_sync(
            lambda: Module.arender(self, **inputs), async_name=f"{type(self).__name__}.arender"
        )

    @overload
    def abatch(
        self: _Async[..., R], inputs: Iterable[Mapping[str, Any]], **options: Unpack[BatchOptions]
    ) -> Coroutine[Any, Any, BatchResult[R]]: ...

    @overload
    def abatch(
        self: _Typed[..., R, Any],
        inputs: Iterable[Mapping[str, Any]],
        **options: Unpack[BatchOptions],
    ) -> Coroutine[Any, Any, BatchResult[R]]: ...

    @overload
    def abatch(
        self: _Sync[..., R], inputs: Iterable[Mapping[str, Any]], **options: Unpack[BatchOptions]
    ) -> Coroutine[Any, Any, BatchResult[R]]: ...

    async def abatch(
        self, inputs: Iterable[Mapping[str, Any]], **options: Unpack[BatchOptions]
    ) -> BatchResult[Any]:
        """Run the module over many inputs concurrently; one result per input, in order.

        Nothing is raised for an item: ``results[i]`` is input ``i``'s result or the exception
        it ended with (typed: `OutputError`, `LMError`, `ItemTimeoutError`,
        `BudgetExceededError`, `BatchStoppedError`, ...). ``results.items[i]`` adds its usage
        and request counts. Cancelling the call cancels every running item.

        Example:
            ```python
            results = await predict.abatch(
                [{"question": q} for q in questions], concurrency=16, max_errors=10
            )
            ```

        Args:
            inputs: One mapping of input names to values per item.
            **options: ``concurrency``, ``rate_limit``, ``budget``, ``timeout``,
                ``max_errors``, ``on_progress``, ``progress`` (see `BatchOptions`).

        Raises:
            ConfigurationError: An unknown or invalid option.
            InputError: An input that is not a mapping (before anything runs).
        """
        return await run_batch(self, inputs, **options)

    @overload
    def batch(
        self: _Async[..., R], inputs: Iterable[Mapping[str, Any]], **options: Unpack[BatchOptions]
    ) -> BatchResult[R]: ...

    @overload
    def batch(
        self: _Typed[..., R, Any],
        inputs: Iterable[Mapping[str, Any]],
        **options: Unpack[BatchOptions],
    ) -> BatchResult[R]: ...

    @overload
    def batch(
        self: _Sync[..., R], inputs: Iterable[Mapping[str, Any]], **options: Unpack[BatchOptions]
    ) -> BatchResult[R]: ...

    def batch(
        self, inputs: Iterable[Mapping[str, Any]], **options: Unpack[BatchOptions]
    ) -> BatchResult[Any]:
        """Synchronous `abatch` (Ctrl-C cancels every running item).

        Raises:
            ConfigurationError: Called from code typedspy runs on its own event loop (a
                module's ``aforward``, an async tool), which would wait for itself; use `abatch`.
        """
        return run_sync(
            lambda: self.abatch(inputs, **options), async_name=f"{type(self).__name__}.abatch"
        )

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        """This module and every sub-module reachable through attributes, lists and dicts."""
        seen: set[int] = set()
        stack: list[tuple[str, Module]] = [(prefix or "self", self)]
        while stack:
            name, module = stack.pop(0)
            if id(module) in seen:
                continue
            seen.add(id(module))
            yield name, module
            for attr, value in vars(module).items():
                base = attr if name == "self" else f"{name}.{attr}"
                if isinstance(value, Module):
                    stack.append((base, value))
                elif isinstance(value, (list, tuple)):
                    stack.extend(
                        (f"{base}[{i}]", v) for i, v in enumerate(value) if isinstance(v, Module)
                    )
                elif isinstance(value, dict):
                    stack.extend(
                        (f"{base}[{k!r}]", v) for k, v in value.items() if isinstance(v, Module)
                    )

    def named_predictors(self) -> list[tuple[str, Module]]:
        """Every `Predict` inside this module (itself included), with its attribute path."""
        return [(n, m) for n, m in self.named_modules() if m._learnable]

    def dump_state(self) -> dict[str, Any]:
        """The learnable state as JSON-ready data: what `save` writes (see there).

        Raises:
            SavedStateError: State a saved program cannot hold: demo values nested deeper than
                it may be, or a value its model refuses (a vector that is not finite).
        """
        try:
            state = self._dump()
        except ValidationError as exc:
            raise state_error("<state>", field_errors(exc), about="cannot be written") from exc
        return state.model_dump(mode="json")

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore state from `dump_state`: all of it, or nothing when it does not fit.

        It is checked as `load` checks a file.

        Raises:
            SavedStateError: A `ConfigurationError`: another format version, a value of the
                wrong type or an unknown key, or state for another module structure (paths
                this module does not have or lacks, another signature at a path); the
                message names the field paths.
        """
        self._load(read_state(self._state_model, state), "<state>")

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the learnable state (every predictor's instructions and demos) as UTF-8 JSON.

        The file is ``{"version": 2, "predictors": {path: state}, "scored": record}``: each
        predictor's attribute path (``"draft"``, ``"steps[0]"``, ``"experts['math']"``;
        ``"self"`` for a `Predict` saved on its own) maps to ``{"signature", "fingerprint",
        "instructions", "demos"}``, and ``scored`` is `score_record` (or null)
        (`typedspy.program.ProgramState`, ADR-054, ADR-083).

        Raises:
            SavedStateError: Demo values nested so deep that the file would be nested deeper
                than `load` reads (256 levels); nothing is written.
            OSError: The file could not be written; a file already at ``path`` is left as it
                was (the state is written beside it, then replaces it).
        """
        write_atomically(path, json.dumps(self.dump_state(), ensure_ascii=False, indent=2))

    def load(self, path: str | os.PathLike[str]) -> None:
        """Read state written by `save`: all of it, or nothing when it does not fit.

        Raises:
            SavedStateError: A `ConfigurationError` naming the file and the field path: the
                file cannot be read (missing, a directory), is not UTF-8 or not JSON, nests
                deeper than 256 levels, is of another format version, holds a value of the
                wrong type or an unknown key, or does not fit this module (see `load_state`).
        """
        self._load(read_state_file(self._state_model, path), os.fspath(path))

    def _dump(self) -> ProgramState:
        """The learnable state as a model: every predictor's, by path."""
        predictors = {}
        for name, predictor in self._predictors():
            try:
                predictors[name] = predictor._state()
            except SavedStateError as exc:
                errors = under(("predictors", name), exc.errors)
                raise state_error("<state>", errors, path=name, about="cannot be written") from exc
        return ProgramState(predictors=predictors, scored=self.score_record)

    def _load(self, state: ProgramState, source: str) -> None:
        """Check ``state`` against this module's predictors, then apply it (or nothing)."""
        cls = type(self).__name__
        predictors = dict(self._predictors())
        unknown = sorted(set(state.predictors) - set(predictors))
        missing = sorted(set(predictors) - set(state.predictors))
        if unknown or missing:
            found = [f"paths {unknown} that {cls} does not have"] if unknown else []
            found += [f"no state for its paths {missing}"] if missing else []
            problem = (
                f"it has {' and '.join(found)} ({cls}'s predictors are at {sorted(predictors)})"
            )
            raise state_error(source, [FieldError(("predictors",), problem)], about=f"for {cls}")
        read = {}
        for name, value in state.predictors.items():
            try:
                read[name] = predictors[name]._read_state(value)
            except SavedStateError as exc:
                raise state_error(
                    source, under(("predictors", name), exc.errors), path=name
                ) from exc
        for name, value in read.items():
            predictors[name]._apply_state(value)
        self.score_record = state.scored

    def _predictors(self) -> list[tuple[str, Any]]:
        return self.named_predictors()


def no_positional(module: Module, args: tuple[Any, ...]) -> None:
    """Refuse positional inputs: a module's inputs are keywords.

    Raises:
        InputError: ``args`` is not empty.
    """
    if args:
        raise InputError(
            f"{module!r} takes its inputs as keywords, not {len(args)} positional argument(s)"
        )


def _executing(cls: type[Module]) -> Any:
    """``cls.aexecute`` for a class that overrides only `aforward`: its result, the one event.

    Bound to ``cls`` (not ``self``), so a subclass's ``super().aexecute`` reaches this class's
    `aforward`, whatever the subclass overrides in turn.
    """

    async def aexecute(self: Module, *, stream: bool = False, **inputs: Any) -> AsyncIterator[Any]:
        del stream  # an `aforward` override returns the result only: nothing else to stream
        forward = vars(cls)["aforward"]
        yield await forward(self, **inputs)

    aexecute.__qualname__ = f"{cls.__qualname__}.aexecute"
    aexecute.__doc__ = f"The events of `{cls.__name__}.aforward`: its result alone (ADR-035)."
    return aexecute


def _forwarding(cls: type[Module]) -> Any:
    """``cls.aforward`` for a class that overrides only `aexecute`: its last event."""

    async def aforward(self: Module, **inputs: Any) -> Any:
        result: Any = None
        execute = vars(cls)["aexecute"]
        async with closing(execute(self, stream=False, **inputs)) as events:
            async for event in events:
                result = event
        return result

    aforward.__qualname__ = f"{cls.__qualname__}.aforward"
    aforward.__doc__ = f"The result of `{cls.__name__}.aexecute`: its last event (ADR-035)."
    return aforward


def _threaded(cls: type[Module]) -> Any:
    """``cls.aforward`` for a class that wrote only a synchronous ``forward`` (as in DSPy).

    Every entry point runs it (`acall`, `astream`, `abatch`, `evaluate`, optimizers, tools),
    in a worker thread with the caller's context, so the loop is never blocked and the sync
    calls it makes run on that thread's own loop (ADR-049). A thread cannot be cancelled: a
    batch item's timeout or a deadline ends the wait, not the ``forward`` itself (ADR-067).
    """

    async def aforward(self: Module, **inputs: Any) -> Any:
        forward = vars(cls)["forward"]
        return await in_thread(forward, self, **inputs)

    aforward.__qualname__ = f"{cls.__qualname__}.aforward"
    aforward.__doc__ = f"`{cls.__name__}.forward` run in a worker thread (ADR-067)."
    return aforward


def _refuse_sync_override(cls: type[Module]) -> None:
    """A synchronous ``forward`` on a subclass of a built-in streaming module is an error.

    `acall`, `astream` and `abatch` run `aexecute`, never ``forward``: the override would
    apply to ``module(...)`` alone (ADR-035). On a plain `Module` it stays allowed (tools run
    it in a worker thread).

    Raises:
        ConfigurationError: When the class is defined, naming the method to override.
    """
    definer = next(k for k in cls.__mro__ if "aexecute" in vars(k))
    if definer is Module or not _builtin(definer):
        return
    raise ConfigurationError(
        f"{cls.__qualname__} overrides forward(), which only module(...) would run: override "
        f"`async def aforward(self, **inputs)` instead (call `await super().aforward(**inputs)` "
        f"for {definer.__name__}'s own behaviour)"
    )


def _builtin(cls: type) -> bool:
    """Whether ``cls`` is typedspy's own (public classes say ``typedspy`` as their module)."""
    return cls.__module__ == "typedspy" or cls.__module__.startswith("typedspy.")
