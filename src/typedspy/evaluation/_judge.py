"""`LLMJudge`: a metric written as a Signature and answered by a model."""

from __future__ import annotations

import json
from typing import Any

from typedspy._runtime import run_sync
from typedspy.errors import ConfigurationError
from typedspy.evaluation._example import Example
from typedspy.lm import BaseLM
from typedspy.signature import Signature, to_jsonable

__all__ = ["LLMJudge"]

_SCORE_TYPES: tuple[object, ...] = (bool, int, float)


class LLMJudge:
    """A metric that asks a model, through a signature you write, how good a prediction is.

    The judge's inputs are filled by name: ``expected_<field>`` gets the example's label for
    ``<field>``, ``predicted_<field>`` the prediction's output, ``<field>`` the example's
    value (an input, usually), and ``expected`` / ``predicted`` all labels / all outputs as
    JSON. Its score is its first ``bool``, ``int`` or ``float`` output (``True`` is 1.0);
    constrain a number with ``ge=0, le=1``.

    Example:
        ```python
        class JudgeAnswer(ts.Signature):
            \"\"\"Does the predicted answer say the same as the expected one?\"\"\"

            question: str = ts.InputField()
            expected_answer: str = ts.InputField()
            predicted_answer: str = ts.InputField()
            same: bool = ts.OutputField()

        metric = ts.evaluation.LLMJudge(JudgeAnswer)
        ```

    Args:
        signature: The judge's signature.
        lm: The judge's model (default: the configured one).
        **predict_options: Passed to the judge's `Predict` (``mode``, ``max_retries``, ...).

    Raises:
        ConfigurationError: The signature has no bool/int/float output.
    """

    def __init__(
        self, signature: type[Signature], *, lm: BaseLM | None = None, **predict_options: Any
    ) -> None:
        from typedspy.modules import Predict

        scores = [n for n, f in signature.output_fields.items() if f.annotation in _SCORE_TYPES]
        if not scores:
            raise ConfigurationError(
                f"LLMJudge: {signature.__name__} needs a bool, int or float output to score with"
            )
        self.signature = signature
        self.score_field = scores[0]
        self.judge = Predict(signature, lm=lm, **predict_options)

    def judge_inputs(self, example: Example, prediction: Any) -> dict[str, Any]:
        """The inputs the judge is called with for this example and prediction."""
        labels = example.labels()
        outputs = dict(prediction) if hasattr(prediction, "keys") else {}
        values: dict[str, Any] = {}
        for name in self.signature.input_fields:
            if name == "expected":
                values[name] = _as_json(example.to_dict(), labels)
            elif name == "predicted":
                values[name] = _as_json(_jsonable(prediction), outputs)
            elif name.startswith("expected_") and name[9:] in labels:
                values[name] = labels[name[9:]]
            elif name.startswith("predicted_") and name[10:] in outputs:
                values[name] = outputs[name[10:]]
            elif name in example:
                values[name] = example[name]
        return values

    async def ascore(self, example: Example, prediction: Any) -> float:
        """Ask the judge; its score output as a float."""
        pred = await self.judge.acall(**self.judge_inputs(example, prediction))
        return float(pred[self.score_field])

    def __call__(self, example: Example, prediction: Any) -> float:
        return run_sync(lambda: self.ascore(example, prediction), async_name="LLMJudge.ascore")

    def __repr__(self) -> str:
        return f"LLMJudge({self.signature.__name__}, score={self.score_field!r})"


def _jsonable(prediction: Any) -> Any:
    to_dict = getattr(prediction, "to_dict", None)
    return to_dict() if callable(to_dict) else to_jsonable(prediction)


def _as_json(data: Any, keys: Any) -> str:
    if isinstance(data, dict):
        data = {k: v for k, v in data.items() if k in keys}
    return json.dumps(data, ensure_ascii=False)
