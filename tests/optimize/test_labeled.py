from __future__ import annotations

import random

import pytest
from wire_demos import demos_sent

import typedspy as ts
from served import nearest, served
from typedspy.testing import RouteTicket, support_tickets

TRAIN, DEV = support_tickets()


def test_labeled_few_shot_sends_a_seeded_sample_and_leaves_the_original_alone(
    capsys: pytest.CaptureFixture[str],
) -> None:
    program = ts.Predict(RouteTicket)
    compiled = ts.optimize.LabeledFewShot(k=3, seed=7, stratify=False).compile(program, TRAIN)
    assert "LabeledFewShot(k=3): plan" in capsys.readouterr().out
    expected = random.Random(7).sample(TRAIN, 3)
    assert program.demos == []
    assert compiled is not program
    with served(nearest()) as (server, _):
        compiled(ticket=DEV[0].ticket)
    sent = demos_sent(server.requests[0])
    assert sent == [(ex.ticket, {"route": ex.to_dict()["route"]}) for ex in expected]


def test_same_seed_same_demos_other_seed_other_demos() -> None:
    def state(seed: int) -> object:
        opt = ts.optimize.LabeledFewShot(k=4, seed=seed, verbose=False)
        return opt.compile(ts.Predict(RouteTicket), TRAIN).dump_state()

    assert state(1) == state(1)
    assert state(1) != state(2)
    first = ts.optimize.LabeledFewShot(k=2, sample=False, verbose=False)
    assert first.compile(ts.Predict(RouteTicket), TRAIN).demos == [
        dict(TRAIN[0]),
        dict(TRAIN[1]),
    ]


def test_examples_missing_a_predictors_outputs_are_skipped_for_it() -> None:
    class Two(ts.Module):
        def __init__(self) -> None:
            self.route = ts.Predict(RouteTicket)
            self.other = ts.Predict("ticket -> urgency: int")

    compiled = ts.optimize.LabeledFewShot(k=2, verbose=False).compile(Two(), TRAIN)
    assert isinstance(compiled, Two)
    assert len(compiled.route.demos) == 2
    assert compiled.other.demos == []  # the examples have no urgency label


def test_trainset_must_hold_examples() -> None:
    with pytest.raises(ts.ConfigurationError, match=r"not a ts\.Example"):
        ts.optimize.LabeledFewShot(verbose=False).compile(
            ts.Predict(RouteTicket), [{"ticket": "x"}]
        )  # type: ignore[list-item]
    with pytest.raises(ts.ConfigurationError, match="empty"):
        ts.optimize.LabeledFewShot(verbose=False).compile(ts.Predict(RouteTicket), [])
