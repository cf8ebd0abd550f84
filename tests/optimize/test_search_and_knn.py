from __future__ import annotations

import asyncio
import math
import sys

import pytest
from wire_demos import demos_sent

import typedspy as ts
from served import nearest, served
from typedspy.optimize import Candidate
from typedspy.optimize._knn import embedding_text
from typedspy.testing import RouteTicket, embed_text, support_tickets

TRAIN, DEV = support_tickets()


def search(seed: int) -> tuple[list[Candidate], object, int]:
    optimizer = ts.optimize.BootstrapFewShotWithRandomSearch(
        num_candidate_programs=2,
        max_bootstrapped_demos=3,
        max_labeled_demos=3,
        seed=seed,
        verbose=False,
    )
    with served(nearest()) as (server, _):
        best = optimizer.compile(ts.Predict(RouteTicket), TRAIN, valset=DEV)
        report = ts.evaluate(best, DEV)
    assert report.score == max(c.score for c in optimizer.candidates)
    return optimizer.candidates, best.dump_state(), len(server.requests)


def test_random_search_returns_the_best_scoring_candidate_reproducibly() -> None:
    candidates, state, requests = search(seed=5)
    assert [c.index for c in candidates] == [0, 1, 2, 3, 4]
    assert candidates[0].recipe == "no demos"
    assert candidates[0].score == pytest.approx(2 / 12)
    assert candidates[1].recipe == "3 labelled"
    best = max(candidates, key=lambda c: c.score)
    assert best.score > candidates[0].score
    assert search(seed=5) == (candidates, state, requests)


def test_random_search_prints_its_plan(capsys: pytest.CaptureFixture[str]) -> None:
    optimizer = ts.optimize.BootstrapFewShotWithRandomSearch(num_candidate_programs=1, seed=0)
    with served(nearest()):
        optimizer.compile(ts.Predict(RouteTicket, max_retries=0), TRAIN[:4], valset=DEV[:2])
    out = capsys.readouterr().out
    # 2 bootstraps x 4 examples + 4 candidates x 2 validation items, one attempt each
    assert "budget: at most 16 LM calls" in out


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / (
        math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)) or 1.0
    )


def test_knn_sends_the_nearest_training_examples_by_embedding() -> None:
    with served(nearest()) as (server, lm):
        program = ts.optimize.KNNFewShot(
            k=2, lm=lm, embedding_model="embed-1", stratify=False, verbose=False
        ).compile(ts.Predict(RouteTicket), TRAIN)
        for ex in DEV[:4]:
            program(**ex.inputs())
    first = server.embedding_requests[0]
    assert first["model"] == "embed-1"
    assert first["input"] == [embedding_text(ex.inputs()) for ex in TRAIN]
    assert len(server.embedding_requests) == 5  # the train set once, then one per call
    train_vectors = [embed_text(embedding_text(ex.inputs())) for ex in TRAIN]
    for ex, body in zip(DEV[:4], server.requests, strict=True):
        query = embed_text(embedding_text(ex.inputs()))
        sims = [cosine(query, v) for v in train_vectors]
        nearest_two = sorted(range(12), key=lambda i: (-sims[i], i))[:2]
        assert [t for t, _ in demos_sent(body)] == [TRAIN[i].ticket for i in nearest_two]


def test_knn_raises_the_score_over_no_demos() -> None:
    with served(nearest()):
        plain = ts.evaluate(ts.Predict(RouteTicket), DEV)
        knn = ts.optimize.KNNFewShot(k=1, verbose=False).compile(ts.Predict(RouteTicket), TRAIN)
        report = ts.evaluate(knn, DEV)
    assert plain.percent == 16.67
    assert report.percent > 90


def test_knn_needs_an_lm_that_embeds() -> None:
    lm = ts.testing.FakeLM([])
    with pytest.raises(ts.ConfigurationError, match="cannot embed"):
        ts.optimize.KNNFewShot(lm=lm, verbose=False).compile(ts.Predict(RouteTicket), TRAIN)


def test_knn_without_numpy_says_so_before_it_pays_for_an_embedding(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "numpy", None)  # what an install without the knn extra sees
    with served(nearest()) as (server, _), pytest.raises(ts.ConfigurationError, match="numpy"):
        ts.optimize.KNNFewShot(k=1, verbose=False).compile(ts.Predict(RouteTicket), TRAIN)
    assert server.embedding_requests == []


def test_knn_neighbours_are_the_demos_a_call_sends() -> None:
    with served(nearest()) as (server, lm):
        program = ts.optimize.KNNFewShot(
            k=2, lm=lm, embedding_model="embed-1", stratify=False, verbose=False
        ).compile(ts.Predict(RouteTicket), TRAIN)
        near = asyncio.run(program.neighbours(DEV[0].inputs()))
        program(**DEV[0].inputs())
    assert [ex.ticket for ex in near] == [t for t, _ in demos_sent(server.requests[-1])]
    assert len(near) == 2


def test_random_search_whose_budget_ends_before_one_candidate_adds_no_demos(
    caplog: pytest.LogCaptureFixture,
) -> None:
    budget = ts.limits.Budget(requests=2)  # the first candidate needs 3 validation runs
    optimizer = ts.optimize.BootstrapFewShotWithRandomSearch(
        num_candidate_programs=1, budget=budget, verbose=False
    )
    program = ts.Predict(RouteTicket, max_retries=0)
    with served(nearest()) as (server, _):
        compiled = optimizer.compile(program, TRAIN, valset=DEV[:3])
    assert optimizer.candidates == [] and len(server.requests) == budget.requests == 2
    assert compiled is not program and compiled.demos == []  # type: ignore[attr-defined]
    assert "budget spent before any candidate; no demos added" in caplog.text


def test_a_training_example_that_does_not_validate_is_refused_by_compile_naming_it() -> None:
    # Any example may be a call's nearest: it was embedded, then failed every call that picked it.
    class Score(ts.Signature):
        """Score the text."""

        text: str = ts.InputField()
        score: float = ts.OutputField()

    train = [
        ts.Example(text="late refund", score="very").with_inputs("text"),
        ts.Example(text="app crash", score=0.5).with_inputs("text"),
    ]
    knn = ts.optimize.KNNFewShot(k=1, embedding_model="embed-1", stratify=False, verbose=False)
    with served(nearest()) as (server, lm):
        knn.lm = lm
        with pytest.raises(
            ts.ConfigurationError, match=r"KNNFewShot: trainset\[0\]\.score: Input should be"
        ):
            knn.compile(ts.Predict(Score), train)
    assert server.requests == [] and server.embedding_requests == []  # nothing embedded
