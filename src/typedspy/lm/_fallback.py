"""`FallbackLM`: endpoints tried in order, switching on the typed outcomes a user chooses.

Transport retries stay in each endpoint's openai client (``max_retries``), and typedspy's
feedback retries count only decode and validation failures on one endpoint; the chain only
moves on once an endpoint's call has ended in a chosen outcome, so no loop nests in another
and no request is sent twice by two layers (ADR-022).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from typedspy.errors import (
    BudgetExceededError,
    ConfigurationError,
    LMConnectionError,
    LMContextLengthError,
    LMRateLimitError,
    LMResponseError,
    LMStatusError,
    OutputDecodeError,
    OutputValidationError,
    RefusalError,
    TokenBudgetExceededError,
)
from typedspy.lm._base import BaseLM
from typedspy.lm._messages import LMRequest, LMResponse
from typedspy.profiles import Profile

if TYPE_CHECKING:
    from typedspy.lm._stream import LMChunk

__all__ = ["FallbackLM", "FallbackTrace", "Skipped", "Trigger", "triggers_of"]

Trigger = Literal[
    "transport", "rate_limit", "refusal", "not_enforced", "validation", "budget", "context_length"
]
"""An outcome that moves a `FallbackLM` to its next endpoint."""

TRIGGERS: frozenset[str] = frozenset(get_args(Trigger))
_DEFAULT_ON: frozenset[Trigger] = frozenset({"transport", "rate_limit"})


def triggers_of(error: BaseException, *, schema_sent: bool = False) -> frozenset[Trigger]:
    """The triggers an endpoint's failure counts as (empty: never a reason to fall back).

    ``transport``: the endpoint could not be reached, timed out, answered 5xx or an unusable
    body (after the SDK's own retries). ``rate_limit``: it kept answering 429. ``refusal``:
    the model refused. ``validation``: the call's feedback retries ended in a decode or
    validation failure; ``not_enforced`` as well when the schema was on the wire (the server
    accepted the schema but did not hold the model to it). ``budget``: a `ts.limits.Budget` refused
    the request or the call's ``token_budget`` ran out. ``context_length``: the request does not
    fit the model's context window (`LMContextLengthError`).
    """
    if isinstance(error, LMRateLimitError):
        return frozenset({"rate_limit"})
    if isinstance(error, LMContextLengthError):
        return frozenset({"context_length"})
    if isinstance(error, (LMConnectionError, LMResponseError)) or (
        isinstance(error, LMStatusError) and error.status_code >= 500
    ):
        return frozenset({"transport"})
    if isinstance(error, RefusalError):
        return frozenset({"refusal"})
    if isinstance(error, (BudgetExceededError, TokenBudgetExceededError)):
        return frozenset({"budget"})
    if isinstance(error, (OutputDecodeError, OutputValidationError)):
        return frozenset({"validation", "not_enforced"} if schema_sent else {"validation"})
    return frozenset()


@dataclass(frozen=True)
class Skipped:
    """An endpoint the chain left, and why.

    Attributes:
        index: Its position in the chain.
        model: Its model name.
        trigger: The chosen outcome that moved the chain on.
        error: The error the endpoint's call ended with.
    """

    index: int
    model: str
    trigger: Trigger
    error: BaseException


@dataclass(frozen=True)
class FallbackTrace:
    """Which endpoint of a `FallbackLM` answered (``pred.extras["fallback"]``).

    Attributes:
        index: The answering endpoint's position in the chain (0 for the primary).
        model: Its model name.
        endpoint: Its base URL (``None`` for an LM without one).
        skipped: The endpoints tried before it, with their outcomes.
    """

    index: int
    model: str
    endpoint: str | None
    skipped: tuple[Skipped, ...] = ()


class FallbackLM(BaseLM):
    """Endpoints tried in order: the next one only after a chosen outcome on the current one.

    Build it with ``ts.LM.fallback(primary, secondary, ..., on=...)``. `Predict` and
    `ChainOfThought` run a whole call (request built for that endpoint's profile, feedback
    retries included) on each endpoint in turn, so every trigger applies; used directly
    (``lm("...")``, ReAct steps) the chain switches per request on ``transport``,
    ``rate_limit``, ``refusal`` and ``context_length``. With streaming it switches only
    before the first chunk or event reaches the caller. A failure that is not a chosen
    trigger is raised at once.

    Example:
        ```python
        lm = ts.LM.fallback(
            ts.LM("gpt-4o-mini"),
            ts.LM("qwen3", base_url="http://127.0.0.1:8080/v1", profile="llama.cpp"),
            on={"transport", "rate_limit", "validation"},
        )
        pred = ts.Predict(Answer, lm=lm)(question="...")
        pred.extras["fallback"].model  # which endpoint answered
        ```

    Args:
        *lms: The endpoints, primary first (two or more).
        on: The triggers to switch on (default ``{"transport", "rate_limit"}``).

    Raises:
        ConfigurationError: Fewer than two endpoints, a nested chain, or an unknown trigger.
    """

    def __init__(self, *lms: BaseLM, on: Collection[Trigger] = _DEFAULT_ON) -> None:
        if len(lms) < 2:
            raise ConfigurationError("LM.fallback needs two or more LMs, primary first")
        for lm in lms:
            if isinstance(lm, FallbackLM) or not isinstance(lm, BaseLM):
                raise ConfigurationError(
                    f"LM.fallback takes plain LMs (BaseLM), not {type(lm).__name__}"
                )
        unknown = sorted(set(on) - TRIGGERS)
        if unknown:
            raise ConfigurationError(
                f"LM.fallback: unknown trigger(s) {unknown}; use some of {sorted(TRIGGERS)}"
            )
        self.lms: tuple[BaseLM, ...] = tuple(lms)
        self.on: frozenset[Trigger] = frozenset(on)
        self.model = lms[0].model

    @property
    def profile(self) -> Profile:
        """The primary's profile (direct requests are built for it)."""
        return self.lms[0].profile

    @profile.setter
    def profile(self, profile: str | Profile) -> None:
        self.lms[0].profile = profile

    async def aidentify(self) -> Profile:
        """Identify every endpoint's server where that is still to do; the primary's profile."""
        for lm in self.lms:
            await lm.aidentify()
        return self.profile

    @property
    def defaults(self) -> Mapping[str, Any]:
        """The primary's request defaults (direct requests are built for it)."""
        return self.lms[0].defaults

    @defaults.setter
    def defaults(self, defaults: Mapping[str, Any]) -> None:
        self.lms[0].defaults = defaults

    @property
    def max_json_depth(self) -> int:
        """The primary's (each endpoint's own applies when a whole call runs on it)."""
        return self.lms[0].max_json_depth

    @property
    def max_response_bytes(self) -> int:
        """The primary's."""
        return self.lms[0].max_response_bytes

    def redact(self, text: str) -> str:
        """``text`` without the credentials of any endpoint of the chain."""
        for lm in self.lms:
            text = lm.redact(text)
        return text

    @property
    def endpoint(self) -> str | None:
        """Every endpoint of the chain, joined (a cache key never mixes chains and LMs)."""
        return " | ".join(str(lm.endpoint) for lm in self.lms)

    def trigger(self, error: BaseException, *, schema_sent: bool = False) -> Trigger | None:
        """The chosen trigger ``error`` counts as, or ``None`` (then it is raised)."""
        found = triggers_of(error, schema_sent=schema_sent) & self.on
        # The more specific reason first, for the record.
        return next((t for t in ("not_enforced", *sorted(found)) if t in found), None)

    def trace(self, index: int, skipped: Sequence[Skipped]) -> FallbackTrace:
        """The record of endpoint ``index`` answering after ``skipped``."""
        lm = self.lms[index]
        return FallbackTrace(index, lm.model, lm.endpoint, tuple(skipped))

    async def acomplete(self, request: LMRequest) -> LMResponse:
        """Send ``request`` to each endpoint in turn until one answers without a trigger.

        Raises:
            LMError, RefusalError: The last endpoint's outcome, or a failure not chosen.
        """
        for lm in self.lms[:-1]:
            try:
                response = await lm.acomplete(request)
            except Exception as exc:
                if self.trigger(exc) is None:
                    raise
                continue
            if response.refusal is None or "refusal" not in self.on:
                return response
        return await self.lms[-1].acomplete(request)

    async def astream(self, request: LMRequest) -> AsyncIterator[LMChunk]:
        """Stream from each endpoint in turn; switch only before the first chunk is yielded."""
        for lm in self.lms[:-1]:
            started = False
            try:
                async for chunk in lm.astream(request):
                    started = True
                    yield chunk
                return
            except Exception as exc:
                if started or self.trigger(exc) is None:
                    raise
        async for chunk in self.lms[-1].astream(request):
            yield chunk

    def __repr__(self) -> str:
        return f"LM.fallback({', '.join(map(repr, self.lms))}, on={sorted(self.on)})"
