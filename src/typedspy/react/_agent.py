"""`ReAct`: a bounded tool-using loop over a signature, and what each of its steps sends.

Each step asks the model for tool calls and runs them (`Run.run_calls`, ``finish`` included);
``finish`` ends the run with the outputs, running out of steps with an answer extracted from
the trajectory. A paused run resumes at the same call: a new `Run` set back to where it paused
(`restore`), whose first events are the paused call's, answered once (`Run.resume`).

A step is native or a union step. A native step sends the conversation, every tool and a strict
``finish`` function over the output schema as an attempt of the engine's loop (`NativeStep`);
while a ``finish`` call streams, its arguments are parsed as `Predict`'s output would be. Without
dependable tool calling, a union step asks `Predict` for one output ``next``, a ``_type``-tagged
union of each tool's arguments and ``finish`` (`union_step`, ADR-037).
"""

from __future__ import annotations

import functools
import logging
import operator
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Literal, cast, get_args

from pydantic import BaseModel, ConfigDict, create_model
from pydantic.fields import FieldInfo
from typing_extensions import ParamSpec, TypeVar, Unpack

from typedspy._text import bounded
from typedspy._types import FailureKind, Usage
from typedspy.adapter import field_section, format_inputs, function_tool, user_content, with_history
from typedspy.engine import (
    Attempts,
    Done,
    Pick,
    Reply,
    check_inputs,
    run_attempts,
    signature_of,
    stepping_down,
)
from typedspy.errors import (
    ConfigurationError,
    LMUnsupportedFeatureError,
    OutputDecodeError,
    OutputValidationError,
    SchemaError,
    check_instance,
    check_int,
)
from typedspy.lm import (
    BaseLM,
    ChatMessage,
    LMChunk,
    LMRequest,
    LMResponse,
    RequestParams,
    StreamAccumulator,
    check_params,
)
from typedspy.modules import History, Predict, history_messages
from typedspy.parse import split_reasoning
from typedspy.program import Module
from typedspy.react._run import (
    FINISH,
    TRAJECTORY_FIELD,
    AgentEvent,
    AgentPrediction,
    Run,
    as_arguments,
    nested_resume,
    restore,
)
from typedspy.react._state import (
    ResumeStore,
    Trajectory,
    TrajectoryCall,
    TrajectoryStep,
)
from typedspy.schema import compile_schema
from typedspy.settings import resolve_lm
from typedspy.signature import (
    InputField,
    OutputField,
    Signature,
    build_signature,
    to_jsonable_fields,
    without_role,
)
from typedspy.streaming import StreamEvent, closing
from typedspy.tools import ResumeState, Tool, Toolset

__all__ = [
    "MAX_TOOL_CALLS",
    "NativeStep",
    "ReAct",
    "ReActMode",
    "extraction_signature",
    "step_signature",
    "union_step",
]


logger = logging.getLogger("typedspy")


SigT = TypeVar("SigT", bound=Signature, default=Signature)  # a string signature: any
InputsT = ParamSpec("InputsT", default=...)
"""The signature's inputs: the keywords of a call, checked statically as `Predict`'s (ADR-015)."""


ReActMode = Literal["auto", "tools", "union"]


MAX_TOOL_CALLS = 8
"""The default bound on the tool calls one step runs (ReAct's ``max_tool_calls``)."""


