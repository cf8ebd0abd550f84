"""The call engine: one call of a signature on a model, shared by every module (ADR-034).

Input checks, the request (prompt) for a call, sending or streaming it, the finish-reason
policy, the attempt loop with its feedback, runaway re-asks and usage, stepping down on refused
features, typed failure kinds and fallback chains each exist once, here. Every model request
is an attempt of `run_attempts`: `Predict` (and so `ChainOfThought`, LLM-backed tools, ReAct's
union steps and extraction, Batch API files) through `run_call`'s output driver, a ReAct
native step through its own driver. Not public API: typedspy's modules import it.
"""

from __future__ import annotations

from typedspy.engine._attempts import Attempts, Done, Driver, Event, Reply, run_attempts
from typedspy.engine._draft import Draft, plan_draft, run_draft
from typedspy.engine._fallback import over_chain
from typedspy.engine._inputs import check_inputs, signature_of
from typedspy.engine._output import CallPlan, plan_call, run_call
from typedspy.engine._send import Pick, content, send
from typedspy.engine._stepdown import MAX_STEP_DOWNS, stepping_down

__all__ = [
    "MAX_STEP_DOWNS",
    "Attempts",
    "CallPlan",
    "Done",
    "Draft",
    "Driver",
    "Event",
    "Pick",
    "Reply",
    "check_inputs",
    "content",
    "over_chain",
    "plan_call",
    "plan_draft",
    "run_attempts",
    "run_call",
    "run_draft",
    "send",
    "signature_of",
    "stepping_down",
]
