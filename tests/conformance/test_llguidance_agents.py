"""The tools and ReAct agents of the test suite, through a real constrained-decoding engine.

Tool parameters (`Tool.to_openai_tool`, both targets) must compile in llguidance, and what the
engine samples must pass the tool's own argument validation (`Tool.parse_arguments`, which a
ReAct tool call goes through).

Each ReAct agent the suite builds runs on a `FakeLM` whose every reply is sampled by the engine
from what the request sends (every schema in it must compile): the strict union step under
``response_format``, one run steered to each member (every tool, then ``finish``); and the
native step (the tools, ``finish``, and the outputs' ``response_format`` beside them), one run
calling ``finish`` and one answering in content. ReAct parses the replies itself; a recording
callback sees each attempt and each tool's argument check, so outputs parse back through the
library's own path. A run is one step (``max_iters=1``), then the extraction if no answer;
the tools' implementations are stubs that end the run once their arguments passed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import pytest
from corpus import agents, tools
from engine import grammar_error, sample, samples

import typedspy as ts
from typedspy.lm import LMRequest, LMResponse, ToolCall
from typedspy.testing import FakeLM, generate_instance

TOOLS = tools()
AGENTS = agents()
_TARGETS = {"openai-strict": "openai", "json-schema": "llama.cpp"}
_TAG = b'"next":{"_type":"'


def _lossy(target: str) -> bool:
    # OpenAI's strict subset drops some constraints (into descriptions, checked locally,
    # ADR-003): an engine output may fail validation there, but never decoding.
    return target == "openai-strict"


def _only_validation(errors: Any) -> bool:
    return all(e.path and "unexpected argument" not in e.message for e in errors)


def test_the_corpus_covers_the_suites_tools_and_agents() -> None:
    names = {tool.name for _, tool, _ in TOOLS}
    assert {"ping", "send_email", "lookup_height", "convert_units", "look_up_pet"} <= names
    assert len(TOOLS) >= 40
    assert len(AGENTS) >= 25
    assert any(len(agent_tools) >= 2 for _, _, agent_tools, _ in AGENTS)
    assert {target for *_, target in AGENTS} == set(_TARGETS)


@pytest.mark.parametrize(("name", "tool", "target"), [pytest.param(*t, id=t[0]) for t in TOOLS])
def test_tool_parameters_compile_and_sampled_arguments_validate(
    name: str, tool: ts.Tool, target: str
) -> None:
    for text in samples(tool.to_openai_tool(target)["function"]["parameters"]):
        try:
            tool.parse_arguments(text)
        except ts.errors.ToolArgumentsError as exc:
            if not (_lossy(target) and _only_validation(exc.errors)):
                raise AssertionError(f"{name}: engine output {text!r} failed: {exc}") from exc


# -- agents --


class _Recorder(ts.BaseCallback):
    """Every attempt's outcome and every tool argument check of a run."""

    def __init__(self) -> None:
        self.kinds: list[str | None] = []
        self.argument_errors: list[ts.errors.ToolArgumentsError] = []

    def on_attempt_end(
        self, call_id: str, attempt: ts.prediction.Attempt | None, exception: BaseException | None
    ) -> None:
        if attempt is not None:
            self.kinds.append(attempt.kind)

    def on_tool_end(self, call_id: str, outputs: object, exception: BaseException | None) -> None:
        if isinstance(exception, ts.errors.ToolArgumentsError):
            self.argument_errors.append(exception)


class _Engine:
    """Replies to each request with what the engine samples from the schemas it sends.

    The first reply calls ``call`` (a tool's or ``finish``'s sampled arguments) when the
    request offers tools, or, for a union step, is steered to the member ``call``; with
    ``call=None`` it answers in content. Later replies (the extraction) answer in content.
    """

    def __init__(self, seed: int, call: str | None) -> None:
        self.seed = seed
        self.call = call
        self.rejected: list[str] = []
        self.answers: list[str] = []  # finish's arguments, or content beside tools

    def _sample(self, schema: dict[str, Any], steer: tuple[bytes, bytes] | None = None) -> str:
        for seed in range(self.seed, self.seed + 5):
            text = sample(schema, seed=seed, steer=steer)
            if text is not None:
                return text
        raise AssertionError("the sampler finished no output within its byte bound")

    def __call__(self, request: LMRequest) -> LMResponse | str:
        functions = {t["function"]["name"]: t["function"] for t in request.tools or ()}
        formats = [request.response_format] if request.response_format else []
        schemas = [f["json_schema"]["schema"] for f in formats]
        for schema in [*schemas, *(f["parameters"] for f in functions.values())]:
            error = grammar_error(schema)
            if error is not None:
                self.rejected.append(error)
        call, self.call = self.call, None
        if call is not None and functions:
            arguments = self._sample(functions[call]["parameters"])
            if call == "finish":
                self.answers.append(arguments)
            return LMResponse.build(
                text=None,
                model="engine",
                usage=ts.prediction.Usage(),
                finish_reason="tool_calls",
                tool_calls=(ToolCall(id="call_engine", name=call, arguments=arguments),),
            )
        assert schemas, f"no schema to sample from: {request}"
        steer = (_TAG, call.encode()) if call is not None and not functions else None
        text = self._sample(schemas[0], steer)
        if functions:
            self.answers.append(text)
        return text


