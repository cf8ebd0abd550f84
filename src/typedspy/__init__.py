"""typedspy: typed, validated LLM programs over any OpenAI-compatible endpoint.

Declare a `Signature`, call `Predict`, get a typed `Prediction`::

    import typedspy as ts

    class Answer(ts.Signature):
        \"\"\"Answer the question.\"\"\"

        question: str = ts.InputField()
        answer: int = ts.OutputField()

    ts.configure(lm=ts.LM("gpt-4o-mini"))
    ts.Predict(Answer)(question="2 + 2?").answer  # 4
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from typedspy._types import Attempt, FieldError, Usage
from typedspy._version import __version__
from typedspy.batch import BatchItem, BatchOptions, BatchProgress, BatchResult
from typedspy.cache import Cache, CacheMode, MemoryCache, SQLiteCache
from typedspy.callbacks import BaseCallback
from typedspy.errors import (
    BatchFileError,
    BatchStoppedError,
    BudgetExceededError,
    CacheMissError,
    ConfigurationError,
    ContentFilterError,
    DatasetError,
    DeadlineExceededError,
    ExampleError,
    InputError,
    ItemTimeoutError,
    LMConnectionError,
    LMError,
    LMRateLimitError,
    LMResponseError,
    LMResponseLimitError,
    LMStatusError,
    LMTimeoutError,
    LMUnsupportedFeatureError,
    MediaError,
    MediaNotSupportedError,
    OutputDecodeError,
    OutputError,
    OutputValidationError,
    RefusalError,
    RequestLimitError,
    ResumeConflictError,
    RowError,
    SavedStateError,
    SchemaError,
    TokenBudgetExceededError,
    ToolArgumentsError,
    ToolError,
    ToolNotFoundError,
    TruncatedOutputError,
    TypedspyError,
)
from typedspy.evaluation import (
    Evaluate,
    EvaluationReport,
    Example,
    FieldMetric,
    LLMJudge,
    aevaluate,
    evaluate,
    load_dataset,
)
from typedspy.limits import Budget, RateLimit
from typedspy.lm import LM, BaseLM, FallbackLM, FallbackTrace, RequestParams
from typedspy.media import Audio, File, Image
from typedspy.modules import (
    ChainOfThought,
    History,
    Module,
    Predict,
    aread_batch_file,
    read_batch_file,
    write_batch_file,
)
from typedspy.optimize import (
    BootstrapFewShot,
    BootstrapFewShotWithRandomSearch,
    KNNFewShot,
    KNNProgram,
    LabeledFewShot,
)
from typedspy.parse import ParseFailure, ParseResult, parse_outputs
from typedspy.pipeline import inspect_history
from typedspy.prediction import Prediction
from typedspy.profiles import LoopRemedy, Profile
from typedspy.react import (
    MemoryResumeStore,
    ModuleContext,
    ReAct,
    ResumeRecord,
    ResumeStore,
    Trajectory,
    module_callback,
)
from typedspy.schema import CompiledSchema, compile_schema
from typedspy.settings import configure, context, get_settings
from typedspy.signature import (
    InputField,
    OutputField,
    Returns,
    Signature,
    make_signature,
    to_jsonable,
)
from typedspy.tools import (
    ConfirmationRejected,
    ConfirmationRequired,
    ResumeState,
    Tool,
    Toolset,
    confirm_first,
    resume,
    tool,
)

if TYPE_CHECKING:
    from typedspy import mcp as mcp  # the typedspy[mcp] extra: not in __all__, loaded on use
    from typedspy import metrics, testing

__all__ = [
    "LM",
    "Attempt",
    "Audio",
    "BaseCallback",
    "BaseLM",
    "BatchFileError",
    "BatchItem",
    "BatchOptions",
    "BatchProgress",
    "BatchResult",
    "BatchStoppedError",
    "BootstrapFewShot",
    "BootstrapFewShotWithRandomSearch",
    "Budget",
    "BudgetExceededError",
    "Cache",
    "CacheMissError",
    "CacheMode",
    "ChainOfThought",
    "CompiledSchema",
    "ConfigurationError",
    "ConfirmationRejected",
    "ConfirmationRequired",
    "ContentFilterError",
    "DatasetError",
    "DeadlineExceededError",
    "Evaluate",
    "EvaluationReport",
    "Example",
    "ExampleError",
    "FallbackLM",
    "FallbackTrace",
    "FieldError",
    "FieldMetric",
    "File",
    "History",
    "Image",
    "InputError",
    "InputField",
    "ItemTimeoutError",
    "KNNFewShot",
    "KNNProgram",
    "LLMJudge",
    "LMConnectionError",
    "LMError",
    "LMRateLimitError",
    "LMResponseError",
    "LMResponseLimitError",
    "LMStatusError",
    "LMTimeoutError",
    "LMUnsupportedFeatureError",
    "LabeledFewShot",
    "LoopRemedy",
    "MediaError",
    "MediaNotSupportedError",
    "MemoryCache",
    "MemoryResumeStore",
    "Module",
    "ModuleContext",
    "OutputDecodeError",
    "OutputError",
    "OutputField",
    "OutputValidationError",
    "ParseFailure",
    "ParseResult",
    "Predict",
    "Prediction",
    "Profile",
    "RateLimit",
    "ReAct",
    "RefusalError",
    "RequestLimitError",
    "RequestParams",
    "ResumeConflictError",
    "ResumeRecord",
    "ResumeState",
    "ResumeStore",
    "Returns",
    "RowError",
    "SQLiteCache",
    "SavedStateError",
    "SchemaError",
    "Signature",
    "TokenBudgetExceededError",
    "Tool",
    "ToolArgumentsError",
    "ToolError",
    "ToolNotFoundError",
    "Toolset",
    "Trajectory",
    "TruncatedOutputError",
    "TypedspyError",
    "Usage",
    "__version__",
    "aevaluate",
    "aread_batch_file",
    "compile_schema",
    "configure",
    "confirm_first",
    "context",
    "evaluate",
    "get_settings",
    "inspect_history",
    "load_dataset",
    "make_signature",
    "metrics",
    "module_callback",
    "parse_outputs",
    "read_batch_file",
    "resume",
    "testing",
    "to_jsonable",
    "tool",
    "write_batch_file",
]


def _publish() -> None:
    # Public classes print and pickle under the path users import them from (``typedspy.X``),
    # not the private module that defines them: a pickled ConfirmationRequired or Predict
    # survives refactors such as ADR-042's move of Module, ReAct and the tools.
    for name in __all__:
        obj = globals().get(name)
        if isinstance(obj, type) and obj.__module__.startswith("typedspy."):
            obj.__module__ = "typedspy"


_publish()


def __getattr__(name: str) -> Any:
    # typedspy.testing starts nothing at import, but users who never test need not load it;
    # typedspy.mcp needs the optional extra, so it loads only when asked for.
    if name in ("testing", "mcp", "metrics"):
        return importlib.import_module(f"typedspy.{name}")
    raise AttributeError(f"module 'typedspy' has no attribute {name!r}")
