"""OpenAI Batch API files: a batch of `Predict` calls as JSONL, and its results read back.

`write_batch_file` writes one request line per input (``custom_id``, ``method``, ``url``,
``body``), the format of OpenAI's Batch API and of vLLM's offline ``run-batch``
(reference/scale.md). `read_batch_file` reads their output file and sends each completion
through the same finish-reason checks, parsing and validation as a live call, into the same
per-item results as `Module.abatch`. Only the first attempt can be in a file, so a reply that
fails validation is that item's `OutputValidationError` (no feedback retry offline).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from typedspy._json import JSONLimitError, loads
from typedspy._runtime import run_sync
from typedspy._types import Usage
from typedspy.batch import BatchItem, BatchResult
from typedspy.engine import check_inputs, run_call
from typedspy.errors import BatchFileError, ConfigurationError, InputError, LMStatusError
from typedspy.lm import BaseLM, LMRequest, LMResponse
from typedspy.modules._predict import Predict
from typedspy.prediction import Prediction
from typedspy.retry import RetryPolicy
from typedspy.settings import context

__all__ = ["aread_batch_file", "read_batch_file", "write_batch_file"]

_URL = "/v1/chat/completions"


def write_batch_file(
    predict: Predict[Any, Any],
    inputs: Iterable[Mapping[str, Any]],
    path: str | os.PathLike[str],
    *,
    custom_ids: Sequence[str] | None = None,
) -> list[str]:
    """Write one Batch API request line per input; returns the ``custom_id`` of each line.

    Every input is checked and every body built before the file is written, and the file is
    written to a temporary name and renamed into place: a bad input never leaves a half-written
    batch behind. The body is exactly what `Predict` would send (`LM.request_body`), in the
    mode it would start with.

    Example:
        ```python
        ids = ts.write_batch_file(label, tickets, "batch_input.jsonl")
        # upload it to the Batch API, or: vllm run-batch -i batch_input.jsonl -o out.jsonl
        ```

    Args:
        predict: The `Predict` whose calls to write.
        inputs: One mapping of input names to values per item.
        path: The JSONL file to write.
        custom_ids: One unique id per input; ``"item-0"``, ``"item-1"``, ... by default.

    Raises:
        InputError: An input does not fit the signature (the message names its index).
        ConfigurationError: ``custom_ids`` that are not unique or not one per input.
    """
    items = list(inputs)
    ids = _ids(custom_ids, len(items))
    lm = predict._lm()
    mode = predict._start_mode(lm)
    lines = []
    for index, (custom_id, item) in enumerate(zip(ids, items, strict=True)):
        try:
            checked = check_inputs(predict.signature, item)
        except InputError as exc:
            raise InputError(
                f"batch input {index}: {exc}", missing=exc.missing, unexpected=exc.unexpected
            ) from exc
        body = lm.request_body(predict._plan(lm, mode, checked, ()).base)
        line = {"custom_id": custom_id, "method": "POST", "url": _URL, "body": body}
        lines.append(json.dumps(line, ensure_ascii=False, separators=(",", ":")))
    target = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(target))
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", dir=folder, suffix=".partial", delete=False
    ) as out:
        out.write("".join(f"{line}\n" for line in lines))
    os.replace(out.name, target)
    return ids


async def aread_batch_file(
    predict: Predict[Any, Any],
    inputs: Iterable[Mapping[str, Any]],
    path: str | os.PathLike[str],
    *,
    custom_ids: Sequence[str] | None = None,
) -> BatchResult[Prediction[Any]]:
    """Read a Batch API output file into one result per input, in input order.

    Each completion goes through the same checks, parsing and validation as a live call:
    the result is a `Prediction`, or the item's error (`OutputValidationError`,
    `RefusalError`, `TruncatedOutputError`, ...; `LMStatusError` for a line the endpoint
    answered with an error status; `BatchFileError` for an input with no line or a line
    whose request failed).

    Args:
        predict: The `Predict` the file was written for.
        inputs: The inputs, as given to `write_batch_file`.
        path: The output JSONL file.
        custom_ids: The ids given to `write_batch_file`, if any.

    Raises:
        ConfigurationError: A line that is not JSON (or nested past the LM's
            ``max_json_depth``), or whose ``custom_id`` is not one of the inputs' (the file
            belongs to another batch).
    """
    items = list(inputs)
    ids = _ids(custom_ids, len(items))
    lm = predict._lm()
    lines = _read_lines(os.fspath(path), set(ids), lm.max_json_depth)
    mode = predict._start_mode(lm)
    results = []
    with context(cache=None, budget=None, rate_limit=None):  # nothing is sent
        for index, (custom_id, item) in enumerate(zip(ids, items, strict=True)):
            line = lines.get(custom_id)
            result: Any
            usage = Usage()
            try:
                completion = _completion(custom_id, line)
                response = LMResponse.from_completion(completion, model=lm.model)
                usage = response.usage
                plan = predict._plan(
                    _Replay(lm, response), mode, check_inputs(predict.signature, item), ()
                )
                plan.attempts.policy = RetryPolicy(max_retries=0)
                async for event in run_call(plan, stream=False):
                    result = event
            except Exception as exc:  # the item's outcome, as in a live batch
                result = exc
            results.append(BatchItem(index, item, result, usage, 1 if line else 0))
    return BatchResult(results)


def read_batch_file(
    predict: Predict[Any, Any],
    inputs: Iterable[Mapping[str, Any]],
    path: str | os.PathLike[str],
    *,
    custom_ids: Sequence[str] | None = None,
) -> BatchResult[Prediction[Any]]:
    """Synchronous `aread_batch_file`."""
    return run_sync(
        lambda: aread_batch_file(predict, inputs, path, custom_ids=custom_ids),
        async_name="aread_batch_file",
    )


class _Replay(BaseLM):
    """Answers the one request of a call with the completion from the output file."""

    def __init__(self, lm: BaseLM, response: LMResponse) -> None:
        super().__init__(lm.model, profile=lm.profile)
        self._response: LMResponse | None = response

    async def acomplete(self, request: LMRequest) -> LMResponse:
        response, self._response = self._response, None
        if response is None:  # unreachable with max_retries=0; a guard, not a path
            raise BatchFileError("a batch file holds one completion per item", custom_id="")
        return response


def _ids(custom_ids: Sequence[str] | None, count: int) -> list[str]:
    if custom_ids is None:
        return [f"item-{i}" for i in range(count)]
    ids = [str(i) for i in custom_ids]
    if len(ids) != count or len(set(ids)) != count:
        raise ConfigurationError(
            f"custom_ids must be {count} unique ids, one per input; got {len(ids)} "
            f"({len(set(ids))} unique)"
        )
    return ids


def _read_lines(path: str, known: set[str], max_depth: int) -> dict[str, Mapping[str, Any]]:
    lines: dict[str, Mapping[str, Any]] = {}
    with open(path, encoding="utf-8") as f:
        for number, text in enumerate(f, start=1):
            if not text.strip():
                continue
            try:
                line = loads(text, max_depth=max_depth)  # bounded: a line is endpoint output
            except JSONLimitError as exc:
                raise ConfigurationError(
                    f"{path}:{number}: {exc}; LM(max_json_depth=...) raises the limit"
                ) from exc
            except ValueError as exc:
                raise ConfigurationError(f"{path}:{number}: not a JSON line ({exc})") from exc
            custom_id = line.get("custom_id") if isinstance(line, dict) else None
            if custom_id not in known:
                raise ConfigurationError(
                    f"{path}:{number}: custom_id {custom_id!r} is not one of this batch's "
                    "inputs (is the file from another batch?)"
                )
            lines[custom_id] = line
    return lines


def _completion(custom_id: str, line: Mapping[str, Any] | None) -> object:
    if line is None:
        raise BatchFileError(f"{custom_id}: no line in the output file", custom_id=custom_id)
    error = line.get("error")
    if error:
        said = error.get("message") if isinstance(error, dict) else error
        raise BatchFileError(f"{custom_id}: the request failed: {said}", custom_id=custom_id)
    response = line.get("response")
    if not isinstance(response, dict):
        raise BatchFileError(f"{custom_id}: the line has no response", custom_id=custom_id)
    status, body = response.get("status_code"), response.get("body")
    if status != 200:
        detail = body.get("error", {}) if isinstance(body, dict) else {}
        message = detail.get("message") if isinstance(detail, dict) else None
        raise LMStatusError(
            f"{custom_id}: HTTP {status}: {message or body!r}",
            status_code=status if isinstance(status, int) else 0,
            code=detail.get("code") if isinstance(detail, dict) else None,
        )
    return body
