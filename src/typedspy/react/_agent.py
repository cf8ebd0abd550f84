"""`ReAct`: a bounded tool-using loop over a signature, with a trajectory and a typed answer.

Each step asks the model for tool calls (native tool calling with a strict ``finish``
function, or, for endpoints without tools, a ``_type``-tagged union of tool arguments through
`Predict`), runs them, and records what they returned. ``finish`` ends the run with the
signature's outputs; running out of steps ends it with an answer extracted from the trajectory.
A tool that needs a person's confirmation pauses the run (`ConfirmationRequired`); passing the
answer back as ``resume_state`` continues at the same call without repeating earlier ones.

A resumed run is a new `Run` set back to where the saved one paused (`restore`); its first
events are the paused call's, answered once, then the rest of that step's calls
(`resumed_step`). A saved state's signature covers the pause id (ADR-052): a state cannot be
given a new id to pass for another pause.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Literal, cast, get_args

from typing_extensions import ParamSpec, TypeVar, Unpack

from typedspy.engine import Done, check_inputs, run_attempts, signature_of, stepping_down
from typedspy.errors import (
    ConfigurationError,
    LMUnsupportedFeatureError,
    ResumeConflictError,
    SchemaError,
    check_instance,
    check_int,
)
from typedspy.lm import BaseLM, ChatMessage, RequestParams, check_params
from typedspy.modules import History, Predict, history_messages
from typedspy.program import Module
from typedspy.react._run import (
    FINISH,
    TRAJECTORY_FIELD,
    AgentEvent,
    AgentPrediction,
    Run,
    finished,
    started,
)
from typedspy.react._state import (
    PausedRun,
    ResumeStore,
    Trajectory,
    TrajectoryCall,
    TrajectoryStep,
    default_resume_store,
)
from typedspy.react._steps import NativeStep, extraction_signature, step_signature, union_step
from typedspy.schema import compile_schema
from typedspy.settings import resolve_lm
from typedspy.signature import Signature, to_jsonable
from typedspy.streaming import StreamEvent, closing
from typedspy.tools import ResumeState, Tool, Toolset, resume

__all__ = ["MAX_TOOL_CALLS", "ReAct", "ReActMode", "answer_once", "resumed_step", "show_edits"]


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
        ToolError: A tool that cannot be built, or two tools with the same name.
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
        event is the `Prediction`: the signature's outputs, plus ``trajectory`` (a
        `Trajectory`), ``finished`` (False when the answer was extracted after ``max_iters``
        steps) and ``steps`` in its extras, readable as attributes.

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
            ConfigurationError: No LM configured, or a ``resume_state`` from another kind of
                run.
            OutputError: The answer could not be extracted after ``max_iters`` steps (or the
                model refused, or was cut off).
            LMError: The endpoint could not be used.
        """
        lm = resolve_lm(self.lm)
        await lm.aidentify()  # ADR-084: the profile is read from here on
        if resume_state is None:
            checked = check_inputs(self.signature, inputs)
            turns = history_messages(history)
            run = Run(self, lm, checked, turns, Trajectory(), lm.profile.agent_step(self.mode))
        else:
            run, point = self._resume(lm, resume_state, inputs, history)
            store = self.resume_store if self.resume_store is not None else default_resume_store()
            async with closing(resumed_step(run, point, resume_state, store)) as calls:
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

    # -- setting up a run --

    def _resume(
        self,
        lm: BaseLM,
        state: ResumeState,
        inputs: Mapping[str, Any],
        history: History | Sequence[ChatMessage] | None,
    ) -> tuple[Run[SigT], PausedRun]:
        """The paused run, set up again at its step, and where it paused.

        Its tokens carry on; tools the paused run did not have are removed, and tools it had
        (added by module callbacks) that the agent lacks now are named in a warning.
        """
        point = PausedRun.read(state, self.signature)
        checked = check_inputs(self.signature, inputs or point.inputs)
        trajectory = Trajectory(point.trajectory)
        turns = history_messages(history)
        run = Run(self, lm, checked, turns, trajectory, point.mode, point.step, point.usage)
        for tool in list(run.tools):
            if tool.name not in point.tools:
                run.tools.remove(tool.name)
        missing = sorted(set(point.tools) - {t.name for t in run.tools})
        if missing:
            logger.warning(
                "resuming %s without tools added during the paused run: %s",
                self.signature.__name__,
                ", ".join(missing),
            )
        return run, point

    # -- one step --

    async def _step(self, run: Run[SigT], stream: bool) -> AsyncIterator[StreamEvent]:
        """One model step and its tool calls (a valid ``finish`` sets ``run.answer``).

        A native step is an attempt of the engine's loop (`NativeStep`); an endpoint that
        refuses a feature gets the step again without it (`_step_down`).
        """
        events = stepping_down(lambda: self._ask(run, stream), lambda e: self._step_down(run, e))
        step: TrajectoryStep | None = None
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

    async def _ask(
        self, run: Run[SigT], stream: bool
    ) -> AsyncIterator[StreamEvent | Done[TrajectoryStep | None]]:
        if run.mode == "union":
            yield Done(await union_step(run, stream=stream))
            return
        async with closing(run_attempts(NativeStep(run), run.attempts, stream=stream)) as items:
            async for item in items:
                yield item

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


