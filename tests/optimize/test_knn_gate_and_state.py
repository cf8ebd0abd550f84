"""KNNFewShot's embeddings pass the request gate; a saved KNN program reloads elsewhere."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import respx
from saved_program import Pipeline, requests_for, requests_in_a_fresh_process
from wire_demos import demos_sent

import typedspy as ts
from served import nearest, served
from typedspy.testing import RouteTicket, support_tickets
from wire import BASE_URL, make_lm

TRAIN, DEV = support_tickets()
HERE = Path(__file__).parent
TICKETS = [ex.ticket for ex in DEV[:4]]


def knn(k: int = 2, **options: object) -> ts.optimize.KNNFewShot:
    return ts.optimize.KNNFewShot(k=k, embedding_model="embed-1", verbose=False, **options)  # type: ignore[arg-type]


# -- the gate ---------------------------------------------------------------------------------


def test_a_cache_answers_repeated_embeddings_and_replays_them_offline() -> None:
    cache = ts.cache.MemoryCache()
    with served(nearest()) as (server, _):
        with ts.context(cache=cache):
            first = knn().compile(ts.Predict(RouteTicket), TRAIN)
            knn().compile(ts.Predict(RouteTicket), TRAIN)  # the training set: from the cache
            recorded = first(**DEV[0].inputs())
            first(**DEV[0].inputs())  # the query and the chat: from the cache
        assert (len(server.embedding_requests), len(server.requests)) == (2, 1)
        with ts.context(cache=cache, cache_mode="replay"):
            again = knn().compile(ts.Predict(RouteTicket), TRAIN)
            replayed = again(**DEV[0].inputs())
            with pytest.raises(ts.errors.CacheMissError, match="embeddings"):
                again(**DEV[1].inputs())
        assert (len(server.embedding_requests), len(server.requests)) == (2, 1)
    assert replayed == recorded


def test_a_budget_counts_embedding_requests_and_refuses_past_it() -> None:
    with served(nearest()) as (server, _):
        with pytest.raises(ts.BudgetExceededError):
            knn(budget=ts.limits.Budget(requests=0)).compile(ts.Predict(RouteTicket), TRAIN)
        assert server.embedding_requests == []
        budget = ts.limits.Budget(requests=2)
        with ts.context(budget=budget):
            program = knn().compile(ts.Predict(RouteTicket), TRAIN)
            with pytest.raises(ts.BudgetExceededError):
                program(**DEV[0].inputs())  # the query's embedding is the 2nd: no chat left
        assert budget.requests == 2
        assert (len(server.embedding_requests), len(server.requests)) == (2, 0)
        assert budget.usage.prompt_tokens > 0  # the embedding usage was spent


def unreported_embeddings(request: httpx.Request) -> httpx.Response:
    texts = json.loads(request.content)["input"]
    data = [{"object": "embedding", "index": i, "embedding": [1.0, i]} for i in range(len(texts))]
    return httpx.Response(200, json={"object": "list", "data": data, "model": "embed-1"})


@respx.mock
def test_embeddings_without_usage_count_their_estimate_and_a_failed_one_gives_its_hold_back() -> (
    None
):
    answered: list[httpx.Request] = []

    def embeddings(request: httpx.Request) -> httpx.Response:  # the first answered, then 500
        answered.append(request)
        return unreported_embeddings(request) if len(answered) == 1 else httpx.Response(500)

    respx.post(f"{BASE_URL}/embeddings").mock(side_effect=embeddings)
    lm = make_lm()
    budget = ts.limits.Budget(input_tokens=1_000_000, requests=5)
    try:
        with ts.context(lm=lm, budget=budget):
            knn().compile(ts.Predict(RouteTicket), TRAIN)
            estimated = budget.usage
            with pytest.raises(ts.errors.LMStatusError):
                knn().compile(ts.Predict(RouteTicket), TRAIN)
    finally:
        lm.close()
    spent = estimated.prompt_tokens
    assert spent > 0 and estimated == ts.prediction.Usage(spent, 0, spent)  # the estimate
    assert budget.usage == estimated  # the failed request held its estimate, then gave it back
    assert budget.remaining() == {"input_tokens": 1_000_000 - spent, "requests": 3}


def test_a_batch_counts_each_items_embedding_and_a_budget_refusal_is_its_result() -> None:
    with served(nearest()) as (server, _):
        program = knn().compile(ts.Predict(RouteTicket), TRAIN)
        results = program.batch(
            [ex.inputs() for ex in DEV[:3]], concurrency=1, budget=ts.limits.Budget(requests=3)
        )
    assert [type(r).__name__ for r in results] == ["Prediction", *["BudgetExceededError"] * 2]
    assert [item.requests for item in results.items] == [2, 1, 0]  # embedding + chat, ...
    assert (len(server.embedding_requests), len(server.requests)) == (1 + 2, 1)


class CountingLimit(ts.limits.RateLimit):
    """A rate limit that records what each request is charged (a user subclass)."""

    def __init__(self) -> None:
        super().__init__(tokens_per_minute=6_000_000)
        self.estimates: list[int] = []

    async def acquire(self, estimated_input_tokens: int) -> int:
        self.estimates.append(estimated_input_tokens)
        return await super().acquire(estimated_input_tokens)


def test_a_rate_limit_is_charged_for_embeddings() -> None:
    limit = CountingLimit()
    with served(nearest()), ts.context(rate_limit=limit):
        knn().compile(ts.Predict(RouteTicket), TRAIN)
    texts = "".join(f"ticket: {ex.ticket}" for ex in TRAIN)
    assert limit.estimates == [len(texts) // 4]


# -- saved and reloaded -----------------------------------------------------------------------


def compiled() -> ts.Module:
    with served(nearest()):
        return knn(k=3).compile(Pipeline(), TRAIN)


def test_a_saved_knn_program_picks_the_same_demos_in_a_fresh_process(tmp_path: Path) -> None:
    program = compiled()
    path = tmp_path / "knn.json"
    program.save(path)
    here = requests_for(program, TICKETS)
    there = requests_in_a_fresh_process("ts.optimize.KNNProgram(Pipeline())", path, TICKETS)
    assert there == here
    embeds = [json.loads(b) for b in here[:4]]
    assert [e["input"] for e in embeds] == [[f"ticket: {t}"] for t in TICKETS]  # no re-embedding
    routes = [json.loads(b) for b in here[4:] if "route" in json.dumps(json.loads(b)["messages"])]
    assert all(len(demos_sent(body)) == 3 for body in routes[::2])


def test_saved_knn_state_is_json_and_refused_by_a_plain_program(tmp_path: Path) -> None:
    program = compiled()
    path = tmp_path / "knn.json"
    program.save(path)
    saved = json.loads(path.read_text())
    assert sorted(saved) == ["knn", "predictors", "scored", "version"]
    assert sorted(saved["predictors"]) == ["program.explain", "program.route"]
    rows = saved["knn"]["examples"]
    assert rows[0]["inputs"] == ["ticket"]
    assert rows[0]["values"]["route"]["_type"] in ("Billing", "Bug", "Account")
    assert len(saved["knn"]["vectors"]) == len(TRAIN)
    with pytest.raises(ts.ConfigurationError, match="knn"):
        ts.optimize.KNNProgram(Pipeline()).load_state(
            {k: v for k, v in saved.items() if k != "knn"}
        )
    fresh = ts.optimize.KNNProgram(Pipeline())
    with pytest.raises(ts.ConfigurationError):
        fresh.load_state({**saved, "knn": {**saved["knn"], "vectors": [[1.0]]}})
    assert fresh.examples == []  # nothing changed


def test_an_uncompiled_knn_program_says_what_is_missing() -> None:
    with served(nearest()), pytest.raises(ts.ConfigurationError, match="no training examples"):
        ts.optimize.KNNProgram(ts.Predict(RouteTicket))(**DEV[0].inputs())


def nested(levels: int) -> list[object]:
    value: list[object] = []
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("note", "problem"),
    [
        (nested(254), "nested deeper than 256 levels"),  # fits the example, not the file
        (nested(300), "nested deeper than 256 levels"),  # was a bare ValueError
        (object(), "Unable to serialize unknown type"),  # was a PydanticSerializationError
    ],
)
def test_a_knn_program_whose_examples_json_cannot_hold_is_refused_saving(
    tmp_path: Path, note: object, problem: str
) -> None:
    example = ts.Example(ticket="x", note=note).with_inputs("ticket")
    program = ts.optimize.KNNProgram(ts.Predict(RouteTicket), [example], [[1.0]])
    with pytest.raises(
        ts.errors.SavedStateError, match=rf"cannot be written: knn.examples: {problem}"
    ):
        program.save(tmp_path / "knn.json")
    assert not (tmp_path / "knn.json").exists()


def test_a_knn_program_needs_one_vector_per_example() -> None:
    with pytest.raises(ts.ConfigurationError, match="KNNProgram: 1 vectors for 2 examples"):
        ts.optimize.KNNProgram(ts.Predict(RouteTicket), TRAIN[:2], [[1.0, 0.0]])


# -- vectors that are not unit length ---------------------------------------------------------


class Ask(ts.Signature):
    """Answer."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


