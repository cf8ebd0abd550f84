"""Do typedspy's optimizers improve a typed program on a real small model? (not a test)

Starts the real `llama-server` with SmolLM2-135M-Instruct that ``bash
tests/conformance/real_engine.sh`` builds (or ``TYPEDSPY_LLAMA_SERVER`` / ``TYPEDSPY_LLAMA_MODEL``),
with ``--no-repack -t 1``, and routes shop messages to one of four teams (a ``Literal`` output;
``benchmarks/data/``, 32 train / 52 dev, 8 and 13 per team) under the ``llama.cpp`` profile:
no demos, LabeledFewShot, BootstrapFewShot, random search, and GEPA under a stated
``ts.limits.Budget``. When ``dspy`` is importable it runs DSPy's LabeledFewShot,
BootstrapFewShot, random search and GEPA on the same server, data, metric and budget (never a
project dependency: install it in a separate environment, ``pip install dspy -e .``).

Every request of both libraries passes a counting proxy, so calls and tokens are measured alike;
``--log FILE`` writes each request and reply as JSON lines. It prints, per run, the dev score,
the compile's LM calls, tokens and wall time, the dev evaluation's, and each compiled
predictor's demos by class, then the checks: no predictor's demos show a single class, GEPA
within its plan, at least the seed on dev, saved and loaded as JSON, and the issue's targets.
It exits 1 when one of the first three fails.

Run: ``python benchmarks/optimize_real_engine.py [--log FILE] [--no-dspy]``;
``--standin`` runs the same logic offline on the stand-in, in seconds
(tests/optimize/test_real_engine_benchmark.py).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Literal, TextIO

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "conformance"))

from _optimize_shared import RUNS, TEAMS, RecordingProxy, Row, chosen, feedback, rows, table
from llama import llama_server, missing_reason

import typedspy as ts

Team = Literal["billing", "shipping", "technical", "account"]
assert TEAMS == Team.__args__  # type: ignore[attr-defined]

K = 8  # LabeledFewShot demos
BOOTSTRAPPED, LABELLED = 4, 4  # BootstrapFewShot's demos (the run)
CANDIDATES = 4  # random search's shuffled candidates
GEPA_REQUESTS = 400  # the GEPA run's ts.limits.Budget
CONCURRENCY = 2  # the server's slots (-np 2)


class RouteMessage(ts.Signature):
    """Pick the team that should answer the customer's message."""

    message: str = ts.InputField()
    team: Team = ts.OutputField()


def metric(example: ts.Example[Any], pred: Any) -> tuple[float, str]:
    """Exact team, with feedback for GEPA's reflection (evaluate uses the score)."""
    return feedback(example.team, getattr(pred, "team", None))


def demo_classes(program: ts.Module) -> dict[str, Counter[str]]:
    """Each predictor's demos counted by class (`ts.optimize.demo_class`)."""
    found: dict[str, Counter[str]] = {}
    for path, predictor in program.named_predictors():
        signature = predictor.signature  # type: ignore[attr-defined]
        classes = (ts.optimize.demo_class(signature, demo) for demo in predictor.demos)
        found[path] = Counter(c.removeprefix("team=") for c in classes if c is not None)
    return found


