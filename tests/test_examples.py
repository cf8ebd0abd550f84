"""Every example runs offline, as the README promises (each against the bundled stand-in)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.py"))


def run(path: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    done = subprocess.run(
        [sys.executable, "-W", "error", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs_offline(path: Path) -> None:
    assert run(path).strip()


def test_quickstart_says_it_is_offline_and_prints_typed_results() -> None:
    out = run(EXAMPLES[0].parent / "quickstart.py")
    assert out.startswith("offline: OPENAI_API_KEY and OPENAI_BASE_URL are not set")
    assert out.count("confidence") == 3
    assert any(kind in out for kind in ("SpawnTask:", "CompleteTask:", "Continue:"))


def test_parsing_example_shows_each_outcome() -> None:
    out = run(EXAMPLES[0].parent / "01_schema_and_parsing.py")
    assert "ok: SpawnTask(description='Tag v2.1', priority='high')" in out
    assert "ok: CompleteTask(task_id='T-7', result='done')" in out
    assert '_type "Launch" names no member of this union' in out


def test_retries_example_shows_feedback_failure_and_fallback() -> None:
    out = run(EXAMPLES[0].parent / "02_retries_and_modes.py")
    assert "not a message from the user" in out
    assert "result: Refund(amount=12.5, currency='EUR'), urgency 4, after 2 attempts" in out
    assert "OutputValidationError after 2 attempts:" in out
    assert "['json_schema', 'json_object', 'json_object']; remembered mode: json_object" in out


def test_profiles_example_shows_each_typed_outcome() -> None:
    out = run(EXAMPLES[0].parent / "14_profiles_and_failure_kinds.py")
    assert "openai: strict=True, shape in prompt=False, max_tokens=None" in out
    assert "llama.cpp: strict=False, shape in prompt=True, max_tokens=512" in out
    assert "my-server: strict=False, shape in prompt=True, max_tokens=200" in out
    assert "attempts=['not_enforced', None] requests=2" in out
    assert "attempts=['whitespace_loop', None] requests=2" in out
    assert "attempts=['repetition_loop', None] requests=2" in out
    assert "TruncatedOutputError kind=truncated attempts=['truncated'] requests=1" in out


def test_deadlines_example_stops_each_slow_stream_with_its_limit() -> None:
    out = run(EXAMPLES[0].parent / "12_deadlines.py")
    assert "within the deadline: quick" in out
    assert "stopped: limit=deadline, 0.5 s, while streaming the reply" in out
    assert "streamed some=True" in out
    assert "stopped: limit=stream_deadline, 0.3 s" in out


def test_think_then_format_example_drafts_then_formats() -> None:
    out = run(EXAMPLES[0].parent / "19_think_then_format.py")
    assert "first request has response_format: False" in out
    assert "requests: ['free', 'schema', 'schema']" in out
    assert "attempts: [None, 'not_enforced', None]" in out
    assert "the second request carries the draft: True" in out


def test_detect_and_probe_example_identifies_each_server_and_its_tables() -> None:
    out = run(EXAMPLES[0].parent / "18_detect_and_probe.py")
    assert "llama.cpp        -> profile 'llama.cpp'" in out
    assert "llama-cpp-python -> profile 'llama-cpp-python'" in out
    assert "unknown          -> profile 'generic'" in out
    assert "json_schema   ignored   200 without the canary token: 'standin reply'" in out
    assert "auto now tries: prompt, json_schema, json_object" in out
    assert "auto now tries: json_object, prompt, json_schema" in out


def test_fallbacks_example_moves_on_each_chosen_trigger() -> None:
    out = run(EXAMPLES[0].parent / "09_fallbacks.py")
    for trigger in ("transport", "rate_limit", "validation", "context_length"):
        assert f"by small (skipped big: {trigger})" in out
    assert "healthy: answer=4 by big (skipped -)" in out
