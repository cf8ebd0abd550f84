"""Configuration: process-wide defaults plus overrides scoped to the current context.

`configure` sets defaults for the whole process. `context` overrides them for a block, and only
for the code running in that block's `contextvars` context: other threads and other asyncio
tasks keep their own view, and tasks created inside the block inherit it (as contextvars do).
`get_settings` returns the effective values as a frozen `Settings` snapshot.

Example:
    ```python
    import typedspy as ts

    ts.configure(lm=ts.LM("gpt-4o-mini"), max_retries=3)  # whole process
    with ts.context(lm=ts.LM("gpt-4o"), max_retries=0):   # this block, this thread/task only
        ...
    ```
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import math
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, TypedDict, TypeGuard, get_args

from typing_extensions import Unpack

from typedspy._scope import OVERRIDES, Saved, current
from typedspy._signing import Secrets, secret_keys
from typedspy.cache import Cache, CacheMode
from typedspy.errors import ConfigurationError
from typedspy.limits import Budget, RateLimit
from typedspy.lm import CHAT_COMPLETIONS_PARAMS, BaseLM

__all__ = [
    "ModeSetting",
    "Settings",
    "SettingsKeywords",
    "configure",
    "context",
    "get_settings",
    "resolve_lm",
]

ModeSetting = Literal["auto", "json_schema", "json_object", "prompt", "tools", "think_then_format"]
_MODES: tuple[str, ...] = get_args(ModeSetting)
_SECONDS = "a number of seconds > 0, or None"


@dataclass(frozen=True)
class Settings:
    """The effective configuration: process-wide defaults overlaid with context overrides.

    Attributes:
        lm: The language model modules call when none is given to them.
        max_retries: Semantic retries (decode or validation failures) after the first attempt.
        mode: The output mode: ``"auto"`` (the LM profile's modes in order, stepping down to
            the next when the endpoint refuses one, remembered by the profile), a fixed mode
            name, or ``"think_then_format"`` (a free answer, then ``auto`` writes it as the
            outputs; ADR-086).
        token_budget: Total tokens one call may spend across its attempts; ``None`` for no limit.
        callbacks: Objects notified of module and LM events, in order.
        retry_wait: Seconds to wait between semantic retries.
        budget: A `Budget` every request under these settings is counted against.
        rate_limit: A `RateLimit` every request under these settings waits for.
        cache: A response cache (`MemoryCache`, `SQLiteCache`); ``None`` for none.
        cache_mode: How calls use the cache: ``"read_write"``, ``"read"``, ``"refresh"``,
            ``"replay"`` or ``"off"`` (see `CacheMode`).
        cache_salt: Mixed into every cache key: a new salt draws new samples of the same
            requests instead of replaying the cached ones.
        deadline: Seconds one module call may take in all (attempts, requests, streams, retry
            waits, ReAct steps and tools, nested modules); ``None`` for no limit. Past it the
            call raises `DeadlineExceededError`. Nested calls share the enclosing call's.
        stream_deadline: Seconds one streamed request may take from being sent to its last
            chunk (600 by default, so a stream that never ends cannot hold a call forever);
            ``None`` for no limit. Past it: `DeadlineExceededError`.
        max_requests: HTTP requests one `Predict` call may send in all, the SDK's transport
            retries inside each attempt included (6 by default; without it a call could send
            ``(max_retries + 1) * (LM max_retries + 1)`` = 9); ``None`` for no bound. Past it:
            `RequestLimitError`.
        resume_secret: The keys a saved `ResumeState` is signed and checked with (set as a
            secret of at least 32 bytes, or a list of them, newest first: the first signs,
            each verifies); empty (set as None or ``[]``): none, and `ResumeState.to_json`
            and ``from_json`` refuse to run without a ``secret=`` of their own. Never shown
            in a repr.
        history_size: How many of the last exchanges with models are kept for
            `inspect_history` (20 by default; 0 keeps none).
    """

    lm: BaseLM | None = None
    max_retries: int = 2
    mode: ModeSetting = "auto"
    token_budget: int | None = None
    callbacks: tuple[Any, ...] = ()
    retry_wait: float = 0.0
    budget: Budget | None = None
    rate_limit: RateLimit | None = None
    cache: Cache | None = None
    cache_mode: CacheMode = "read_write"
    cache_salt: str = ""
    deadline: float | None = None
    stream_deadline: float | None = 600.0
    max_requests: int | None = 6
    resume_secret: tuple[bytes, ...] = field(default=(), repr=False)
    history_size: int = 20


class SettingsKeywords(TypedDict, total=False):
    """The keywords `configure` and `context` take: type checkers check names and types."""

    lm: BaseLM | None
    max_retries: int
    mode: ModeSetting
    token_budget: int | None
    callbacks: Iterable[Any]
    retry_wait: float
    budget: Budget | None
    rate_limit: RateLimit | None
    cache: Cache | None
    cache_mode: CacheMode
    cache_salt: str
    deadline: float | None
    stream_deadline: float | None
    max_requests: int | None
    resume_secret: Secrets | None
    history_size: int


_FIELDS = tuple(f.name for f in dataclasses.fields(Settings))
_lock = threading.Lock()
_defaults = Settings()


def configure(**kwargs: Unpack[SettingsKeywords]) -> None:
    """Set process-wide defaults.

    This changes the defaults every thread and task sees, immediately (unlike `context`); call it
    once at start-up. Values set by an enclosing `context` still take precedence. Tests should
    use `context` instead, which needs no cleanup.

    Args:
        **kwargs: Any of the `Settings` fields (``lm``, ``max_retries``, ``mode``,
            ``token_budget``, ``callbacks``, ``retry_wait``, ``budget``, ``rate_limit``,
            ``cache``, ``cache_mode``, ``cache_salt``, ``deadline``, ``stream_deadline``,
            ``max_requests``, ``resume_secret``, ``history_size``).

    Raises:
        ConfigurationError: An unknown key, or a value of the wrong type.
    """
    values = _checked(kwargs)
    global _defaults
    with _lock:
        _defaults = dataclasses.replace(_defaults, **values)


def context(**kwargs: Unpack[SettingsKeywords]) -> _Overrides:
    """Override settings for a block of code, in the current context only.

    Works as ``with`` and ``async with``, and around ``await``. Nested blocks see the merged
    overrides and restore the outer ones on exit. Other threads and asyncio tasks do not see
    these overrides; tasks created inside the block inherit them.

    Example:
        ```python
        with ts.context(lm=FakeLM(["42"]), max_retries=0) as settings:
            assert settings.max_retries == 0
            answer = predict(question="...")
        ```

    Args:
        **kwargs: Any of the `Settings` fields.

    Returns:
        A context manager; entering it returns the effective `Settings`.

    Raises:
        ConfigurationError: An unknown key, or a value of the wrong type (raised immediately).
    """
    return _Overrides(_checked(kwargs))


class _Overrides:
    """The context manager `context` returns; re-entrant, and nests."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self._values = values
        self._saved: list[Saved] = []

    def __enter__(self) -> Settings:
        merged = MappingProxyType({**current().overrides, **self._values})
        self._saved.append(OVERRIDES.set(merged))
        return get_settings()

    def __exit__(self, *exc_info: object) -> None:
        OVERRIDES.restore(self._saved.pop())

    async def __aenter__(self) -> Settings:
        return self.__enter__()

    async def __aexit__(self, *exc_info: object) -> None:
        self.__exit__()


