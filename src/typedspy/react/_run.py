"""One ReAct run: its inputs, tools, trajectory and usage, and the tool calls of its steps.

A `Run` lives for one ``aforward`` call (or one resumption); nothing of it is kept on the agent,
so concurrent runs never see each other's tools or steps. What a tool does wrong at run time
becomes an observation for the next step; a pause (`ConfirmationRequired`, carrying the run's
`PausedRun`) and a program set up wrong (`ConfigurationError`, `SchemaError`) leave the run
(ADR-036). A tool may return a `module_callback` to change this run's tools (docs/react.md).
"""

from __future__ import annotations

import copy
import json
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast

from typing_extensions import TypeAliasType

from typedspy import callbacks
from typedspy._json import depth_limit
from typedspy._json import loads as bounded_loads
from typedspy._runtime import call_user
from typedspy._scope import RESUMING, current
from typedspy._text import bounded
from typedspy._types import Attempt, Usage
from typedspy.adapter import render_value
from typedspy.engine import Attempts, check_inputs
from typedspy.errors import (
    ConfigurationError,
    InputError,
    LMContextLengthError,
    ResumeConflictError,
    SchemaError,
    TokenBudgetExceededError,
    ToolArgumentsError,
    ToolNotFoundError,
    check_instance,
)
from typedspy.limits import Spent, spending
from typedspy.lm import BaseLM, ChatMessage, LMResponse, RequestBound, ToolCall, counted_stream
from typedspy.modules import History, Predict, history_messages
from typedspy.parse import parse_outputs
from typedspy.prediction import Prediction
from typedspy.program import Module
from typedspy.react._state import (
    ACCEPTED,
    CONTEXT_KEY,
    DEFAULT_STORE,
    PausedRun,
    Trajectory,
    TrajectoryCall,
    TrajectoryStep,
)
from typedspy.retry import RetryPolicy
from typedspy.settings import context, get_settings
from typedspy.signature import Signature, to_jsonable, to_jsonable_fields
from typedspy.streaming import (
    OutputDelta,
    PartialPrediction,
    RetryStarted,
    StreamEvent,
    ToolCallFinished,
    ToolCallStarted,
    closing,
)
from typedspy.tools import (
    ConfirmationRejected,
    ConfirmationRequired,
    ResumeState,
    Tool,
    Toolset,
    resume,
)

if TYPE_CHECKING:
    from typedspy.react._agent import ReAct

__all__ = [
    "FINISH",
    "TRAJECTORY_FIELD",
    "AgentEvent",
    "AgentPrediction",
    "ModuleContext",
    "Run",
    "as_arguments",
    "finished",
    "is_module_callback",
    "module_callback",
    "restore",
    "started",
]


logger = logging.getLogger("typedspy")


SigT = TypeVar("SigT", bound=Signature)
T = TypeVar("T")


FINISH = "finish"


TRAJECTORY_FIELD = "trajectory"


_SKIPPED = "Not run: `finish` was called before it."


_BLIND = (
    "Error: not accepted: a tool call before this finish in the same reply failed, so these "
    "outputs were written without its result. Read the results above, then call finish again."
)


_MAX_FINISH_ERRORS = 10


_SHOWN_NAME = 100  # the characters of an unknown tool's name an observation repeats


class AgentPrediction(Prediction[SigT]):
    """A `ReAct` prediction: the signature's outputs, and the run that found them.

    ``pred.trajectory``, ``pred.finished`` and ``pred.steps`` are typed (``pred.outputs`` is
    the caller's signature, which has none of them).
    """

    __slots__ = ()

    @property
    def trajectory(self) -> Trajectory:
        """The run's steps: each model turn's tool calls and what they returned."""
        return cast("Trajectory", self.extras["trajectory"])

    @property
    def finished(self) -> bool:
        """False when the answer was extracted after ``max_iters`` steps without ``finish``."""
        return cast("bool", self.extras["finished"])

    @property
    def steps(self) -> int:
        """How many model steps the run took."""
        return cast("int", self.extras["steps"])


AgentEvent = TypeAliasType(
    "AgentEvent",
    OutputDelta
    | PartialPrediction[SigT]
    | RetryStarted
    | ToolCallStarted
    | ToolCallFinished
    | AgentPrediction[SigT],
    type_params=(SigT,),
)
"""What `ReAct.stream` / `astream` yield: the events `ReAct.aexecute` names (and `RetryStarted`
when a step or the extraction is asked again), then the `AgentPrediction`."""


