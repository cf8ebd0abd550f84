"""DSPy's side of `optimize_real_engine.py`: the same task, server, metric and budget.

Imported only when ``dspy`` is importable (it is never a typedspy dependency). DSPy talks to the
server through LiteLLM: the model ``openai/smollm2`` with ``api_base`` at the proxy's ``/v1``, its
response cache off, ``temperature=0`` and ``max_tokens=512`` (what typedspy's ``llama.cpp``
profile sends). Its default adapter (ChatAdapter, falling back to JSONAdapter) is used, as a DSPy
user gets it; ``--log`` shows what it sends.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal, TextIO

import dspy
from _optimize_shared import TEAMS, RecordingProxy, Row, chosen, feedback, rows, table

K, BOOTSTRAPPED, LABELLED, CANDIDATES, THREADS = 8, 4, 4, 4, 2  # as the typedspy runs


class RouteMessage(dspy.Signature):
    """Pick the team that should answer the customer's message."""

    message: str = dspy.InputField()
    team: Literal["billing", "shipping", "technical", "account"] = dspy.OutputField()


def exact(gold: Any, pred: Any, trace: Any = None) -> float:
    """The same metric as typedspy's runs, as a plain score."""
    return feedback(gold.team, getattr(pred, "team", None))[0]


def with_feedback(
    gold: Any, pred: Any, trace: Any = None, pred_name: Any = None, pred_trace: Any = None
) -> Any:
    """The same metric with its feedback, as GEPA takes it."""
    score, text = feedback(gold.team, getattr(pred, "team", None))
    return dspy.Prediction(score=score, feedback=text)


def examples(split: str) -> list[Any]:
    """The task's rows as DSPy examples."""
    return [dspy.Example(**row).with_inputs("message") for row in rows(split)]


def classes(program: Any) -> dict[str, Counter[str]]:
    """Each predictor's demos counted by team."""
    return {
        name: Counter(str(d.get("team")) for d in predictor.demos if d.get("team") in TEAMS)
        for name, predictor in program.named_predictors()
    }


def dspy_runs(proxy: RecordingProxy, out: TextIO, *, budget: int, only: set[str]) -> list[Row]:
    """DSPy's runs; ``budget`` is GEPA's metric calls (those typedspy's GEPA planned)."""
    lm = dspy.LM(
        "openai/smollm2",
        api_base=f"{proxy.url}/v1",
        api_key="none",
        temperature=0.0,
        max_tokens=512,
        cache=False,
    )
    dspy.configure(lm=lm, max_errors=10_000)  # a reply it cannot parse scores 0; go on
    train, dev = examples("train"), examples("dev")
    evaluate = dspy.Evaluate(devset=dev, metric=exact, num_threads=THREADS, display_progress=False)
    program = dspy.Predict(RouteMessage)
    optimizers: list[tuple[str, Any]] = [
        ("no demos", None),
        (f"LabeledFewShot(k={K})", dspy.LabeledFewShot(k=K)),
        (
            f"BootstrapFewShot({BOOTSTRAPPED} bootstrapped, {LABELLED} labelled)",
            dspy.BootstrapFewShot(
                metric=exact, max_bootstrapped_demos=BOOTSTRAPPED, max_labeled_demos=LABELLED
            ),
        ),
        (
            f"RandomSearch({CANDIDATES} candidates)",
            dspy.BootstrapFewShotWithRandomSearch(
                metric=exact,
                max_bootstrapped_demos=BOOTSTRAPPED,
                max_labeled_demos=LABELLED,
                num_candidate_programs=CANDIDATES,
                num_threads=THREADS,
            ),
        ),
        (
            f"GEPA(max_metric_calls={budget})",
            dspy.GEPA(
                metric=with_feedback,
                max_metric_calls=budget,
                reflection_lm=lm,
                num_threads=THREADS,
                track_stats=True,
                seed=0,
            ),
        ),
    ]
    done: list[Row] = []
    for name, optimizer in chosen(optimizers, only):
        row = Row("dspy", name)
        print(f"\n== dspy {name}", file=out, flush=True)
        compiled = program
        if optimizer is not None:
            with proxy.measure(f"dspy {name}") as spent:
                compiled = optimizer.compile(program, trainset=train)
            row.compile, row.seconds = spent.tally, spent.seconds
        row.demos = classes(compiled)
        with proxy.measure(f"dspy {name} dev") as spent:
            row.score = float(evaluate(compiled).score)
        row.evaluation, row.eval_seconds = spent.tally, spent.seconds
        if isinstance(optimizer, dspy.GEPA):
            results = compiled.detailed_results
            row.notes.append(
                f"DSPy GEPA: {results.total_metric_calls} metric calls of {budget}, "
                f"{len(results.candidates)} candidates, valset scores "
                f"{[round(s, 3) for s in results.val_aggregate_scores]}"
            )
        done.append(row)
        print(table([row]).splitlines()[-1], file=out, flush=True)
    return done
