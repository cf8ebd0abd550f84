"""Issue 20, item 1: every output shape of the suite's signatures goes round the optimize loop.

For each module-level signature of the corpus (`corpus.signatures`) whose outputs no code
validator checks: predict on the stand-in (schema-valid generated data), use the prediction as
a demo in each of the forms a user holds (the typed values, ``to_dict()``, tagged JSON), build
examples from it, compile with every optimizer, save, then load each saved program in one fresh
process and predict again. A shape the loop cannot carry fails here by name.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from corpus import TESTS, has_code_constraints, signatures

import typedspy as ts
from typedspy.errors import SchemaError
from typedspy.testing import StandIn, generate_instance


def _inputs(sig: type[ts.Signature], seed: int) -> dict[str, Any] | None:
    """Generated inputs for ``sig``; None when its inputs cannot be generated (media, code)."""
    model = sig.input_model
    try:
        value = generate_instance(model.model_json_schema(), seed=seed)
        return dict(model.model_validate(value))
    except Exception:  # an input type the generator cannot build: not this test's subject
        return None


def _cases() -> list[tuple[str, type[ts.Signature]]]:
    out = []
    for sig in signatures():
        if has_code_constraints(sig) or _inputs(sig, 0) is None:
            continue
        try:
            compiled = ts.schema.compile_schema(sig, "json-schema")
        except SchemaError:  # refused on purpose by the target (tested elsewhere)
            continue
        if '"pattern"' in json.dumps(compiled.schema):  # the stand-in generates no regex matches
            continue
        out.append((f"{sig.__module__}.{sig.__qualname__}", sig))
    return out


CASES = _cases()
# A profile that sends the whole JSON Schema (lengths, bounds), so the stand-in's generated
# data satisfies every constraint the outputs declare.
PROFILE = "vllm"


def _optimizers(lm: ts.LM) -> Iterator[tuple[str, ts.optimize.Optimizer]]:
    def passes(example: Any, prediction: Any) -> bool:
        del example, prediction
        return True

    yield "labeled", ts.optimize.LabeledFewShot(k=2, verbose=False)
    yield (
        "bootstrap",
        ts.optimize.BootstrapFewShot(
            passes, max_bootstrapped_demos=1, max_labeled_demos=1, concurrency=2, verbose=False
        ),
    )
    yield (
        "random_search",
        ts.optimize.BootstrapFewShotWithRandomSearch(
            passes,
            num_candidate_programs=1,
            max_bootstrapped_demos=1,
            max_labeled_demos=1,
            concurrency=2,
            verbose=False,
        ),
    )
    yield "knn", ts.optimize.KNNFewShot(k=1, lm=lm, embedding_model="embed-1", verbose=False)


def _round(sig: type[ts.Signature], lm: ts.LM, tmp: Path, name: str) -> list[dict[str, Any]]:
    """Predict, demo, compile, save for ``sig``; what the fresh process must load and run."""
    predict = ts.Predict(sig, lm=lm)
    examples = []
    demos: list[dict[str, Any]] = []
    for seed in range(3):
        inputs = _inputs(sig, seed)
        assert inputs is not None
        prediction = predict(**inputs)
        outputs = {field: prediction[field] for field in sig.output_fields}
        examples.append(ts.Example(sig, **inputs, **outputs).with_inputs(*inputs))
        tagged = {
            field: ts.signature.to_jsonable(value, sig.output_fields[field].annotation)
            for field, value in outputs.items()
        }
        # The three forms a demo's outputs come in: typed values, to_dict(), tagged JSON.
        demos += [{**inputs, **outputs}, prediction.to_dict(), {**inputs, **tagged}]
    with_demos = ts.Predict(sig, lm=lm, demos=demos)
    assert len(with_demos.demos) == len(demos)
    with_demos(**examples[0].inputs())
    runs = []
    for optimizer_name, optimizer in _optimizers(lm):
        compiled = optimizer.compile(ts.Predict(sig, lm=lm), examples)
        compiled(**examples[1].inputs())
        if optimizer_name == "knn":  # a KNN program chooses its demos per call; no saved state
            continue
        path = tmp / f"{name}-{optimizer_name}.json"
        compiled.save(path)
        runs.append(
            {
                "module": sig.__module__,
                "qualname": sig.__qualname__,
                "path": str(path),
                "demos": len(compiled.demos),
                "inputs": generate_instance(sig.input_model.model_json_schema(), seed=2),
            }
        )
    return runs


FRESH = """
import importlib, json, sys
import typedspy as ts
for folder in {folders!r}:
    sys.path.insert(0, folder)
lm = ts.LM("standin-1", base_url={base_url!r}, api_key="sk-x", profile={profile!r})
failures = []
for run in json.loads(sys.stdin.read()):
    sig = importlib.import_module(run["module"])
    for part in run["qualname"].split("."):
        sig = getattr(sig, part)
    try:
        p = ts.Predict(sig, lm=lm)
        p.load(run["path"])
        assert len(p.demos) == run["demos"], (len(p.demos), run["demos"])
        p.save(run["path"] + ".again")  # what was loaded saves as it was saved
        again = json.load(open(run["path"] + ".again"))
        assert again == json.load(open(run["path"])), "saved again differently"
        p(**run["inputs"])
    except Exception as exc:
        failures.append(f"{{run['path']}}: {{type(exc).__name__}}: {{exc}}")
lm.close()
print(json.dumps(failures))
"""


def test_the_corpus_is_large_enough_to_mean_something() -> None:
    assert len(CASES) >= 40, [name for name, _ in CASES]


def test_every_output_shape_goes_round_the_optimize_loop(tmp_path: Path) -> None:
    runs: list[dict[str, Any]] = []
    failures: list[str] = []
    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x", profile=PROFILE)
        try:
            for index, (name, sig) in enumerate(CASES):
                try:
                    runs += _round(sig, lm, tmp_path, f"s{index}")
                except Exception as exc:
                    failures.append(f"{name}: {type(exc).__name__}: {exc}"[:500])
        finally:
            lm.close()
        assert not failures, "\n".join(failures)
        folders = sorted({str(p.parent) for p in TESTS.rglob("test_*.py")} | {str(TESTS)})
        script = FRESH.format(folders=folders, base_url=server.base_url, profile=PROFILE)
        done = subprocess.run(
            [sys.executable, "-c", script],
            input=json.dumps(runs),
            capture_output=True,
            text=True,
            timeout=600,
            cwd=TESTS,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
    assert len(runs) == 3 * len(CASES)