class ReAct(Module, Generic[SigT, InputsT]):
    """An agent: calls tools step by step, then answers with the signature's typed outputs.

    Example:
        ```python
        agent = ts.ReAct(AnswerQuestion, tools=[search, calculator], max_iters=8)
        pred = agent(question="What is the population of Paris times two?")
        pred.answer, pred.trajectory, pred.finished
        ```

    Args:
        signature: The task: a `Signature` subclass or a string such as ``"question -> answer"``.
        tools: `Tool` objects, signature-bound modules, or plain functions (wrapped as
            ``@ts.tool`` would). Names must be unique; ``finish`` is reserved.
        max_iters: The most model steps one run takes before the answer is extracted from
            the trajectory (at least 1).
        lm: The model; defaults to the one set with `ts.configure` / `ts.context`.
        mode: ``"auto"`` (native tool calling where the LM's profile says it is dependable,
            else the union step; switching to the union step when the endpoint rejects
            tools), ``"tools"`` (native only) or ``"union"`` (the union step only).
        resume_store: Where answered pauses are recorded, so resuming twice from one saved
            `ResumeState` runs the approved call once (default: a store in this process).
        max_tool_calls: The most tool calls one step runs (at least 1); further calls of the
            same model message are answered with an error observation and not run.
        max_requests: The most HTTP requests the run's own requests send in all (steps, union
            steps, extraction), the SDK's transport retries included; past it the request is
            not sent and the run raises `RequestLimitError`. ``"auto"``: twice the model calls
            a run may make, ``2 * (max_iters + 1)``, unless the ``max_requests`` setting is
            None (then no bound); None: no bound for the run (each union step and the
            extraction keep the setting's bound per call).
        token_budget: The tokens the run's own requests may spend (steps and extraction);
            defaults to the ``token_budget`` setting. Reached without an answer, the run
            raises `TokenBudgetExceededError`.
        **lm_kwargs: Request parameters for every call (temperature, max_tokens, ...; an
            endpoint's own ones inside ``extra_body={...}``).

    Raises:
        ConfigurationError: A bad mode, an ``lm`` that is not an LM, a numeric option of
            another type or range (``max_iters``, ``max_tool_calls``, ``max_requests``,
            ``token_budget``: ints >= 1), an unknown request parameter, a tool
            named ``finish``, an input named ``trajectory`` (or, with ``mode="union"``,
            ``reasoning`` or ``next``).
        ToolError: ``tools`` that is no collection (one tool, None), a tool that cannot be
            built, or two tools with the same name.
    """

    def __init__(
        self,
        signature: Callable[InputsT, SigT] | str,
        tools: Iterable[Tool | Module | Callable[..., Any]] = (),
        max_iters: int = 10,
        *,
        lm: BaseLM | None = None,
        mode: ReActMode = "auto",
        resume_store: ResumeStore | None = None,
        max_tool_calls: int = MAX_TOOL_CALLS,
        max_requests: int | Literal["auto"] | None = "auto",
        token_budget: int | None = None,
        **lm_kwargs: Unpack[RequestParams],
    ) -> None:
        if mode not in get_args(ReActMode):
            raise ConfigurationError(
                f"unknown ReAct mode {mode!r}; use one of {list(get_args(ReActMode))}"
            )
        check_instance("ReAct", "lm", lm, BaseLM, "an LM (ts.LM('gpt-4o-mini'), ...)")
        check_int("ReAct", "max_iters", max_iters, optional=False)
        check_int("ReAct", "max_tool_calls", max_tool_calls, optional=False)
        check_int("ReAct", "token_budget", token_budget)
        if max_requests != "auto":
            check_int("ReAct", "max_requests", max_requests)
        sig = signature_of(signature)
        check_params(lm_kwargs, where=f"ReAct({sig.__name__})")
        shadowed = sorted({TRAJECTORY_FIELD, "finished", "steps"} & sig.output_fields.keys())
        if shadowed:
            raise SchemaError(
                f"{sig.__name__}.{shadowed[0]}: ReAct's prediction carries its own "
                f"{shadowed[0]!r} (trajectory, finished, steps); rename that output",
                path=(shadowed[0],),
            )
        if TRAJECTORY_FIELD in sig.input_fields:
            raise ConfigurationError(
                f"{sig.__name__}: ReAct uses the input name {TRAJECTORY_FIELD!r} itself; "
                "rename that input"
            )
        self.signature: type[SigT] = cast("type[SigT]", sig)
        self.tools = Toolset(tools)
        if any(t.name == FINISH for t in self.tools):
            raise ConfigurationError(
                f"the tool name {FINISH!r} is reserved by ReAct for its answer"
            )
        self.max_iters = max_iters
        self.max_tool_calls = max_tool_calls
        self.max_requests: int | Literal["auto"] | None = max_requests
        self.token_budget = token_budget
        self.lm = lm
        self.mode: ReActMode = mode
        self.lm_kwargs = lm_kwargs
        self.resume_store = resume_store  # None: the process's default store, found on use
        # The finish tool's schema: SchemaError now, not mid-run (the LM's profile picks the
        # target it is sent in).
        compile_schema(self.signature, "json-schema")
        if mode == "union":
            step_signature(sig, list(self.tools))  # its name clashes and schemas, likewise
        self.extract: Predict[Signature] = Predict(extraction_signature(sig), **lm_kwargs)

    def __repr__(self) -> str:
        names = [t.name for t in self.tools]
        return f"ReAct({self.signature.__name__}, tools={names}, mode={self.mode!r})"

    if TYPE_CHECKING:
        # What `Module`'s entry points are typed with (ADR-015, ADR-080): the keywords are the
        # signature's inputs (a call that passes ``history=`` or ``resume_state=`` takes them
        # unchecked: a resumption may omit them), the result an `AgentPrediction`.

        def _typed_call(
            self, *args: InputsT.args, **inputs: InputsT.kwargs
        ) -> AgentPrediction[SigT]: ...

        def _typed_event(self) -> AgentEvent[SigT]: ...

        def _typed_resume(self, state: ResumeState) -> AgentPrediction[SigT]: ...

    async def aforward(
        self,
        *,
        history: History | Sequence[ChatMessage] | None = None,
        resume_state: ResumeState | None = None,
        **inputs: Any,
    ) -> AgentPrediction[SigT]:
        """Run the agent on ``inputs`` (or resume a paused run) and return its answer.

        See `aexecute` for the arguments, the prediction and the errors.
        """
        result: Any = None
        async with closing(
            ReAct.aexecute(self, stream=False, history=history, resume_state=resume_state, **inputs)
        ) as events:
            async for event in events:
                result = event
        return cast("AgentPrediction[SigT]", result)

    async def aexecute(
        self,
        *,
        stream: bool = False,
        history: History | Sequence[ChatMessage] | None = None,
        resume_state: ResumeState | None = None,
        **inputs: Any,
    ) -> AsyncIterator[StreamEvent | AgentPrediction[SigT]]:
        """The run, as events: each tool call between `ToolCallStarted` and `ToolCallFinished`.

        With ``stream``, every request streams, and the outputs are streamed as they are
        written: the arguments of a native ``finish`` call, or the extraction after
        ``max_iters`` steps, yield `OutputDelta` and `PartialPrediction` events. The last
        event is the `AgentPrediction` (its ``trajectory``, ``finished`` and ``steps`` typed).

        Args:
            stream: Stream the requests and yield partial outputs.
            history: Earlier turns, sent before the inputs.
            resume_state: The answer to a `ConfirmationRequired` this agent (or another with
                the same signature, in any process) raised; the run continues at the paused
                call. Inputs may then be left out: the saved ones are used.
            **inputs: The signature's inputs.

        Raises:
            ConfirmationRequired: A tool needs a person's confirmation; ``context["react"]``
                holds the run's state (JSON-ready) for ``resume_state``.
            InputError: Missing, unexpected or invalid inputs.
            ConfigurationError: No LM configured, or a ``resume_state`` that is not a
                `ResumeState` (saved JSON is read with `ResumeState.from_json`) or is from
                another kind of run.
            OutputError: The answer could not be extracted after ``max_iters`` steps (or the
                model refused, or was cut off).
            LMError: The endpoint could not be used.
        """
        if resume_state is None:  # a sub-agent paused inside a call its parent resumes
            resume_state = nested_resume(self, inputs)
        lm = resolve_lm(self.lm)
        await lm.aidentify()  # ADR-084: the profile is read from here on
        if resume_state is None:
            checked = check_inputs(self.signature, inputs)
            turns = history_messages(history)
            run = Run(self, lm, checked, turns, Trajectory(), lm.profile.agent_step(self.mode))
        else:
            run, point = restore(self, lm, resume_state, inputs, history)
            async with closing(run.resume(point, resume_state)) as calls:
                async for event in calls:
                    yield event
        for index in range(run.step + (resume_state is not None), self.max_iters):
            if run.answer is not None:
                break
            run.step = index
            async with closing(self._step(run, stream)) as events:
                async for event in events:
                    yield event
            run.check_budget()
        if run.answer is None:
            async with closing(run.extracted(stream)) as events:
                async for extracted in events:
                    yield extracted
            return
        yield run.prediction(run.answer, finished=True)

    # -- one step --

    async def _step(self, run: Run[SigT], stream: bool) -> AsyncIterator[StreamEvent]:
        """One model step and its tool calls (a valid ``finish`` sets ``run.answer``).

        A native step is an attempt of the engine's loop (`NativeStep`); an endpoint that
        refuses a feature gets the step again without it (`_step_down`), and one that says the
        request does not fit the context window gets it again without the oldest step still
        sent (`Run.fitted`, ADR-094).
        """
        step: TrajectoryStep | None = None
        events = run.fitted(
            lambda: stepping_down(lambda: self._ask(run, stream), lambda e: self._step_down(run, e))
        )
        async with closing(events) as items:
            async for item in items:
                if isinstance(item, Done):
                    step = item.value
                else:
                    yield item
        if step is not None:
            async with closing(run.run_calls(step, 0)) as calls:
                async for event in calls:
                    yield event

    def _ask(
        self, run: Run[SigT], stream: bool
    ) -> AsyncIterator[StreamEvent | Done[TrajectoryStep]]:
        if run.mode == "union":
            return union_step(run, stream=stream)
        return run_attempts(NativeStep(run), run.attempts, stream=stream)

    def _step_down(self, run: Run[SigT], exc: LMUnsupportedFeatureError) -> bool:
        """Whether a native step the endpoint refused runs again on other terms (see `_step`).

        ``parallel_tool_calls`` is left out from then on; an endpoint that rejects tools gets
        the union step, in ``mode="auto"``. The LM's profile remembers both (ADR-016).
        """
        if exc.feature == "parallel_tool_calls" and run.parallel_tool_calls is not None:
            run.parallel_tool_calls = None  # the endpoint wants the parameter left out
        elif exc.feature == "tools" and run.mode == "tools" and self.mode == "auto":
            logger.warning(
                "%s rejected tool calling (%s); ReAct falls back to a union step for this LM",
                run.lm.model,
                exc,
            )
            run.mode = "union"
        else:
            return False
        run.lm.profile.reject(exc.feature)
        return True


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


