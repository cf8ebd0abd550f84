"""OpenAI Batch API files: a batch of `Predict` calls as JSONL, and its results read back.

`write_batch_file` writes one request line per input (``custom_id``, ``method``, ``url``,
``body``), the format of OpenAI's Batch API and of vLLM's offline ``run-batch``
(reference/scale.md). `read_batch_file` reads their output file and sends each completion
through the same finish-reason checks, parsing and validation as a live call, into the same
per-item results as `Module.abatch`. Only the first attempt can be in a file, so a reply that
fails validation is that item's `OutputValidationError` (no feedback retry offline).

An output file is endpoint output, read as a live reply is: each line within the LM's
``max_response_bytes`` (read in bounded pieces, an over-long line is refused unread) and
``max_json_depth``, and every error it causes redacted with the LM's credentials (ADR-058).
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

from typedspy._files import write_atomically
from typedspy._json import JSONLimitError, loads
from typedspy._runtime import run_sync
from typedspy._types import Usage
from typedspy.batch import BatchItem, BatchResult
from typedspy.engine import CallPlan, check_inputs, run_call
from typedspy.errors import BatchFileError, ConfigurationError, InputError, LMStatusError
from typedspy.lm import BaseLM, LMRequest, LMResponse, scrub_chain
from typedspy.modules import Predict
from typedspy.prediction import Prediction
from typedspy.retry import RetryPolicy
from typedspy.settings import context, resolve_lm

__all__ = ["aread_batch_file", "read_batch_file", "write_batch_file"]

_URL = "/v1/chat/completions"
_MAX_QUOTED = 500  # characters of an endpoint's error message quoted in an item's error
_MAX_LISTED = 5  # line numbers named for a custom_id on many lines


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
        ids = ts.batch_api.write_batch_file(label, tickets, "batch_input.jsonl")
        # upload it to the Batch API, or: vllm run-batch -i batch_input.jsonl -o out.jsonl
        ```

    Args:
        predict: The `Predict` whose calls to write.
        inputs: One mapping of input names to values per item.
        path: The JSONL file to write.
        custom_ids: One unique id per input; ``"item-0"``, ``"item-1"``, ... by default.

    Raises:
        InputError: An input does not fit the signature (the message names its index).
        ConfigurationError: ``custom_ids`` that are not unique or not one per input, or a
            ``predict`` in ``think_then_format`` mode (two requests per item).
    """
    items = list(inputs)
    ids = _ids(custom_ids, len(items))
    lm = resolve_lm(predict.lm)
    lm.identify()  # ADR-084: the bodies follow the profile of the server the calls would reach
    plan = _one_request(predict, lm)
    lines: list[str] = []
    for index, (custom_id, item) in enumerate(zip(ids, items, strict=True)):
        try:
            checked = check_inputs(predict.signature, item)
        except InputError as exc:
            raise InputError(
                f"batch input {index}: {exc}", missing=exc.missing, unexpected=exc.unexpected
            ) from exc
        body = lm.request_body(plan(lm, checked).base)
        line = {"custom_id": custom_id, "method": "POST", "url": _URL, "body": body}
        lines.append(json.dumps(line, ensure_ascii=False, separators=(",", ":")))
    write_atomically(path, "".join(f"{line}\n" for line in lines))
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
    answered with an error status; `BatchFileError` for an input with no line, a line whose
    request failed, or a ``custom_id`` on more than one line: then none of its lines is
    used, and the error names them all). Every error is redacted with the LM's credentials.

    Args:
        predict: The `Predict` the file was written for.
        inputs: The inputs, as given to `write_batch_file`.
        path: The output JSONL file.
        custom_ids: The ids given to `write_batch_file`, if any.

    Raises:
        ConfigurationError: A line (named by file and number) that is longer than the LM's
            ``max_response_bytes``, not UTF-8, not JSON (or nested past ``max_json_depth``),
            without a string ``custom_id``, or whose ``custom_id`` is not one of the inputs'
            (the file belongs to another batch); a ``predict`` in ``think_then_format`` mode.
    """
    items = list(inputs)
    ids = _ids(custom_ids, len(items))
    lm = resolve_lm(predict.lm)
    try:  # a thread: a line may take a while to read
        found = await asyncio.to_thread(_read_lines, os.fspath(path), set(ids), lm)
    except ConfigurationError as exc:
        scrub_chain(exc, lm.redact)  # it may quote the line, and a line may echo the key
        raise
    plan = _one_request(predict, lm)
    results: list[BatchItem[Prediction[Any]]] = []
    with context(cache=None, budget=None, rate_limit=None):  # nothing is sent
        for index, (custom_id, item) in enumerate(zip(ids, items, strict=True)):
            lines = found.get(custom_id)
            result: Prediction[Any] | Exception
            usage = Usage()
            try:
                completion = _completion(custom_id, lines, lm.redact)
                response = LMResponse.from_completion(completion, model=lm.model)
                usage = response.usage
                call = plan(_Replay(lm, response), check_inputs(predict.signature, item))
                call.attempts.policy = RetryPolicy(max_retries=0)
                events = [event async for event in run_call(call, stream=False)]
                result = cast("Prediction[Any]", events[-1])  # a call ends with its Prediction
            except Exception as exc:  # the item's outcome, as in a live batch
                scrub_chain(exc, lm.redact)
                result = exc
            used = lines is not None and len(lines[0]) == 1
            results.append(BatchItem(index, item, result, usage, 1 if used else 0))
    return BatchResult(results)


def _one_request(predict: Predict[Any, Any], lm: BaseLM) -> Callable[[BaseLM, Any], CallPlan]:
    """How ``predict`` plans its one request per item (`Predict.one_request`).

    Raises:
        ConfigurationError: ``think_then_format``, whose second request needs the first's reply.
    """
    plan = predict.one_request(lm)
    if plan is None:
        raise ConfigurationError(
            f"{predict!r}: a Batch API file holds one request per item, and think_then_format "
            "sends two (the second carries the first's answer); use another mode"
        )
    return plan


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
    """Answers a call's one request (no retry; no HTTP refusal to step down on) from the file."""

    def __init__(self, lm: BaseLM, response: LMResponse) -> None:
        super().__init__(lm.model, profile=lm.profile)
        self._response = response

    async def acomplete(self, request: LMRequest) -> LMResponse:
        return self._response


