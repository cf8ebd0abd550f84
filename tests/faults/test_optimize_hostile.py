"""Optimizers and `verify` under hostile data, servers and options: typed errors, no crash.

A dev set row with a lone surrogate (an escaped half emoji in a JSONL row) is scored and
verified; an embedding endpoint whose vectors differ in width, or an embedder that hands back
NaN, is a typed error naming what is wrong, not numpy's ValueError or a random ranking.
"""

from __future__ import annotations

import pytest

import typedspy as ts
from served import nearest, served
from typedspy.testing import RouteTicket, support_tickets

TRAIN, DEV = support_tickets()
SURROGATE = ts.Example(ticket="broken \ud83d emoji", route={"_type": "Bug", "component": "app"})


def test_a_devset_row_with_a_lone_surrogate_is_scored_recorded_and_verified() -> None:
    dev = [*DEV[:3], SURROGATE.with_inputs("ticket")]
    with served(nearest()):
        optimizer = ts.optimize.LabeledFewShot(k=4, verbose=False)
        compiled = optimizer.compile(ts.Predict(RouteTicket), TRAIN, valset=dev)
        assert compiled.score_record is not None
        assert compiled.score_record.devset_sha256 == ts.optimize.devset_hash(dev)
        assert ts.optimize.verify(compiled, dev).passed
    other = ts.Example(ticket="broken \ud83e emoji", route={"_type": "Bug", "component": "app"})
    assert ts.optimize.devset_hash([other.with_inputs("ticket")]) != ts.optimize.devset_hash(
        dev[3:]
    )


@pytest.mark.parametrize("tolerance", ["0.1", None, [0.1]])
def test_a_tolerance_that_is_no_number_is_refused(tolerance: object) -> None:
    with served(nearest()):
        compiled = ts.optimize.LabeledFewShot(k=4, verbose=False).compile(
            ts.Predict(RouteTicket), TRAIN, valset=DEV[:2]
        )
        with pytest.raises(ts.ConfigurationError, match="tolerance="):
            ts.optimize.verify(compiled, DEV[:2], tolerance=tolerance)  # type: ignore[arg-type]
