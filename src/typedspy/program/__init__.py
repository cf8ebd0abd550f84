"""`Module`: the base of every typedspy program, below both the modules and the tools.

`typedspy.modules` (Predict, ChainOfThought) and `typedspy.tools` (a module can be a tool) both
build on it and do not import each other (ADR-042).
"""

from typedspy.program._module import Module

# The package's interface to typedspy's other packages (not public API): the saved-state models
# and their reader (ADR-054), and the check every module's call makes.
from typedspy.program._state import PredictorState as PredictorState
from typedspy.program._state import ProgramState as ProgramState
from typedspy.program._state import ScoreRecord as ScoreRecord
from typedspy.program._state import StateModel as StateModel
from typedspy.program._state import listed as listed
from typedspy.program._state import state_error as state_error
from typedspy.program._state import too_deep as too_deep
from typedspy.program._state import under as under

__all__ = ["Module"]
