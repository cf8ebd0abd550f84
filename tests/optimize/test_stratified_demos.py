"""Issue 20, item 2: demos spread over the output's classes (ADR-082), proved at the wire.

A 4-way `Literal` routing task. The teacher is the stand-in over a socket, scripted to answer
"billing" to every request at first (as the small model in the issue did) and the right queue
after that; the training set is interleaved, so the first passing runs are all billing.
"""

from __future__ import annotations

import enum
import io
import json
import threading
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

import typedspy as ts
from served import served
from typedspy.testing import NearestDemo, StandIn

Queue = Literal["billing", "bug", "account", "sales"]
WORDS = {
    "billing": "refund invoice charge",
    "bug": "crash error broken",
    "account": "password login locked",
    "sales": "pricing quote plan",
}


class Route(ts.Signature):
    """Route the message to a queue."""

    message: str = ts.InputField()
    queue: Queue = ts.OutputField()


def example(queue: str, i: int) -> ts.Example:
    return ts.Example(Route, message=f"{WORDS[queue]} case {i}", queue=queue)


INTERLEAVED = [example(q, i) for i in range(3) for q in WORDS]  # billing, bug, account, sales, ...
SKEWED = [
    *(example("billing", i) for i in range(9)),
    *(example(q, 0) for q in WORDS if q != "billing"),
]
DEV = [example(q, i) for i in range(10, 12) for q in WORDS]


def queue_of(text: str) -> str:
    return next(q for q, words in WORDS.items() if words in text)


class BiasedAtFirst:
    """Answers "billing" to the first ``biased`` requests, then the right queue (not ``never``)."""

    def __init__(self, biased: int, never: str = "") -> None:
        self.biased, self.never, self.seen = biased, never, 0
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        with self._lock:
            self.seen += 1
            seen = self.seen
        right = queue_of(body["messages"][-1]["content"])
        wrong = seen <= self.biased or right == self.never
        return json.dumps({"queue": "billing" if wrong else right})


def classes_sent(server: StandIn) -> list[str]:
    """The queues the demos of the last request show (assistant turns)."""
    turns = [m for m in server.requests[-1]["messages"] if m["role"] == "assistant"]
    return [json.loads(t["content"])["queue"] for t in turns]


def test_the_class_of_a_label_comes_from_the_signature_at_any_depth() -> None:
    class Tier(enum.Enum):
        FREE = "free"
        PRO = "pro"

    class Refund(BaseModel):
        urgent: bool

    class Invoice(BaseModel):
        invoice_id: str

    class Billing(BaseModel):
        request: Refund | Invoice

    class Bug(BaseModel):
        component: str

    class Triage(ts.Signature):
        """Triage."""

        ticket: str = ts.InputField()
        team: Billing | Bug = ts.OutputField()
        tier: Tier | None = ts.OutputField()
        note: str = ts.OutputField()

    value = Billing(request=Refund(urgent=True))
    shown = "team=Billing(request=Refund(urgent=true)), tier=pro"
    assert ts.optimize.demo_class(Triage, {"team": value, "tier": Tier.PRO, "note": "x"}) == shown
    tagged = {"_type": "Billing", "request": {"_type": "Refund", "urgent": True}}
    assert ts.optimize.demo_class(Triage, {"team": tagged, "tier": "pro"}) == shown
    assert ts.optimize.demo_class(Triage, {"team": Bug(component="app"), "tier": None}) == (
        "team=Bug, tier=null"
    )
    assert ts.optimize.demo_class(Triage, {"ticket": "t", "note": "open text"}) is None


class Level5(BaseModel):
    urgent: bool


class Level4(BaseModel):
    inner: Level5 | None


class Level3(BaseModel):
    inner: Level4 | None


class Level2(BaseModel):
    inner: Level3 | None


class Level1(BaseModel):
    inner: Level2 | None


@pytest.mark.parametrize(
    ("annotation", "value", "shown"),
    [
        (Literal["yes", "no"] | None, "yes", "verdict=yes"),
        (bool | None, False, "verdict=false"),
        (
            Annotated[Literal["yes", "no"], Field(description="the verdict")] | None,
            "no",
            "verdict=no",
        ),
        (Literal["none"] | list[str], ["a"], None),  # the open member holds it: no class
        (
            Level2 | None,
            Level2(inner=Level3(inner=Level4(inner=Level5(urgent=True)))),
            "verdict=inner=inner=inner=urgent=true",
        ),
        (
            Level1 | None,
            Level1(inner=Level2(inner=Level3(inner=Level4(inner=Level5(urgent=True))))),
            None,
        ),
    ],
)
def test_a_finite_member_of_an_optional_or_mixed_union_gives_a_class_to_a_depth(
    annotation: Any, value: Any, shown: str | None
) -> None:
    # Past four model levels, nothing splits classes (Level1's urgent is on the fifth).
    sig = type(
        "Judge",
        (ts.Signature,),
        {
            "__doc__": "Judge.",
            "__annotations__": {"claim": str, "verdict": annotation},
            "claim": ts.InputField(),
            "verdict": ts.OutputField(),
        },
    )
    assert ts.optimize.demo_class(sig, {"claim": "c", "verdict": value}) == shown


