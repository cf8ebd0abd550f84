"""`ReAct`: a bounded tool-using agent over a signature, above both the modules and the tools.

Its run state (the trajectory, a paused run) is made of Pydantic models; answered pauses are
remembered in a `ResumeStore` so an approval applies once (ADR-036, ADR-043).
"""

from typedspy.react._agent import ReAct
from typedspy.react._calls import ModuleContext, module_callback
from typedspy.react._resume import MemoryResumeStore, ResumeRecord, ResumeStore
from typedspy.react._state import Trajectory, TrajectoryCall, TrajectoryStep

__all__ = [
    "MemoryResumeStore",
    "ModuleContext",
    "ReAct",
    "ResumeRecord",
    "ResumeStore",
    "Trajectory",
    "TrajectoryCall",
    "TrajectoryStep",
    "module_callback",
]
