"""`ts.retry.RetryPolicy.attempts`: slots until one is not failed, at most ``max_retries + 1``."""

from __future__ import annotations

import asyncio

import pytest

import typedspy as ts


async def run(policy: ts.retry.RetryPolicy, failing: int) -> list[tuple[int, bool]]:
    """Iterate the policy's slots, failing the first ``failing`` of them."""
    seen: list[tuple[int, bool]] = []
    async for slot in policy.attempts():
        if slot.number <= failing:
            slot.fail(ts.retry.RetryableFailure(f"attempt {slot.number}"))
        seen.append((slot.number, slot.failed))
    return seen


@pytest.mark.parametrize("failing", [0, 1, 2])
def test_slots_come_until_one_is_not_failed(failing: int) -> None:
    seen = asyncio.run(run(ts.retry.RetryPolicy(max_retries=2), failing))
    assert seen == [(n, n <= failing) for n in range(1, failing + 2)]


def test_the_last_failure_is_raised_once_the_bound_is_reached() -> None:
    with pytest.raises(ts.retry.RetryableFailure) as raised:
        asyncio.run(run(ts.retry.RetryPolicy(max_retries=1), failing=5))
    assert raised.value.failure == "attempt 2"
