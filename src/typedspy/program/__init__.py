"""`Module`: the base of every typedspy program, below both the modules and the tools.

`typedspy.modules` (Predict, ChainOfThought) and `typedspy.tools` (a module can be a tool) both
build on it and do not import each other (ADR-042).
"""

from typedspy.program._module import Module

__all__ = ["Module"]
