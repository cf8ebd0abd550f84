from typedspy.modules._batch_file import aread_batch_file, read_batch_file, write_batch_file
from typedspy.modules._callbacks import ModuleContext, module_callback
from typedspy.modules._confirm import (
    ConfirmationRejected,
    ConfirmationRequired,
    ResumeState,
    confirm_first,
    resume,
)
from typedspy.modules._cot import ChainOfThought
from typedspy.modules._history import History
from typedspy.modules._module import Module
from typedspy.modules._predict import Predict
from typedspy.modules._react import ReAct
from typedspy.modules._resume_store import MemoryResumeStore, ResumeRecord, ResumeStore

# The package's interface to typedspy's other packages (not public API): they import from the
# package, never from its modules (ADR-034, checked by import-linter).
from typedspy.modules._state import typed_demo as typed_demo
from typedspy.modules._trajectory import Trajectory, TrajectoryCall, TrajectoryStep

__all__ = [
    "ChainOfThought",
    "ConfirmationRejected",
    "ConfirmationRequired",
    "History",
    "MemoryResumeStore",
    "Module",
    "ModuleContext",
    "Predict",
    "ReAct",
    "ResumeRecord",
    "ResumeState",
    "ResumeStore",
    "Trajectory",
    "TrajectoryCall",
    "TrajectoryStep",
    "aread_batch_file",
    "confirm_first",
    "module_callback",
    "read_batch_file",
    "resume",
    "write_batch_file",
]
