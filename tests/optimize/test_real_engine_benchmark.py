"""benchmarks/optimize_real_engine.py cannot rot: its whole logic runs offline on the stand-in.

The real-engine run is opt-in (docs/optimizers.md); here `--standin` drives every optimizer,
the counting proxy, the table, the class-coverage check and GEPA's contract checks in seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("gepa", reason="the benchmark runs GEPA (typedspy[gepa])")

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SCRIPT = BENCHMARKS / "optimize_real_engine.py"


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TYPEDSPY_"))}
    return subprocess.run(
        [sys.executable, "-W", "error", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**base, **(env or {})},
        check=False,
    )


def test_standin_run_measures_every_optimizer_and_checks_the_contracts(tmp_path: Path) -> None:
    log = tmp_path / "exchanges.jsonl"
    done = run("--standin", "--no-dspy", "--log", str(log))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    table = [line for line in out.splitlines() if line.startswith("| typedspy |")]
    names = [line.split(" | ")[1] for line in table[-5:]]
    assert names == [
        "no demos",
        "LabeledFewShot(k=8)",
        "BootstrapFewShot(4 bootstrapped, 4 labelled)",
        "RandomSearch(4 candidates)",
        "GEPA(Budget(requests=400))",
    ]
    assert "| typedspy | no demos | 25.0% | 0 | 0 |" in out  # the stand-in's fallback team
    assert "billing 2 shipping 2 technical 2 account 2" in out  # k=8 spread over 4 teams
    assert "- demos of a single class: none" in out
    assert "saved as JSON and loaded back identical" in out
    assert "FAILED" not in out
    # Every chat request the table counts passed the proxy and is in the log, labelled.
    cells = [line.split(" | ") for line in table[-5:]]
    counted = sum(int(c[3]) + int(c[6]) for c in cells)
    exchanges = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(exchanges) == counted
    assert Counter(e["run"] for e in exchanges)["typedspy no demos dev"] == 52
    planned = next(line for line in out.splitlines() if "GEPA planned at most" in line)
    limit = int(planned.split("at most ")[1].split(" LM calls")[0])
    made = int(planned.split("; made ")[1].split(" ")[0])
    assert 0 < made <= limit


def test_without_an_engine_it_says_why_and_exits_zero(tmp_path: Path) -> None:
    done = run("--no-dspy", env={"TYPEDSPY_LLAMA_SERVER": str(tmp_path / "missing")})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "skipped: no llama-server" in done.stdout


def test_a_predictor_whose_demos_show_one_class_is_flagged() -> None:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from _optimize_shared import Row
    finally:
        sys.path.remove(str(BENCHMARKS))
    row = Row("typedspy", "BootstrapFewShot")
    row.demos = {"self": Counter(billing=4)}
    assert row.single_class and row.coverage() == "self: billing 4"
    row.demos = {"self": Counter(billing=3, account=1)}
    assert not row.single_class
