"""A local server named by OPENAI_BASE_URL alone (no key) works, the quickstart included."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import typedspy as ts
from typedspy.testing import StandIn

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart.py"


def test_an_lm_with_only_openai_base_url_in_the_environment_calls_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with StandIn() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        lm = ts.LM("standin-1")
        pred = ts.Predict("question -> answer: int", lm=lm)(question="2 + 2?")
        lm.close()

    assert isinstance(pred.answer, int)
    assert len(server.requests) == 1


def test_the_quickstart_runs_with_only_openai_base_url_set() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    with StandIn() as server:
        env["OPENAI_BASE_URL"] = server.base_url
        done = subprocess.run(
            [sys.executable, "-W", "error", str(QUICKSTART)],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,  # bounds a hang only
        )

    assert done.returncode == 0, done.stderr
    assert "offline" not in done.stdout.splitlines()[0].lower()
    assert len(server.requests) >= 1
