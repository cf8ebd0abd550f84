from __future__ import annotations

import re

import pytest

import typedspy as ts
from typedspy.errors import ToolError
from typedspy.tools import Tool, tool_name
from typedspy.tools._names import check_tool_name

OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("SearchDocuments", "search_documents"),
        ("HTTPFetch", "http_fetch"),
        ("GetURLForID", "get_url_for_id"),
        ("Tool2Go", "tool2_go"),
        ("search_documents", "search_documents"),
        ("getHTTPResponseCode", "get_http_response_code"),
        ("X", "x"),
        ("URL", "url"),
        ("<lambda>", "lambda"),
        ("module.Thing", "module_thing"),
        ("Search-Docs", "search_docs"),
        ("with  spaces", "with_spaces"),
        ("__Private__", "private"),
    ],
)
def test_tool_name_table(raw: str, expected: str) -> None:
    assert tool_name(raw) == expected
    assert OPENAI_NAME.match(tool_name(raw))


def test_tool_name_of_a_class_uses_its_name() -> None:
    class SearchDocuments(ts.Signature):
        query: str = ts.InputField()
        hits: int = ts.OutputField()

    assert tool_name(SearchDocuments) == "search_documents"


def test_long_names_are_cut_to_64_characters() -> None:
    name = tool_name("Very" * 30)
    assert len(name) == 64
    assert OPENAI_NAME.match(name)


def test_tool_name_is_idempotent() -> None:
    for raw in ("SearchDocuments", "HTTPFetch", "GetURLForID", "Tool2Go"):
        assert tool_name(tool_name(raw)) == tool_name(raw)


@pytest.mark.parametrize("raw", ["", "<>", "___", "..."])
def test_nothing_usable_raises(raw: str) -> None:
    with pytest.raises(ToolError, match="cannot derive a tool name"):
        tool_name(raw)


@pytest.mark.parametrize("bad", ["", "has space", "dotted.name", "x" * 65, "ünïcode"])
def test_explicit_invalid_names_are_rejected_with_a_suggestion(bad: str) -> None:
    with pytest.raises(ToolError, match="invalid tool name"):
        check_tool_name(bad)


def test_explicit_valid_names_pass_unchanged() -> None:
    assert check_tool_name("Search-v2") == "Search-v2"


def test_explicit_tool_name_overrides_the_derived_one() -> None:
    class Lookup(ts.Signature):
        key: str = ts.InputField()
        value: str = ts.OutputField()

    tool = Tool(Lookup, lambda key: key, name="get-value")
    assert tool.name == "get-value"
    assert Tool(Lookup, lambda key: key).name == "lookup"
    with pytest.raises(ToolError, match="invalid tool name 'get value'"):
        Tool(Lookup, lambda key: key, name="get value")
