"""The MCP tests need the ``typedspy[mcp]`` extra (in ``dev``); without it only the extra's own
packaging tests run, and the report header says why the rest were not collected."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

HAS_SDK = importlib.util.find_spec("mcp") is not None
_WITHOUT_SDK = {"test_mcp_extra.py"}  # these check the extra's absence and packaging


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if HAS_SDK or collection_path.name in _WITHOUT_SDK:
        return None
    return collection_path.name.startswith("test_mcp_") or None


def pytest_report_header(config: pytest.Config) -> str | None:
    if HAS_SDK:
        return None
    return "typedspy[mcp] is not installed: the MCP tests in tests/mcp_extra are not collected"
