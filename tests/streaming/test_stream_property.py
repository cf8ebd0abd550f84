"""Property: however a completion is cut into chunks, streaming ends where the plain call does.

Outputs are generated for a few signatures (a union field, a list of unions, nested and
optional values), written as a model would write them (compact or pretty JSON, fenced JSON after
prose, ``[[ ## field ## ]]`` sections, forced tool-call arguments), and replayed by a scripted
`BaseLM` that streams the given chunks: one character per chunk (every boundary is a chunk
boundary) and a random cut.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any, Literal

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

import typedspy as ts
from typedspy._types import Usage
from typedspy.lm import BaseLM, LMRequest, LMResponse, ToolCall
from typedspy.lm._stream import LMChunk, ToolCallDelta
from typedspy.signature import to_jsonable
from typedspy.streaming import OutputDelta, PartialPrediction


class SpawnTask(BaseModel):
    description: str
    priority: Literal["low", "high"]


class CompleteTask(BaseModel):
    task_id: str
    result: str


class Continue(BaseModel):
    reason: str


class Decide(ts.Signature):
    """Decide the agent's next action."""

    task: str = ts.InputField()
    action: SpawnTask | CompleteTask | Continue = ts.OutputField()
    confidence: float = ts.OutputField(ge=0, le=1)


class Plan(ts.Signature):
    """Plan the agent's next actions."""

    task: str = ts.InputField()
    steps: list[SpawnTask | CompleteTask | Continue] = ts.OutputField()
    confidence: float = ts.OutputField(ge=0, le=1)


class Note(BaseModel):
    title: str
    tags: list[str]


class Mixed(ts.Signature):
    """Summarise."""

    text: str = ts.InputField()
    summary: str = ts.OutputField()
    count: int = ts.OutputField()
    note: Note | None = ts.OutputField()
    level: Literal["a", "b", "c"] = ts.OutputField()
    words: list[str] = ts.OutputField()


USAGE = Usage(11, 7, 18)
# Any text, quotes, backslashes, newlines and non-ASCII included (no lone surrogates).
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=24)
UNIT = st.floats(0, 1, allow_nan=False)
ACTION = st.one_of(
    st.builds(SpawnTask, description=TEXT, priority=st.sampled_from(["low", "high"])),
    st.builds(CompleteTask, task_id=TEXT, result=TEXT),
    st.builds(Continue, reason=TEXT),
)
OUTPUTS: dict[type[ts.Signature], st.SearchStrategy[dict[str, Any]]] = {
    Decide: st.fixed_dictionaries({"action": ACTION, "confidence": UNIT}),
    Plan: st.fixed_dictionaries({"steps": st.lists(ACTION, max_size=4), "confidence": UNIT}),
    Mixed: st.fixed_dictionaries(
        {
            "summary": TEXT,
            "count": st.integers(-(10**12), 10**12),
            "note": st.none() | st.builds(Note, title=TEXT, tags=st.lists(TEXT, max_size=3)),
            "level": st.sampled_from(["a", "b", "c"]),
            "words": st.lists(TEXT, max_size=4),
        }
    ),
}
# "open-markers": sections with no closing `[[ ## completed ## ]]`, the last one ending the reply
FORMATS = ["compact", "pretty", "fenced", "markers", "open-markers", "tools"]
MARKERS = ("markers", "open-markers")


class ChunkedLM(BaseLM):
    """Answers every request with one completion: whole, or streamed in the given chunks."""

    def __init__(
        self, text: str, chunks: list[str], *, tools: bool, profile: str | None = None
    ) -> None:
        super().__init__("chunked", profile=profile)
        self.text, self.chunks, self.tools = text, chunks, tools

    async def acomplete(self, request: LMRequest) -> LMResponse:
        calls = (ToolCall("call_1", "out", self.text),) if self.tools else ()
        return LMResponse(
            text=None if self.tools else self.text,
            refusal=None,
            finish_reason="tool_calls" if self.tools else "stop",
            tool_calls=calls,
            usage=USAGE,
            model="chunked",
            raw={},
        )

    async def astream(self, request: LMRequest) -> AsyncIterator[LMChunk]:
        yield LMChunk(model="chunked")
        if self.tools:
            yield LMChunk(tool_calls=(ToolCallDelta(0, "call_1", "out", ""),))
        for piece in self.chunks:
            if self.tools:
                yield LMChunk(tool_calls=(ToolCallDelta(0, None, None, piece),))
            else:
                yield LMChunk(text=piece)
        yield LMChunk(finish_reason="tool_calls" if self.tools else "stop")
        yield LMChunk(usage=USAGE)


def written(sig: type[ts.Signature], outputs: Mapping[str, Any], form: str) -> str:
    """The outputs as a model writes them in the given form."""
    fields = sig.output_fields
    data = {n: to_jsonable(v, fields[n].annotation) for n, v in outputs.items()}
    if form in ("compact", "tools"):
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    if form == "pretty":
        return json.dumps(data, indent=2)
    if form == "fenced":
        return (
            f"Here is the answer:\n```json\n{json.dumps(data, indent=2, ensure_ascii=False)}\n```"
        )
    sections = [
        f"[[ ## {n} ## ]]\n{v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
        for n, v in data.items()
    ]
    return "\n\n".join([*sections, *(["[[ ## completed ## ]]"] if form == "markers" else [])])


