from __future__ import annotations

import asyncio
from typing import Any

import pytest

import typedspy as ts
from typedspy.errors import ToolArgumentsError, ToolError, ToolNotFoundError
from typedspy.tools import Tool, Toolset, tool


class Translate(ts.Signature):
    """Translate text to French."""

    text: str = ts.InputField()
    french: str = ts.OutputField()


class Translator(ts.Module):
    signature = Translate

    async def aforward(self, **inputs: Any) -> Any:
        return {"french": f"le {inputs['text']}"}


def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


@tool
async def whisper(text: str) -> str:
    """Lower-case the text."""
    return text.lower()


def test_wraps_tools_modules_and_functions_in_order() -> None:
    tools = Toolset([Translator(), shout, whisper])
    assert tools.names == ["translate", "shout", "whisper"]
    assert [t.name for t in tools] == tools.names
    assert all(isinstance(t, Tool) for t in tools)
    assert tools.get("whisper") is whisper
    assert tools["shout"].description == "Upper-case the text."
    assert len(tools) == 3
    assert "shout" in tools and "nope" not in tools
    assert whisper in tools
    assert repr(tools) == "Toolset(['translate', 'shout', 'whisper'])"


def test_calls_by_name() -> None:
    tools = Toolset([Translator(), shout])
    assert asyncio.run(tools.acall("translate", '{"text": "chat"}')) == {"french": "le chat"}
    assert asyncio.run(tools.acall("shout", {"text": "hey"})) == {"result": "HEY"}
    with pytest.raises(ToolArgumentsError):
        asyncio.run(tools.acall("shout", {"txt": "hey"}))


def test_duplicate_names_are_an_error_naming_the_duplicate() -> None:
    def translate(text: str) -> str:
        return text

    with pytest.raises(ToolError, match="duplicate tool name 'translate'") as info:
        Toolset([Translator(), translate])
    assert info.value.tool == "translate"


def test_a_renamed_duplicate_is_accepted() -> None:
    tools = Toolset([Translator(), Tool.from_module(Translator(), name="translate_again")])
    assert tools.names == ["translate", "translate_again"]


def test_not_found_lists_the_available_names() -> None:
    tools = Toolset([shout, whisper])
    with pytest.raises(ToolNotFoundError) as info:
        tools.get("yell")
    err = info.value
    assert str(err) == "no tool named 'yell'; available: shout, whisper"
    assert err.tool == "yell"
    assert err.available == ("shout", "whisper")
    assert isinstance(err, KeyError) and isinstance(err, ToolError)
    with pytest.raises(ToolNotFoundError, match="the toolset is empty"):
        Toolset().get("yell")


def test_add_and_remove() -> None:
    tools = Toolset()
    added = tools.add(shout)
    assert added.name == "shout" and tools.names == ["shout"]
    assert tools.add(Translator()).name == "translate"
    assert tools.remove("shout") is added
    assert tools.names == ["translate"]
    translate = tools.get("translate")
    assert tools.remove(translate) is translate
    assert len(tools) == 0
    with pytest.raises(ToolNotFoundError):
        tools.remove("shout")


def test_iteration_is_a_snapshot() -> None:
    tools = Toolset([shout, whisper])
    for t in tools:  # removing while iterating does not break the loop
        tools.remove(t.name)
    assert tools.names == []


def test_exports_every_tool() -> None:
    tools = Toolset([Translator(), shout])
    openai_tools = tools.to_openai_tools()
    assert [t["function"]["name"] for t in openai_tools] == ["translate", "shout"]
    assert openai_tools[0] == tools.get("translate").to_openai_tool()
    assert [t["name"] for t in tools.to_mcp_tools()] == ["translate", "shout"]


def test_rejects_module_classes_and_non_callables() -> None:
    with pytest.raises(ToolError, match=r"not the class: Translator\(\)"):
        Toolset([Translator])
    with pytest.raises(ToolError, match="not a tool, module or function"):
        Toolset([42])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        (None, "not None$"),
        ("search", "not 'search'$"),
        (ts.tool(shout), "not shout: pass \\[shout\\]"),
        (shout, "not shout: pass \\[shout\\]"),
        (ts.Predict("question -> answer"), "not Predict\\(...\\): pass \\[Predict\\(...\\)\\]"),
    ],
)
def test_tools_that_are_no_collection_are_a_tool_error(tools: Any, message: str) -> None:
    # One tool where a list goes, or None, was a bare TypeError ("not iterable") out of
    # ts.ReAct(...); a string was read character by character.
    with pytest.raises(
        ToolError, match=f"^tools is a list of tools, modules or functions, {message}"
    ):
        ts.ReAct("question -> answer", tools=tools)
    with pytest.raises(ToolError, match=message):
        Toolset(tools)
