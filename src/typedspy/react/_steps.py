"""What ReAct sends for one step and how its reply is read: a native step, or the union step.

A native step streams its completion when the run streams; the arguments of a ``finish`` call
are the task's outputs, so while they arrive they are parsed like `Predict`'s output
(`OutputDelta` and `PartialPrediction` events). Should that ``finish`` fail validation, the run
goes on and a later ``finish`` streams its partial outputs afresh.

Native tool calling: the conversation (system, inputs, then the trajectory as assistant
``tool_calls`` and ``role: tool`` messages) with every tool plus a strict ``finish`` function
whose parameters are the signature's output schema. Fallback for endpoints without tool
calling: a signature whose one output ``next`` is a ``_type``-tagged union of each tool's
arguments and a ``finish`` member holding the outputs, asked through `Predict` (`union_step`),
so constrained decoding guarantees a well-formed step (ADR-037).
"""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model
from pydantic.fields import FieldInfo

from typedspy._types import FailureKind, Usage
from typedspy.adapter import (
    field_section,
    format_inputs,
    function_tool,
    user_content,
    with_history,
)
from typedspy.engine import Attempts, Done, Pick
from typedspy.errors import ConfigurationError, OutputDecodeError, OutputValidationError
from typedspy.lm import LMChunk, LMRequest, LMResponse, StreamAccumulator
from typedspy.modules import Predict
from typedspy.parse import split_reasoning
from typedspy.react._run import FINISH, TRAJECTORY_FIELD, Run
from typedspy.react._state import ACCEPTED, TrajectoryCall, TrajectoryStep, bounded
from typedspy.schema import compile_schema
from typedspy.signature import (
    InputField,
    OutputField,
    Signature,
    build_signature,
    to_jsonable,
    without_role,
)
from typedspy.streaming import closing
from typedspy.tools import Tool

__all__ = ["NativeStep", "extraction_signature", "step_signature", "union_step"]


_NO_CALL = (
    "You replied without calling a tool. Call one of the tools, or call `finish` with the "
    "final outputs."
)


_AGENT_RULES = (
    "Work step by step with the tools; each result comes back to you as the tool's reply. "
    "Call one tool at a time. When you know the outputs, call `finish` with them: its "
    "arguments are the final answer."
)


_FINISH_DESCRIPTION = (
    "Give the final answer and stop. Call this once you know the outputs; its arguments are "
    "the outputs."
)


_UNION_RULES = (
    "You are an agent working step by step. `trajectory` lists the tool calls made so far and "
    "what they returned. Choose the next step: in `next`, either call one tool (its `_type` is "
    "the tool's name, the other properties its arguments) or, when you know the outputs, "
    "`finish` with the final outputs."
)


_EXTRACT_RULES = (
    "An agent worked on this task with tools; `trajectory` lists its steps and what the tools "
    "returned. It ran out of steps before giving its answer: give the outputs now, based on "
    "what it found."
)


def _system_prompt(sig: type[Signature]) -> str:
    lines = [sig.instructions, "", *field_section("Inputs:", sig.input_fields)]
    lines += [*field_section("Outputs (the arguments of `finish`):", sig.output_fields), ""]
    lines.append(_AGENT_RULES)
    return "\n".join(lines)


def _plain_fields(fields: Mapping[str, FieldInfo]) -> dict[str, Any]:
    return {n: (i.annotation, without_role(i)) for n, i in fields.items()}


def _member(name: str, doc: str, fields: Mapping[str, FieldInfo]) -> type[BaseModel]:
    # The class is named after the tool, so the union's `_type` tag is the tool's own name,
    # the same name the model sees for it in native tool calling.
    model: type[BaseModel] = create_model(
        name,
        __doc__=doc or None,
        __config__=ConfigDict(protected_namespaces=()),
        **_plain_fields(fields),
    )
    return model


def _with_trajectory(sig: type[Signature], description: str) -> dict[str, tuple[Any, FieldInfo]]:
    """The task's inputs, plus ``trajectory``: the steps as text."""
    inputs: dict[str, tuple[Any, FieldInfo]] = {
        n: (i.annotation, i) for n, i in sig.input_fields.items()
    }
    inputs[TRAJECTORY_FIELD] = (str, InputField(description=description))
    return inputs