async def resumed_step(
    run: Run[Any], point: PausedRun, state: ResumeState, store: ResumeStore
) -> AsyncIterator[StreamEvent]:
    """The paused call answered (once, see `answer_once`), then the rest of its step's calls."""
    step = run.trajectory[run.step]
    call = step.calls[point.call]
    yield started(call)
    call.observation, failed = await answer_once(run, call, state, point.pause_id, store)
    yield finished(call, failed)
    async with closing(run.run_calls(step, point.call + 1)) as calls:
        async for event in calls:
            yield event


async def answer_once(
    run: Run[Any], call: TrajectoryCall, state: ResumeState, pause_id: str, store: ResumeStore
) -> tuple[str, bool]:
    """The paused call's observation (and whether it failed), once per pause.

    The first resumption claims ``pause_id`` and applies the person's answer; a second one
    with the same answer replays the recorded observation without running the tool.

    Raises:
        ResumeConflictError: The pause was answered differently before, or the earlier
            resumption has not recorded its outcome.
    """
    known = await store.claim(pause_id, state.action)
    if known is None:
        observation, failed = await _answer(run, call, state)
        await store.record(pause_id, observation, failed)
        return observation, failed
    if known.action != state.action:
        raise ResumeConflictError(
            f"this pause of {call.name} was already answered with {known.action!r}; "
            f"it cannot now be answered with {state.action!r}",
            pause_id=pause_id,
            action=known.action,
        )
    if known.observation is None:
        raise ResumeConflictError(
            f"this pause of {call.name} is being resumed elsewhere, or its resumption "
            "stopped while the tool ran; the tool is not run again",
            pause_id=pause_id,
            action=known.action,
        )
    logger.info("pause %s was resumed before: %s is not run again", pause_id, call.name)
    show_edits(call, state)
    return known.observation, known.failed


async def _answer(run: Run[Any], call: TrajectoryCall, state: ResumeState) -> tuple[str, bool]:
    """The paused call's observation, from the person's answer (and whether it failed)."""
    if state.action == "reject":
        return f"The user rejected this call to {call.name}; it was not run.", True
    if state.action == "feedback":
        return (
            f"The user did not run this call to {call.name} and said: {state.feedback}",
            True,
        )
    with resume(state):  # the decision is consumed by this call, or dropped on exit
        observation, failed = await run.run_checked(call)
    if not show_edits(call, state):
        return observation, failed
    return f"(The user edited the arguments before approving the call.) {observation}", failed


def show_edits(call: TrajectoryCall, state: ResumeState) -> bool:
    """Show the call with the person's edits, if any (and say whether there were any)."""
    edited = state.edited_arguments
    if edited is None:
        return False
    # What ran: the edits over the paused call's validated arguments, as the tools layer
    # merges them; the model then reads the call as it was really made.
    original = state.tool_call.get("arguments")
    merged = {**(original if isinstance(original, Mapping) else {}), **edited}
    call.arguments = json.dumps(to_jsonable(merged), ensure_ascii=False, separators=(",", ":"))
    return True