def test_labeled_few_shot_with_k_below_the_trainset_covers_every_class() -> None:
    for seed in range(5):
        with served(NearestDemo('{"queue":"billing"}')) as (server, _):
            compiled = ts.optimize.LabeledFewShot(k=4, seed=seed, verbose=False).compile(
                ts.Predict(Route), SKEWED
            )
            compiled(**DEV[0].inputs())
        assert sorted(classes_sent(server)) == sorted(WORDS), seed
    plain = ts.optimize.LabeledFewShot(k=4, seed=0, stratify=False, verbose=False)
    shown = [d["queue"] for d in plain.compile(ts.Predict(Route), SKEWED).demos]
    assert len(set(shown)) < len(WORDS)  # a plain sample of a skewed set misses classes


def test_bootstrap_keeps_going_until_every_class_the_teacher_passes_on_has_a_demo() -> None:
    teacher = BiasedAtFirst(biased=8)  # the first two rounds of four are all "billing"
    out = io.StringIO()
    with served(teacher) as (server, _):
        optimizer = ts.optimize.BootstrapFewShot(
            max_bootstrapped_demos=4, max_labeled_demos=4, concurrency=1
        )
        optimizer.out = out
        compiled = optimizer.compile(ts.Predict(Route, max_retries=0), INTERLEAVED)
        teacher_requests = len(server.requests)
        compiled(**DEV[0].inputs())
    passed = [INTERLEAVED[i].queue for i in optimizer.result.passed]
    assert passed == ["billing", "billing", "billing", "bug", "account", "sales"]
    assert teacher_requests == len(INTERLEAVED)  # one pass over the train set, its bound
    assert classes_sent(server) == ["billing", "bug", "account", "sales"]  # round-robin
    text = out.getvalue()
    assert "then only on examples of classes with no passing demo yet" in text
    assert "self: 4 classes (queue=billing x3, queue=bug x3" in text
    assert "self: demos cover 4 of 4 classes" in text


def test_bootstrap_seeks_no_more_classes_than_it_can_show() -> None:
    teacher = BiasedAtFirst(biased=4)
    with served(teacher) as (server, _):
        optimizer = ts.optimize.BootstrapFewShot(
            max_bootstrapped_demos=2, max_labeled_demos=2, concurrency=1, verbose=False
        )
        optimizer.compile(ts.Predict(Route, max_retries=0), INTERLEAVED)
        asked = [queue_of(b["messages"][-1]["content"]) for b in server.requests]
    # billing passes at requests 1 and 5; then only examples of other classes run, until two
    # classes (the demos it can show) have a passing demo
    assert asked == ["billing", "bug", "account", "sales", "billing", "bug"]
    assert [INTERLEAVED[i].queue for i in optimizer.result.passed] == ["billing", "billing", "bug"]


def test_bootstrap_covers_every_class_it_passes_on_and_says_which_it_misses() -> None:
    teacher = BiasedAtFirst(biased=4, never="sales")
    with served(teacher) as (server, _):
        optimizer = ts.optimize.BootstrapFewShot(  # one at a time: the teacher counts requests
            max_bootstrapped_demos=4,
            max_labeled_demos=5,
            max_rounds=2,
            concurrency=1,
            verbose=False,
        )
        compiled = optimizer.compile(ts.Predict(Route, max_retries=0), INTERLEAVED)
        assert len(server.requests) <= 2 * len(INTERLEAVED)  # max_rounds passes at most
    assert {d["queue"] for d in compiled.demos} == set(WORDS)  # sales from a labelled example
    boot = compiled.demos[: len(optimizer.result.passed[:4])]
    assert [d["queue"] for d in boot] == ["billing", "bug", "account", "billing"]
    assert optimizer.coverage is not None and optimizer.coverage["self"].missing == []


def test_bootstrap_without_stratify_stops_at_the_first_passes_as_before() -> None:
    with served(BiasedAtFirst(biased=8)):
        optimizer = ts.optimize.BootstrapFewShot(
            max_bootstrapped_demos=3, max_labeled_demos=3, stratify=False, verbose=False
        )
        compiled = optimizer.compile(ts.Predict(Route, max_retries=0), INTERLEAVED)
    assert [d["queue"] for d in compiled.demos] == ["billing"] * 3
    assert optimizer.coverage is not None and len(optimizer.coverage["self"].missing) == 3


def test_random_search_candidates_spread_their_demos() -> None:
    with served(NearestDemo('{"queue":"billing"}')):
        optimizer = ts.optimize.BootstrapFewShotWithRandomSearch(
            num_candidate_programs=1, max_bootstrapped_demos=2, max_labeled_demos=4, verbose=False
        )
        best = optimizer.compile(ts.Predict(Route), SKEWED, valset=DEV)
    assert {d["queue"] for d in best.demos} == set(WORDS)
    assert optimizer.candidates[1].score == 1.0  # labelled, spread: every class shown


@pytest.mark.parametrize("stratify", [True, False])
def test_knn_spreads_the_nearest_demos_over_classes(stratify: bool) -> None:
    with served(NearestDemo('{"queue":"billing"}')) as (server, _):
        knn = ts.optimize.KNNFewShot(k=2, stratify=stratify, verbose=False).compile(
            ts.Predict(Route), SKEWED
        )
        knn(**example("billing", 20).inputs())
    first, second = classes_sent(server)
    assert first == "billing" and (second != "billing") is stratify
