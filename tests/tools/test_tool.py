from __future__ import annotations

import asyncio
import contextvars
import datetime
import functools
import threading
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

import typedspy as ts
from typedspy.errors import ConfigurationError, ToolArgumentsError, ToolError
from typedspy.tools import Tool, tool

# -- signatures and models used below --


class Point(BaseModel):
    x: int
    y: int


class Measure(ts.Signature):
    """Measure a segment."""

    start: Point = ts.InputField()
    end: Point = ts.InputField()
    length: float = ts.OutputField(ge=0)
    unit: str = ts.OutputField(default="m")


class Echo(ts.Signature):
    """Repeat the text."""

    text: str = ts.InputField()
    echoed: str = ts.OutputField(min_length=1)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# -- @tool: schema from hints, descriptions from the docstring --


def test_tool_on_a_sync_function_reads_hints_and_docstring() -> None:
    @tool
    def add(a: int, b: int = 2) -> int:
        """Add two numbers.

        Longer explanation.

        Args:
            a: The first number.
            b (int): The second number,
                which defaults to two.

        Returns:
            int: The sum.
        """
        return a + b

    assert isinstance(add, Tool)
    assert add.name == "add"
    assert add.description == "Add two numbers.\n\nLonger explanation."
    mcp = add.to_mcp_tool()
    assert mcp["inputSchema"]["properties"] == {
        "a": {"type": "integer", "description": "The first number."},
        "b": {
            "type": "integer",
            "default": 2,
            "description": "The second number, which defaults to two.",
        },
    }
    assert mcp["inputSchema"]["required"] == ["a"]
    assert mcp["inputSchema"]["additionalProperties"] is False  # add(c=1) is refused
    assert mcp["outputSchema"]["properties"] == {
        "result": {"type": "integer", "description": "The sum."}
    }
    assert add(a=1) == {"result": 3}
    assert run(add.acall('{"a": 4, "b": 5}')) == {"result": 9}


def test_tool_on_an_async_function_runs_in_the_loop() -> None:
    loop_threads: list[threading.Thread] = []

    @tool(name="fetch_page", description="Fetch a page.")
    async def fetch(url: str, retries: Annotated[int, Field(ge=0, le=3)] = 1) -> str:
        """Ignored because description= is given."""
        loop_threads.append(threading.current_thread())
        await asyncio.sleep(0)
        return f"{url}#{retries}"

    assert fetch.name == "fetch_page"
    assert fetch.description == "Fetch a page."
    props = fetch.to_mcp_tool()["inputSchema"]["properties"]
    assert props["retries"] == {"type": "integer", "default": 1, "minimum": 0, "maximum": 3}

    async def main() -> dict[str, Any]:
        out = await fetch.acall({"url": "http://x"})
        assert loop_threads == [threading.current_thread()]
        return out

    assert run(main()) == {"result": "http://x#1"}


def test_sync_function_runs_in_a_worker_thread_with_the_callers_contextvars() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    seen: list[tuple[str, bool]] = []

    @tool
    def probe() -> str:
        seen.append((var.get(), threading.current_thread() is threading.main_thread()))
        return var.get()

    async def main() -> dict[str, Any]:
        var.set("from the caller")
        return await probe.acall("")

    assert run(main()) == {"result": "from the caller"}
    assert seen == [("from the caller", False)]


def test_unannotated_parameters_are_any_and_missing_return_is_any() -> None:
    @tool
    def loose(value, flag=False):  # type: ignore[no-untyped-def]
        return {"got": value, "flag": flag}

    mcp = loose.to_mcp_tool()
    assert mcp["inputSchema"]["required"] == ["value"]
    assert run(loose.acall({"value": [1, "a"]})) == {"result": {"got": [1, "a"], "flag": False}}


def test_field_default_keeps_constraints_and_gains_the_docstring_description() -> None:
    def page(size: int = Field(10, ge=1)) -> int:
        """Page.

        Args:
            size: Items per page.
        """
        return size

    tool_ = Tool.from_function(page)
    assert tool_.to_mcp_tool()["inputSchema"]["properties"]["size"] == {
        "type": "integer",
        "default": 10,
        "minimum": 1,
        "description": "Items per page.",
    }
    with pytest.raises(ToolArgumentsError) as info:
        tool_.parse_arguments({"size": 0})
    assert [e.path for e in info.value.errors] == [("size",)]


