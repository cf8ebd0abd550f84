"""The call engine: one call of a signature on a model, shared by every module (ADR-034).

Input checks, the request (prompt) for a call, sending or streaming it, the finish-reason
policy, parsing and feedback retries, typed failure kinds and fallback chains each exist once,
here. `Predict` (and so `ChainOfThought` and LLM-backed tools) runs whole calls through
`run_call`; `ReAct` builds its own tool-step requests but sends them with `send`, re-asks a
runaway step with `runaway_remedy` and ends them with `raise_for_finish`. Not public API:
typedspy's modules import it.
"""

from __future__ import annotations

from typedspy.engine._attempts import CallPlan, Event, run_call
from typedspy.engine._failures import remedy_turn, runaway_remedy, truncation_kind
from typedspy.engine._fallback import over_chain
from typedspy.engine._finish import ends_call, raise_for_finish, truncation_error
from typedspy.engine._inputs import check_inputs, signature_class, signature_of
from typedspy.engine._plan import plan_call
from typedspy.engine._send import Pick, content, first_call_arguments, parsed_events, send

__all__ = [
    "CallPlan",
    "Event",
    "Pick",
    "check_inputs",
    "content",
    "ends_call",
    "first_call_arguments",
    "over_chain",
    "parsed_events",
    "plan_call",
    "raise_for_finish",
    "remedy_turn",
    "run_call",
    "runaway_remedy",
    "send",
    "signature_class",
    "signature_of",
    "truncation_error",
    "truncation_kind",
]
