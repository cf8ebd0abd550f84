"""The static typing contract, checked by mypy --strict and pyright strict in CI (.ci/run).

Not run by pytest. ``assert_type`` pins what a user sees; each ``# type: ignore[...]`` marks
a line that must fail (mypy's warn_unused_ignores and pyright's
reportUnnecessaryTypeIgnoreComment turn an ignore that suppresses nothing into an error).
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, assert_type

from pydantic import BaseModel

import typedspy as ts
from agent_models import CompleteTask, Continue, Decide, SpawnTask


def typed_predict() -> None:
    predict = ts.Predict(Decide)
    pred = predict(task="Ship it")
    assert_type(pred, ts.Prediction[Decide])
    assert_type(pred.usage, ts.prediction.Usage)
    assert_type(pred.outputs, Decide)
    assert_type(pred.outputs.action, SpawnTask | CompleteTask | Continue)
    assert_type(pred.outputs.confidence, float)
    assert_type(pred.action, Any)  # attribute access stays open; `outputs` is the typed view
    annotated: ts.Predict[Decide] = predict  # the one-parameter spelling still fits
    del annotated
    outcome = predict.try_call(task="Ship it")
    assert_type(outcome, ts.Prediction[Decide] | ts.OutputError)


def call_keywords_are_the_inputs() -> None:
    predict = ts.Predict(Decide)
    predict(tsak="Ship it")  # type: ignore[call-overload]
    predict()  # type: ignore[call-overload]
    predict(task=3)  # type: ignore[call-overload]
    predict(task="Ship it", confidence=0.5)  # type: ignore[call-overload]
    predict(task="Ship it", history=ts.History())  # history: inputs are not checked then


def outputs_are_typed() -> None:
    pred = ts.Predict(Decide)(task="Ship it")
    typo = pred.outputs.acton  # type: ignore[attr-defined]
    del typo
    wrong: str = pred.outputs.confidence  # type: ignore[assignment]
    del wrong


def string_signatures_take_any_keywords(sig: type[ts.Signature]) -> None:
    pred = ts.Predict("question -> answer: int")(question="2 + 2?")
    assert_type(pred, ts.Prediction[ts.Signature])
    ts.Predict(sig)(anything=1)
    ts.ChainOfThought("question -> answer")(question="why?")


class Plain(BaseModel):
    question: str


def a_plain_model_is_not_a_signature() -> None:
    ts.Predict(Plain)  # type: ignore[type-var]


async def typed_async() -> None:
    pred = await ts.Predict(Decide).acall(task="Ship it")
    assert_type(pred, ts.Prediction[Decide])
    await ts.Predict(Decide).acall(tsak="Ship it")  # type: ignore[call-overload]
    result = ts.parse.parse_outputs(Decide, "{}")
    assert_type(result.value, dict[str, Any] | None)
    compiled = ts.schema.compile_schema(Decide)
    assert_type(compiled.schema, dict[str, Any])


class Triage(ts.Module):
    """A user module: `aforward` with typed keyword-only parameters overrides cleanly."""

    def __init__(self) -> None:
        self.decide = ts.Predict(Decide)

    async def aforward(self, *, task: str) -> ts.Prediction[Decide]:
        return await self.decide.acall(task=task)


def settings_keywords_are_typed() -> None:
    ts.configure(max_retries=3, mode="json_schema")
    ts.configure(mode="jsn")  # type: ignore[arg-type]
    ts.configure(max_retrys=3)  # type: ignore[call-arg]
    with ts.context(max_retries=0, retry_wait=0.5) as settings:
        assert_type(settings.max_retries, int)
    with ts.context(lm="gpt-4o"):  # type: ignore[arg-type]
        pass


class Item(BaseModel):
    name: str


class Route(ts.Returns[SpawnTask | CompleteTask | Continue]):
    """Decide the next action."""

    task: str = ts.InputField()


def root_level_outputs_are_typed() -> None:
    items = ts.Predict("text", output=list[Item])(text="two apples")
    assert_type(items, ts.Prediction[ts.Returns[list[Item]]])
    assert_type(items.outputs.output, list[Item])
    wrong: str = items.outputs.output  # type: ignore[assignment]
    del wrong
    route = ts.Predict(Route)(task="Ship it")
    assert_type(route.outputs.output, SpawnTask | CompleteTask | Continue)
    ts.Predict(Route)(tsak="Ship it")  # type: ignore[call-overload]
    steps = ts.ChainOfThought("question", output=int)(question="17 * 3?")
    assert_type(steps.outputs.output, int)
    # A union is no `type[T]` to either checker: accepted (loosely typed); `Returns` types it.
    ts.Predict("task", output=SpawnTask | Continue)(task="Ship it")
    ts.Predict("task", output="SpawnTask")  # type: ignore[call-overload]


def request_parameters_are_typed(lm: ts.LM) -> None:
    ts.Predict(Decide, temperature=0, extra_body={"top_k": 40})
    ts.Predict(Decide, temprature=0)  # type: ignore[call-overload]
    ts.Predict("question", output=int, seed="7")  # type: ignore[call-overload]
    ts.LM("gpt-4o-mini", max_tokens=5, extra_body={"min_p": 0.05})
    ts.LM("gpt-4o-mini", max_token=5)  # type: ignore[call-arg]
    lm("hi", stop=["\n"])
    lm("hi", stops=["\n"])  # type: ignore[call-arg]
    ts.ReAct(Decide, tools=[], temprature=0)  # type: ignore[call-arg]
    ts.ChainOfThought(Decide, temperature=0, max_retries=1, extra_body={"top_k": 40})
    ts.ChainOfThought(Decide, temprature=0)  # type: ignore[call-overload]
    ts.ChainOfThought(Decide, max_retries="2")  # type: ignore[call-overload]
    ts.ChainOfThought("task", output=SpawnTask | Continue)(task="Ship it")


def resume_states_are_typed(pause: ts.ConfirmationRequired) -> None:
    ts.configure(resume_secret=["new-secret-of-at-least-32-bytes!", b"old" * 11])
    state = ts.ResumeState(pause, "yes")
    ts.ResumeState(pause, {"path": "/tmp/copy.pdf"})
    ts.ResumeState(pause, 42)  # type: ignore[call-overload]
    assert_type(state.to_json(secret="s" * 32), str)
    assert_type(ts.ResumeState.from_json("{}", secret=b"s" * 32), ts.ResumeState)
    assert_type(state.exception, ts.ConfirmationRequired)
    state.to_json(secret=3)  # type: ignore[arg-type]


def react_call_keywords_are_the_inputs(state: ts.ResumeState) -> None:
    # Issue 23: ReAct's calls were typed `**inputs: Any`; now they take the signature's inputs.
    agent = ts.ReAct(Decide, tools=[])
    assert_type(agent(task="Ship it"), ts.react.AgentPrediction[Decide])
    agent(tsak="Ship it")  # type: ignore[call-overload]
    agent(task=3)  # type: ignore[call-overload]
    resumed = agent(resume_state=state)  # a resumption may omit inputs
    assert_type(resumed, ts.react.AgentPrediction[Decide])
    outcome = agent.try_call(task="Ship it")
    assert_type(outcome, ts.react.AgentPrediction[Decide] | ts.OutputError)


async def react_acall_keywords_are_the_inputs() -> None:
    agent = ts.ReAct(Decide, tools=[])
    assert_type(await agent.acall(task="Ship it"), ts.react.AgentPrediction[Decide])
    await agent.acall(tsak="Ship it")  # type: ignore[call-overload]


def react_trajectory_is_typed() -> None:
    # Issue 23: `r.trajectory` was `Any`; the prediction types it, down to each call.
    pred = ts.ReAct(Decide, tools=[])(task="Ship it")
    assert_type(pred.trajectory, ts.react.Trajectory)
    assert_type(pred.finished, bool)
    assert_type(pred.steps, int)
    assert_type(pred.outputs.action, SpawnTask | CompleteTask | Continue)
    step = pred.trajectory[0]
    assert_type(step, ts.react.TrajectoryStep)
    assert_type(step.reasoning, str | None)
    for call in step.calls:
        assert_type(call, ts.react.TrajectoryCall)
        assert_type(call.observation, str | None)
    assert_type(pred.trajectory.calls, list[ts.react.TrajectoryCall])
    wrong: int = step.calls[0].arguments  # type: ignore[assignment]  # JSON text, a str
    del wrong
    typo = pred.trajectory[0].call  # type: ignore[attr-defined]
    del typo
    none = pred.outputs.trajectory  # type: ignore[attr-defined]  # the caller's signature has none
    del none


def chain_of_thought_reasoning_is_typed() -> None:
    # Issue 23: `ChainOfThought(...)(...).outputs.reasoning` was a type error; the reasoning is
    # now the prediction's own typed attribute.
    pred = ts.ChainOfThought(Decide)(task="Ship it")
    assert_type(pred.reasoning, str)
    assert_type(pred.outputs.action, SpawnTask | CompleteTask | Continue)
    none = pred.outputs.reasoning  # type: ignore[attr-defined]  # the caller's signature has none
    del none
    outcome = ts.ChainOfThought(Decide).try_call(task="Ship it")
    assert_type(outcome, ts.prediction.Reasoned[Decide] | ts.OutputError)


def think_then_format_is_a_mode_and_its_draft_is_typed() -> None:
    # Issue 24 item 4: a free answer, then the schema (ADR-086): `pred.free_answer`.
    pred = ts.Predict(Decide, mode="think_then_format")(task="Ship it")
    assert_type(pred.free_answer, str | None)
    assert_type(pred.outputs.action, SpawnTask | CompleteTask | Continue)
    ts.configure(mode="think_then_format")
    ts.Predict(Decide, mode="think_first")  # type: ignore[call-overload]


class SyncTriage(ts.Module):
    """A DSPy-style module: a synchronous `forward` only (ADR-067)."""

    def __init__(self) -> None:
        self.decide = ts.Predict(Decide)

    def forward(self, *, task: str) -> ts.Prediction[Decide]:
        return self.decide(task=task)


class Untyped(ts.Module):
    async def aforward(self, **inputs: Any) -> Any:
        return inputs


def module_calls_are_typed_from_aforward() -> None:
    # Issue 23: a `ts.Module` subclass's calls were `Any`; they now take its `aforward`'s
    # parameters and return its result (ADR-080).
    pipe = Triage()
    assert_type(pipe(task="Ship it"), ts.Prediction[Decide])
    pipe(tsak="Ship it")  # type: ignore[call-arg]
    pipe(task=3)  # type: ignore[arg-type]
    started: Coroutine[Any, Any, ts.Prediction[Decide]] = pipe.acall(task="Ship it")
    started.close()
    assert_type(pipe.try_call(task="Ship it"), ts.Prediction[Decide] | ts.OutputError)
    pipe.try_call(tsak="Ship it")  # type: ignore[call-arg]
    for event in pipe.stream(task="Ship it"):
        assert_type(event, ts.streaming.StreamEvent | ts.Prediction[Decide])
    pipe.stream(tsak="Ship it")  # type: ignore[call-arg]
    assert_type(pipe.batch([{"task": "a"}]), ts.batch.BatchResult[ts.Prediction[Decide]])


async def module_acall_is_typed_from_aforward() -> None:
    assert_type(await Triage().acall(task="Ship it"), ts.Prediction[Decide])
    await Triage().acall(tsak="Ship it")  # type: ignore[call-arg]
    outcome = await Triage().atry_call(task="Ship it")
    assert_type(outcome, ts.Prediction[Decide] | ts.OutputError)


def module_calls_are_typed_from_a_sync_forward() -> None:
    pipe = SyncTriage()
    assert_type(pipe(task="Ship it"), ts.Prediction[Decide])
    pipe(tsak="Ship it")  # type: ignore[call-arg]
    assert_type(pipe.try_call(task="Ship it"), ts.Prediction[Decide] | ts.OutputError)


async def module_acall_is_typed_from_a_sync_forward() -> None:
    assert_type(await SyncTriage().acall(task="Ship it"), ts.Prediction[Decide])
    await SyncTriage().acall(tsak="Ship it")  # type: ignore[call-arg]


def untyped_modules_take_any_keywords(module: ts.Module) -> None:
    assert_type(Untyped()(anything=1), Any)
    assert_type(module(anything=1), Any)
    assert_type(module.try_call(anything=1), Any | ts.OutputError)
    assert_type(module.batch([{"anything": 1}]), ts.batch.BatchResult[Any])


def examples_are_typed_by_their_signature(program: ts.Predict[Decide]) -> None:
    # Issue 23: `ts.Example(Sig, ...)` was not generic, so a metric reading a label was `Any`
    # and failed --strict; `ex.outputs` is now the typed view, as `pred.outputs` is.
    ex = ts.Example(Decide, task="Ship it", action=Continue(reason="wait"), confidence=0.5)
    assert_type(ex, ts.Example[Decide])
    assert_type(ex.outputs.confidence, float)
    assert_type(ex.with_inputs("task"), ts.Example[Decide])
    typo = ex.outputs.confidense  # type: ignore[attr-defined]
    del typo
    plain = ts.Example(question="2 + 2?", answer="4")
    assert_type(plain, ts.Example[ts.Signature])

    def metric(example: ts.Example[Decide], pred: ts.Prediction[Decide]) -> float:
        return 1.0 - abs(example.outputs.confidence - pred.outputs.confidence)

    def wrong(example: ts.Example[Decide], pred: ts.Prediction[Decide]) -> float:
        return example.outputs.action  # type: ignore[return-value]

    del wrong
    ts.evaluate(program, [ex], metric)
    ts.evaluate(program, [ex, plain], ts.evaluation.FieldMetric())


def stream_events_are_typed() -> None:
    # Issue 23: the stream's events were `Any`; they are the call's event types, the partial
    # with a typed view, then the typed prediction.
    for event in ts.Predict(Decide).stream(task="Ship it"):
        if isinstance(event, ts.streaming.PartialPrediction):
            assert_type(event.outputs.confidence, float)
            typo = event.outputs.confidense  # type: ignore[attr-defined]
            del typo
        elif isinstance(event, ts.Prediction):
            assert_type(event.outputs.action, SpawnTask | CompleteTask | Continue)
        else:
            assert_type(event, ts.streaming.OutputDelta | ts.streaming.RetryStarted)
    ts.Predict(Decide).stream(tsak="Ship it")  # type: ignore[call-overload]


async def astream_events_are_typed() -> None:
    async for event in ts.Predict(Decide).astream(task="Ship it"):
        if isinstance(event, ts.Prediction):
            assert_type(event, ts.Prediction[Decide])
        elif isinstance(event, ts.streaming.PartialPrediction):
            assert_type(event, ts.streaming.PartialPrediction[Decide])
    ts.Predict(Decide).astream(tsak="Ship it")  # type: ignore[call-overload]


def react_stream_events_are_typed(state: ts.ResumeState) -> None:
    # Issue 23: ReAct's stream events were `Any`; they are `ts.react.AgentEvent[Sig]`: the tool
    # calls, the partial outputs of the agent's signature, then its `AgentPrediction`.
    agent = ts.ReAct(Decide, tools=[])
    for event in agent.stream(task="Ship it"):
        assert_type(event, ts.react.AgentEvent[Decide])
        if isinstance(event, ts.react.AgentPrediction):
            assert_type(event.trajectory, ts.react.Trajectory)
            assert_type(event.outputs.action, SpawnTask | CompleteTask | Continue)
        elif isinstance(event, ts.streaming.PartialPrediction):
            assert_type(event.outputs.confidence, float)
            typo = event.outputs.confidense  # type: ignore[attr-defined]
            del typo
        elif isinstance(event, ts.streaming.ToolCallStarted):
            assert_type(event.name, str)
        else:
            assert_type(
                event,
                ts.streaming.OutputDelta
                | ts.streaming.RetryStarted
                | ts.streaming.ToolCallFinished,
            )
    agent.stream(tsak="Ship it")  # type: ignore[call-overload]
    agent.stream(task=3)  # type: ignore[call-overload]
    for resumed in agent.stream(resume_state=state):  # a resumption may omit inputs
        assert_type(resumed, ts.react.AgentEvent[Decide])
    assert_type(
        agent.batch([{"task": "a"}]), ts.batch.BatchResult[ts.react.AgentPrediction[Decide]]
    )


async def react_astream_events_are_typed() -> None:
    agent = ts.ReAct(Decide, tools=[])
    async for event in agent.astream(task="Ship it"):
        if isinstance(event, ts.react.AgentPrediction):
            assert_type(event, ts.react.AgentPrediction[Decide])
        elif isinstance(event, ts.streaming.PartialPrediction):
            assert_type(event, ts.streaming.PartialPrediction[Decide])
    agent.astream(tsak="Ship it")  # type: ignore[call-overload]
    agent.astream(task="Ship it", history=ts.History())  # history: inputs are not checked then
    assert_type(
        await agent.atry_call(task="Ship it"), ts.react.AgentPrediction[Decide] | ts.OutputError
    )
    await agent.atry_call(tsak="Ship it")  # type: ignore[call-overload]


def predict_resumes_nothing(state: ts.ResumeState) -> None:
    # `resume_state=` is ReAct's alone: a Predict call does not take it.
    ts.Predict(Decide)(task="Ship it", resume_state=state)  # type: ignore[call-overload]
    ts.ChainOfThought(Decide).try_call(tsak="Ship it")  # type: ignore[call-overload]
    assert_type(
        ts.Predict(Decide).batch([{"task": "a"}]), ts.batch.BatchResult[ts.Prediction[Decide]]
    )


def react_string_signatures_take_any_keywords() -> None:
    agent = ts.ReAct("question -> answer", tools=[])
    assert_type(agent, ts.ReAct[ts.Signature])
    assert_type(agent(anything=1), ts.react.AgentPrediction[ts.Signature])