def test_field_default_and_annotated_field_keywords_are_both_kept() -> None:
    # Both Pydantic spellings at once, and the docstring's description on top: the field is
    # copied through Pydantic's Annotated merge (merge_field_infos is deprecated).
    def page(size: Annotated[int, Field(le=50)] = Field(10, ge=1)) -> int:
        """Page.

        Args:
            size: Items per page.
        """
        return size

    tool_ = Tool.from_function(page)
    assert tool_.to_mcp_tool()["inputSchema"]["properties"]["size"] == {
        "type": "integer",
        "default": 10,
        "minimum": 1,
        "maximum": 50,
        "description": "Items per page.",
    }
    with pytest.raises(ToolArgumentsError) as info:
        tool_.parse_arguments({"size": 51})
    assert [e.path for e in info.value.errors] == [("size",)]


def test_a_model_return_annotation_makes_its_fields_the_outputs() -> None:
    class Weather(BaseModel):
        temperature: float
        summary: str

    @tool
    def weather(city: str) -> Weather:
        """Current weather in a city."""
        return Weather(temperature=21.5, summary=f"sunny in {city}")

    schema = weather.to_mcp_tool()["outputSchema"]
    assert list(schema["properties"]) == ["temperature", "summary"]
    assert schema["required"] == ["temperature", "summary"]
    assert weather(city="Oslo") == {"temperature": 21.5, "summary": "sunny in Oslo"}


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (lambda *args: None, "cannot be passed by keyword"),
        (lambda **kwargs: None, "cannot be passed by keyword"),
    ],
)
def test_unsupported_parameters_are_rejected(fn: Any, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        Tool.from_function(fn, name="bad")


def test_positional_only_and_underscore_parameters_are_rejected() -> None:
    def positional(a: int, /) -> int:
        return a

    def private(_a: int) -> int:
        return _a

    with pytest.raises(ToolError, match="cannot be passed by keyword"):
        Tool.from_function(positional)
    with pytest.raises(ToolError, match="cannot start with '_'"):
        Tool.from_function(private)


_UNSET = object()
_BY_LEN: Any = Field(default=len)


def test_a_default_that_is_no_json_value_is_refused_at_build_naming_the_parameter() -> None:
    # Such a default built, then every schema of the tool warned (an error under -W error, as
    # in pytest) that it leaves the default out: at the first call, not at build.
    def sentinel(city: str, units: Any = _UNSET) -> str:
        return city

    def field(city: str, sort: Any = _BY_LEN) -> str:
        return city

    def raw(city: str, token: bytes = b"\xff") -> str:  # bytes JSON shows as UTF-8 text
        return city

    for fn, shown in ((sentinel, "units"), (field, "sort"), (raw, "token")):
        with pytest.raises(ToolError, match=f"parameter '{shown}': its default .* is not a JSON"):
            tool(fn)

    def fine(when: datetime.date = datetime.date(2026, 1, 2), tags: set[str] = {"a"}) -> str:  # noqa: B006
        return str(when)

    assert tool(fine).to_mcp_tool()["inputSchema"]["properties"]["when"]["default"] == "2026-01-02"


def unreadable_signature(x: int) -> int:
    """Has a broken __signature__."""
    return x


unreadable_signature.__signature__ = "nope"  # type: ignore[attr-defined]


def pydantic_name(model_config: int) -> int:
    """Takes a name Pydantic keeps for itself."""
    return model_config


def unresolved_hint(x: Undefined) -> int:  # type: ignore[name-defined]  # noqa: F821
    """Names a type that does not exist."""
    return 1


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (unreadable_signature, "cannot read the parameters of .*unexpected object 'nope'"),
        (pydantic_name, "cannot build a signature for 'pydantic_name': .*model_config"),
        (unresolved_hint, "cannot read the type hints of .*'Undefined' is not defined"),
    ],
)
def test_functions_no_signature_can_be_built_from_are_named(fn: Any, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        Tool.from_function(fn)


def test_partials_closures_field_defaults_and_none_returns_make_tools() -> None:
    def add(a: int, b: int = 2) -> int:
        """Add two numbers."""
        return a + b

    def limited(limit: int = Field(5, ge=1), rest: int = Field(0, description="Own.")) -> None:
        """Do nothing, a bounded number of times.

        Args:
            limit: How many times.
            rest: Not shown: the Field has a description of its own.
        """

    def build() -> Tool:
        def later_bound(x: int) -> int:
            """Use a name bound after the tool is made."""
            return helper(x)

        made = Tool.from_function(later_bound)  # its closure cell is still empty here
        helper = abs
        return made

    partial = Tool.from_function(functools.partial(add, b=3), name="add3")
    assert partial.name == "add3"
    assert partial(a=1) == {"result": 4}
    assert partial.description == "Add two numbers."
    bounded = Tool.from_function(limited)
    fields = bounded.signature.input_fields
    assert (fields["limit"].description, fields["rest"].description) == ("How many times.", "Own.")
    assert bounded.signature.output_fields["result"].annotation is type(None)
    with pytest.raises(ToolArgumentsError, match="limit"):
        bounded(limit=0)  # the Field's constraint kept
    assert bounded(limit=2) == {"result": None}
    assert build()(x=-3) == {"result": 3}


def test_what_is_no_function_or_module_is_refused_and_tools_show_their_mark() -> None:
    @tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    with pytest.raises(ToolError, match=r"Tool\('echo', signature=Echo\) is already a Tool"):
        Tool.from_function(echo)
    with pytest.raises(ToolError, match=r"Tool\.from_module needs a Module instance, not 'text'"):
        Tool.from_module("text")  # type: ignore[arg-type]
    marked = Tool(Echo, lambda text: text, confirmation_question="Echo {text}?")
    assert repr(marked) == "Tool('echo', signature=Echo, requires_confirmation=True)"


# -- argument validation: a wrong value never reaches the implementation --


def test_wrong_types_raise_with_field_paths_and_the_function_is_not_called() -> None:
    calls: list[Any] = []

    @tool
    def measure(start: Point, end: Point) -> float:
        calls.append((start, end))
        return 0.0

    with pytest.raises(ToolArgumentsError) as info:
        run(measure.acall({"start": {"x": "left", "y": 0}, "end": {"x": 1}}))
    err = info.value
    assert calls == []
    assert err.tool == "measure"
    assert isinstance(err, ValueError)
    assert [e.path for e in err.errors] == [("start", "x"), ("end", "y")]
    assert "start.x" in str(err) and "end.y" in str(err)


def test_sync_call_validates_too() -> None:
    calls: list[int] = []

    @tool
    def double(n: int) -> int:
        calls.append(n)
        return n * 2

    with pytest.raises(ToolArgumentsError, match="n: Input should be a valid integer"):
        double(n="many")
    assert calls == []


def test_unknown_and_missing_arguments_are_named() -> None:
    t = Tool(Echo, lambda text: text)
    with pytest.raises(ToolArgumentsError) as info:
        t.parse_arguments({"txt": "hi"})
    paths = {e.path: e.message for e in info.value.errors}
    assert paths[("txt",)] == "unexpected argument (parameters: text)"
    assert paths[("text",)] == "Field required"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"text": "hi",}', "hi"),  # trailing comma
        ("{'text': 'hi'}", "hi"),  # single quotes
        ('"{\\"text\\": \\"hi\\"}"', "hi"),  # an object encoded twice
    ],
)
def test_arguments_are_decoded_leniently(raw: str, expected: str) -> None:
    t = Tool(Echo, lambda text: text)
    assert t.parse_arguments(raw) == {"text": expected}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("[1, 2]", "arguments must be a JSON object, got list"),
        ("null", "arguments must be a JSON object, got null"),
        ("{not json", "not valid JSON"),
    ],
)
def test_arguments_that_are_not_an_object_are_errors(raw: str, message: str) -> None:
    t = Tool(Echo, lambda text: text)
    with pytest.raises(ToolArgumentsError, match=message) as info:
        t.parse_arguments(raw)
    assert info.value.errors[0].path == ()