def step_signature(
    sig: type[Signature], tools: Sequence[Tool]
) -> tuple[type[Signature], dict[type[BaseModel], str]]:
    """The fallback step: inputs + ``trajectory`` text -> ``reasoning`` and ``next``.

    Returns:
        The signature, and each union member class mapped to its tool name (``finish`` too).

    Raises:
        ConfigurationError: The task has an input named ``reasoning`` or ``next``.
    """
    taken = sorted({"reasoning", "next"} & set(sig.input_fields))
    if taken:
        raise ConfigurationError(
            f"{sig.__name__}: the ReAct fallback step uses the output names 'reasoning' and "
            f"'next'; rename the input(s) {', '.join(taken)}"
        )
    members: dict[type[BaseModel], str] = {}
    for tool in tools:
        members[_member(tool.name, tool.description, tool.signature.input_fields)] = tool.name
    finish_doc = "The final answer: the outputs of the task."
    members[_member(FINISH, finish_doc, sig.output_fields)] = FINISH
    choice: Any = functools.reduce(operator.or_, members)
    listing = "\n".join(f"- {t.name}: {t.description}" for t in tools) or "- (none)"
    instructions = (
        f"{sig.instructions}\n\n{_UNION_RULES}\n\nTools:\n{listing}\n- {FINISH}: {finish_doc}"
    )
    inputs = _with_trajectory(sig, "the steps so far: tool calls and what they returned")
    outputs: dict[str, tuple[Any, FieldInfo]] = {
        "reasoning": (str, OutputField(description="what you know so far and what to do next")),
        "next": (choice, OutputField(description="one tool call, or finish")),
    }
    step = build_signature(f"{sig.__name__}Step", inputs, outputs, instructions)
    return step, members


def extraction_signature(sig: type[Signature]) -> type[Signature]:
    """Inputs + ``trajectory`` text -> the signature's outputs, for a run out of steps."""
    inputs = _with_trajectory(sig, "the agent's steps: tool calls and what they returned")
    outputs = {n: (i.annotation, i) for n, i in sig.output_fields.items()}
    return build_signature(
        f"{sig.__name__}Extract", inputs, outputs, f"{sig.instructions}\n\n{_EXTRACT_RULES}"
    )


