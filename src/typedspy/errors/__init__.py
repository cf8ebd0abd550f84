"""The typedspy exception tree.

Every error typedspy raises derives from `TypedspyError`. Branches also derive from the builtin
they refine, so ``except ValueError`` and ``except TypeError`` keep working::

    TypedspyError
    ├── ConfigurationError (ValueError)   misuse: bad options or settings, a sync call on our loop
    │   ├── InputError                    missing or unexpected inputs, caught before any request
    │   │   └── MediaError                an image, audio or file input that cannot be sent
    │   │       └── MediaNotSupportedError  the endpoint's profile takes no media of that kind
    │   └── SavedStateError               a saved program that cannot be read or does not fit
    ├── SchemaError (TypeError)           a signature or model that cannot compile; names the path
    ├── LMError                           the endpoint could not be used (SDK error as __cause__)
    │   ├── LMConnectionError
    │   │   └── LMTimeoutError
    │   ├── LMRateLimitError
    │   ├── LMStatusError                 any other HTTP error status
    │   │   ├── LMContextLengthError      the request does not fit the model's context window
    │   │   └── LMUnsupportedFeatureError the endpoint rejected a feature (e.g. response_format)
    │   └── LMResponseError               a reply that is not a usable chat completion
    │       └── LMResponseLimitError      a reply past a reading limit (size, depth, digits)
    ├── OutputError                       the model answered, but not with a usable output
    │   ├── OutputDecodeError             no JSON value could be decoded (after retries)
    │   ├── OutputValidationError         decoded, but failed validation (after retries)
    │   ├── RefusalError                  the model refused (never retried)
    │   ├── TruncatedOutputError          finish_reason == "length" (never retried)
    │   ├── ContentFilterError            finish_reason == "content_filter" (never retried)
    │   └── TokenBudgetExceededError      the token budget ran out before a valid output
    ├── BudgetExceededError               a ts.limits.Budget ran out; the request was not sent
    ├── RequestLimitError                 a call reached max_requests (transport retries counted)
    ├── ItemTimeoutError (TimeoutError)   a batch item ran past the batch's per-item timeout
    ├── DeadlineExceededError (TimeoutError)  a call's deadline (or a stream's) ran out
    ├── BatchStoppedError                 a batch item never ran: max_errors was reached first
    ├── CacheError                        replay mode could not read the cache (corrupt, locked)
    │   └── CacheMissError                replay mode found no cached response for a request
    ├── BatchFileError                    a Batch API output file has no usable line for an item
    ├── ToolError                         a tool could not be built, found, or its result used
    │   ├── ToolNotFoundError (KeyError)  no tool of that name; lists the available names
    │   └── ToolArgumentsError (ValueError)  arguments failed validation; names the fields
    ├── ConfirmationRejected              the user rejected a confirm_first tool call
    │                                     (see typedspy.tools._approvals)
    ├── ResumeConflictError               a pause answered before with another answer, or
    │                                     whose resumption is still running (or was cut off)
    ├── ResumeStateError (ValueError)     a saved ResumeState refused: not signed, a signature
    │                                     that does not match, not JSON, or malformed
    ├── VerificationError                 a saved program scores below its record, or the dev
    │                                     set is not the one it was scored on (verify)
    └── ExampleError (ValueError)         an example's values do not fit its signature
        └── DatasetError                  dataset rows that do not fit; names row and field

`ConfirmationRequired` is deliberately *not* in this tree: it pauses a run for a human decision,
it does not report a failure, so ``except TypedspyError`` must not swallow it.
"""

# ruff: noqa: F403, F405 (the modules' own __all__ lists are star-imported, as httpx does)
from __future__ import annotations

from typedspy._types import FieldError as FieldError
from typedspy.errors._base import *
from typedspy.errors._data import *
from typedspy.errors._lm import *
from typedspy.errors._options import check_finite as check_finite
from typedspy.errors._options import check_instance as check_instance
from typedspy.errors._options import check_int as check_int
from typedspy.errors._options import check_number as check_number
from typedspy.errors._output import *
from typedspy.errors._runs import *

__all__ = [
    "BatchFileError",
    "BatchStoppedError",
    "BudgetExceededError",
    "CacheError",
    "CacheMissError",
    "ConfigurationError",
    "ContentFilterError",
    "DatasetError",
    "DeadlineExceededError",
    "ExampleError",
    "FieldError",
    "InputError",
    "ItemTimeoutError",
    "LMConnectionError",
    "LMContextLengthError",
    "LMError",
    "LMRateLimitError",
    "LMResponseError",
    "LMResponseLimitError",
    "LMStatusError",
    "LMTimeoutError",
    "LMUnsupportedFeatureError",
    "MediaError",
    "MediaNotSupportedError",
    "OutputDecodeError",
    "OutputError",
    "OutputValidationError",
    "RefusalError",
    "RequestLimitError",
    "ResumeConflictError",
    "ResumeStateError",
    "RowError",
    "SavedStateError",
    "SchemaError",
    "TokenBudgetExceededError",
    "ToolArgumentsError",
    "ToolError",
    "ToolNotFoundError",
    "TruncatedOutputError",
    "TypedspyError",
    "VerificationError",
]


# Pickles and reprs name the module users import from, not the private one defining the class
# (``typedspy/__init__`` moves the top-level exports on to ``typedspy``).
def _from_here() -> None:
    for name in __all__:
        globals()[name].__module__ = __name__


_from_here()
del _from_here