def _member(name: str, doc: str, fields: Mapping[str, FieldInfo]) -> type[BaseModel]:
    # The class is named after the tool, so the union's `_type` tag is the tool's own name,
    # the same name the model sees for it in native tool calling.
    plain: dict[str, Any] = {
        n: (i.annotation, without_role(i.annotation, i)) for n, i in fields.items()
    }
    config = ConfigDict(protected_namespaces=())
    return create_model(name, __doc__=doc or None, __config__=config, **plain)


def _with_trajectory(sig: type[Signature], description: str) -> dict[str, tuple[Any, FieldInfo]]:
    """The task's inputs, plus ``trajectory``: the steps as text."""
    inputs: dict[str, tuple[Any, FieldInfo]] = {
        n: (i.annotation, i) for n, i in sig.input_fields.items()
    }
    inputs[TRAJECTORY_FIELD] = (str, InputField(description=description))
    return inputs


def step_signature(sig: type[Signature], tools: Sequence[Tool]) -> type[Signature]:
    """The fallback step: inputs + ``trajectory`` text -> ``reasoning`` and ``next``.

    ``next`` is a union with one member per tool and one for ``finish``, each class named after
    its tool (so its ``_type`` tag is the tool's name).

    Raises:
        ConfigurationError: The task has an input named ``reasoning`` or ``next``.
    """
    taken = sorted({"reasoning", "next"} & set(sig.input_fields))
    if taken:
        raise ConfigurationError(
            f"{sig.__name__}: the ReAct fallback step uses the output names 'reasoning' and "
            f"'next'; rename the input(s) {', '.join(taken)}"
        )
    finish_doc = "The final answer: the outputs of the task."
    members = [_member(t.name, t.description, t.signature.input_fields) for t in tools]
    members.append(_member(FINISH, finish_doc, sig.output_fields))
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
    return build_signature(f"{sig.__name__}Step", inputs, outputs, instructions)