def _ids(custom_ids: Sequence[str] | None, count: int) -> list[str]:
    if custom_ids is None:
        return [f"item-{i}" for i in range(count)]
    # A string is a sequence too (one id a character), and None or 7 became 'None' and '7'.
    given = cast("Sequence[object]", custom_ids)  # as the caller passed them: unchecked
    if isinstance(given, (str, bytes)) or not all(isinstance(i, str) for i in given):
        raise ConfigurationError(f"custom_ids must be a list of str ids, got {custom_ids!r:.80}")
    ids = list(custom_ids)
    if len(ids) != count or len(set(ids)) != count:
        raise ConfigurationError(
            f"custom_ids must be {count} unique ids, one per input; got {len(ids)} "
            f"({len(set(ids))} unique)"
        )
    return ids


_Lines = tuple[list[int], Mapping[str, Any]]
"""The numbers of the lines holding one ``custom_id`` (more than one: none is used), the first."""


def _read_lines(path: str, known: set[str], lm: BaseLM) -> dict[str, _Lines]:
    cap = lm.max_response_bytes
    found: dict[str, _Lines] = {}
    with open(path, "rb") as f:
        # At most cap + 1 bytes at a time: an over-long line is refused, never held whole.
        pieces = iter(functools.partial(f.readline, cap + 1), b"")
        for number, raw in enumerate(pieces, start=1):
            where = f"{path}:{number}"
            if len(raw) > cap and not raw.endswith(b"\n"):
                raise ConfigurationError(
                    f"{where}: the line is longer than max_response_bytes={cap} bytes (read no "
                    "further); LM(max_response_bytes=...) raises the limit"
                )
            if not raw.strip():
                continue
            custom_id, line = _parse(_decoded(raw, where), where, known, lm)
            found.setdefault(custom_id, ([], line))[0].append(number)
    return found


