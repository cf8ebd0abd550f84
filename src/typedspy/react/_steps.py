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
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, create_model
from pydantic.fields import FieldInfo

from typedspy._types import FailureKind, Usage
from typedspy.adapter import format_inputs, user_content, with_history
from typedspy.engine import Attempts, Done, Pick
from typedspy.errors import ConfigurationError, OutputDecodeError, OutputValidationError
from typedspy.lm import (
    ChatMessage,
    LMChunk,
    LMRequest,
    LMResponse,
    StreamAccumulator,
    counted_stream,
)
from typedspy.modules import Predict
from typedspy.profiles import Profile
from typedspy.react._state import ACCEPTED, Trajectory, TrajectoryCall, TrajectoryStep, bounded
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

if TYPE_CHECKING:
    from typedspy.react._run import Run

__all__ = [
    "FINISH",
    "TRAJECTORY_FIELD",
    "NativeStep",
    "answers_in_content",
    "extraction_signature",
    "finish_tool",
    "native_request",
    "step_output",
    "step_signature",
    "union_step",
]


FINISH = "finish"


TRAJECTORY_FIELD = "trajectory"


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


def _field_lines(fields: Mapping[str, FieldInfo]) -> list[str]:
    return [f"- {n}: {i.description}" if i.description else f"- {n}" for n, i in fields.items()]


def _system_prompt(sig: type[Signature]) -> str:
    lines = [sig.instructions, ""]
    if sig.input_fields:
        lines += ["Inputs:", *_field_lines(sig.input_fields)]
    lines += ["Outputs (the arguments of `finish`):", *_field_lines(sig.output_fields), ""]
    lines.append(_AGENT_RULES)
    return "\n".join(lines)


def finish_tool(sig: type[Signature], target: str = "openai-strict") -> dict[str, Any]:
    """The ``finish`` function: its parameters the signature's output schema for ``target``."""
    compiled = compile_schema(sig, target)
    return {
        "type": "function",
        "function": {
            "name": FINISH,
            "description": _FINISH_DESCRIPTION,
            "parameters": compiled.schema,
            "strict": compiled.strict,
        },
    }


def native_request(
    sig: type[Signature],
    inputs: Mapping[str, Any],
    *,
    history: Sequence[ChatMessage],
    trajectory: Trajectory,
    tools: Sequence[Tool],
    parallel_tool_calls: bool | None,
    params: Mapping[str, Any],
    target: str = "openai-strict",
    profile: Profile | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> LMRequest:
    """One native tool-calling step (media inputs as content parts when ``profile`` is given).

    With ``profile``, ``params`` get its ``max_tokens`` cap unless they or ``defaults`` (the
    LM's request defaults) set a cap: the one rule `Predict` follows too
    (`Profile.structured_params`).

    Where the profile lets ``response_format`` go with tools (`answers_in_content`), the step
    also carries the outputs' schema as ``response_format`` and ``tool_choice`` is ``"auto"``:
    the model calls tools, or answers in content that the schema shapes (``finish`` stays
    offered). Elsewhere (vLLM applies ``response_format`` to tool steps too, so the model could
    never call a tool) no ``response_format`` is sent and ``tool_choice`` is ``"required"``:
    every reply is a tool call or ``finish``, and a plain-text reply is never an answer.
    """
    system, turns = with_history(_system_prompt(sig), history)
    messages: list[ChatMessage] = [system, *turns]
    text = format_inputs(sig, inputs)
    content = text if profile is None else user_content(sig, inputs, profile, text)
    messages.append({"role": "user", "content": content})
    messages.extend(trajectory.to_messages())
    specs = [tool.to_openai_tool(target) for tool in tools]
    specs.append(finish_tool(sig, target))
    if profile is not None:
        params = profile.structured_params(params, defaults=defaults or {})
    if not answers_in_content(profile):
        return LMRequest(
            messages=tuple(messages),
            tools=tuple(specs),
            tool_choice="required",
            parallel_tool_calls=parallel_tool_calls,
            params=dict(params),
        )
    return LMRequest(
        messages=tuple(messages),
        response_format=compile_schema(sig, target).response_format,
        tools=tuple(specs),
        tool_choice="auto",
        parallel_tool_calls=parallel_tool_calls,
        params=dict(params),
    )


def answers_in_content(profile: Profile | None) -> bool:
    """Whether a native step sends the outputs' ``response_format`` with its tools.

    The profile's ``response_format_with_tools`` decides (ADR-043): True on OpenAI and Azure,
    False where the server would constrain tool steps with it (vLLM, local-servers.md) or is
    not known to accept both.
    """
    return profile is not None and profile.response_format_with_tools


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
    inputs: dict[str, tuple[Any, FieldInfo]] = {
        n: (i.annotation, i) for n, i in sig.input_fields.items()
    }
    inputs[TRAJECTORY_FIELD] = (
        str,
        InputField(description="the steps so far: tool calls and what they returned"),
    )
    outputs: dict[str, tuple[Any, FieldInfo]] = {
        "reasoning": (str, OutputField(description="what you know so far and what to do next")),
        "next": (choice, OutputField(description="one tool call, or finish")),
    }
    step = build_signature(f"{sig.__name__}Step", inputs, outputs, instructions)
    return step, members


def extraction_signature(sig: type[Signature]) -> type[Signature]:
    """Inputs + ``trajectory`` text -> the signature's outputs, for a run out of steps."""
    inputs: dict[str, tuple[Any, FieldInfo]] = {
        n: (i.annotation, i) for n, i in sig.input_fields.items()
    }
    inputs[TRAJECTORY_FIELD] = (
        str,
        InputField(description="the agent's steps: tool calls and what they returned"),
    )
    outputs = {n: (i.annotation, i) for n, i in sig.output_fields.items()}
    return build_signature(
        f"{sig.__name__}Extract", inputs, outputs, f"{sig.instructions}\n\n{_EXTRACT_RULES}"
    )


class NativeStep:
    """A run's next native step, as the attempt loop's driver (`typedspy.engine.Driver`).

    Its request is `native_request`; while streaming, the output is the arguments of the first
    ``finish`` call, or the content when the step sent the outputs' ``response_format``; a
    reply is read into the trajectory (`Run.native_step`). A runaway step gets the profile's
    re-ask through the loop, its note and parameters sent as a `Predict` retry's are.
    """

    what = "a ReAct step"

    def __init__(self, run: Run[Any]) -> None:
        self.run = run
        self.signature = run.signature
        self._content = answers_in_content(run.lm.profile)

    def request(self) -> LMRequest:
        run = self.run
        return native_request(
            run.signature,
            run.inputs,
            history=run.history,
            trajectory=run.trajectory,
            tools=run.active_tools(),
            parallel_tool_calls=run.parallel_tool_calls,
            params=run.params,
            target=run.lm.profile.target,
            profile=run.lm.profile,
            defaults=run.lm.defaults,
        )

    def pick(self) -> Pick:
        return _finish_arguments(content=self._content)

    def reasoning_tags(self) -> tuple[str, str] | None:
        # Split off the content as `Run.native_step` does (ADR-027).
        return self.run.lm.profile.reasoning_tags if self._content else None

    def output(self, response: LMResponse) -> tuple[str | None, str | None]:
        return step_output(response), None

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
        return Done(self.run.native_step(response))


def step_output(response: LMResponse) -> str:
    """What a native step wrote last: its last tool call's arguments, else its content.

    A step cut off at the token limit was cut there, so a runaway loop shows in its tail.
    """
    if response.tool_calls:
        return response.tool_calls[-1].arguments
    return response.text or ""


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
