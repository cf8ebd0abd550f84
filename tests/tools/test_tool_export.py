"""One signature, two implementations (code and LLM), identical OpenAI and MCP exports."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import openai
import pytest
from pydantic import BaseModel

import typedspy as ts
from typedspy.schema.targets._openai_rules import check_openai_strict
from typedspy.testing.standin import StandIn
from typedspy.tools import Tool, Toolset


class Document(BaseModel):
    title: str
    url: str
    snippet: str


class SearchDocuments(ts.Signature):
    """Search the document index for passages that answer the query."""

    query: str = ts.InputField(description="what to search for")
    limit: int = ts.InputField(5, ge=1, description="the most documents to return")
    documents: list[Document] = ts.OutputField()


INDEX = [
    Document(title="Pydantic", url="https://docs.pydantic.dev", snippet="Data validation"),
    Document(title="DSPy", url="https://dspy.ai", snippet="Programming, not prompting"),
    Document(title="OpenAI", url="https://platform.openai.com", snippet="Structured outputs"),
]


class SearchModule(ts.Module):
    """Code-backed: searches an in-memory index."""

    signature = SearchDocuments

    async def aforward(self, **inputs: Any) -> Any:
        query, limit = inputs["query"].lower(), inputs["limit"]
        hits = [d for d in INDEX if query in (d.title + " " + d.snippet).lower()]
        return SearchDocuments.output_model(documents=hits[:limit])


class Plan(BaseModel):
    steps: list[str]


class Stop(BaseModel):
    reason: str


class Route(ts.Signature):
    """Choose what to do next."""

    goal: str = ts.InputField()
    hint: Plan | Stop | None = ts.InputField(None)
    decision: Plan | Stop = ts.OutputField()


@pytest.fixture
def server() -> Iterator[StandIn]:
    with StandIn() as s:
        yield s


def standin_lm(server: StandIn) -> ts.LM:
    return ts.LM("standin-1", base_url=server.base_url, api_key="x", max_retries=0)


def test_code_and_llm_backed_tools_export_identically() -> None:
    code = Tool.from_module(SearchModule())
    llm = Tool.from_module(ts.Predict(SearchDocuments))
    assert code.name == llm.name == "search_documents"
    assert code.to_openai_tool() == llm.to_openai_tool()
    assert code.to_mcp_tool() == llm.to_mcp_tool()


def test_openai_tool_shape_and_strict_schema() -> None:
    exported = Tool.from_module(SearchModule()).to_openai_tool()
    assert exported["type"] == "function"
    function = exported["function"]
    assert function["name"] == "search_documents"
    assert function["description"] == (
        "Search the document index for passages that answer the query."
    )
    assert function["strict"] is True
    parameters = function["parameters"]
    assert parameters["type"] == "object"
    assert parameters["additionalProperties"] is False
    assert parameters["required"] == ["query", "limit"]
    assert parameters["properties"]["query"] == {
        "type": "string",
        "description": "what to search for",
    }
    assert parameters["properties"]["limit"]["minimum"] == 1
    assert "default" not in json.dumps(parameters["properties"]["limit"]).split('"description"')[0]
    assert check_openai_strict(parameters, name="search_documents") == []


def test_the_json_schema_export_refuses_unknown_arguments_as_the_tool_does() -> None:
    # A server enforcing the schema (vLLM, llama.cpp) must not let the model add a name that
    # the tool's argument check then refuses (found by tests/conformance with llguidance).
    search = Tool.from_module(SearchModule())
    function = search.to_openai_tool("json-schema")["function"]
    assert function["strict"] is False
    assert "default" in function["parameters"]["properties"]["limit"]  # the full JSON Schema
    extra = {"query": "pydantic", "page": 2}
    with pytest.raises(jsonschema.ValidationError, match="'page' was unexpected"):
        jsonschema.validate(extra, function["parameters"])
    with pytest.raises(ts.errors.ToolArgumentsError, match="page: unexpected argument"):
        search.parse_arguments(extra)
    jsonschema.validate({"query": "pydantic"}, function["parameters"])
    assert search.parse_arguments({"query": "pydantic"}) == {"query": "pydantic", "limit": 5}


def test_exports_are_copies_not_the_cached_schema() -> None:
    tool = Tool.from_module(SearchModule())
    first = tool.to_openai_tool()
    first["function"]["parameters"]["properties"].clear()
    mcp = tool.to_mcp_tool()
    mcp["inputSchema"]["properties"].clear()
    assert set(tool.to_openai_tool()["function"]["parameters"]["properties"]) == {"query", "limit"}
    assert set(tool.to_mcp_tool()["inputSchema"]["properties"]) == {"query", "limit"}


def test_mcp_tool_schemas_are_object_json_schemas() -> None:
    mcp = Tool.from_module(SearchModule()).to_mcp_tool()
    assert set(mcp) == {"name", "description", "inputSchema", "outputSchema"}
    assert mcp["name"] == "search_documents"
    for key in ("inputSchema", "outputSchema"):
        schema = mcp[key]
        assert schema["type"] == "object"
        jsonschema.Draft202012Validator.check_schema(schema)
    # the json-schema target keeps defaults and does not need every property required
    assert mcp["inputSchema"]["required"] == ["query"]
    assert mcp["inputSchema"]["properties"]["limit"]["default"] == 5
    assert mcp["outputSchema"]["required"] == ["documents"]


def test_mcp_title_is_exported_only_when_set() -> None:
    tool = Tool(SearchDocuments, SearchModule().acall, title="Document search")
    assert tool.to_mcp_tool()["title"] == "Document search"
    assert "title" not in Tool.from_module(SearchModule()).to_mcp_tool()


def test_code_backed_outputs_validate_against_the_mcp_output_schema() -> None:
    tool = Tool.from_module(SearchModule())
    outputs = asyncio.run(tool.acall({"query": "pydantic"}))
    assert outputs == {"documents": [INDEX[0]]}
    structured = tool.dump_outputs(outputs)
    assert structured == {"documents": [INDEX[0].model_dump()]}
    jsonschema.validate(structured, tool.to_mcp_tool()["outputSchema"])


def test_union_inputs_and_outputs_keep_type_tags_in_both_exports() -> None:
    tool = Tool(Route, lambda goal, hint: Stop(reason="done"))
    strict = tool.to_openai_tool()["function"]["parameters"]
    assert check_openai_strict(strict, name="route") == []
    assert strict["$defs"]["Plan"]["properties"]["_type"] == {"type": "string", "const": "Plan"}
    mcp = tool.to_mcp_tool()
    assert mcp["inputSchema"]["$defs"]["Stop"]["properties"]["_type"]["const"] == "Stop"
    assert mcp["outputSchema"]["$defs"]["Plan"]["properties"]["_type"]["const"] == "Plan"
    outputs = asyncio.run(tool.acall({"goal": "g", "hint": {"_type": "Plan", "steps": ["a"]}}))
    assert tool.dump_outputs(outputs) == {"decision": {"_type": "Stop", "reason": "done"}}
    jsonschema.validate(tool.dump_outputs(outputs), mcp["outputSchema"])


def test_a_tool_without_parameters_exports_an_empty_strict_object() -> None:
    @ts.tools.tool
    def now() -> str:
        """The current time."""
        return "12:00"

    parameters = now.to_openai_tool()["function"]["parameters"]
    assert parameters["properties"] == {}
    assert parameters["required"] == []
    assert check_openai_strict(parameters, name="now") == []
    assert now.to_mcp_tool()["inputSchema"] == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }


def test_a_function_without_docstring_exports_no_description() -> None:
    @ts.tools.tool
    def ping(host: str) -> bool:
        return True

    assert ping.description == ""
    assert "description" not in ping.to_openai_tool()["function"]
    assert "description" not in ping.to_mcp_tool()


def test_standin_accepts_the_tool_and_its_arguments_validate(server: StandIn) -> None:
    tools = Toolset([SearchModule()])
    tool = tools.get("search_documents")

    async def main() -> Any:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="x") as client:
            return await client.chat.completions.with_raw_response.create(
                model="standin-1",
                messages=[{"role": "user", "content": "Find the pydantic docs."}],
                tools=tools.to_openai_tools(),  # type: ignore[arg-type]
                tool_choice={"type": "function", "function": {"name": "search_documents"}},
                parallel_tool_calls=False,
            )

    raw = asyncio.run(main())
    assert raw.status_code == 200
    completion = raw.parse()
    call = completion.choices[0].message.tool_calls[0]
    assert call.function.name == "search_documents"
    arguments = tool.parse_arguments(call.function.arguments)
    assert set(arguments) == {"query", "limit"}
    assert isinstance(arguments["query"], str)
    assert arguments["limit"] >= 1
    sent = server.requests[-1]["tools"][0]
    assert sent == tool.to_openai_tool()
    # and the code-backed tool runs on what the model sent
    outputs = asyncio.run(tool.acall(call.function.arguments))
    assert isinstance(outputs["documents"], list)
    assert len(outputs["documents"]) <= arguments["limit"]


def test_standin_rejects_a_non_strict_schema_sent_as_strict(server: StandIn) -> None:
    # the check is real: the MCP (json-schema) input schema is not strict-compatible
    mcp_schema = Tool.from_module(SearchModule()).to_mcp_tool()["inputSchema"]

    async def main() -> None:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0) as c:
            await c.chat.completions.create(
                model="standin-1",
                messages=[{"role": "user", "content": "hi"}],
                tools=[
                    {
                        "type": "function",
                        "function": {
                            "name": "search_documents",
                            "parameters": mcp_schema,
                            "strict": True,
                        },
                    }
                ],
            )

    with pytest.raises(openai.BadRequestError):
        asyncio.run(main())


def test_the_llm_backed_tool_runs_against_the_standin(server: StandIn) -> None:
    lm = standin_lm(server)
    tool = Tool.from_module(ts.Predict(SearchDocuments, lm=lm))

    async def main() -> dict[str, Any]:
        try:
            return await tool.acall('{"query": "pydantic", "limit": 2}')
        finally:
            await lm.aclose()  # the client belongs to this event loop

    outputs = asyncio.run(main())
    assert list(outputs) == ["documents"]
    assert all(isinstance(d, Document) for d in outputs["documents"])
    jsonschema.validate(tool.dump_outputs(outputs), tool.to_mcp_tool()["outputSchema"])
    request = server.requests[-1]
    assert request["response_format"]["json_schema"]["name"] == "SearchDocuments"
    assert "pydantic" in json.dumps(request["messages"])


def test_the_llm_backed_tool_returns_a_scripted_answer(server: StandIn) -> None:
    answer = {"documents": [INDEX[1].model_dump()]}
    server.enqueue(json.dumps(answer))
    lm = standin_lm(server)
    tool = Tool.from_module(ts.Predict(SearchDocuments, lm=lm))
    try:
        assert tool(query="dspy") == {"documents": [INDEX[1]]}  # on the background loop
    finally:
        lm.close()
    assert server.requests[-1]["messages"][-1]["content"].count("dspy") >= 1