def extraction_signature(sig: type[Signature]) -> type[Signature]:
    """Inputs + ``trajectory`` text -> the signature's outputs, for a run out of steps."""
    inputs = _with_trajectory(sig, "the agent's steps: tool calls and what they returned")
    outputs = {n: (i.annotation, i) for n, i in sig.output_fields.items()}
    return build_signature(
        f"{sig.__name__}Extract", inputs, outputs, f"{sig.instructions}\n\n{_EXTRACT_RULES}"
    )


class NativeStep:
    """A run's next native step, as the attempt loop's driver (`typedspy.engine.Driver`).

    While streaming, the output is the first ``finish`` call's arguments (or a content answer,
    when the step sent ``response_format``: `_finish_arguments`); the reply is read into the
    trajectory. Where the profile allows ``response_format_with_tools`` the step also sends the
    outputs' schema with ``tool_choice="auto"`` and a content answer counts as ``finish``;
    elsewhere ``tool_choice`` is ``"required"`` (ADR-043 says why).
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
                *run.trajectory.to_messages(run.cut),
            ),
            response_format=finish.response_format if self._content else None,
            tools=tuple(tools),
            tool_choice="auto" if self._content else "required",
            parallel_tool_calls=run.parallel_tool_calls,
            params=profile.structured_params(run.agent.lm_kwargs, defaults=run.lm.defaults),
        )

    def pick(self) -> Pick:
        tags = self.reasoning_tags()
        return _finish_arguments(self._content, tags[0] if tags else None)

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

    def read(self, attempts: Attempts, reply: Reply) -> Done[TrajectoryStep]:
        """The reply as a step of the trajectory, whose calls are to run.

        The attempt loop has ended the run already on a refused, filtered or cut-off reply.
        """
        run, response = self.run, reply.response
        number = run.step + 1  # the step's, not the attempt's
        if response.tool_calls:
            kept, note = run.kept_calls(response.tool_calls)
            # A call without an id, or with one an earlier call of the reply has, gets one made
            # up: each tool message answers one call, and events and approvals name it.
            calls: list[TrajectoryCall] = []
            ids: set[str] = set()
            for n, c in enumerate(kept, 1):
                made = c.id if c.id and c.id not in ids else f"call_{number}_{n}"
                while made in ids:  # the model's own id was this: at most one turn per id
                    made += "_"
                ids.add(made)
                calls.append(TrajectoryCall(id=made, name=c.name, arguments=c.arguments))
            step = TrajectoryStep(reasoning=response.text or None, calls=calls, note=note)
        elif response.text and self._content:
            # An answer in content, shaped by the step's response_format: like `finish`.
            answer, thought = split_reasoning(response.text, run.lm.profile.reasoning_tags)
            call = TrajectoryCall(id=f"call_{number}_answer", name=FINISH, arguments=answer)
            step = TrajectoryStep(reasoning=thought, calls=[call])
        else:
            step = TrajectoryStep(reasoning=response.text, note=_NO_CALL)
        run.trajectory.append(step)
        return Done(step)


def _finish_arguments(content: bool, open_tag: str | None) -> Pick:
    """Picks the task's outputs: the first ``finish`` call's arguments, or the content.

    Content is the output only while no tool call has started, and when it opens as an answer
    does (a JSON object, or a reasoning block before one). Content that opens as prose is held
    back: text before a tool call is no answer, and a brace in it would make the partial parser
    read it instead of ``finish``'s arguments; a reply that ends without a call passes it on.
    """
    finish: int | None = None
    answer: bool | None = None  # whether the content opens as an answer (None: not known yet)
    lead = ""  # the content so far without leading whitespace, while that is not known
    held: list[str] = []

    def opened(text: str) -> bool | None:
        nonlocal lead
        lead = (lead + text).lstrip()
        if not lead or (open_tag and open_tag.startswith(lead)):
            return None
        return lead.startswith("{") or bool(open_tag and lead.startswith(open_tag))

    def pick(chunk: LMChunk, accumulator: StreamAccumulator) -> str:
        nonlocal finish, answer
        pieces: list[str] = []
        if content and not accumulator.calling:
            if answer is None and chunk.text:
                held.append(chunk.text)
                answer = opened(chunk.text)
            elif answer is not None:
                held.append(chunk.text)
            if answer or chunk.finish_reason is not None:
                pieces.append("".join(held))
                held.clear()
        for piece in chunk.tool_calls:
            if finish is None and accumulator.call_name(piece.index) == FINISH:
                finish = piece.index
            if piece.index == finish:
                pieces.append(piece.arguments)
        return "".join(pieces)

    return pick


async def union_step(run: Run[Any], *, stream: bool) -> AsyncIterator[Done[TrajectoryStep]]:
    """One step through `Predict` over a signature whose output is the tagged union.

    Its one event is the step's `Done`: the step's one call (a tool's, or ``finish`` with the
    outputs), or, when the output could not be used, no call and a note that says why. With
    ``stream``, the request streams; its partial events (of the step signature, not the task's)
    are not passed on.
    """
    tools = tuple(run.active_tools())
    # Rebuilt only when a module callback changed the tools since the last step (a `Tool`
    # compares by identity).
    if tools not in run.union_steps:
        run.union_steps[tools] = step_signature(run.signature, tools)
    predict: Predict[Signature] = Predict(run.union_steps[tools], **run.agent.lm_kwargs)
    pred: Any = None
    try:
        async with closing(run.predicted(predict, stream)) as events:
            async for event in events:
                pred = event
    except (OutputDecodeError, OutputValidationError) as exc:
        # One unreadable step should not end the run: the model sees why and tries again.
        run.record(exc.usage, None)
        step = TrajectoryStep(note=bounded(f"Your previous step could not be used: {exc}"))
    else:
        run.record(pred.usage, pred.completion)
        choice: BaseModel = pred["next"]
        member = type(choice)  # named after its tool, its fields the tool's (`_member`)
        shown = as_arguments(to_jsonable_fields(dict(choice), member.model_fields))
        call = TrajectoryCall(id=f"call_{run.step + 1}_1", name=member.__name__, arguments=shown)
        step = TrajectoryStep(reasoning=pred["reasoning"] or None, calls=[call])
    run.trajectory.append(step)
    yield Done(step)
