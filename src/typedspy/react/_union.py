"""ReAct's union fallback: one step as a `Predict` call whose output is a tagged union.

On endpoints without dependable tool calling, a step's output ``next`` is a ``_type``-tagged
union of each tool's arguments and a ``finish`` member (`step_signature`), so constrained
decoding guarantees a well-formed step (ADR-037).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from typedspy.errors import OutputDecodeError, OutputValidationError
from typedspy.lm import counted_stream
from typedspy.modules import Predict
from typedspy.react._calls import bounded
from typedspy.react._run import ACCEPTED, Run
from typedspy.react._state import TrajectoryCall, TrajectoryStep
from typedspy.react._steps import FINISH, TRAJECTORY_FIELD, step_signature
from typedspy.signature import Signature, to_jsonable
from typedspy.streaming import closing
from typedspy.tools import Tool

__all__ = ["union_step"]


async def union_step(run: Run[Any], *, stream: bool) -> TrajectoryStep | None:
    """One step through `Predict` over a signature whose output is the tagged union.

    Returns the step whose tool call is to run, or None: the step chose ``finish`` (then
    ``run.answer`` is set), or its output could not be used (then a note says why). With
    ``stream``, the request streams; its partial events (of the step signature, not the
    task's) are not passed on.
    """
    step_sig, members = _stepper(run, tuple(run.active_tools()))
    predict: Predict[Signature] = Predict(
        step_sig, lm=run.lm, token_budget=run.remaining_budget(), **run.params
    )
    pred: Any = None
    try:
        async with closing(
            counted_stream(
                run.requests,
                predict.aexecute(
                    stream=stream,
                    history=run.history,
                    **run.inputs,
                    **{TRAJECTORY_FIELD: run.trajectory.to_text()},
                ),
            )
        ) as events:
            async for event in events:
                pred = event
    except (OutputDecodeError, OutputValidationError) as exc:
        # One unreadable step should not end the run: the model sees why and tries again.
        run.record(exc.usage, None)
        note = bounded(f"Your previous step could not be used: {exc}")
        run.trajectory.append(TrajectoryStep(note=note))
        return None
    run.record(pred.usage, pred.completion)
    choice = pred["next"]
    name = members[type(choice)]
    call_id = f"call_{run.step + 1}_1"
    reasoning = pred["reasoning"] or None
    if name == FINISH:
        run.answer = {n: getattr(choice, n) for n in run.signature.output_fields}
        shown = _arguments(choice, run.signature.output_fields)
        call = TrajectoryCall(id=call_id, name=FINISH, arguments=shown, observation=ACCEPTED)
        run.trajectory.append(TrajectoryStep(reasoning=reasoning, calls=[call]))
        return None
    tool = run.calls.tools.get(name)
    shown = _arguments(choice, tool.signature.input_fields)
    call = TrajectoryCall(id=call_id, name=name, arguments=shown)
    step = TrajectoryStep(reasoning=reasoning, calls=[call])
    run.trajectory.append(step)
    return step


def _stepper(
    run: Run[Any], tools: tuple[Tool, ...]
) -> tuple[type[Signature], dict[type[BaseModel], str]]:
    # Rebuilt only when a module callback changed the tools since the last step.
    for known, step_sig, members in run.union_steps:
        if len(known) == len(tools) and all(a is b for a, b in zip(known, tools, strict=True)):
            return step_sig, members
    step_sig, members = step_signature(run.signature, tools)
    run.union_steps.append((tools, step_sig, members))
    return step_sig, members


def _arguments(choice: BaseModel, fields: Mapping[str, Any]) -> str:
    """A union member's values as the JSON arguments of the call it stands for."""
    data = {n: to_jsonable(getattr(choice, n), fields[n].annotation) for n in fields}
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))