def get_settings() -> Settings:
    """Return the effective settings: the process-wide defaults with this context's overrides.

    Returns:
        A frozen snapshot; later `configure` or `context` calls do not change it.
    """
    overrides = current().overrides
    return dataclasses.replace(_defaults, **overrides) if overrides else _defaults


def _checked(values: Mapping[str, object]) -> dict[str, Any]:
    unknown = sorted(set(values) - set(_FIELDS))
    if unknown:
        raise ConfigurationError(_unknown_setting(unknown[0]))
    checked: dict[str, Any] = dict(values)  # Any: each value is checked against its field below
    if "callbacks" in checked:
        callbacks = checked["callbacks"]
        if isinstance(callbacks, (str, bytes)) or not isinstance(callbacks, Iterable):
            raise ConfigurationError(f"callbacks must be a sequence, got {callbacks!r}")
        checked["callbacks"] = tuple(callbacks)
        for index, callback in enumerate(checked["callbacks"]):
            _check_callback(index, callback)
    if "resume_secret" in checked:  # checked here, never echoed in a message below
        secret = checked["resume_secret"]
        none = secret is None or (isinstance(secret, (tuple, list)) and not secret)
        checked["resume_secret"] = () if none else secret_keys(secret, name="setting resume_secret")
    for key, value in checked.items():
        test, expected = _EXPECTED.get(key, (None, ""))
        if test is not None and not test(value):
            raise ConfigurationError(f"setting {key}={value!r}: expected {expected}")
    return checked


