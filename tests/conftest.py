"""Fixtures shared by test directories."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import typedspy as ts
from typedspy.testing import StandIn


@pytest.fixture
def standin() -> Iterator[tuple[StandIn, ts.LM]]:
    """The stand-in server and an `LM` on it (no SDK retries)."""
    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="offline", max_retries=0)
        yield server, lm
        lm.close()