class NativeStep:
    """A run's next native step, as the attempt loop's driver (`typedspy.engine.Driver`).

    While streaming, the output is the arguments of the first ``finish`` call, or the content
    when the step sent the outputs' ``response_format``; a reply is read into the trajectory.
    A runaway step gets the profile's re-ask through the loop, its note and parameters sent as
    a `Predict` retry's are.

    Where the profile lets ``response_format`` go with tools (``response_format_with_tools``,
    ADR-043: OpenAI and Azure), the step also carries the outputs' schema as
    ``response_format`` and ``tool_choice`` is ``"auto"``: the model calls tools, or answers in
    content that the schema shapes (``finish`` stays offered). Elsewhere (vLLM applies
    ``response_format`` to tool steps too, so the model could never call a tool) no
    ``response_format`` is sent and ``tool_choice`` is ``"required"``: every reply is a tool
    call or ``finish``, and a plain-text reply is never an answer.
    """

    what = "a ReAct step"

    def __init__(self, run: Run[Any]) -> None:
        self.run = run
        self.signature = run.signature
        self._content = run.lm.profile.response_format_with_tools

    def request(self) -> LMRequest:
        """The conversation (system, inputs, the trajectory as tool messages) and the tools.

        Media inputs go as content parts; the parameters get the profile's ``max_tokens`` cap
        unless they or the LM's defaults set one (`Profile.structured_params`, as `Predict`).
        """
        run, sig = self.run, self.run.signature
        profile = run.lm.profile
        system, turns = with_history(_system_prompt(sig), run.history)
        content = user_content(sig, run.inputs, profile, format_inputs(sig, run.inputs))
        tools = [tool.to_openai_tool(profile.target) for tool in run.active_tools()]
        finish = compile_schema(sig, profile.target)
        tools.append(function_tool(FINISH, _FINISH_DESCRIPTION, finish))
        return LMRequest(
            messages=(
                system,
                *turns,
                {"role": "user", "content": content},
                *run.trajectory.to_messages(),
            ),
            response_format=finish.response_format if self._content else None,
            tools=tuple(tools),
            tool_choice="auto" if self._content else "required",
            parallel_tool_calls=run.parallel_tool_calls,
            params=profile.structured_params(run.agent.lm_kwargs, defaults=run.lm.defaults),
        )

    def pick(self) -> Pick:
        return _finish_arguments(content=self._content)

    def reasoning_tags(self) -> tuple[str, str] | None:
        # Split off the content as `read` does (ADR-027).
        return self.run.lm.profile.reasoning_tags if self._content else None

    def output(self, response: LMResponse) -> tuple[str | None, str | None]:
        # Its last tool call's arguments, else its content: a step cut off at the token limit
        # was cut there, so a runaway loop shows in its tail.
        if response.tool_calls:
            return response.tool_calls[-1].arguments, None
        return response.text or "", None

    def usable_when_cut(self, text: str, kind: FailureKind) -> bool:
        return False  # a step cut off is re-asked or ends the run

    def received(self, response: LMResponse) -> None:
        self.run.record(response.usage, response)

    def spent(self, attempts: Attempts) -> Usage:
        return self.run.usage

    def read(
        self,
        attempts: Attempts,
        number: int,
        response: LMResponse,
        text: str | None,
        reasoning: str | None,
    ) -> Done[TrajectoryStep | None]:
        """The reply as a step of the trajectory: its calls are to run (None: nothing to run).

        The attempt loop has ended the run already on a refused, filtered or cut-off reply.
        """
        run = self.run
        number = run.step + 1
        if response.tool_calls:
            calls = [
                TrajectoryCall(id=c.id or f"call_{number}_{n}", name=c.name, arguments=c.arguments)
                for n, c in enumerate(response.tool_calls, 1)
            ]
            step = TrajectoryStep(reasoning=response.text or None, calls=calls)
            run.trajectory.append(step)
            return Done(step)
        if response.text and self._content:
            # An answer in content, shaped by the step's response_format: like `finish`.
            answer, thought = split_reasoning(response.text, run.lm.profile.reasoning_tags)
            call = TrajectoryCall(id=f"call_{number}_answer", name=FINISH, arguments=answer)
            run.trajectory.append(TrajectoryStep(reasoning=thought, calls=[call]))
            run.answer = run.finish(call)
            return Done(None)
        run.trajectory.append(TrajectoryStep(reasoning=response.text, note=_NO_CALL))
        return Done(None)


def _finish_arguments(*, content: bool = False) -> Pick:
    """Picks the task's outputs: the first ``finish`` call's arguments, or the content."""
    finish: int | None = None

    def pick(chunk: LMChunk, accumulator: StreamAccumulator) -> str:
        nonlocal finish
        pieces: list[str] = [chunk.text] if content and chunk.text else []
        for piece in chunk.tool_calls:
            if finish is None and accumulator.call_name(piece.index) == FINISH:
                finish = piece.index
            if piece.index == finish:
                pieces.append(piece.arguments)
        return "".join(pieces)

    return pick


async def union_step(run: Run[Any], *, stream: bool) -> TrajectoryStep | None:
    """One step through `Predict` over a signature whose output is the tagged union.

    Returns the step whose tool call is to run, or None: the step chose ``finish`` (then
    ``run.answer`` is set), or its output could not be used (then a note says why). With
    ``stream``, the request streams; its partial events (of the step signature, not the
    task's) are not passed on.
    """
    step_sig, members = _stepper(run, tuple(run.active_tools()))
    predict: Predict[Signature] = Predict(step_sig, **run.agent.lm_kwargs)
    pred: Any = None
    try:
        async with closing(run.predicted(predict, stream)) as events:
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
    tool = run.tools.get(name)
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
