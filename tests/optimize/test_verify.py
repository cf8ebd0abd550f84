"""Issue 20, item 4: a saved program keeps the score it reached and verifies it (ADR-083).

Compiled online against the stand-in (answering as `NearestDemo`, so the score comes from the
demos), recorded into a SQLite cassette; then verified offline, the server stopped, with
``cache_mode="replay"``: the program as saved passes, the same program with its demos removed
(a deliberately degraded one) is caught.
"""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

import typedspy as ts
from served import nearest
from typedspy.testing import RouteTicket, StandIn, support_tickets

TRAIN, DEV = support_tickets()


def compile_and_record(tmp_path: Path) -> tuple[Path, Path, str]:
    """The saved program, the cassette of its dev-set run and of a degraded one's, the URL."""
    cassette, saved = tmp_path / "cassette.sqlite3", tmp_path / "router.json"
    with StandIn(answer=nearest()) as server, ts.cache.SQLiteCache(cassette) as cache:
        url = server.base_url  # (a stopped server's URL has port 0)
        lm = ts.LM("standin-1", base_url=url, api_key="sk-x", max_retries=0)
        with ts.context(lm=lm, cache=cache):
            optimizer = ts.optimize.LabeledFewShot(k=6, verbose=False)
            compiled = optimizer.compile(ts.Predict(RouteTicket), TRAIN, valset=DEV)
            ts.evaluate(ts.Predict(RouteTicket), DEV)  # what the degraded program will send
        lm.close()
    compiled.save(saved)
    return saved, cassette, url


def offline(cassette: Path, base_url: str) -> AbstractContextManager[object]:
    """Replay only: the server is stopped, and a cassette's keys name the endpoint."""
    lm = ts.LM("standin-1", base_url=base_url, api_key="sk-x", max_retries=0)
    return ts.context(lm=lm, cache=ts.cache.SQLiteCache(cassette), cache_mode="replay")


def test_a_compiled_program_saves_its_score_the_devset_hash_and_the_version(
    tmp_path: Path,
) -> None:
    saved, _, _ = compile_and_record(tmp_path)
    record = json.loads(saved.read_text())["scored"]
    assert record["score"] == pytest.approx(10 / 12) and record["devset_size"] == len(DEV)
    assert record["devset_sha256"] == ts.optimize.devset_hash(DEV)
    assert record["devset_sha256"] == ts.optimize.devset_hash(list(reversed(DEV)))
    assert record["typedspy_version"] == ts.__version__
    assert record["metric"] == "FieldMetric(exact)"


def test_verify_offline_passes_the_saved_program_and_catches_a_degraded_one(
    tmp_path: Path,
) -> None:
    saved, cassette, url = compile_and_record(tmp_path)
    program = ts.Predict(RouteTicket)
    program.load(saved)
    with offline(cassette, url):
        report = ts.optimize.verify(program, DEV)
        assert report.passed and report.score == report.recorded.score == pytest.approx(10 / 12)
        assert report.evaluation.cached == len(DEV)  # every reply from the cassette
        program.demos = []  # degraded: its demos removed
        with pytest.raises(ts.errors.VerificationError) as caught:
            ts.optimize.verify(program, DEV, tolerance=0.1)
    error = caught.value
    assert error.reason == "score_dropped" and error.expected == pytest.approx(10 / 12)
    assert error.got == pytest.approx(2 / 12)  # the stand-in's fallback is right for 1 class in 6
    assert "fell by 0.6667" in str(error) and "failed items" not in str(error)


def test_a_changed_devset_is_refused_before_any_request(tmp_path: Path) -> None:
    saved, cassette, url = compile_and_record(tmp_path)
    program = ts.Predict(RouteTicket)
    program.load(saved)
    changed = [*DEV[:-1], DEV[-1].copy(ticket="another ticket")]
    with offline(cassette, url), pytest.raises(ts.errors.VerificationError) as caught:
        ts.optimize.verify(program, changed)
    assert caught.value.reason == "devset_changed"
    assert "is not the one the program was scored on" in str(caught.value)
    assert caught.value.got == ts.optimize.devset_hash(changed)


def test_verify_needs_a_record_and_a_tolerance_in_range(tmp_path: Path) -> None:
    with pytest.raises(ts.ConfigurationError, match="no score record"):
        ts.optimize.verify(ts.Predict(RouteTicket), DEV)
    saved, _, _ = compile_and_record(tmp_path)
    program = ts.Predict(RouteTicket)
    program.load(saved)
    with pytest.raises(ts.ConfigurationError, match=r"tolerance=1\.5"):
        ts.optimize.verify(program, DEV, tolerance=1.5)


def test_a_record_of_the_wrong_shape_is_refused_on_load(tmp_path: Path) -> None:
    saved, _, _ = compile_and_record(tmp_path)
    state = json.loads(saved.read_text())
    state["scored"]["score"] = 1.5
    saved.write_text(json.dumps(state))
    with pytest.raises(ts.errors.SavedStateError, match=r"scored\.score"):
        ts.Predict(RouteTicket).load(saved)