def test_empty_arguments_mean_no_arguments_and_null_means_the_default() -> None:
    @tool
    def listing(
        limit: int = 5,
        cursor: str | None = "start",
        page: Annotated[int, Field(ge=1)] | None = 1,
    ) -> str:
        return f"{limit}:{cursor}:{page}"

    defaults = {"limit": 5, "cursor": "start", "page": 1}
    assert listing.parse_arguments("") == defaults
    # null for a non-nullable parameter with a default: use the default
    assert listing.parse_arguments({"limit": None}) == defaults
    # null for a nullable parameter is a real value, Annotated or not
    assert listing.parse_arguments({"cursor": None}) == {**defaults, "cursor": None}
    assert listing.parse_arguments({"page": None}) == {**defaults, "page": None}
    with pytest.raises(ToolArgumentsError, match="arguments must be a JSON object, got list"):
        listing.parse_arguments([5])


# -- results are normalised to the signature's outputs --


def _measure_tool(result: Any) -> Tool:
    return Tool(Measure, lambda start, end: result)


ARGS = {"start": {"x": 0, "y": 0}, "end": {"x": 3, "y": 4}}


def test_result_from_a_prediction() -> None:
    pred = ts.Prediction(Measure, {"length": 5.0, "unit": "cm"})
    assert run(_measure_tool(pred).acall(ARGS)) == {"length": 5.0, "unit": "cm"}


