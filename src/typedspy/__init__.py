"""typedspy: typed, validated LLM programs over any OpenAI-compatible endpoint.

Declare a `Signature`, call `Predict`, get a typed `Prediction`::

    import typedspy as ts

    class Answer(ts.Signature):
        \"\"\"Answer the question.\"\"\"

        question: str = ts.InputField()
        answer: int = ts.OutputField()

    ts.configure(lm=ts.LM("gpt-4o-mini"))
    ts.Predict(Answer)(question="2 + 2?").answer  # 4

The front door holds the DSPy vocabulary, what every program touches, and the roots of the
error tree (ADR-062). Everything else lives in its subpackage: ``ts.errors`` (every error),
``ts.optimize``, ``ts.evaluation``, ``ts.limits``, ``ts.cache``, ``ts.batch``, ``ts.batch_api``,
``ts.lm``, ``ts.react``, ``ts.tools``, ``ts.schema``, ``ts.parse``, ``ts.pipeline``, ``ts.testing``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from typedspy import adapter as adapter
from typedspy import batch as batch
from typedspy import batch_api as batch_api
from typedspy import cache as cache
from typedspy import callbacks as callbacks
from typedspy import errors as errors
from typedspy import evaluation as evaluation
from typedspy import limits as limits
from typedspy import lm as lm
from typedspy import media as media
from typedspy import modules as modules
from typedspy import optimize as optimize
from typedspy import parse as parse
from typedspy import pipeline as pipeline
from typedspy import prediction as prediction
from typedspy import profiles as profiles
from typedspy import program as program
from typedspy import react as react
from typedspy import schema as schema
from typedspy import settings as settings
from typedspy import signature as signature
from typedspy import streaming as streaming
from typedspy import tools as tools
from typedspy._version import __version__ as __version__
from typedspy.callbacks import BaseCallback
from typedspy.errors import (
    BudgetExceededError,
    ConfigurationError,
    DeadlineExceededError,
    InputError,
    LMError,
    OutputError,
    SchemaError,
    ToolError,
    TypedspyError,
)
from typedspy.evaluation import Example, evaluate
from typedspy.lm import LM
from typedspy.media import Audio, File, Image
from typedspy.modules import ChainOfThought, History, Predict
from typedspy.pipeline import inspect_history
from typedspy.prediction import Prediction
from typedspy.profiles import Profile
from typedspy.program import Module
from typedspy.react import ReAct
from typedspy.settings import configure, context
from typedspy.signature import InputField, OutputField, Returns, Signature, make_signature
from typedspy.tools import (
    ConfirmationRejected,
    ConfirmationRequired,
    ResumeState,
    Tool,
    confirm_first,
    tool,
)

if TYPE_CHECKING:
    from typedspy import mcp as mcp  # the typedspy[mcp] extra: not in __all__, loaded on use
    from typedspy import metrics as metrics
    from typedspy import testing as testing
    from typedspy import tracing as tracing

__all__ = [
    "LM",
    "Audio",
    "BaseCallback",
    "BudgetExceededError",
    "ChainOfThought",
    "ConfigurationError",
    "ConfirmationRejected",
    "ConfirmationRequired",
    "DeadlineExceededError",
    "Example",
    "File",
    "History",
    "Image",
    "InputError",
    "InputField",
    "LMError",
    "Module",
    "OutputError",
    "OutputField",
    "Predict",
    "Prediction",
    "Profile",
    "ReAct",
    "ResumeState",
    "Returns",
    "SchemaError",
    "Signature",
    "Tool",
    "ToolError",
    "TypedspyError",
    "configure",
    "confirm_first",
    "context",
    "evaluate",
    "inspect_history",
    "make_signature",
    "tool",
]

_PACKAGES = (
    "batch",
    "batch_api",
    "cache",
    "callbacks",
    "errors",
    "evaluation",
    "limits",
    "lm",
    "media",
    "modules",
    "optimize",
    "parse",
    "pipeline",
    "prediction",
    "profiles",
    "program",
    "react",
    "schema",
    "settings",
    "signature",
    "streaming",
    "tools",
)


def _publish() -> None:
    # Public classes print and pickle under the path users import them from (``typedspy.X``,
    # ``typedspy.errors.X``), not the private module that defines them: a pickled
    # ConfirmationRequired or Predict survives refactors such as ADR-042's move of Module.
    for package in _PACKAGES:
        module = globals()[package]
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name, None)
            if isinstance(obj, type) and _private(obj.__module__):
                obj.__module__ = f"typedspy.{package}"
    for name in __all__:
        obj = globals().get(name)
        if isinstance(obj, type) and obj.__module__.startswith("typedspy."):
            obj.__module__ = "typedspy"


def _private(module: str) -> bool:
    """Whether ``module`` is one of typedspy's private modules (``typedspy.lm._openai``)."""
    parts = module.split(".")
    return parts[0] == "typedspy" and any(part.startswith("_") for part in parts[1:])


_publish()


def __getattr__(name: str) -> Any:
    # typedspy.testing starts nothing at import, but users who never test need not load it;
    # typedspy.mcp needs the optional extra, so it loads only when asked for.
    if name in ("testing", "mcp", "metrics", "tracing"):
        return importlib.import_module(f"typedspy.{name}")
    raise AttributeError(f"module 'typedspy' has no attribute {name!r}")
