"""The typedspy exception tree.

Every error typedspy raises derives from `TypedspyError`. Branches also derive from the builtin
they refine, so ``except ValueError`` and ``except TypeError`` keep working::

    TypedspyError
    ├── ConfigurationError (ValueError)   misuse: bad settings, sync call inside a running loop
    │   └── InputError                    missing or unexpected inputs, caught before any request
    │       └── MediaError                an image, audio or file input that cannot be sent
    │           └── MediaNotSupportedError  the endpoint's profile takes no media of that kind
    ├── SchemaError (TypeError)           a signature or model that cannot compile; names the path
    ├── LMError                           the endpoint could not be used (SDK error as __cause__)
    │   ├── LMConnectionError
    │   ├── LMTimeoutError
    │   ├── LMRateLimitError
    │   ├── LMStatusError                 any other HTTP error status
    │   │   └── LMUnsupportedFeatureError the endpoint rejected a feature (e.g. response_format)
    │   └── LMResponseError               a reply that is not a usable chat completion
    ├── OutputError                       the model answered, but not with a usable output
    │   ├── OutputDecodeError             no JSON value could be decoded (after retries)
    │   ├── OutputValidationError         decoded, but failed validation (after retries)
    │   ├── RefusalError                  the model refused (never retried)
    │   ├── TruncatedOutputError          finish_reason == "length" (never retried)
    │   ├── ContentFilterError            finish_reason == "content_filter" (never retried)
    │   └── TokenBudgetExceededError      the token budget ran out before a valid output
    ├── BudgetExceededError               a ts.Budget ran out; the request was not sent
    ├── ItemTimeoutError (TimeoutError)   a batch item ran past the batch's per-item timeout
    ├── BatchStoppedError                 a batch item never ran: max_errors was reached first
    ├── CacheMissError                    replay mode found no cached response for a request
    ├── BatchFileError                    a Batch API output file has no usable line for an item
    ├── ToolError                         a tool could not be built, found, or its result used
    │   ├── ToolNotFoundError (KeyError)  no tool of that name; lists the available names
    │   └── ToolArgumentsError (ValueError)  arguments failed validation; names the fields
    ├── ConfirmationRejected              the user rejected a confirm_first tool call
    │                                     (see typedspy.modules._confirm)
    ├── ExampleError (ValueError)         an example's values do not fit its signature
    │   └── DatasetError                  dataset rows that do not fit; names row and field
    └── SavedStateError (ValueError)      a saved program that does not fit this program

`ConfirmationRequired` is deliberately *not* in this tree: it pauses a run for a human decision,
it does not report a failure, so ``except TypedspyError`` must not swallow it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from typedspy._types import Attempt, FailureKind, FieldError, Usage

__all__ = [
    "BatchFileError",
    "BatchStoppedError",
    "BudgetExceededError",
    "CacheMissError",
    "ConfigurationError",
    "ContentFilterError",
    "DatasetError",
    "ExampleError",
    "InputError",
    "ItemTimeoutError",
    "LMConnectionError",
    "LMError",
    "LMRateLimitError",
    "LMResponseError",
    "LMStatusError",
    "LMTimeoutError",
    "LMUnsupportedFeatureError",
    "MediaError",
    "MediaNotSupportedError",
    "OutputDecodeError",
    "OutputError",
    "OutputValidationError",
    "RefusalError",
    "RowError",
    "SavedStateError",
    "SchemaError",
    "TokenBudgetExceededError",
    "ToolArgumentsError",
    "ToolError",
    "ToolNotFoundError",
    "TruncatedOutputError",
    "TypedspyError",
]


class TypedspyError(Exception):
    """Root of every error typedspy raises."""


class ConfigurationError(TypedspyError, ValueError):
    """typedspy was used in a way it cannot honour (settings, event loops, arguments)."""


class InputError(ConfigurationError):
    """The inputs given to a module do not match its signature.

    Attributes:
        missing: Input fields the signature declares that were not given.
        unexpected: Names that were given but are not input fields.
    """

    def __init__(
        self, message: str, *, missing: Sequence[str] = (), unexpected: Sequence[str] = ()
    ) -> None:
        super().__init__(message)
        self.missing = tuple(missing)
        self.unexpected = tuple(unexpected)


class MediaError(InputError):
    """An `Image`, `Audio` or `File` input that cannot be sent (type, size, source, hash).

    Attributes:
        kind: ``"image"``, ``"audio"`` or ``"file"``.
        field: The input field holding the value, when known.
    """

    def __init__(self, message: str, *, kind: str = "", field: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.field = field


class MediaNotSupportedError(MediaError):
    """The LM's profile takes no media of this kind (`Profile.media`); nothing was sent.

    Attributes:
        profile: The name of the profile that refused.
    """

    def __init__(self, message: str, *, kind: str, field: str | None, profile: str) -> None:
        super().__init__(message, kind=kind, field=field)
        self.profile = profile


class SchemaError(TypedspyError, TypeError):
    """A signature, model or schema cannot be compiled.

    Attributes:
        path: Where in the schema or model the problem is (field names, list indices, or a
            JSON pointer split into parts); empty when it concerns the whole thing.
    """

    def __init__(self, message: str, *, path: Sequence[str | int] = ()) -> None:
        super().__init__(message)
        self.path = tuple(path)


class LMError(TypedspyError):
    """The language model endpoint could not be used; the SDK exception is ``__cause__``."""


class LMConnectionError(LMError):
    """The endpoint could not be reached (after the SDK's own retries)."""


class LMTimeoutError(LMConnectionError):
    """The request timed out (after the SDK's own retries)."""


class LMRateLimitError(LMError):
    """The endpoint answered 429 (after the SDK's own retries, which honour Retry-After).

    Attributes:
        retry_after: Seconds the endpoint asked to wait (``Retry-After`` / ``retry-after-ms``),
            when it said; a batch's `RateLimit` pauses every item for that long.
    """

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class LMStatusError(LMError):
    """The endpoint answered with an HTTP error status.

    Attributes:
        status_code: The HTTP status.
        code: The provider's error code, when it sent one (e.g. ``"model_not_found"``).
        param: The request parameter the provider blamed, when it named one.
    """

    def __init__(
        self, message: str, *, status_code: int, code: str | None = None, param: str | None = None
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.code = code
        self.param = param


class LMUnsupportedFeatureError(LMStatusError):
    """The endpoint rejected a request feature it does not support.

    Attributes:
        feature: What it rejected: ``"response_format"``, ``"json_schema"``, ``"tools"``, ...
    """

    def __init__(
        self,
        message: str,
        *,
        feature: str,
        status_code: int = 400,
        code: str | None = None,
        param: str | None = None,
    ) -> None:
        super().__init__(message, status_code=status_code, code=code, param=param)
        self.feature = feature


class LMResponseError(LMError):
    """The endpoint replied with something that is not a usable completion (no choices, ...)."""


class OutputError(TypedspyError):
    """The model answered, but its answer could not be turned into the signature's outputs.

    Attributes:
        attempts: Every request made for this call, in order, with raw text and errors.
        usage: Tokens summed over all attempts.
        raw: The text of the last completion ("" when there was none).
        errors: The field errors of the last attempt.
    """

    def __init__(
        self,
        message: str,
        *,
        attempts: Sequence[Attempt] = (),
        usage: Usage | None = None,
        raw: str = "",
        errors: Sequence[FieldError] = (),
    ) -> None:
        super().__init__(message)
        self.attempts = tuple(attempts)
        self.usage = usage if usage is not None else sum((a.usage for a in attempts), Usage())
        self.raw = raw
        self.errors = tuple(errors)

    @property
    def kind(self) -> FailureKind | None:
        """Why the last attempt failed: ``"not_enforced"``, ``"whitespace_loop"``, ..."""
        return self.attempts[-1].kind if self.attempts else None


class OutputDecodeError(OutputError):
    """No attempt produced a decodable JSON value."""


class OutputValidationError(OutputError):
    """The last attempt decoded but failed validation; ``errors`` names the field paths."""


class RefusalError(OutputError):
    """The model refused to answer; ``refusal`` holds its text. Not retried."""

    def __init__(
        self,
        message: str,
        *,
        refusal: str,
        attempts: Sequence[Attempt] = (),
        usage: Usage | None = None,
    ) -> None:
        super().__init__(message, attempts=attempts, usage=usage, raw=refusal)
        self.refusal = refusal


class TruncatedOutputError(OutputError):
    """The completion hit the token limit (``finish_reason == "length"``); ``raw`` is partial.

    ``kind`` tells a genuinely long answer (``"truncated"``) from a runaway one
    (``"whitespace_loop"``, ``"repetition_loop"``); the profile's one remedy for a runaway
    completion was tried first where it had one and retries were left.
    """


class ContentFilterError(OutputError):
    """The provider's content filter stopped the completion. Not retried."""


class TokenBudgetExceededError(OutputError):
    """The token budget across attempts ran out before a valid output was produced."""


class BudgetExceededError(TypedspyError):
    """A `Budget` ran out: the request that would have gone past it was not sent.

    Attributes:
        limit: The limit that was reached: ``"requests"``, ``"input_tokens"``,
            ``"output_tokens"``, ``"total_tokens"`` or ``"cost"``.
        allowed: The budget's value for that limit (a ``Decimal`` of dollars for cost).
        requests: Requests the budget had counted when it refused.
        usage: Tokens the budget had counted when it refused.
    """

    def __init__(
        self, message: str, *, limit: str, allowed: int | Decimal, requests: int, usage: Usage
    ) -> None:
        super().__init__(message)
        self.limit = limit
        self.allowed = allowed
        self.requests = requests
        self.usage = usage


class ItemTimeoutError(TypedspyError, TimeoutError):
    """A batch item ran longer than the batch's per-item ``timeout`` and was cancelled.

    Attributes:
        timeout: The per-item limit, in seconds.
    """

    def __init__(self, message: str, *, timeout: float) -> None:
        super().__init__(message)
        self.timeout = timeout


class BatchStoppedError(TypedspyError):
    """A batch item was never run: the batch had reached ``max_errors`` failures.

    Attributes:
        max_errors: The batch's limit.
    """

    def __init__(self, message: str, *, max_errors: int) -> None:
        super().__init__(message)
        self.max_errors = max_errors


class CacheMissError(TypedspyError):
    """In ``"replay"`` cache mode a request had no cached response (nothing was sent).

    Attributes:
        key: The request's cache key.
    """

    def __init__(self, message: str, *, key: str) -> None:
        super().__init__(message)
        self.key = key


class BatchFileError(TypedspyError):
    """A Batch API output file has no usable result for an input.

    Attributes:
        custom_id: The input's ``custom_id``.
    """

    def __init__(self, message: str, *, custom_id: str) -> None:
        super().__init__(message)
        self.custom_id = custom_id


class ToolError(TypedspyError):
    """A tool could not be built, or its result does not match its signature's outputs.

    Attributes:
        tool: The tool's name, when the error concerns one tool.
        errors: Field errors, when the problem is a value that failed validation.
    """

    def __init__(
        self, message: str, *, tool: str | None = None, errors: Sequence[FieldError] = ()
    ) -> None:
        super().__init__(message)
        self.tool = tool
        self.errors = tuple(errors)


class ToolNotFoundError(ToolError, KeyError):
    """No tool has the requested name.

    Attributes:
        tool: The name that was asked for.
        available: The names that do exist, sorted.
    """

    def __init__(self, message: str, *, tool: str, available: Sequence[str] = ()) -> None:
        super().__init__(message, tool=tool)
        self.available = tuple(available)

    def __str__(self) -> str:
        # KeyError would show the message as a quoted repr.
        return str(self.args[0]) if self.args else ""


class ToolArgumentsError(ToolError, ValueError):
    """A tool's arguments are not valid JSON or fail its input schema; the tool did not run.

    Attributes:
        tool: The tool's name.
        errors: One `FieldError` per problem; ``path`` names the argument (and nested fields).
    """

    def __init__(self, message: str, *, tool: str, errors: Sequence[FieldError]) -> None:
        super().__init__(message, tool=tool, errors=errors)


class ExampleError(TypedspyError, ValueError):
    """An example's values do not fit its signature.

    Attributes:
        errors: One `FieldError` per problem; ``path`` starts with the field name.
    """

    def __init__(self, message: str, *, errors: Sequence[FieldError] = ()) -> None:
        super().__init__(message)
        self.errors = tuple(errors)


@dataclass(frozen=True)
class RowError:
    """One problem in one dataset row.

    Attributes:
        row: The row's number, from 1 (for a JSONL or CSV file: see `DatasetError.source`).
        error: The field path and message.
    """

    row: int
    error: FieldError

    def __str__(self) -> str:
        return f"row {self.row}: {self.error}"


class DatasetError(ExampleError):
    """Rows of a dataset that do not fit its signature; every bad row is listed.

    Attributes:
        rows: One `RowError` per problem, in row order.
        source: The file (or ``"<list>"``) the rows came from.
    """

    def __init__(self, message: str, *, rows: Sequence[RowError], source: str) -> None:
        super().__init__(message, errors=[r.error for r in rows])
        self.rows = tuple(rows)
        self.source = source


class SavedStateError(TypedspyError, ValueError):
    """A saved program does not fit the program it is loaded into (nothing was changed).

    Attributes:
        path: The predictor path the problem is at (``""`` for the file as a whole).
    """

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(message)
        self.path = path
