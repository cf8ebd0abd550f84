"""The tracing tests need the ``typedspy[otel]`` extra and the OpenTelemetry SDK (both in
``dev``); without them they are not collected, and the report header says why."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

HAS_SDK = importlib.util.find_spec("opentelemetry") is not None and (
    importlib.util.find_spec("opentelemetry.sdk") is not None
)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    return (not HAS_SDK and collection_path.name.startswith("test_otel")) or None


def pytest_report_header(config: pytest.Config) -> str | None:
    if HAS_SDK:
        return None
    return "opentelemetry-sdk is not installed: the tests in tests/tracing are not collected"
