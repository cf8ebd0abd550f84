"""Serving typedspy tools over MCP: the real SDK client against the real server, in process.

Each test runs in both protocol eras: ``auto`` negotiates 2026-07-28 (elicitation inside the
tools/call result), ``legacy`` the initialize handshake (elicitation as a server request).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
import pytest
import respx
from mcp import Client
from mcp_app import PetLookup, broken_count, delete_file, server_pid, tools

import typedspy as ts
import typedspy.mcp
from typedspy.testing import FakeLM

MODES = ["auto", "legacy"]
Elicit = Callable[[Any, types.ElicitRequestParams], Awaitable[types.ElicitResult]]


def run(
    mode: str, body: Callable[[Client], Awaitable[Any]], *, elicit: Elicit | None = None
) -> Any:
    server = ts.mcp.serve(*tools, name="pets")

    async def main() -> Any:
        async with Client(server, mode=mode, elicitation_callback=elicit) as client:
            return await body(client)

    return asyncio.run(main())


@pytest.mark.parametrize("mode", MODES)
def test_every_tool_is_listed_with_the_schemas_of_to_mcp_tool(mode: str) -> None:
    async def body(client: Client) -> list[dict[str, Any]]:
        listed = await client.list_tools()
        return [t.model_dump(by_alias=True, exclude_none=True) for t in listed.tools]

    listed = run(mode, body)
    expected = [ts.Tool.from_module(PetLookup()).to_mcp_tool()] + [
        t.to_mcp_tool() for t in (broken_count, delete_file, server_pid, tools[-1])
    ]
    assert listed == expected
    assert listed[0]["name"] == "look_up_pet"
    assert listed[0]["description"] == "Look up a pet by its name."
    assert listed[0]["inputSchema"]["properties"]["limit"] == {
        "default": 3,
        "minimum": 1,
        "type": "integer",
    }


@pytest.mark.parametrize("mode", MODES)
def test_results_are_structured_content_plus_the_same_json_as_text(mode: str) -> None:
    async def body(client: Client) -> types.CallToolResult:
        return await client.call_tool("look_up_pet", {"pet_name": "Rex", "limit": 2})

    result = run(mode, body)
    assert result.is_error is False
    assert result.structured_content == {
        "pet": {"_type": "Dog", "tricks": ["sit", "roll"]},
        "owner": "Ann",
    }
    assert [c.type for c in result.content] == ["text"]
    text = result.content[0]
    assert isinstance(text, types.TextContent)
    assert text.text == '{"pet":{"_type":"Dog","tricks":["sit","roll"]},"owner":"Ann"}'


@pytest.mark.parametrize("mode", MODES)
def test_invalid_arguments_are_an_is_error_result_naming_each_path(mode: str) -> None:
    async def body(client: Client) -> types.CallToolResult:
        return await client.call_tool("look_up_pet", {"limit": 0, "colour": "red"})

    result = run(mode, body)
    assert result.is_error is True
    error = result.structured_content["error"]
    assert error["kind"] == "invalid_arguments"
    paths = {tuple(e["path"]): e["message"] for e in error["errors"]}
    assert set(paths) == {("colour",), ("pet_name",), ("limit",)}
    assert "greater than or equal to 1" in paths[("limit",)]
    text = result.content[0]
    assert isinstance(text, types.TextContent)
    assert "- pet_name: Field required" in text.text


@pytest.mark.parametrize("mode", MODES)
def test_a_result_that_breaks_the_tools_own_outputs_is_an_is_error_result(mode: str) -> None:
    async def body(client: Client) -> types.CallToolResult:
        return await client.call_tool("broken_count", {"word": "a"})

    result = run(mode, body)
    assert result.is_error is True
    error = result.structured_content["error"]
    assert error["kind"] == "invalid_result"
    assert [e["path"] for e in error["errors"]] == [["total"]]


def test_an_llm_backed_module_is_served_and_its_output_failure_names_paths() -> None:
    class Classify(ts.Signature):
        """Classify the ticket."""

        ticket: str = ts.InputField()
        urgent: bool = ts.OutputField()

    # Three different wrong replies: the same one again would end the call early (ADR-068).
    wrong = [f'{{"reasoning": "?", "urgent": "perhaps {n}"}}' for n in range(3)]
    lm = FakeLM(['{"reasoning": "down", "urgent": true}', *wrong])

    async def main() -> tuple[types.CallToolResult, types.CallToolResult]:
        served = ts.mcp.serve(ts.ChainOfThought(Classify, lm=lm))
        async with Client(served) as client:
            ok = await client.call_tool("classify", {"ticket": "server down"})
            failed = await client.call_tool("classify", {"ticket": "server down"})
        return ok, failed

    ok, failed = asyncio.run(main())
    assert ok.structured_content == {"urgent": True}
    assert "server down" in str(lm.requests[0].messages)
    assert lm.remaining == 0
    assert failed.is_error is True
    error = failed.structured_content["error"]
    assert error["kind"] == "output_error"
    assert [e["path"] for e in error["errors"]] == [["urgent"]]


@pytest.mark.parametrize("mode", MODES)
def test_a_confirm_first_tool_asks_through_elicitation_and_runs_when_approved(mode: str) -> None:
    asked: list[types.ElicitRequestParams] = []

    async def approve(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"approve": True})

    async def body(client: Client) -> types.CallToolResult:
        return await client.call_tool("delete_file", {"path": "/tmp/a"})

    result = run(mode, body, elicit=approve)
    assert result.is_error is False
    assert result.structured_content == {"result": "deleted /tmp/a"}
    assert len(asked) == 1
    assert asked[0].message == "Delete /tmp/a?"
    assert isinstance(asked[0], types.ElicitRequestFormParams)
    assert asked[0].requested_schema["required"] == ["approve"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "answer",
    [
        types.ElicitResult(action="decline"),
        types.ElicitResult(action="cancel"),
        types.ElicitResult(action="accept", content={"approve": False}),
    ],
)
def test_a_declined_confirmation_does_not_run_the_tool(
    mode: str, answer: types.ElicitResult
) -> None:
    async def decline(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return answer

    async def body(client: Client) -> types.CallToolResult:
        return await client.call_tool("delete_file", {"path": "/tmp/a"})

    result = run(mode, body, elicit=decline)
    assert result.is_error is True
    assert result.structured_content["error"]["kind"] == "rejected"
    assert "delete_file was rejected" in result.structured_content["error"]["message"]


@pytest.mark.parametrize("mode", MODES)
def test_a_client_without_elicitation_gets_a_clear_refusal(mode: str) -> None:
    async def body(client: Client) -> types.CallToolResult:
        return await client.call_tool("delete_file", {"path": "/tmp/a"})

    result = run(mode, body)
    assert result.is_error is True
    error = result.structured_content["error"]
    assert error["kind"] == "rejected"
    assert "cannot ask for one (it declared no MCP form elicitation)" in error["message"]
    assert "Delete /tmp/a?" in error["message"]


async def _no_such_method(ctx: Any, params: types.ElicitRequestParams) -> types.ErrorData:
    return types.ErrorData(code=types.METHOD_NOT_FOUND, message="Method not found")


async def _crashes(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    raise RuntimeError("the dialog crashed")


async def _malformed(ctx: Any, params: types.ElicitRequestParams) -> Any:
    return {"action": "maybe"}


@pytest.mark.parametrize(
    ("elicit", "kind", "shown"),
    [
        (_no_such_method, "rejected", "cannot ask for one (it does not handle MCP elicitation)"),
        (_crashes, "error", "asking the client failed (MCPError: the dialog crashed)"),
        (_malformed, "error", "asking the client failed (MCPError: Client callback returned an"),
    ],
)
def test_a_question_the_client_fails_to_answer_is_an_is_error_result_naming_why(
    elicit: Elicit, kind: str, shown: str
) -> None:
    # Before 2026-07-28 the server asks in the middle of the call: what the client answered
    # instead of a result reached the SDK, and the caller got a JSON-RPC error for tools/call.
    async def body(client: Client) -> types.CallToolResult:
        return await client.call_tool("delete_file", {"path": "/tmp/a"})

    result = run("legacy", body, elicit=elicit)
    assert result.is_error is True
    error = result.structured_content["error"]
    assert error["kind"] == kind
    assert error["message"].startswith(
        "delete_file needs a person's confirmation (Delete /tmp/a?) and "
    )
    assert shown in error["message"]
    assert error["message"].endswith(", so it did not run")


def test_an_unknown_tool_is_an_is_error_result_listing_the_tools() -> None:
    async def body(client: Client) -> types.CallToolResult:
        return await client.call_tool("nope", {})

    result = run("auto", body)
    assert result.is_error is True
    assert "available: broken_count, delete_file, look_up_pet, roll_dice, server_pid" in str(
        result.content
    )


def test_serving_nothing_or_a_duplicate_name_is_a_tool_error() -> None:
    with pytest.raises(ts.ToolError, match="at least one"):
        ts.mcp.serve()
    with pytest.raises(ts.ToolError, match="duplicate tool name 'delete_file'"):
        ts.mcp.serve(delete_file, ts.tools.Toolset([delete_file]))


def test_the_command_line_target_names_a_server_or_what_to_serve() -> None:
    from mcp.server.lowlevel import Server

    from typedspy.mcp._run import load

    loaded = load("mcp_app:tools", name="pets")
    assert isinstance(loaded, Server) and loaded.name == "pets"
    from mcp_app import dice

    assert load("mcp_app:dice", name="ignored") is dice
    with pytest.raises(ts.ConfigurationError, match="expected module:attribute"):
        load("mcp_app", name="x")
    with pytest.raises(ts.ConfigurationError, match="cannot load mcp_app:nothing"):
        load("mcp_app:nothing", name="x")


def test_a_served_react_agent_answers_with_its_outputs_and_refuses_nested_confirmations() -> None:
    from mcp_app import PetLookup
    from mcp_wire import AskAboutPets, calls_reply, script

    from wire import BASE_URL, make_lm, sent

    async def main(server: Any) -> types.CallToolResult:
        async with Client(server) as client:
            return await client.call_tool("ask_about_pets", {"question": "What can Rex do?"})

    with respx.mock(base_url=BASE_URL, assert_all_called=True) as router:
        route = script(router)
        agent = ts.ReAct(AskAboutPets, tools=[PetLookup()], lm=make_lm())
        answered = asyncio.run(main(ts.mcp.serve(agent)))
        assert len(sent(route)) == 3
    assert answered.structured_content == {"answer": "Rex can sit, roll and fetch"}

    with respx.mock(base_url=BASE_URL, assert_all_called=True) as router:
        router.post("/chat/completions").mock(
            side_effect=[calls_reply("c1", "delete_file", {"path": "/tmp/a"})]
        )
        agent = ts.ReAct(AskAboutPets, tools=[delete_file], lm=make_lm())
        refused = asyncio.run(main(ts.mcp.serve(agent)))
    assert refused.is_error is True
    error = refused.structured_content["error"]
    assert error["kind"] == "rejected"
    assert error["message"].startswith("delete_file inside ask_about_pets needs a person's")