def _unknown_setting(name: str) -> str:
    close = difflib.get_close_matches(name, _FIELDS, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    if name in CHAT_COMPLETIONS_PARAMS:
        hint = (
            f"{name!r} is a request parameter: give it to ts.LM(...) (every request) or to a "
            "module, ts.Predict(..., temperature=0) for instance. "
        )
    return f"unknown setting {name!r}; {hint}Valid settings: {', '.join(_FIELDS)}"


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_CACHE_MODES: tuple[str, ...] = get_args(CacheMode)

# What each setting takes (beyond its type's None, where it has one): a test and its wording.
_EXPECTED: dict[str, tuple[Callable[[Any], bool], str]] = {
    "lm": (
        lambda v: v is None or isinstance(v, BaseLM),
        "an LM (typedspy.LM, typedspy.testing.FakeLM or another BaseLM) or None",
    ),
    "max_retries": (lambda v: _is_int(v) and v >= 0, "an int >= 0"),
    "history_size": (lambda v: _is_int(v) and v >= 0, "an int >= 0"),
    "max_requests": (lambda v: v is None or (_is_int(v) and v > 0), "an int > 0 or None"),
    "token_budget": (lambda v: v is None or (_is_int(v) and v > 0), "an int > 0 or None"),
    "mode": (lambda v: v in _MODES, f"one of {list(_MODES)}"),
    # NaN was taken as no wait, infinity waited for ever.
    "retry_wait": (
        lambda v: _is_number(v) and math.isfinite(v) and v >= 0,
        "a finite number of seconds >= 0",
    ),
    "deadline": (lambda v: v is None or (_is_number(v) and v > 0), _SECONDS),
    "stream_deadline": (lambda v: v is None or (_is_number(v) and v > 0), _SECONDS),
    "budget": (lambda v: v is None or isinstance(v, Budget), "a typedspy.limits.Budget or None"),
    "rate_limit": (
        lambda v: v is None or isinstance(v, RateLimit),
        "a typedspy.limits.RateLimit or None",
    ),
    "cache": (
        lambda v: v is None or isinstance(v, Cache),
        "a typedspy.cache.MemoryCache, typedspy.cache.SQLiteCache or other Cache or None",
    ),
    "cache_mode": (lambda v: v in _CACHE_MODES, f"one of {', '.join(_CACHE_MODES)}"),
    "cache_salt": (lambda v: isinstance(v, str), "a string"),
}


def _check_callback(index: int, callback: object) -> None:
    """Refuse a callback that would observe nothing, or whose hook would never run.

    Hooks are called, never awaited or iterated: an ``async def`` or generator hook would
    return without running its body (its events silently lost).
    """
    hooks = [name for name in dir(callback) if name.startswith("on_")]
    if not hooks:
        raise ConfigurationError(
            f"callbacks[{index}]={callback!r} has none of the callback methods "
            "(on_lm_start, on_module_end, ...): subclass ts.BaseCallback"
        )
    for name in hooks:
        hook = getattr(callback, name, None)
        if hook is None:  # switched off
            continue
        problem = None
        if not callable(hook):
            problem = f"is {type(hook).__name__}, not a method"
        elif inspect.iscoroutinefunction(hook) or inspect.isasyncgenfunction(hook):
            problem = "is async: hooks are called on the request's path, never awaited"
        elif inspect.isgeneratorfunction(hook):
            problem = "is a generator: hooks are called, never iterated"
        if problem:
            raise ConfigurationError(
                f"callbacks[{index}].{name} {problem}; define it with a plain def "
                "(hand slow work to a queue or a thread: a hook must not block the call)"
            )


def resolve_lm(lm: BaseLM | None) -> BaseLM:
    """``lm`` if given, else the configured one.

    Raises:
        ConfigurationError: Neither is set.
    """
    chosen = lm or get_settings().lm
    if chosen is None:
        raise ConfigurationError(
            "no language model configured: pass lm= or call ts.configure(lm=ts.LM('gpt-4o-mini'))"
        )
    return chosen
