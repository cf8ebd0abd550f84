"""`ReAct`: a bounded tool-using agent over a signature, above both the modules and the tools.

Three modules: the agent and what each step sends and how its reply is read (`_agent`), one
run, its tool calls, its pauses and their resumption (`_run`), the trajectory, a paused run and
the store of answered pauses (`_state`). Run state is made of Pydantic models; answered pauses are
remembered in a `ResumeStore` so an approval applies once (ADR-036, ADR-043).
"""

from typedspy.react._agent import ReAct
from typedspy.react._run import AgentEvent, AgentPrediction, ModuleContext, module_callback
from typedspy.react._run import observation as observation
from typedspy.react._state import (
    MemoryResumeStore,
    PausedRun,
    ResumeRecord,
    ResumeStore,
    Trajectory,
    TrajectoryCall,
    TrajectoryStep,
)

__all__ = [
    "AgentEvent",
    "AgentPrediction",
    "MemoryResumeStore",
    "ModuleContext",
    "PausedRun",
    "ReAct",
    "ResumeRecord",
    "ResumeStore",
    "Trajectory",
    "TrajectoryCall",
    "TrajectoryStep",
    "module_callback",
]