def _decoded(raw: bytes, where: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        problem = f"{where}: the line is not UTF-8 (byte {exc.start + 1}: {exc.reason})"
    raise ConfigurationError(problem)  # not chained: the decode error holds the whole line


def _parse(text: str, where: str, known: set[str], lm: BaseLM) -> tuple[str, Mapping[str, Any]]:
    try:
        # bounded: a line is endpoint output; a key twice (two custom_ids) is not guessed at
        value = loads(text, max_depth=lm.max_json_depth, unique_keys=True)
    except JSONLimitError as exc:
        raise ConfigurationError(
            f"{where}: {exc}; LM(max_json_depth=...) raises the limit"
        ) from exc
    except ValueError as exc:
        raise ConfigurationError(f"{where}: not a JSON line ({exc})") from exc
    line = _object(value)
    if line is None:
        raise ConfigurationError(f"{where}: the line is {_kind(value)}, not a JSON object")
    custom_id = line.get("custom_id")
    if not isinstance(custom_id, str):
        raise ConfigurationError(
            f"{where}: the line's custom_id is {_kind(custom_id)}, not a string"
        )
    if custom_id not in known:
        raise ConfigurationError(
            f"{where}: custom_id {_quoted(custom_id, lm.redact)!r} is not one of this batch's "
            "inputs (is the file from another batch?)"
        )
    return custom_id, line


def _completion(custom_id: str, lines: _Lines | None, redact: Callable[[str], str]) -> object:
    if lines is None:
        raise BatchFileError(f"{custom_id}: no line in the output file", custom_id=custom_id)
    numbers, line = lines
    if len(numbers) > 1:  # which line is the result is ambiguous: none is used
        raise BatchFileError(
            f"{custom_id}: {len(numbers)} lines of the output file hold it ({_listed(numbers)}); "
            "none is used, as which one is the result is ambiguous",
            custom_id=custom_id,
            lines=numbers,
        )
    at = f"{custom_id} (line {numbers[0]})"
    error = line.get("error")
    if error:
        reported = _object(error)
        said = error if reported is None else reported.get("message")
        raise BatchFileError(
            f"{at}: the request failed: {_quoted(said, redact)}", custom_id=custom_id, lines=numbers
        )
    response = _object(line.get("response"))
    if response is None:
        raise BatchFileError(f"{at}: the line has no response", custom_id=custom_id, lines=numbers)
    status, body = response.get("status_code"), response.get("body")
    if status != 200:
        detail = _object((_object(body) or {}).get("error")) or {}
        message, code = detail.get("message"), detail.get("code")
        said = message if isinstance(message, str) else body
        raise LMStatusError(
            f"{at}: HTTP {_quoted(status, redact)}: {_quoted(said, redact)}",
            status_code=status if isinstance(status, int) else 0,
            code=code if isinstance(code, str) else None,
        )
    return body


def _quoted(value: object, redact: Callable[[str], str]) -> str:
    """A value from the file as text (JSON unless a string), redacted, then shortened."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (RecursionError, TypeError, ValueError):  # nested past what json.dumps writes
            text = f"({type(value).__name__})"
    text = redact(text)  # before shortening, which could cut a secret in two
    return text if len(text) <= _MAX_QUOTED else f"{text[:_MAX_QUOTED]}..."


def _listed(numbers: Sequence[int]) -> str:
    shown = ", ".join(str(n) for n in numbers[:_MAX_LISTED])
    more = f" and {len(numbers) - _MAX_LISTED} more" if len(numbers) > _MAX_LISTED else ""
    return f"lines {shown}{more}"


def _object(value: object) -> Mapping[str, Any] | None:
    """``value`` when it is a JSON object (keys are strings in JSON), else ``None``."""
    return cast("Mapping[str, Any]", value) if isinstance(value, dict) else None


def _kind(value: object) -> str:
    if value is None:
        return "missing or null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return "a boolean" if isinstance(value, bool) else "a number"
