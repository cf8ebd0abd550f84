"""Evaluate end to end against a real local engine (opt-in; see docs/evaluate.md).

Run: ``TYPEDSPY_REAL_BASE_URL=http://127.0.0.1:8080/v1 python -m pytest tests/real_engine``
(``TYPEDSPY_REAL_MODEL``, ``TYPEDSPY_REAL_PROFILE`` default to ``smollm2`` and ``llama.cpp``).
"""

from __future__ import annotations

import os

import pytest

import typedspy as ts
from typedspy.testing import RouteTicket, support_tickets

BASE_URL = os.environ.get("TYPEDSPY_REAL_BASE_URL")
pytestmark = pytest.mark.skipif(
    not BASE_URL, reason="set TYPEDSPY_REAL_BASE_URL to a local engine's /v1 URL to run"
)


def test_evaluate_and_labeled_few_shot_run_end_to_end_on_a_real_engine() -> None:
    train, dev = support_tickets()
    lm = ts.LM(
        os.environ.get("TYPEDSPY_REAL_MODEL", "smollm2"),
        base_url=BASE_URL,
        api_key="sk-local",
        profile=os.environ.get("TYPEDSPY_REAL_PROFILE", "llama.cpp"),
    )
    try:
        with ts.context(lm=lm):
            plain = ts.evaluate(ts.Predict(RouteTicket), dev[:4], concurrency=2, timeout=300)
            fewshot = ts.LabeledFewShot(k=3, verbose=False).compile(ts.Predict(RouteTicket), train)
            shown = ts.evaluate(fewshot, dev[:4], concurrency=2, timeout=300)
    finally:
        lm.close()
    for report in (plain, shown):
        assert len(report.items) == 4
        assert "transport" not in report.failures, report.table()
        assert report.calls >= 4
        for item in report.items:
            assert (item.outputs is None) == (item.failure is not None)
        print(report)