def typedspy_runs(
    proxy: RecordingProxy, out: TextIO, only: set[str]
) -> tuple[list[Row], list[str], int]:
    """typedspy's five runs: the rows, the failed invariants, GEPA's planned metric calls."""
    url = f"{proxy.url}/v1"
    lm = ts.LM("smollm2", base_url=url, api_key="none", profile="llama.cpp", temperature=0)
    ts.configure(lm=lm, max_retries=1)
    train = ts.evaluation.load_dataset(rows("train"), RouteMessage)
    dev = ts.evaluation.load_dataset(rows("dev"), RouteMessage)
    program = ts.Predict(RouteMessage)
    common: dict[str, Any] = {"metric": metric, "concurrency": CONCURRENCY}
    optimizers: list[tuple[str, ts.optimize.Optimizer | None]] = [
        ("no demos", None),
        (f"LabeledFewShot(k={K})", ts.optimize.LabeledFewShot(k=K, seed=0)),
        (
            f"BootstrapFewShot({BOOTSTRAPPED} bootstrapped, {LABELLED} labelled)",
            ts.optimize.BootstrapFewShot(
                max_bootstrapped_demos=BOOTSTRAPPED, max_labeled_demos=LABELLED, **common
            ),
        ),
        (
            f"RandomSearch({CANDIDATES} candidates)",
            ts.optimize.BootstrapFewShotWithRandomSearch(
                num_candidate_programs=CANDIDATES,
                max_bootstrapped_demos=BOOTSTRAPPED,
                max_labeled_demos=LABELLED,
                **common,
            ),
        ),
        (
            f"GEPA(Budget(requests={GEPA_REQUESTS}))",
            ts.optimize.GEPA(
                metric,
                budget=ts.limits.Budget(requests=GEPA_REQUESTS),
                seed=0,
                concurrency=CONCURRENCY,
            ),
        ),
    ]
    done: list[Row] = []
    failed: list[str] = []
    gepa = optimizers[-1][1]
    assert isinstance(gepa, ts.optimize.GEPA)
    metric_calls = gepa.make_plan(program, train).metric_calls  # DSPy's GEPA budget
    for name, optimizer in chosen(optimizers, only):
        row = Row("typedspy", name)
        print(f"\n== typedspy {name}", file=out, flush=True)
        compiled: ts.Module = program
        if optimizer is not None:
            optimizer.out = out
            with proxy.measure(f"typedspy {name}") as spent:
                compiled = optimizer.compile(program, train)
            row.compile, row.seconds = spent.tally, spent.seconds
        row.demos = demo_classes(compiled)
        with proxy.measure(f"typedspy {name} dev") as spent:
            row.score = ts.evaluate(compiled, dev, metric, concurrency=CONCURRENCY).percent
        row.evaluation, row.eval_seconds = spent.tally, spent.seconds
        if isinstance(optimizer, ts.optimize.GEPA):
            failed += check_gepa(optimizer, compiled, row)
        done.append(row)
        print(table([row]).splitlines()[-1], file=out, flush=True)
    lm.close()
    return done, failed, metric_calls