@dataclass
class Run(Generic[SigT]):
    """One run of a ReAct agent.

    Attributes:
        agent: The agent (its signature, request parameters and bounds; given to module
            callbacks).
        lm: The model this run calls.
        inputs: The validated inputs.
        history: Turns sent before the inputs.
        trajectory: The steps so far.
        mode: ``"tools"`` (native tool calling) or ``"union"`` (the fallback).
        step: The index of the current step.
        usage: Tokens spent by the run.
        completion: The last response.
        answer: The outputs, once a valid ``finish`` was called.
        tools: This run's own tools, a copy of the agent's (module callbacks change them).
        parallel_tool_calls: What to send as ``parallel_tool_calls`` (None: leave it out).
        token_budget: Tokens the run may spend on its own requests (None: no bound).
        requests: The bound on the HTTP requests of the run's own requests (None: no bound,
            ADR-043); active around every step that sends, never across a ``yield``.
        attempts: The native steps' attempts (`typedspy.engine.run_attempts`): the steps cut
            off, the runaway kinds re-asked once and a remedy's parameters, kept over the run;
            and the tokens the budget counts, union steps' and the extraction's included.
        union_steps: The union fallback's step signatures built so far, by the tools they
            offer (`union_step`).
        cut: How many of the oldest steps the requests leave out, after the endpoint said a
            request did not fit the context window (`fitted`, ADR-094).
    """

    agent: ReAct[SigT, ...]
    lm: BaseLM
    inputs: dict[str, Any]
    history: list[ChatMessage]
    trajectory: Trajectory
    mode: Literal["tools", "union"]
    step: int = 0
    usage: Usage = field(default_factory=Usage)
    completion: LMResponse | None = None
    answer: dict[str, Any] | None = None
    cut: int = 0
    tools: Toolset = field(init=False)
    parallel_tool_calls: bool | None = field(init=False)
    token_budget: int | None = field(init=False)
    requests: RequestBound | None = field(init=False)
    attempts: Attempts = field(init=False)
    union_steps: dict[tuple[Tool, ...], type[Signature]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        agent, profile, settings = self.agent, self.lm.profile, get_settings()
        # Module callbacks change this copy: the agent's own tools stay as they were.
        self.tools = Toolset(list(agent.tools))
        rejected = profile.rejects("parallel_tool_calls")
        self.parallel_tool_calls = None if rejected else profile.parallel_tool_calls
        budget = agent.token_budget
        self.token_budget = budget if budget is not None else settings.token_budget
        limit = agent.max_requests
        if limit == "auto":
            # ADR-029's "twice the attempts": one attempt per step, one for the extraction.
            limit = None if settings.max_requests is None else 2 * (agent.max_iters + 1)
        self.requests = (
            None
            if limit is None
            else RequestBound(
                limit, f"ReAct({self.signature.__name__})", setting="ReAct(max_requests=...)"
            )
        )
        # A step is re-asked once per runaway kind and run (whitespace, repetition: ADR-027),
        # never for its output: an invalid `finish` is an observation and the run goes on.
        # The budget counts a reply that reported no usage at its estimate (ADR-091); a
        # resumed run carries on from the tokens its pause reported.
        spent = Spent(self.usage.total_tokens)
        self.attempts = Attempts(self.lm, RetryPolicy(max_retries=2), self.requests, spent=spent)

    async def fitted(self, make: Callable[[], AsyncIterator[T]]) -> AsyncIterator[T]:
        """``make()``'s items, made again while the request does not fit the context window.

        Each time the endpoint says so, the oldest step still sent is left out (ADR-094) and a
        warning logged; bounded by the steps, the error is raised when none is left to leave out.
        """
        while True:
            try:
                async with closing(make()) as items:
                    async for item in items:
                        yield item
                return
            except LMContextLengthError:
                if self.cut >= len(self.trajectory):
                    raise
                self.cut += 1
                logger.warning(
                    "%s: the request did not fit %s's context window; ReAct leaves the oldest "
                    "%d step(s) of %d out of its requests and asks again",
                    self.signature.__name__,
                    self.lm.model,
                    self.cut,
                    len(self.trajectory),
                )

    @property
    def signature(self) -> type[SigT]:
        """The task's signature."""
        return self.agent.signature

    def record(self, usage: Usage, completion: LMResponse | None) -> None:
        """Count a response's tokens (and keep it as the last one)."""
        self.usage += usage
        if completion is not None:
            self.completion = completion

    def active_tools(self) -> list[Tool]:
        """The tools offered at this step (a tool named ``finish`` would be unreachable)."""
        return [t for t in self.tools if t.name != FINISH]

    def prediction(
        self,
        outputs: Mapping[str, Any],
        *,
        finished: bool,
        attempts: tuple[Attempt, ...] = (),
        raw: str = "",
    ) -> AgentPrediction[SigT]:
        """The run's result, with the trajectory in its extras."""
        extras = {
            "trajectory": self.trajectory,
            "finished": finished,
            "steps": len(self.trajectory),
        }
        return AgentPrediction(
            self.signature,
            outputs,
            usage=self.usage,
            attempts=attempts,
            raw=raw,
            completion=self.completion,
            extras=extras,
        )

    def check_budget(self) -> None:
        """End the run once its requests spent `token_budget` without an answer.

        Raises:
            TokenBudgetExceededError: The budget is spent and no valid ``finish`` came.
        """
        if self.token_budget is None or self.answer is not None:
            return
        spent = self.attempts.spent
        if spent.tokens >= self.token_budget:
            raise TokenBudgetExceededError(
                f"{self.signature.__name__}: ReAct's token budget of {self.token_budget} was "
                f"spent after {len(self.trajectory)} step(s) ({spent}) without a final answer",
                usage=self.usage,
                raw=(self.completion.text or "") if self.completion is not None else "",
            )

    def predicted(
        self, predict: Predict[Signature], stream: bool, traced: Module | None = None
    ) -> AsyncIterator[StreamEvent | Prediction[Any]]:
        """``predict`` over the inputs and the trajectory, within the run's bounds.

        ``predict`` (a union step's, or a copy of the agent's ``extract``) gets this run's
        LM when it has none, and what is left of the token budget; its requests count on the
        run's request bound and its tokens on the run's budget. Callbacks see the call as
        ``traced``'s, when given.
        """
        if predict.lm is None:
            predict.lm = self.lm
        spent = self.attempts.spent
        if self.token_budget is not None:
            predict.token_budget = max(self.token_budget - spent.tokens, 0)
        inputs = {**self.inputs, TRAJECTORY_FIELD: self.trajectory.to_text(self.cut)}
        sent = predict.aexecute(stream=stream, history=self.history, **inputs)
        events = counted_stream(self.requests, spending(spent, sent))
        return events if traced is None else callbacks.module_call(traced, inputs, events)

    async def extracted(self, stream: bool) -> AsyncIterator[StreamEvent | AgentPrediction[SigT]]:
        """The answer extracted from the trajectory (its partial outputs when streaming).

        A copy of the agent's ``extract`` predictor makes the request; callbacks see the call
        as that predictor's (optimizers trace it). A trajectory past the context window is cut
        from its oldest step until it fits (`fitted`).
        """
        template = self.agent.extract
        pred: Any = None
        extraction = self.fitted(lambda: self.predicted(copy.copy(template), stream, template))
        async with closing(extraction) as events:
            async for event in events:
                if isinstance(event, Prediction):
                    pred = event
                elif isinstance(event, PartialPrediction):  # as the agent's outputs
                    yield PartialPrediction(event.values, event.in_progress, self.signature)
                else:
                    yield event
        self.record(pred.usage, pred.completion)
        yield self.prediction(dict(pred), finished=False, attempts=pred.attempts, raw=pred.raw)

    # -- running the calls of a step --

    def kept_calls(self, calls: Sequence[ToolCall]) -> tuple[list[ToolCall], str | None]:
        """The calls of a reply a step keeps, and the note for those it leaves out (if any).

        At most ``max_tool_calls`` tool calls and as many ``finish`` calls are kept, in order;
        the others are never run nor sent back (ADR-101): a reply of 50,000 calls made every
        later request carry 50,000 calls and their answers.
        """
        limit = self.agent.max_tool_calls
        counts = {True: 0, False: 0}  # by whether the call is `finish`
        kept: list[ToolCall] = []
        for call in calls:
            kind = call.name == FINISH
            counts[kind] += 1
            if counts[kind] <= limit:
                kept.append(call)
        left = len(calls) - len(kept)
        if not left:
            return kept, None
        return kept, (
            f"This reply made {len(calls)} calls; {left} of them were left out and not run "
            f"(at most {limit} tool calls and {limit} finish calls are read per step). Make "
            "those still needed in later steps."
        )

    async def run_calls(self, step: TrajectoryStep, start: int) -> AsyncIterator[StreamEvent]:
        """Run ``step.calls[start:]`` in order, with an event before and after each tool call.

        A valid ``finish`` among them sets `answer`; the calls after it are skipped. A
        ``finish`` after a call of the step that failed is not accepted (ADR-101): the model
        wrote it without that result. Calls past the agent's ``max_tool_calls`` (in a state
        saved under a larger bound) are answered with an error observation and not run.

        Raises:
            ConfirmationRequired: A tool paused the run (its state is in ``context``); its
                `ToolCallStarted` was yielded, its `ToolCallFinished` comes on resumption.
        """
        limit = self.agent.max_tool_calls
        made = sum(1 for c in step.calls if c.name != FINISH)
        ran = sum(1 for c in step.calls[:start] if c.name != FINISH)
        for call in step.calls[start:]:
            if self.answer is not None:
                call.observation = _SKIPPED
            elif call.name == FINISH and any(c.failed and c.name != FINISH for c in step.calls):
                call.observation, call.failed = _BLIND, True
            elif call.name == FINISH:
                self.answer = self.finish(call)
            elif ran >= limit:
                call.failed = True
                call.observation = (
                    f"Error: not run: this step made {made} tool calls and at most "
                    f"{limit} run per step. Make the others in later steps."
                )
            else:
                ran += 1
                yield started(call)
                call.observation, call.failed = await self.run_checked(call)
                yield finished(call, call.failed)

    def finish(self, call: TrajectoryCall) -> dict[str, Any] | None:
        """The outputs ``finish`` was called with, or None (its observation says why)."""
        result = parse_outputs(
            self.signature, call.arguments, max_json_depth=self.lm.max_json_depth
        )
        if result.ok and result.value is not None:
            call.observation = ACCEPTED
            return dict(result.value)
        errors = [f"- {e}" for e in result.errors[:_MAX_FINISH_ERRORS]]
        call.observation = bounded(
            "Error: the outputs given to finish are invalid, so the run goes on:\n"
            + "\n".join(errors)
            + "\nCall finish again with valid outputs."
        )
        return None

    async def run_checked(self, call: TrajectoryCall) -> tuple[str, bool]:
        """Run one (non-``finish``) call: its observation, and whether it reports an error.

        Raises:
            ConfirmationRequired: The tool asks for a confirmation; its ``context`` holds the
                run's `PausedRun`.
        """
        try:
            tool = self.tools.get(call.name)
        except ToolNotFoundError:
            available = ", ".join([t.name for t in self.tools] + ["finish"])
            name = bounded(call.name, _SHOWN_NAME)  # the model's own, of any length
            return f"Error: there is no tool named {name!r}. Available tools: {available}.", True
        traced = callbacks.tool_start(tool, call.arguments)
        try:
            # No yield inside: the overrides end with the call. The model's arguments are
            # decoded within its LM's max_json_depth (ADR-048).
            with context(lm=self.lm), depth_limit(self.lm.max_json_depth):
                result = await tool.acall(call.arguments)
        except BaseException as exc:
            callbacks.tool_end(traced, None, exc)
            return self._failed(call, exc)
        callbacks.tool_end(traced, result, None)
        return await self._observe(call, tool, result)

    def _failed(self, call: TrajectoryCall, exc: BaseException) -> tuple[str, bool]:
        """The observation for a tool that raised; pauses and cancellations propagate."""
        if isinstance(exc, ToolArgumentsError):
            message = f"Error: the arguments for {call.name} are invalid, so it was not run: {exc}"
            return bounded(message), True
        if isinstance(exc, ConfirmationRequired):
            self._pause(exc, call)
            raise exc
        if _set_up_wrong(exc):
            raise exc
        if isinstance(exc, ConfirmationRejected):
            message = f"The user rejected this call to {call.name}; it was not run. {exc}"
            return bounded(message), True
        if isinstance(exc, Exception):  # any failure of the user's tool is news for the model
            return _failure(call, exc)
        raise exc

    async def _observe(self, call: TrajectoryCall, tool: Tool, result: Any) -> tuple[str, bool]:
        value = _single_value(result)
        if not is_module_callback(value):
            # Rendered against the tool's output types: only union members carry `_type`.
            try:
                return observation(result, tool), False
            except (TypeError, ValueError) as exc:  # a callable that is no module callback
                return _failure(call, exc)
        context = ModuleContext(module=self.agent, tools=self.tools, trajectory=self.trajectory)
        try:
            # As a tool's implementation: a sync callback in a worker thread (ADR-101).
            said = await call_user(value, context)
        except ConfirmationRequired as exc:
            self._pause(exc, call)
            raise
        except Exception as exc:  # a failing callback is reported like a failing tool
            if _set_up_wrong(exc):
                raise
            return _failure(call, exc)
        if FINISH in self.tools:  # the model could never call it: the program is set up wrong
            raise ConfigurationError(
                f"a module callback of {call.name} added a tool named {FINISH!r}, which is "
                "reserved by ReAct for its answer"
            )
        if said is None:
            return f"{call.name} done.", False
        return render_value(said), False

    def _pause(self, exc: ConfirmationRequired, call: TrajectoryCall) -> None:
        """Put the run's state in the pause: a `PausedRun` at this call, with a new pause id.

        A sub-agent's run inside the call that paused first is kept as its ``inner`` (ADR-099),
        and the tool call keeps that run's id: the person answers the innermost call.
        """
        calls = self.trajectory[self.step].calls
        inner = exc.context.get(CONTEXT_KEY)
        inner = inner if isinstance(inner, PausedRun) else None
        exc.context[CONTEXT_KEY] = PausedRun(
            pause_id=uuid.uuid4().hex,
            signature=self.signature.__name__,
            inputs=to_jsonable_fields(self.inputs, self.signature.input_fields),
            trajectory=self.trajectory,
            step=self.step,
            call=next(i for i, c in enumerate(calls) if c is call),
            mode=self.mode,
            tools=self.tools.names,
            usage=self.usage,
            inner=inner,
        )
        if inner is None:  # else the innermost run's call id stands
            exc.tool_call["id"] = call.id

    # -- resuming a paused run --

    async def resume(self, point: PausedRun, state: ResumeState) -> AsyncIterator[StreamEvent]:
        """The paused call answered (once per pause), then the rest of its step's calls.

        The first resumption claims ``pause_id`` in the agent's `ResumeStore` and applies the
        person's answer; a second one with the same answer replays the recorded observation
        without running the tool. Either way the call shows the person's edits, as it was really
        made.

        Raises:
            ResumeConflictError: The pause was answered differently before, or the earlier
                resumption has not recorded its outcome.
        """
        step = self.trajectory[self.step]
        call = step.calls[point.call]
        yield started(call)
        store = self.agent.resume_store
        store = DEFAULT_STORE if store is None else store
        # What runs: the edits over the paused call's validated arguments, as the tools layer
        # merges them; the model then reads the call as it was really made. (A sub-agent's
        # call's edits are that agent's.)
        edited = state.edited_arguments if point.inner is None else None
        if edited is not None:
            original = state.tool_call.get("arguments")
            merged = {**(original if isinstance(original, Mapping) else {}), **edited}
            edited = {"arguments": as_arguments(to_jsonable(merged))}
        known = await store.claim(point.pause_id, state.action)
        if known is None:
            try:
                observation, failed = await self._answer(call, state, point.inner)
            except ConfirmationRequired:
                if edited is not None:  # a sub-agent in it paused: its pause holds the call as run
                    call.arguments = edited["arguments"]
                raise
            await store.record(point.pause_id, observation, failed)
        elif known.action != state.action:
            raise ResumeConflictError(
                f"this pause of {call.name} was already answered with {known.action!r}; "
                f"it cannot now be answered with {state.action!r}",
                pause_id=point.pause_id,
                action=known.action,
            )
        elif known.observation is None:
            again = ", or a sub-agent in it paused again (answer that pause)" if point.inner else ""
            raise ResumeConflictError(
                f"this pause of {call.name} is being resumed elsewhere, or its resumption "
                f"stopped while the tool ran{again}; the tool is not run again",
                pause_id=point.pause_id,
                action=known.action,
            )
        else:
            logger.info(
                "pause %s was resumed before: %s is not run again", point.pause_id, call.name
            )
            observation, failed = known.observation, known.failed
        if edited is not None:
            call.arguments = edited["arguments"]
        call.observation, call.failed = observation, failed
        yield finished(call, failed)
        async with closing(self.run_calls(step, point.call + 1)) as calls:
            async for event in calls:
                yield event

    def _approved_before(self, call: TrajectoryCall) -> list[ResumeState]:
        """An approval of ``call`` itself when its tool asks first (it was given already)."""
        try:
            with depth_limit(self.lm.max_json_depth):
                cid = self.tools.get(call.name).confirmation_id(call.arguments)
        except (ToolNotFoundError, ToolArgumentsError):  # run_checked reports these
            return []
        if cid is None:
            return []
        return [ResumeState(question="", confirmation_id=cid, tool_call={}, response=True)]

    async def _answer(
        self, call: TrajectoryCall, state: ResumeState, inner: PausedRun | None
    ) -> tuple[str, bool]:
        """The paused call's observation, from the person's answer (and whether it failed)."""
        if inner is not None:
            return await self._answer_inner(call, state, inner)
        if state.action == "reject":
            return f"The user rejected this call to {call.name}; it was not run.", True
        if state.action == "feedback":
            return (
                f"The user did not run this call to {call.name} and said: {state.feedback}",
                True,
            )
        with resume(state):  # the decision is consumed by this call, or dropped on exit
            observation, failed = await self.run_checked(call)
        if state.edited_arguments is None:
            return observation, failed
        return f"(The user edited the arguments before approving the call.) {observation}", failed

    async def _answer_inner(
        self, call: TrajectoryCall, state: ResumeState, inner: PausedRun
    ) -> tuple[str, bool]:
        """The call a sub-agent paused in, run again: that agent's run takes the answer up.

        Its result is the observation (`nested_resume`, ADR-099). A call that fails before the
        paused run starts is a failed observation, as any call's failure is.

        Raises:
            ConfigurationError: The call paused elsewhere first, or ended, without starting
                the paused run.
        """
        nested = state.model_copy(update={"context": {**state.context, CONTEXT_KEY: inner}})
        held = [nested]
        saved = RESUMING.set(held)
        try:
            # The call ran approved before a sub-agent in it paused: it is not asked again.
            with resume(*self._approved_before(call)):
                observation, failed = await self.run_checked(call)
        except ConfirmationRequired as exc:
            if held:  # another pause came first: the paused run never got its answer
                how = f"paused at {exc.tool_call.get('name')!r}"
                raise _not_resumed(call, inner, how) from exc
            raise
        finally:
            RESUMING.restore(saved)
        if held and not failed:
            raise _not_resumed(call, inner, "ended")
        return observation, failed


def _not_resumed(call: TrajectoryCall, inner: PausedRun, how: str) -> ConfigurationError:
    inputs = bounded(json.dumps(inner.inputs), _SHOWN_NAME)
    return ConfigurationError(
        f"resume_state answers a ReAct run over {inner.signature!r} with inputs {inputs} inside "
        f"{call.name}, but {call.name}, run again, {how} before that run started: a tool that "
        "runs more than its paused sub-agent runs again from its start, and the program may "
        "have changed since the pause"
    )


def nested_resume(agent: ReAct[Any, ...], inputs: Mapping[str, Any]) -> ResumeState | None:
    """The answer for a sub-agent's run paused inside a call being resumed, if this run is it.

    Its parent set it for the call (ADR-099); the first run of an agent over the paused run's
    signature, with its inputs and the tool it paused at, takes it. Any other starts afresh.
    """
    held = current().resuming
    if not held:
        return None
    point = held[0].context.get(CONTEXT_KEY)
    sig = agent.signature
    if not isinstance(point, PausedRun) or point.signature != sig.__name__:
        return None
    pending = point.trajectory[point.step].calls[point.call].name
    given = to_jsonable_fields(check_inputs(sig, inputs), sig.input_fields)
    if pending not in agent.tools.names or _json_text(given) != _json_text(point.inputs):
        return None
    try:  # a list shared with threads that copied the context: one run takes it
        return held.pop()
    except IndexError:
        return None


def _json_text(values: Mapping[str, Any]) -> str:
    return json.dumps(values, sort_keys=True, default=repr)  # NaN compares equal as text


def restore(
    agent: ReAct[SigT, ...],
    lm: BaseLM,
    state: ResumeState,
    inputs: Mapping[str, Any],
    history: History | Sequence[ChatMessage] | None,
) -> tuple[Run[SigT], PausedRun]:
    """The run ``state`` answers, set up again at its step, and where it paused (`Run.resume`).

    Its tokens carry on; tools the paused run did not have are removed, and tools it had
    (added by module callbacks) that the agent lacks now are named in a warning.

    Raises:
        ConfigurationError: ``state`` is not a `ResumeState`, or not one of this agent's runs
            (`PausedRun.read`).
    """
    check_instance(
        f"ReAct({agent.signature.__name__})",
        "resume_state",
        state,
        ResumeState,
        "a ResumeState (read a saved one with ResumeState.from_json(saved, secret=...))",
    )
    point = PausedRun.read(state, agent.signature)
    checked = check_inputs(agent.signature, inputs or point.inputs)
    trajectory = Trajectory(point.trajectory)
    turns = history_messages(history)
    run = Run(agent, lm, checked, turns, trajectory, point.mode, point.step, point.usage)
    for name in run.tools.names:
        if name not in point.tools:
            run.tools.remove(name)
    missing = sorted(set(point.tools) - set(run.tools.names))
    if missing:
        logger.warning(
            "resuming %s without tools the paused run had: %s",
            agent.signature.__name__,
            ", ".join(missing),
        )
    return run, point


F = TypeVar("F", bound=Callable[..., Any])


_MARK = "__typedspy_module_callback__"


def module_callback(fn: F) -> F:
    """Mark a callable as a module callback, for a tool to return.

    The agent calls it with a `ModuleContext` (sync or async callables both work) and shows
    its result, as text, to the model as the tool's observation.

    Example:
        ```python
        @ts.tool
        def load_calculator() -> str:
            \"\"\"Make the calculator tool available.\"\"\"

            @ts.react.module_callback
            def add(context: ts.react.ModuleContext) -> str:
                context.tools.add(calculator)
                return "The calculator tool is now available."

            return add
        ```

    Args:
        fn: The callable; it takes one argument, the context.

    Returns:
        The same callable, marked.
    """
    setattr(fn, _MARK, True)
    return fn


def is_module_callback(value: object) -> bool:
    """Whether ``value`` is a callable marked with `module_callback`."""
    return callable(value) and getattr(value, _MARK, False) is True


@dataclass(frozen=True)
class ModuleContext:
    """What a module callback receives.

    Attributes:
        module: The agent running the callback (read it; change ``tools`` rather than it).
        tools: The tools of this run, a `Toolset`: ``add`` and ``remove`` take effect from the
            next step and last until the run ends.
        trajectory: The run's steps so far (read-only by convention).
    """

    module: Module
    tools: Toolset
    trajectory: Trajectory


def started(call: TrajectoryCall) -> ToolCallStarted:
    """The event before ``call`` runs; its arguments decoded when they are a JSON object."""
    try:
        decoded = bounded_loads(call.arguments)  # nesting bounded: the model wrote it
    except ValueError:
        decoded = None
    shown = decoded if isinstance(decoded, dict) else call.arguments
    return ToolCallStarted(call.id, call.name, shown)


def finished(call: TrajectoryCall, failed: bool) -> ToolCallFinished:
    """The event after ``call`` ran (or was refused): what the model will read."""
    return ToolCallFinished(call.id, call.name, call.observation or "", error=failed)


def _set_up_wrong(exc: BaseException) -> bool:
    """Whether ``exc`` says the program is set up wrong (raised: no step of the model fixes it)."""
    return isinstance(exc, SchemaError) or (
        isinstance(exc, ConfigurationError) and not isinstance(exc, InputError)
    )


def _failure(call: TrajectoryCall, exc: Exception) -> tuple[str, bool]:
    """The observation of a tool (or module callback) that raised ``exc``."""
    return bounded(f"Error: {call.name} failed: {type(exc).__name__}: {exc}"), True


def observation(outputs: object, tool: Tool | None = None) -> str:
    """A tool's outputs as the model reads them: the single value, dumped as typed.

    Union members carry ``_type`` only where the tool's output type is a union (without
    ``tool``, every model does); strings stay as they are.
    """
    if tool is not None and isinstance(outputs, Mapping):
        outputs = tool.dump_outputs(cast("Mapping[str, Any]", outputs))
    return render_value(_single_value(outputs))


def _single_value(result: Any) -> Any:
    """A tool's outputs as the model should read them: the value itself when there is one."""
    if isinstance(result, Mapping) and len(result) == 1:
        return next(iter(result.values()))
    return result


def as_arguments(data: Any) -> str:
    """JSON-ready data as the compact JSON arguments of a tool call."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))
