"""One call's plan: the request built from the signature, inputs, demos and history (the prompt)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from typedspy.adapter import Mode, build_request, draft_request, written_as_outputs
from typedspy.engine._attempts import Attempts
from typedspy.engine._draft import Draft, DraftPlan
from typedspy.engine._output import CallPlan
from typedspy.lm import BaseLM, ChatMessage, RequestBound
from typedspy.prediction import Prediction
from typedspy.retry import RetryPolicy
from typedspy.settings import get_settings
from typedspy.signature import Signature

__all__ = ["plan_call", "plan_draft"]


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
    draft: Draft | None = None,
) -> CallPlan:
    """The `CallPlan` for one call on ``lm`` in ``mode``; unset limits come from the settings.

    With a ``draft`` (a ``think_then_format`` call's free answer, ADR-086), the request ends
    with it and the turn asking to write it as the outputs, and the call's attempts and request
    bound go on from the draft's.
    """
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
    policy = RetryPolicy(max_retries=retries, wait=settings.retry_wait)
    if draft is None:
        attempts = Attempts(lm, policy, requests=_request_bound(signature))
    else:
        request = replace(request, messages=request.messages + written_as_outputs(draft.text))
        attempts = Attempts(lm, policy, requests=draft.requests, made=list(draft.made))
    return CallPlan(
        signature=signature,
        mode=mode,
        base=request,
        attempts=attempts,
        budget=budget,
        prediction=prediction,
    )


def plan_draft(
    signature: type[Signature],
    lm: BaseLM,
    inputs: Mapping[str, Any],
    history: Sequence[ChatMessage],
    *,
    demos: Sequence[Mapping[str, Any]],
    params: Mapping[str, Any],
) -> DraftPlan:
    """The first request of a ``think_then_format`` call: one attempt, no retry (ADR-086)."""
    request = draft_request(
        signature,
        inputs,
        profile=lm.profile,
        demos=demos,
        history=history,
        params=params,
        defaults=lm.defaults,
    )
    attempts = Attempts(lm, RetryPolicy(max_retries=0), requests=_request_bound(signature))
    return DraftPlan(signature, request, attempts)


def _request_bound(signature: type[Signature]) -> RequestBound | None:
    """The ``max_requests`` bound of one call (ADR-029), or None."""
    limit = get_settings().max_requests
    return None if limit is None else RequestBound(limit, signature.__name__)
