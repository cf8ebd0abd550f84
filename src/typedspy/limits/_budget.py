"""`Budget`: caps on requests and tokens, shared by every call made under it."""

from __future__ import annotations

import threading
from decimal import Decimal

from typedspy._types import Usage
from typedspy.errors import BudgetExceededError, ConfigurationError, check_int
from typedspy.limits._prices import price_of

__all__ = ["Budget"]


class Budget:
    """Limits on what the calls made under it may spend, counted across all of them.

    Put one in the settings (``ts.configure(budget=...)``, ``with ts.context(budget=...)``) or
    pass it to `Module.abatch`: every request sent under it (retries, ReAct steps, sub-modules,
    batch items) is counted. A request is refused *before* it is sent, with
    `BudgetExceededError`, when the request limit is reached, when a token limit is already
    spent, or when its estimated prompt would not fit in what is left of ``input_tokens`` or
    ``total_tokens``. Requests running concurrently can together pass an output or total
    token limit by what they generate; a batch turns each refusal into that item's result.
    Responses served from the response cache cost nothing. A ``cost`` limit prices each reply
    with the ``genai-prices`` package (``pip install "typedspy[prices]"``) from its model and
    endpoint; a model it has no price for is a `ConfigurationError`.

    Example:
        ```python
        budget = ts.limits.Budget(requests=100, total_tokens=50_000)
        with ts.context(budget=budget):
            ...
        budget.requests, budget.usage  # what was spent
        ```

    Args:
        requests: Requests that may be sent.
        input_tokens: Prompt tokens that may be spent.
        output_tokens: Completion tokens that may be spent.
        total_tokens: Prompt plus completion tokens that may be spent.
        cost: US dollars that may be spent (needs the ``prices`` extra).

    Raises:
        ConfigurationError: A limit that is not an int >= 0 (``cost``: a number >= 0), or no
            limit at all.
    """

    def __init__(
        self,
        *,
        requests: int | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        total_tokens: int | None = None,
        cost: float | Decimal | None = None,
    ) -> None:
        if cost is not None and (
            isinstance(cost, bool) or not isinstance(cost, (int, float, Decimal)) or cost < 0
        ):
            raise ConfigurationError(f"Budget(cost={cost!r}): expected dollars >= 0")
        limits = {
            "requests": requests,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": total_tokens,
        }
        for name, value in limits.items():
            check_int("Budget", name, value, minimum=0)
        if all(v is None for v in limits.values()) and cost is None:
            raise ConfigurationError("Budget() needs at least one limit")
        self.limits: dict[str, int | Decimal] = {k: v for k, v in limits.items() if v is not None}
        if cost is not None:
            self.limits["cost"] = Decimal(str(cost))
        self._lock = threading.Lock()
        self._requests = 0
        self._usage = Usage()
        self._cost = Decimal(0)

    @property
    def requests(self) -> int:
        """Requests sent under this budget so far."""
        return self._requests

    @property
    def usage(self) -> Usage:
        """Tokens spent under this budget so far."""
        return self._usage

    @property
    def cost(self) -> Decimal:
        """US dollars spent under this budget so far (counted only with a ``cost`` limit)."""
        return self._cost

    def remaining(self) -> dict[str, int | Decimal]:
        """What is left of each limit (never below 0)."""
        spent = self._spent()
        return {name: max(0, allowed - spent[name]) for name, allowed in self.limits.items()}

    def reserve(
        self, estimated_input_tokens: int, *, model: str = "", endpoint: str | None = None
    ) -> None:
        """Count one request about to be sent, or refuse it.

        Args:
            estimated_input_tokens: Its prompt, estimated (see `estimate_tokens`).
            model: The model it goes to (priced when there is a ``cost`` limit).
            endpoint: The endpoint it goes to (picks the provider's prices).

        Raises:
            BudgetExceededError: It would go past a limit; it was not counted.
            ConfigurationError: A ``cost`` limit, and no price is known for the model.
        """
        if "cost" in self.limits:
            price_of(Usage(), model, endpoint)  # an unpriced model fails before it is sent
        with self._lock:
            spent = self._spent()
            needed = {"requests": 1, "input_tokens": estimated_input_tokens}
            needed["total_tokens"] = estimated_input_tokens
            for name, allowed in self.limits.items():
                extra = needed.get(name, 0)
                if spent[name] + extra > allowed or (extra == 0 and spent[name] >= allowed):
                    raise self._refusal(name, allowed)
            self._requests += 1

    def spend(self, usage: Usage, *, model: str = "", endpoint: str | None = None) -> None:
        """Count the tokens a reply reported (and, with a ``cost`` limit, their price)."""
        price = price_of(usage, model, endpoint) if "cost" in self.limits else Decimal(0)
        with self._lock:
            self._usage += usage
            self._cost += price

    def _spent(self) -> dict[str, int | Decimal]:
        return {
            "requests": self._requests,
            "input_tokens": self._usage.prompt_tokens,
            "output_tokens": self._usage.completion_tokens,
            "total_tokens": self._usage.total_tokens,
            "cost": self._cost,
        }

    def _refusal(self, name: str, allowed: int | Decimal) -> BudgetExceededError:
        spent = self._spent()[name]
        what = "a request" if name == "requests" else f"{name} (estimated need of the next request)"
        return BudgetExceededError(
            f"budget exhausted: {name} limit {allowed}, already spent {spent}; "
            f"refused {what} before sending it",
            limit=name,
            allowed=allowed,
            requests=self._requests,
            usage=self._usage,
        )

    def __repr__(self) -> str:
        limits = ", ".join(f"{k}={v}" for k, v in self.limits.items())
        return f"Budget({limits}; spent requests={self._requests}, usage={self._usage})"