class _Ran(ts.ConfigurationError):
    """Raised by a stubbed tool: its arguments passed; ReAct re-raises it, ending the run."""


def _stubbed(tool: ts.Tool) -> ts.Tool:
    """The same schemas and argument check; the implementation ends the run (no extraction)."""

    def impl(**_: Any) -> Any:
        raise _Ran(tool.name)

    return ts.Tool(tool.signature, impl, name=tool.name, description=tool.description)


def _agent(
    signature: Any, agent_tools: list[ts.Tool], profile: ts.Profile, mode: Literal["tools", "union"]
) -> Any:
    lm = FakeLM([])
    lm.profile = profile
    tools = [_stubbed(t) for t in agent_tools]
    return ts.ReAct(signature, tools=tools, lm=lm, mode=mode, max_iters=1)


def _run(
    agent: Any, inputs: Mapping[str, Any], engine: _Engine
) -> tuple[Mapping[str, Any], _Recorder]:
    profile = agent.lm.profile
    agent.lm = FakeLM([engine] * 20)
    agent.lm.profile = profile
    recorder = _Recorder()
    with ts.context(callbacks=[recorder]):
        try:
            pred = agent(**inputs)
        except _Ran as ran:
            return {"ran": str(ran)}, recorder
    return {"finished": pred.finished, "trajectory": pred.trajectory}, recorder


def _input(sig: type[ts.Signature], name: str) -> Any:
    annotation = sig.input_fields[name].annotation
    if isinstance(annotation, type) and issubclass(annotation, ts.Image):
        return ts.Image.from_url("https://example.com/photo.png")
    schema = ts.schema.compile_schema(sig.input_model, "json-schema").schema
    return generate_instance({**schema["properties"][name], "$defs": schema.get("$defs", {})})


def _profiles(target: str) -> dict[str, ts.Profile]:
    strict = target == "openai-strict"
    native = ts.Profile.named("openai" if strict else "vllm")
    return {
        "union": ts.Profile.named(_TARGETS[target]),
        # The outputs' response_format beside the tools: the openai profile sends it; a
        # json-schema profile that allows it (a user's derived profile) is built here.
        "tools": native if strict else native.derive(response_format_with_tools=True),
    }


def _check(
    target: str, engine: _Engine, recorder: _Recorder, outcome: Mapping[str, Any], call: str | None
) -> list[str]:
    problems = [f"engine rejected a schema: {e}" for e in engine.rejected]
    if _lossy(target):
        problems += [
            f"an attempt failed to decode: {k}" for k in recorder.kinds if k == "decode_failed"
        ]
        problems += [str(e) for e in recorder.argument_errors if not _only_validation(e.errors)]
        return problems
    problems += [f"an attempt failed: {k}" for k in recorder.kinds if k is not None]
    problems += [str(e) for e in recorder.argument_errors]
    if call in ("finish", None) and not outcome["finished"]:
        problems.append(f"the answer was not accepted: {outcome['trajectory'].to_text()}")
    if call not in ("finish", None) and outcome.get("ran") != call:
        problems.append(f"{call} did not run: {outcome}")
    return problems


def _answers_decode(signature: type[ts.Signature], engine: _Engine) -> list[str]:
    # What ReAct does with a native answer (its `finish` check is `parse_outputs`); under the
    # strict target validation may fail, decoding never.
    problems = []
    for answer in engine.answers:
        result = ts.parse.parse_outputs(signature, answer)
        if result.error is not None and result.error.kind == "decode_failed":
            problems.append(f"the answer {answer!r} failed to decode")
    return problems


@pytest.mark.parametrize(
    ("name", "signature", "agent_tools", "target"), [pytest.param(*a, id=a[0]) for a in AGENTS]
)
def test_react_steps_compile_and_sampled_steps_parse_back(
    name: str, signature: Any, agent_tools: list[ts.Tool], target: str
) -> None:
    profiles = _profiles(target)
    members = [t.name for t in agent_tools] + ["finish"]
    agents = {"tools": _agent(signature, agent_tools, profiles["tools"], "tools")}
    # Native steps: the tool calls' arguments are checked by `Tool.parse_arguments`, as in the
    # tools test above; here ``finish`` and a content answer beside the tools.
    runs: list[tuple[Literal["tools", "union"], str | None]] = [
        ("tools", "finish"),
        ("tools", None),
    ]
    try:
        agents["union"] = _agent(signature, agent_tools, profiles["union"], "union")
    except ts.ConfigurationError:  # an input named like the step's outputs: the suite tests it
        pass
    else:  # one member alone is not a union: nothing to steer
        runs += [("union", m if agent_tools else None) for m in members]
    sig = agents["tools"].signature
    inputs = {n: _input(sig, n) for n in sig.input_fields}
    problems: list[str] = []
    for seed, (mode, call) in enumerate(runs):
        engine = _Engine(seed, call)
        outcome, recorder = _run(agents[mode], inputs, engine)
        found = _check(target, engine, recorder, outcome, call)
        if _lossy(target):
            found += _answers_decode(agents[mode].signature, engine)
        problems += [f"{mode} step, {call or 'content answer'}: {p}" for p in found]
    assert not problems, "\n".join(problems)
