"""One call's plan: the request built from the signature, inputs, demos and history (the prompt)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from typedspy.adapter import Mode, build_request
from typedspy.engine._attempts import Attempts
from typedspy.engine._output import CallPlan
from typedspy.lm import BaseLM, ChatMessage, RequestBound
from typedspy.prediction import Prediction
from typedspy.retry import RetryPolicy
from typedspy.settings import get_settings
from typedspy.signature import Signature

__all__ = ["plan_call"]


def plan_call(
    signature: type[Signature],
    lm: BaseLM,
    mode: Mode,
    inputs: Mapping[str, Any],
    history: Sequence[ChatMessage],
    *,
    demos: Sequence[Mapping[str, Any]],
    params: Mapping[str, Any],
    max_retries: int | None,
    token_budget: int | None,
    prediction: type[Prediction[Any]] = Prediction,
) -> CallPlan:
    """The `CallPlan` for one call on ``lm`` in ``mode``; unset limits come from the settings."""
    settings = get_settings()
    request = build_request(
        signature,
        inputs,
        mode=mode,
        profile=lm.profile,
        demos=demos,
        history=history,
        params=params,
        defaults=lm.defaults,
    )
    retries = max_retries if max_retries is not None else settings.max_retries
    budget = token_budget if token_budget is not None else settings.token_budget
    requests = (
        None
        if settings.max_requests is None
        else RequestBound(settings.max_requests, signature.__name__)
    )
    attempts = Attempts(
        lm, RetryPolicy(max_retries=retries, wait=settings.retry_wait), requests=requests
    )
    return CallPlan(
        signature=signature,
        mode=mode,
        base=request,
        attempts=attempts,
        budget=budget,
        prediction=prediction,
    )