def test_result_from_an_output_model_instance() -> None:
    instance = Measure.output_model(length=5.0)
    assert run(_measure_tool(instance).acall(ARGS)) == {"length": 5.0, "unit": "m"}


def test_result_from_a_dict_fills_defaults_and_coerces() -> None:
    assert run(_measure_tool({"length": "5"}).acall(ARGS)) == {"length": 5.0, "unit": "m"}


def test_result_from_a_bare_value_for_a_single_output() -> None:
    t = Tool(Echo, lambda text: text * 2)
    assert run(t.acall({"text": "ab"})) == {"echoed": "abab"}
    # a dict that names the single output is read as the outputs
    named = Tool(Echo, lambda text: {"echoed": text})
    assert run(named.acall({"text": "ab"})) == {"echoed": "ab"}


def test_a_dict_typed_single_output_accepts_a_bare_dict() -> None:
    @tool
    def counts(text: str) -> dict[str, int]:
        return {w: len(w) for w in text.split()}

    assert counts(text="a bb") == {"result": {"a": 1, "bb": 2}}


def test_the_implementation_sees_validated_python_values() -> None:
    seen: list[Any] = []

    def impl(start: Point, end: Point) -> dict[str, float]:
        seen.append((start, end))
        return {"length": float(abs(end.x - start.x) + abs(end.y - start.y))}

    assert run(Tool(Measure, impl).acall(ARGS)) == {"length": 7.0, "unit": "m"}
    assert seen == [(Point(x=0, y=0), Point(x=3, y=4))]


@pytest.mark.parametrize(
    ("result", "path"),
    [
        ({"length": -1.0}, ("length",)),
        ({"unit": "m"}, ("length",)),
        (ts.Prediction(Measure, {"length": "far"}), ("length",)),
    ],
)
def test_an_invalid_result_is_a_tool_error(result: Any, path: tuple[str, ...]) -> None:
    with pytest.raises(ToolError, match="does not match the outputs of Measure") as info:
        run(_measure_tool(result).acall(ARGS))
    assert info.value.tool == "measure"
    assert [e.path for e in info.value.errors] == [path]


def test_a_bare_value_for_several_outputs_is_a_tool_error() -> None:
    with pytest.raises(ToolError, match="returned float; return a Prediction"):
        run(_measure_tool(5.0).acall(ARGS))


def test_an_invalid_bare_value_is_a_tool_error() -> None:
    t = Tool(Echo, lambda text: "")
    with pytest.raises(ToolError) as info:
        run(t.acall({"text": "x"}))
    assert [e.path for e in info.value.errors] == [("echoed",)]


def test_implementation_errors_propagate_unchanged() -> None:
    def boom(text: str) -> str:
        raise LookupError("backend down")

    with pytest.raises(LookupError, match="backend down"):
        run(Tool(Echo, boom).acall({"text": "x"}))


def test_dump_outputs_renders_json_ready_data() -> None:
    class Shape(ts.Signature):
        name: str = ts.InputField()
        at: Point | None = ts.OutputField()

    t = Tool(Shape, lambda name: Point(x=1, y=2))
    outputs = run(t.acall({"name": "p"}))
    assert outputs == {"at": Point(x=1, y=2)}
    assert t.dump_outputs(outputs) == {"at": {"x": 1, "y": 2}}