def check_gepa(gepa: ts.optimize.GEPA, compiled: ts.Module, row: Row) -> list[str]:
    """GEPA's contract on this run: within its plan, at least the seed, saved and loaded."""
    plan, result = gepa.plan, gepa.result
    assert isinstance(plan, ts.optimize.GEPAPlan)
    row.notes.append(
        f"GEPA planned at most {plan.max_calls} LM calls ({plan.metric_calls} metric calls, "
        f"{plan.proposals} proposals); made {row.compile.requests} ({result.metric_calls} "
        f"metric calls, {result.proposals} proposals, {result.accepted} accepted, "
        f"stopped: {result.stop_reason}); valset seed {result.seed_score:.3f}, "
        f"best {result.scores[result.best]:.3f}"
    )
    failed = []
    if row.compile.requests > plan.max_calls:
        failed.append(f"GEPA made {row.compile.requests} calls, over its plan's {plan.max_calls}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gepa.json"
        compiled.save(path)
        json.loads(path.read_text())  # plain JSON
        reloaded = ts.Predict(RouteMessage)
        reloaded.load(path)
    if reloaded.dump_state() != compiled.dump_state():
        failed.append("GEPA's program loaded from JSON differs from the one saved")
    else:
        row.notes.append("GEPA's program saved as JSON and loaded back identical")
    return failed


def checks(rows_: list[Row]) -> list[str]:
    """The Done-when targets as lines (reported, not enforced)."""
    by = {(r.library, r.optimizer.split("(")[0]): r for r in rows_}
    none = by.get(("typedspy", "no demos"))
    lines = []
    for name in ("BootstrapFewShot", "RandomSearch"):
        ours, theirs = by.get(("typedspy", name)), by.get(("dspy", name))
        if ours is not None and none is not None:
            verdict = "met" if ours.score >= none.score + 15 else "MISSED"
            lines.append(
                f"{name}: {ours.score:.1f}% vs no demos {none.score:.1f}% (target +15): {verdict}"
            )
        if ours is not None and theirs is not None:
            verdict = "met" if ours.score >= theirs.score else "MISSED"
            lines.append(f"{name}: {ours.score:.1f}% vs DSPy's {theirs.score:.1f}%: {verdict}")
    gepa = by.get(("typedspy", "GEPA"))
    if gepa is not None and none is not None:
        verdict = "met" if gepa.score >= none.score else "MISSED"
        lines.append(
            f"GEPA: {gepa.score:.1f}% vs its seed (no demos) {none.score:.1f}% on dev: {verdict}"
        )
    return lines


def run(url: str, *, log: TextIO | None, use_dspy: bool, only: set[str], out: TextIO) -> int:
    """Every run against the server at ``url`` (``http://HOST:PORT``); the exit status."""
    with RecordingProxy(url, log) as proxy:
        done, failed, budget = typedspy_runs(proxy, out, only)
        if use_dspy:
            from _optimize_dspy import dspy_runs

            done += dspy_runs(proxy, out, budget=budget, only=only)
    print("\n" + table(done), file=out)
    for r in done:
        for note in r.notes:
            print(f"- {r.library} {r.optimizer}: {note}", file=out)
    single = [f"{r.library} {r.optimizer}" for r in done if r.single_class]
    print(f"- demos of a single class: {', '.join(single) or 'none'}", file=out)
    for line in checks(done):
        print(f"- target: {line}", file=out)
    if single:
        failed.append(f"demos of a single class: {single}")
    for line in failed:
        print(f"FAILED: {line}", file=out)
    return 1 if failed else 0


def dspy_available() -> bool:
    """Whether ``dspy`` imports here (it is never a typedspy dependency)."""
    try:
        import dspy  # noqa: F401
    except ImportError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--standin", action="store_true", help="offline, on the stand-in")
    parser.add_argument("--log", type=Path, help="write every request and reply as JSON lines")
    parser.add_argument("--no-dspy", action="store_true", help="skip DSPy even if installed")
    parser.add_argument(
        "--only",
        default=",".join(RUNS),
        help=f"the runs, comma-separated, of {', '.join(RUNS)} (default: all)",
    )
    args = parser.parse_args(argv)
    only = set(args.only.split(","))
    if not only <= RUNS.keys():
        parser.error(f"--only takes {', '.join(RUNS)}; got {args.only}")
    use_dspy = not args.no_dspy and dspy_available()
    out = sys.stdout
    print(f"dspy: {'runs' if use_dspy else 'not run'}", file=out)
    with open(args.log, "w") if args.log else contextlib.nullcontext() as log:
        if args.standin:
            from typedspy.testing import NearestDemo, StandIn

            answer = NearestDemo('{"team":"billing"}', ignore=("the", "my", "i", "a", "is"))
            with StandIn(answer=answer) as server:
                print("the stand-in answering as NearestDemo (offline logic check)", file=out)
                return run(server.url, log=log, use_dspy=use_dspy, only=only, out=out)
        reason = missing_reason()
        if reason is not None:
            print(f"skipped: {reason}", file=out)
            return 0
        with llama_server(parallel=CONCURRENCY, threads=1) as url:
            print(
                f"llama-server + SmolLM2-135M-Instruct Q4_1 at {url}, profile llama.cpp", file=out
            )
            return run(url.removesuffix("/v1"), log=log, use_dspy=use_dspy, only=only, out=out)


if __name__ == "__main__":
    sys.exit(main())