def test_vectors_of_any_length_rank_by_cosine_given_or_loaded(tmp_path: Path) -> None:
    # Vectors from elsewhere (another embedder, a file) need not be unit length: a long one
    # outranked the exact match when similarity was the dot product.
    import asyncio

    from typedspy.testing import embed_text

    examples = [
        ts.Example(Ask, question="gamma", answer="far"),  # cosine 0.5 to the query
        ts.Example(Ask, question="beta", answer="near"),  # cosine 1
    ]
    vectors = [[5 * v for v in embed_text("question: gamma")], embed_text("question: beta")]
    given = ts.optimize.KNNProgram(ts.Predict(Ask), examples, vectors, k=1)
    path = tmp_path / "knn.json"
    given.save(path)
    saved = json.loads(path.read_text())
    saved["knn"]["vectors"][0] = vectors[0]  # a file written by other code
    path.write_text(json.dumps(saved))
    loaded = ts.optimize.KNNProgram(ts.Predict(Ask))
    loaded.load(path)

    with served():
        for program in (given, loaded):
            [first] = asyncio.run(program.neighbours({"question": "beta"}))
            assert first.answer == "near"


def test_vectors_of_huge_or_tiny_values_rank_by_cosine() -> None:
    # A row of 1e200s overflowed its length (a RuntimeWarning, then a zero row); one of
    # 1e-200s underflowed to length 0 and was left unscaled, so it ranked below a worse match.
    import asyncio

    from typedspy.testing import embed_text

    examples = [
        ts.Example(Ask, question="gamma", answer="far"),  # cosine 0.5 to the query
        ts.Example(Ask, question="beta", answer="near"),  # cosine 1
    ]
    gamma, beta = embed_text("question: gamma"), embed_text("question: beta")
    for scale in (1e200, 1e-200):
        vectors = [gamma, [scale * v for v in beta]]
        program = ts.optimize.KNNProgram(ts.Predict(Ask), examples, vectors, k=1)
        with served():
            [first] = asyncio.run(program.neighbours({"question": "beta"}))
        assert first.answer == "near", scale
