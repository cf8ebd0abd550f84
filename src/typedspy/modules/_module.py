"""`Module`: the base of every typedspy program; `aforward` is the one implementation."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from typing import Any

from typedspy import callbacks
from typedspy._runtime import iterate_sync, run_sync
from typedspy.errors import ConfigurationError

__all__ = ["Module"]


class Module:
    """Base class for composable LLM programs.

    Subclasses implement ``async def aforward(self, **inputs)``. ``module(**inputs)`` and
    ``module.forward(**inputs)`` run it synchronously on typedspy's background event loop;
    ``await module.acall(**inputs)`` runs it in the caller's loop. Sub-modules assigned as
    attributes are discovered by `named_modules` and `named_predictors`.
    """

    async def aforward(self, **inputs: Any) -> Any:
        """The module's logic. Override this (or `aexecute`, for modules that stream)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement aforward()")

    async def aexecute(self, *, stream: bool = False, **inputs: Any) -> AsyncIterator[Any]:
        """The one execution path: an async generator of events, the result last.

        The default runs `aforward` and yields its result; modules that stream (`Predict`,
        `ReAct`) override this and yield `typedspy.streaming` events before the result.
        """
        del stream  # nothing to stream: the result is the only event
        yield await self.aforward(**inputs)

    async def acall(self, **inputs: Any) -> Any:
        """Run the module in the current event loop and return its result."""
        call_id = callbacks.module_start(self, inputs)
        result: Any = None
        try:
            async for event in self.aexecute(stream=False, **inputs):
                result = event
        except BaseException as exc:
            callbacks.module_end(call_id, None, exc)
            raise
        callbacks.module_end(call_id, result, None)
        return result

    async def astream(self, **inputs: Any) -> AsyncIterator[Any]:
        """Yield `typedspy.streaming` events as the call runs, then the final result.

        Closing the iterator early (or cancelling the consuming task) stops the call and closes
        its HTTP stream.
        """
        call_id = callbacks.module_start(self, inputs)
        result: Any = None
        try:
            async for event in self.aexecute(stream=True, **inputs):
                result = event
                yield event
        except BaseException as exc:
            callbacks.module_end(call_id, None, exc)
            raise
        callbacks.module_end(call_id, result, None)

    def stream(self, **inputs: Any) -> Iterator[Any]:
        """Synchronous `astream`: iterate events from a plain ``for`` loop.

        Raises:
            ConfigurationError: Called from a thread that runs an event loop; use `astream`.
        """
        return iterate_sync(
            lambda: self.astream(**inputs), async_name=f"{type(self).__name__}.astream"
        )

    def forward(self, **inputs: Any) -> Any:
        """Run the module synchronously.

        Raises:
            ConfigurationError: Called from a thread that runs an event loop; use `acall`.
        """
        return run_sync(lambda: self.acall(**inputs), async_name=f"{type(self).__name__}.acall")

    def __call__(self, **inputs: Any) -> Any:
        return self.forward(**inputs)

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
        from typedspy.modules._predict import Predict

        return [(n, m) for n, m in self.named_modules() if isinstance(m, Predict)]

    def dump_state(self) -> dict[str, Any]:
        """The learnable state (instructions and demos) of every predictor, by attribute path."""
        return {name: predictor.dump_state() for name, predictor in self._predictors()}

    def load_state(self, state: dict[str, Any]) -> None:
        """Restore state from `dump_state`.

        Raises:
            ConfigurationError: The state names a predictor this module does not have.
        """
        predictors = dict(self._predictors())
        unknown = sorted(set(state) - set(predictors))
        if unknown:
            raise ConfigurationError(
                f"saved state has predictors {unknown} that {type(self).__name__} does not have "
                f"(it has {sorted(predictors)})"
            )
        for name, value in state.items():
            predictors[name].load_state(value)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write `dump_state` to a JSON file."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.dump_state(), f, ensure_ascii=False, indent=2)

    def load(self, path: str | os.PathLike[str]) -> None:
        """Read state written by `save`."""
        with open(path, encoding="utf-8") as f:
            self.load_state(json.load(f))

    def _predictors(self) -> list[tuple[str, Any]]:
        return self.named_predictors()
