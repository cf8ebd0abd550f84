"""The MCP cases need the ``typedspy[mcp]`` extra (in ``dev``); without it, it is not collected."""

from __future__ import annotations

import importlib.util
import signal
from collections.abc import Iterator

import pytest

collect_ignore = [] if importlib.util.find_spec("mcp") else ["test_mcp_hostile.py"]


@pytest.fixture
def hang_guard() -> Iterator[None]:
    """A test still running after 30 s fails (a TimeoutError raised in the main thread)."""

    def hung(signum: int, frame: object) -> None:
        raise TimeoutError("still running after 30 s: the event loop was blocked")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.setitimer(signal.ITIMER_REAL, 30)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