# -- modules as tools --


class Greet(ts.Signature):
    """Greet someone."""

    name: str = ts.InputField()
    greeting: str = ts.OutputField()


def test_a_module_with_only_a_sync_forward_runs_in_a_thread() -> None:
    threads: list[threading.Thread] = []

    class Greeter(ts.Module):
        signature = Greet

        def forward(self, **inputs: Any) -> Any:
            threads.append(threading.current_thread())
            # extra keys next to the output's name are ignored
            return {"greeting": f"hello {inputs['name']}", "debug": 1}

    t = Tool.from_module(Greeter())
    assert t.name == "greet"
    assert t.description == "Greet someone."
    assert run(t.acall({"name": "Ada"})) == {"greeting": "hello Ada"}
    assert threads and threads[0] is not threading.main_thread()


def test_a_module_with_aforward_runs_through_acall() -> None:
    class Greeter(ts.Module):
        signature = Greet

        async def aforward(self, **inputs: Any) -> Any:
            return f"hi {inputs['name']}"

    assert Tool.from_module(Greeter())(name="Bo") == {"greeting": "hi Bo"}


def test_from_module_needs_an_instance_bound_to_a_signature() -> None:
    class Unbound(ts.Module):
        async def aforward(self, **inputs: Any) -> Any:
            return None

    class Bound(ts.Module):
        signature = Greet

    with pytest.raises(ToolError, match="not bound to a signature"):
        Tool.from_module(Unbound())
    with pytest.raises(ToolError, match=r"pass a module instance, not the class: Bound\(\)"):
        Tool.from_module(Bound)  # type: ignore[arg-type]


def test_tool_needs_a_signature_and_a_callable() -> None:
    with pytest.raises(ToolError, match="needs a Signature subclass"):
        Tool(Point, lambda: None)  # type: ignore[arg-type]
    with pytest.raises(ToolError, match="needs a callable"):
        Tool(Echo, "not callable")  # type: ignore[arg-type]


def test_a_sync_call_inside_a_running_loop_works_and_on_our_loop_points_to_acall() -> None:
    t = Tool(Echo, lambda text: text)

    async def in_a_users_loop() -> Any:
        return t(text="x")

    assert run(in_a_users_loop()) is not None

    class Outer(ts.Module):
        async def aforward(self) -> Any:
            return t(text="x")  # sync on typedspy's own loop: would wait for itself

    with pytest.raises(ConfigurationError, match=r"await tool\.acall"):
        Outer()()


def test_a_tool_returning_a_dict_keyed_by_tuples_builds_and_its_result_reaches_the_model() -> None:
    # A tool's return comes from Python, never from a reply: a dict keyed by tuples or frozen
    # models is a fine return value, shown to the model with text keys. ADR-100's check of
    # outputs no reply can be read as refused the tool ('JSON object keys are text ...').
    from typedspy.react import ReAct
    from typedspy.testing import Reply, StandIn

    class Cell(BaseModel, frozen=True):
        row: int

    @tool
    def grid(size: int) -> dict[tuple[int, int], str]:
        """Label a grid's cells."""
        return {(r, c): f"{r}{c}" for r in range(size) for c in range(size)}

    @tool
    def cells(size: int) -> dict[Cell, int]:
        """Count per row."""
        return {Cell(row=r): size for r in range(size)}

    with StandIn() as server:
        lm = ts.LM("m", base_url=server.base_url, api_key="k", max_retries=0, profile="openai")
        try:
            server.enqueue(
                Reply(
                    tool_calls=[
                        {"id": "c1", "name": "grid", "arguments": '{"size": 1}'},
                        {"id": "c2", "name": "cells", "arguments": '{"size": 1}'},
                    ],
                    finish_reason="tool_calls",
                ),
                Reply(
                    tool_calls=[{"id": "c3", "name": "finish", "arguments": '{"answer": "ok"}'}],
                    finish_reason="tool_calls",
                ),
            )
            agent = ReAct("question -> answer", tools=[grid, cells], lm=lm, mode="tools")
            assert agent(question="label it").answer == "ok"
        finally:
            lm.close()
    observations = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert "(0, 0)" in observations[0] and "00" in observations[0]
    assert "row=0" in observations[1]
