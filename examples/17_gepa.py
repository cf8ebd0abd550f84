"""Evolve a program's texts with GEPA under a stated budget, save and reload it; offline.

Run: ``python examples/17_gepa.py`` (needs ``pip install "typedspy[gepa]"``)

The stand-in plays two scripted models. The task model answers a mood in capitals ("HAPPY",
which fails validation) or a wrong one ("calm" for a sad text) until the schema it is sent
says to answer in lowercase; the reflection model, shown those typed failures, rewrites the
output field's description to say so. So the score moves only when GEPA evolves the field's
description, and nothing depends on a real model's wording.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Literal

import typedspy as ts
from typedspy.testing import StandIn

MOODS = {
    "What a lovely sunny day": "happy",
    "My dog ran away": "sad",
    "Reading by the quiet lake": "calm",
    "I won the prize today": "happy",
    "The train left without me": "sad",
    "A slow walk in the park": "calm",
    "We all laughed at the party": "happy",
    "I lost my keys again": "sad",
    "Listening to soft rain": "calm",
}


class Mood(ts.Signature):
    """Name the mood of the text."""

    text: str = ts.InputField()
    mood: Literal["happy", "sad", "calm"] = ts.OutputField()


def scripted(body: dict[str, Any]) -> str:
    """Both models: the reflection model adds a rule; the task model follows it if told."""
    user = body["messages"][1]["content"]
    if body["response_format"]["json_schema"]["name"].startswith("Improve"):
        current = json.loads(user.split("<current>\n", 1)[1].split("\n</current>", 1)[0])
        current["outputs"]["mood"] = "Answer in lowercase: happy, sad or calm."
        return json.dumps({"improved": current})
    right = next(mood for text, mood in MOODS.items() if text in user)
    if "lowercase" in json.dumps(body["response_format"]):
        return json.dumps({"mood": right})
    return json.dumps({"mood": {"happy": "HAPPY", "sad": "calm"}.get(right, right)})


def metric(example: ts.Example, pred: Any) -> tuple[float, str]:
    """A score and a line of feedback for the reflection model."""
    if pred.mood == example.mood:
        return 1.0, "right"
    return 0.0, f"expected {example.mood}, the program said {pred.mood}"


def main() -> None:
    data = [ts.Example(text=t, mood=m).with_inputs("text") for t, m in MOODS.items()]
    train, dev = data[:6], data[6:]
    with StandIn(answer=scripted) as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-standin")
        ts.configure(lm=lm, max_retries=1)
        program = ts.Predict(Mood)
        print(f"seed: {ts.evaluate(program, dev).percent}%")

        try:  # a budget too small for the seed's evaluation and 3 proposals: refused, unsent
            ts.optimize.GEPA(metric, max_metric_calls=20).compile(program, train, valset=dev)
        except ts.ConfigurationError as exc:
            print(f"refused before any request: {exc}")

        optimizer = ts.optimize.GEPA(metric, budget=ts.limits.Budget(requests=120), seed=0)
        compiled = optimizer.compile(program, train, valset=dev)  # prints the plan first
        result = optimizer.result
        print(
            f"{result.proposals} proposal(s), {result.accepted} accepted, frontier "
            f"{result.frontier}, {result.calls} LM calls, {result.tokens} tokens, "
            f"stopped: {result.stop_reason}"
        )
        print("evolved:", result.best_candidate.predictors["self"].outputs)
        after = ts.evaluate(compiled, dev)

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "mood.json"
            compiled.save(path)  # the evolved descriptions are saved with the instructions
            reloaded = ts.Predict(Mood)
            reloaded.load(path)
            again = ts.evaluate(reloaded, dev)
        print(f"after {after.percent}%, reloaded {again.percent}%")
        assert again.score == after.score == 1.0 > result.seed_score
        assert Mood.output_fields["mood"].description is None  # your class is unchanged
        lm.close()


if __name__ == "__main__":
    main()
