"""The state of one ReAct run: its inputs, tools, trajectory and usage, and what steps share.

A `Run` lives for one ``aforward`` call (or one resumption) and nothing of it is kept on the
agent, so concurrent runs of one agent never see each other's tools or steps.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Mapping
from dataclasses import InitVar, dataclass, field
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel

from typedspy import callbacks
from typedspy._types import Attempt, Usage
from typedspy.engine import Attempts
from typedspy.errors import (
    TokenBudgetExceededError,
)
from typedspy.lm import BaseLM, ChatMessage, LMResponse, RequestBound, counted_stream
from typedspy.modules import Predict
from typedspy.parse import parse_outputs, split_reasoning
from typedspy.prediction import Prediction
from typedspy.program import Module
from typedspy.react._calls import CallRunner, bounded, finished, started
from typedspy.react._state import (
    CONTEXT_KEY,
    Trajectory,
    TrajectoryCall,
    TrajectoryStep,
    paused_run,
)
from typedspy.react._steps import FINISH, TRAJECTORY_FIELD, answers_in_content
from typedspy.retry import RetryPolicy
from typedspy.signature import Signature
from typedspy.streaming import StreamEvent, closing
from typedspy.tools import ConfirmationRequired, Tool, Toolset

__all__ = ["MAX_TOOL_CALLS", "Run"]

SigT = TypeVar("SigT", bound=Signature)

ACCEPTED = "Done: the final answer was accepted."
_SKIPPED = "Not run: `finish` was called before it."
MAX_TOOL_CALLS = 8
"""The default bound on the tool calls one step runs (ReAct's ``max_tool_calls``)."""
_MAX_FINISH_ERRORS = 10
_NO_CALL = (
    "You replied without calling a tool. Call one of the tools, or call `finish` with the "
    "final outputs."
)


@dataclass
class Run(Generic[SigT]):
    """One run of a ReAct agent.

    Attributes:
        agent: The agent (given to module callbacks).
        signature: The task's signature.
        lm: The model this run calls.
        inputs: The validated inputs.
        history: Turns sent before the inputs.
        trajectory: The steps so far.
        mode: ``"tools"`` (native tool calling) or ``"union"`` (the fallback).
        params: Request parameters.
        tools: This run's own tools (module callbacks change them); kept by ``calls``.
        parallel_tool_calls: What to send as ``parallel_tool_calls`` (None: leave it out).
        step: The index of the current step.
        usage: Tokens spent by the run.
        completion: The last response.
        answer: The outputs, once a valid ``finish`` was called.
        calls: Runs tool calls against this run's tools.
        max_tool_calls: The most tool calls one step runs; the others are answered with an
            error observation and not run.
        token_budget: Tokens the run may spend on its own requests (None: no bound).
        requests: The bound on the HTTP requests of the run's own requests (None: no bound);
            active around every step that sends, never across a ``yield``.
        attempts: The native steps' attempts (`typedspy.engine.run_attempts`): the steps cut
            off, the runaway kinds re-asked once and a remedy's parameters, kept over the run.
        union_steps: The union fallback's step signatures built so far, by the tools they
            offer (`typedspy.react._union`).
    """

    agent: Module
    signature: type[SigT]
    lm: BaseLM
    inputs: dict[str, Any]
    history: list[ChatMessage]
    trajectory: Trajectory
    mode: Literal["tools", "union"]
    params: Mapping[str, Any]
    tools: InitVar[Toolset]
    parallel_tool_calls: bool | None = False  # strict tools and parallel calls do not mix
    step: int = 0
    usage: Usage = field(default_factory=Usage)
    completion: LMResponse | None = None
    answer: dict[str, Any] | None = None
    calls: CallRunner = field(init=False)
    max_tool_calls: int = MAX_TOOL_CALLS
    token_budget: int | None = None
    requests: RequestBound | None = None
    attempts: Attempts = field(init=False)
    union_steps: list[tuple[tuple[Tool, ...], type[Signature], dict[type[BaseModel], str]]] = field(
        default_factory=list
    )

    def __post_init__(self, tools: Toolset) -> None:
        self.calls = CallRunner(self.agent, tools, self.trajectory, self._pause, self.lm)
        # A step is re-asked once per runaway kind and run (whitespace, repetition: ADR-027),
        # never for its output: an invalid `finish` is an observation and the run goes on.
        self.attempts = Attempts(self.lm, RetryPolicy(max_retries=2), self.requests)

    def record(self, usage: Usage, completion: LMResponse | None) -> None:
        """Count a response's tokens (and keep it as the last one)."""
        self.usage += usage
        if completion is not None:
            self.completion = completion

    def active_tools(self) -> list[Tool]:
        """The tools offered at this step (a tool named ``finish`` would be unreachable)."""
        return [t for t in self.calls.tools if t.name != FINISH]

    def prediction(
        self,
        outputs: Mapping[str, Any],
        *,
        finished: bool,
        attempts: tuple[Attempt, ...] = (),
        raw: str = "",
    ) -> Prediction[SigT]:
        """The run's result, with the trajectory in its extras."""
        extras = {
            "trajectory": self.trajectory,
            "finished": finished,
            "steps": len(self.trajectory),
        }
        return Prediction(
            self.signature,
            outputs,
            usage=self.usage,
            attempts=attempts,
            raw=raw,
            completion=self.completion,
            extras=extras,
        )

    # -- running the calls of a step --

    async def run_calls(self, step: TrajectoryStep, start: int) -> AsyncIterator[StreamEvent]:
        """Run ``step.calls[start:]`` in order, with an event before and after each tool call.

        A valid ``finish`` among them sets `answer`; the calls after it are skipped.

        Raises:
            ConfirmationRequired: A tool paused the run (its state is in ``context``); its
                `ToolCallStarted` was yielded, its `ToolCallFinished` comes on resumption.
        """
        made = sum(1 for c in step.calls if c.name != FINISH)
        ran = sum(1 for c in step.calls[:start] if c.name != FINISH)
        for call in step.calls[start:]:
            if self.answer is not None:
                call.observation = _SKIPPED
            elif call.name == FINISH:
                self.answer = self._finish(call)
            elif ran >= self.max_tool_calls:
                call.observation = (
                    f"Error: not run: this step made {made} tool calls and at most "
                    f"{self.max_tool_calls} run per step. Make the others in later steps."
                )
            else:
                ran += 1
                yield started(call)
                call.observation, failed = await self.calls.run_checked(call)
                yield finished(call, failed)

    def check_budget(self) -> None:
        """End the run once its requests spent `token_budget` without an answer.

        Raises:
            TokenBudgetExceededError: The budget is spent and no valid ``finish`` came.
        """
        if self.token_budget is None or self.answer is not None:
            return
        if self.usage.total_tokens >= self.token_budget:
            raise TokenBudgetExceededError(
                f"{self.signature.__name__}: ReAct's token budget of {self.token_budget} was "
                f"spent after {len(self.trajectory)} step(s) ({self.usage.total_tokens} tokens) "
                "without a final answer",
                usage=self.usage,
                raw=(self.completion.text or "") if self.completion is not None else "",
            )

    def remaining_budget(self) -> int | None:
        """Tokens left of `token_budget` (None: no bound)."""
        if self.token_budget is None:
            return None
        return max(self.token_budget - self.usage.total_tokens, 0)

    def _finish(self, call: TrajectoryCall) -> dict[str, Any] | None:
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

    def _pause(self, exc: ConfirmationRequired, call: TrajectoryCall) -> None:
        step = self.trajectory[self.step]
        exc.context[CONTEXT_KEY] = paused_run(
            signature=self.signature,
            inputs=self.inputs,
            trajectory=self.trajectory,
            step=self.step,
            call=next(i for i, c in enumerate(step.calls) if c is call),
            mode=self.mode,
            tools=[t.name for t in self.calls.tools],
            usage=self.usage,
        ).model_dump(mode="json")
        exc.tool_call["id"] = call.id

    # -- a native step, and a run out of steps --

    def native_step(self, response: LMResponse) -> TrajectoryStep | None:
        """Record a native step's response; the step whose calls are to run, if any.

        The attempt loop has ended the run already on a refused, filtered or cut-off reply.
        """
        if not response.tool_calls:
            if response.text and answers_in_content(self.lm.profile):
                # An answer in content, shaped by the step's response_format: like `finish`.
                answer, thought = split_reasoning(response.text, self.lm.profile.reasoning_tags)
                call = TrajectoryCall(
                    id=f"call_{self.step + 1}_answer", name=FINISH, arguments=answer
                )
                self.trajectory.append(TrajectoryStep(reasoning=thought, calls=[call]))
                self.answer = self._finish(call)
                return None
            self.trajectory.append(TrajectoryStep(reasoning=response.text, note=_NO_CALL))
            return None
        calls = [
            TrajectoryCall(
                id=c.id or f"call_{self.step + 1}_{n}", name=c.name, arguments=c.arguments
            )
            for n, c in enumerate(response.tool_calls, 1)
        ]
        step = TrajectoryStep(reasoning=response.text or None, calls=calls)
        self.trajectory.append(step)
        return step

    async def extracted(
        self, template: Predict[Signature], stream: bool
    ) -> AsyncIterator[StreamEvent | Prediction[SigT]]:
        """The answer extracted from the trajectory (its partial outputs when streaming).

        A copy of ``template``, the agent's ``extract`` predictor, makes the request.
        """
        predict = copy.copy(template)  # this run's LM, without touching the template
        if predict.lm is None:
            predict.lm = self.lm
        remaining = self.remaining_budget()
        if remaining is not None:
            predict.token_budget = remaining
        inputs = {**self.inputs, TRAJECTORY_FIELD: self.trajectory.to_text()}
        # Callbacks see the call as the agent's `extract` predictor's (optimizers trace it).
        call_id = callbacks.module_start(template, inputs)
        pred: Any = None
        try:
            async with closing(
                counted_stream(
                    self.requests, predict.aexecute(stream=stream, history=self.history, **inputs)
                )
            ) as events:
                async for event in events:
                    if isinstance(event, Prediction):
                        pred = event
                    else:
                        yield event
        except GeneratorExit:
            callbacks.module_end(call_id, None, None)
            raise
        except BaseException as exc:
            callbacks.module_end(call_id, None, exc)
            raise
        callbacks.module_end(call_id, pred, None)
        self.record(pred.usage, pred.completion)
        yield self.prediction(dict(pred), finished=False, attempts=pred.attempts, raw=pred.raw)
