"""Optimizers and `verify` under hostile data, servers and options: typed errors, no crash.

A dev set row with a lone surrogate (an escaped half emoji in a JSONL row) is scored and
verified; an embedding endpoint whose vectors differ in width, or an embedder that hands back
NaN, is a typed error naming what is wrong, not numpy's ValueError or a random ranking.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import pytest

import typedspy as ts
from faults.server import FaultServer, Reply, Seen
from served import nearest, served
from typedspy.testing import RouteTicket, support_tickets

TRAIN, DEV = support_tickets()
NO_VALUES: list[list[float]] = [[], [], []]
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


def embeddings_server(train: list[list[float]], query: list[float]) -> FaultServer:
    """Embeds a request of many texts as ``train``, one text as ``query``; answers a Bug."""

    def echo(seen: Seen) -> Reply:
        if not seen.path.endswith("/embeddings"):
            return Reply.completion(json.dumps({"route": {"_type": "Bug", "component": "app"}}))
        texts = seen.json()["input"]
        vectors = train[: len(texts)] if len(texts) > 1 else [query]
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        return Reply.json({"object": "list", "model": "e", "data": data, "usage": {}})

    return FaultServer(Reply(echo=echo))


def knn_call(train: list[list[float]], query: list[float]) -> object:
    with embeddings_server(train, query) as server:
        lm = ts.LM("e", base_url=server.url, api_key="k", max_retries=0)
        try:
            with ts.context(lm=lm):
                knn = ts.optimize.KNNFewShot(k=2, verbose=False)
                return knn.compile(ts.Predict(RouteTicket), TRAIN[:3])(ticket=DEV[0].ticket)
        finally:
            lm.close()


@pytest.mark.parametrize(
    ("train", "message"),
    [
        ([[1.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0]], "all of one width"),
        (NO_VALUES, "one or more numbers"),
    ],
)
def test_training_embeddings_of_different_widths_are_an_lm_response_error(
    train: list[list[float]], message: str
) -> None:
    with pytest.raises(ts.errors.LMResponseError, match=f"training inputs: .*{message}"):
        knn_call(train, [1.0, 0.0])


def test_an_input_embedded_in_another_width_than_the_training_set_is_refused() -> None:
    # A saved KNN program used with another embedding model: numpy's matmul ValueError on main.
    with pytest.raises(ts.ConfigurationError, match=r"inputs in 3 values, .* embedded in 2"):
        knn_call([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], [1.0, 0.0, 0.0])


class Embedder(ts.lm.BaseLM):
    """A user's own embedder (no endpoint): what it hands back is not checked on the wire."""

    model = "own"

    def __init__(self, vectors: list[list[float]]) -> None:
        self.vectors = vectors

    async def acomplete(self, request: ts.lm.LMRequest) -> ts.lm.LMResponse:
        raise NotImplementedError

    async def aembed_response(
        self, texts: Sequence[str], *, model: str | None = None
    ) -> ts.lm.EmbeddingResponse:
        return ts.lm.EmbeddingResponse(self.vectors[: len(texts)])


@pytest.mark.parametrize(
    ("vectors", "message"),
    [
        ([[math.nan, 1.0]] * 3, "not a finite number"),
        ([[math.inf, 1.0]] * 3, "not a finite number"),
        ([[1.0], [1.0, 2.0], [1.0]], "all of one width"),
        ([[1.0]], "1 vectors for 3 texts"),
    ],
)
def test_a_user_embedder_handing_back_no_usable_vectors_is_an_lm_response_error(
    vectors: list[list[float]], message: str
) -> None:
    knn = ts.optimize.KNNFewShot(k=2, lm=Embedder(vectors), verbose=False)
    with pytest.raises(ts.errors.LMResponseError, match=message):
        knn.compile(ts.Predict(RouteTicket), TRAIN[:3])


class Overfull(Embedder):
    """Hands back every vector it has, however many texts it was given."""

    async def aembed_response(
        self, texts: Sequence[str], *, model: str | None = None
    ) -> ts.lm.EmbeddingResponse:
        return ts.lm.EmbeddingResponse(self.vectors)


def test_a_query_embedded_in_two_vectors_is_an_error_that_says_so() -> None:
    # The query goes through the training set's check: the count is named (it said "None").
    vectors = [[1.0, 0.0], [0.0, 1.0]]
    program = ts.optimize.KNNProgram(
        ts.Predict(RouteTicket), TRAIN[:2], vectors, k=1, lm=Overfull(vectors)
    )
    with pytest.raises(
        ts.errors.LMResponseError, match="own: the embeddings of the inputs: 2 vectors for 1 texts"
    ):
        program(**DEV[0].inputs())


@pytest.mark.parametrize(
    "vectors", [[[math.nan], [1.0]], [[1.0], [1.0, 2.0]], [["a"], ["b"]], [[], []]]
)
def test_a_knn_program_built_with_unusable_vectors_is_refused(vectors: list[list[float]]) -> None:
    with pytest.raises(ts.ConfigurationError, match="KNNProgram: vectors: "):
        ts.optimize.KNNProgram(ts.Predict(RouteTicket), TRAIN[:2], vectors)


def test_a_metric_that_fails_on_every_prediction_is_said_once_not_silently_zero_demos(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A metric with no `return` (None): every prediction failed to pass, and the compile
    # returned a program without bootstrapped demos, saying nothing.
    optimizer = ts.optimize.BootstrapFewShot(
        lambda example, prediction: None,  # type: ignore[arg-type,return-value]
        max_labeled_demos=0,
        verbose=False,
    )
    with served(nearest()), caplog.at_level("WARNING", logger="typedspy"):
        optimizer.compile(ts.Predict(RouteTicket), TRAIN[:4])
    said = [r.getMessage() for r in caplog.records if "the metric failed" in r.getMessage()]
    assert len(said) == 1
    assert "BootstrapFewShot" in said[0] and "returned NoneType" in said[0]
    assert optimizer.result.passed == [] and optimizer.result.failed == [0, 1, 2, 3]