def cut(text: str, points: set[int]) -> list[str]:
    bounds = [0, *sorted(p for p in points if 0 < p < len(text)), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


async def both(
    sig: type[ts.Signature], text: str, chunks: list[str], form: str, profile: str | None = None
) -> Any:
    lm = ChunkedLM(text, chunks, tools=form == "tools", profile=profile)
    mode = (
        "tools" if form == "tools" else "prompt" if form in ("fenced", *MARKERS) else "json_schema"
    )
    predict = ts.Predict(sig, lm=lm, mode=mode, max_retries=0)
    inputs = dict.fromkeys(sig.input_fields, "x")
    events = [event async for event in predict.astream(**inputs)]
    plain = await predict.acall(**inputs)
    return events, plain


def check(sig: type[ts.Signature], outputs: dict[str, Any], form: str, chunks: list[str]) -> None:
    text = "".join(chunks)
    events, plain = asyncio.run(both(sig, text, chunks, form))
    final = events[-1]
    assert isinstance(final, ts.Prediction)
    assert final == plain
    assert final.usage == plain.usage == USAGE
    assert final.raw == plain.raw == text
    if form not in MARKERS:  # sections strip the whitespace around a str
        assert dict(final) == outputs
    # The deltas are the whole text, each piece once.
    assert "".join(e.text for e in events if isinstance(e, OutputDelta)) == text
    for partial in (e for e in events if isinstance(e, PartialPrediction)):
        assert set(partial.values) <= set(final)
        for name, value in partial.values.items():
            if name != partial.in_progress:  # a completed field is already the final value
                assert value == final[name], (name, value, final[name])
            elif isinstance(final[name], str):  # text in progress is a prefix of the final
                assert final[name].startswith(value)
    last = [e for e in events if isinstance(e, PartialPrediction)][-1]
    assert last.values == dict(final) and last.in_progress is None


@st.composite
def cases(draw: st.DrawFn) -> tuple[type[ts.Signature], dict[str, Any], str, set[int]]:
    sig = draw(st.sampled_from(list(OUTPUTS)))
    outputs = draw(OUTPUTS[sig])
    form = draw(st.sampled_from(FORMATS))
    if form in MARKERS:  # a marker inside a section's text would be a marker
        texts = json.dumps(to_jsonable(outputs), ensure_ascii=False)
        if (
            "[[" in texts
            or "]]" in texts
            or any(isinstance(v, str) and v != v.strip() for v in outputs.values())
        ):
            form = "compact"
    length = len(written(sig, outputs, form))
    points = draw(st.sets(st.integers(1, max(1, length - 1)), max_size=12))
    return sig, outputs, form, points


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_every_chunking_streams_to_the_plain_prediction(
    case: tuple[type[ts.Signature], dict[str, Any], str, set[int]],
) -> None:
    sig, outputs, form, points = case
    text = written(sig, outputs, form)
    check(sig, outputs, form, list(text))  # every boundary is a chunk boundary
    check(sig, outputs, form, cut(text, points))  # and a random cut
    check(sig, outputs, form, [text])  # and one chunk


def test_a_list_of_unions_streams_each_member_typed() -> None:
    outputs = {
        "steps": [
            SpawnTask(description='say "hi" \\ bye', priority="low"),
            Continue(reason="wait\nfor CI"),
            CompleteTask(task_id="T-1", result="°C ✓"),
        ],
        "confidence": 0.25,
    }
    for form in FORMATS:
        text = written(Plan, outputs, form)
        check(Plan, outputs, form, list(text))
    text = written(Plan, outputs, "compact")
    events, _ = asyncio.run(both(Plan, text, list(text), "compact"))
    kinds: list[list[str]] = []
    for event in events:
        if isinstance(event, PartialPrediction) and "steps" in event.values:
            names = [type(s).__name__ for s in event.values["steps"]]
            if not kinds or kinds[-1] != names:
                kinds.append(names)
    # Each item is a dict until its `_type` is complete, then the member class, in order.
    typed = [k for k in kinds if "dict" not in k]
    assert typed == [
        [],
        ["SpawnTask"],
        ["SpawnTask", "Continue"],
        ["SpawnTask", "Continue", "CompleteTask"],
    ]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.sampled_from(["", " ", "\n\n"]), st.data())
def test_a_leading_think_block_is_never_streamed_as_the_answer(
    case: tuple[type[ts.Signature], dict[str, Any], str, set[int]],
    space: str,
    data: st.DataObject,
) -> None:
    sig, outputs, form, _ = case
    if form == "tools":  # reasoning tags are read in the content only
        form = "compact"
    # The thought is another output of the same kind: read as the answer, it would show.
    other = data.draw(OUTPUTS[sig])
    thought = written(sig, other, "compact")
    # A thought holding the closing tag itself ends there, as engines' reasoning parsers read
    # it (hypothesis drew a string value "</think>" in session 11).
    assume("</think>" not in thought)
    answer = written(sig, outputs, form)
    text = f"{space}<think>{thought}</think>{space}{answer}"
    points = data.draw(st.sets(st.integers(1, len(text) - 1), max_size=12))
    for chunks in (list(text), cut(text, points)):
        events, plain = asyncio.run(both(sig, text, chunks, form, profile="llama.cpp"))
        final = events[-1]
        assert isinstance(final, ts.Prediction)
        assert final == plain and final.raw == answer
        assert final.reasoning_content == thought
        assert "".join(e.text for e in events if isinstance(e, OutputDelta)) == text
        shown = [e for e in events if isinstance(e, PartialPrediction)]
        for partial in shown:
            for name, value in partial.values.items():
                if name != partial.in_progress:
                    assert value == final[name], (name, value, final[name])
        assert shown[-1].values == dict(final)
