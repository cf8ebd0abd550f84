"""The built-in modules: `Predict`, `ChainOfThought` and `History`.

`Module`, their base, lives one layer below in `typedspy.program` and is re-exported here;
tools and confirmations are in `typedspy.tools`, the `ReAct` agent in `typedspy.react`.
"""

from typedspy.modules._cot import ChainOfThought
from typedspy.modules._history import History

# The package's interface to typedspy's other packages (not public API): they import from the
# package, never from its modules (ADR-034, checked by import-linter).
from typedspy.modules._history import history_messages as history_messages
from typedspy.modules._predict import Predict, PredictEvent
from typedspy.modules._state import demo_errors as demo_errors
from typedspy.modules._state import typed_demo as typed_demo
from typedspy.program import Module

__all__ = [
    "ChainOfThought",
    "History",
    "Module",
    "Predict",
    "PredictEvent",
]
