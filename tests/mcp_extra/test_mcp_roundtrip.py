"""A module served over MCP and used by a ReAct agent behaves like the same module used locally.

The agent's model is the real openai client answered by respx; the tools are the real MCP
client talking to the real server, in process and over stdio (a subprocess).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from typing import Any

import mcp_types
import pytest
import respx
from mcp_app import PetLookup
from mcp_wire import AskAboutPets, script, stdio_params

import typedspy as ts
import typedspy.mcp
from typedspy.testing import FakeLM
from wire import BASE_URL, make_lm, sent

ElicitParams = mcp_types.ElicitRequestParams


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=True) as mock:
        yield mock


def local_run(router: respx.MockRouter) -> tuple[ts.Prediction[Any], list[dict[str, Any]]]:
    route = script(router)
    agent = ts.ReAct(AskAboutPets, tools=[PetLookup()], lm=make_lm())
    prediction = agent(question="What can Rex do?")
    bodies = sent(route)
    router.routes.clear()
    return prediction, bodies


def test_served_in_process_the_agent_sends_and_gets_exactly_what_it_does_locally(
    router: respx.MockRouter,
) -> None:
    local, local_sent = local_run(router)
    route = script(router)

    async def main() -> ts.Prediction[Any]:
        async with ts.mcp.tools(ts.mcp.serve(PetLookup())) as remote:
            agent = ts.ReAct(AskAboutPets, tools=remote, lm=make_lm())
            return await agent.acall(question="What can Rex do?")

    remote = asyncio.run(main())
    assert remote.answer == local.answer == "Rex can sit, roll and fetch"
    remote_sent = sent(route)
    assert_same_requests(remote_sent, local_sent)
    tools_spec = remote_sent[0]["tools"][0]["function"]
    assert tools_spec["name"] == "look_up_pet" and tools_spec["strict"] is True
    observations = [m["content"] for m in remote_sent[2]["messages"] if m["role"] == "tool"]
    assert (
        observations[0] == '{"pet":{"_type":"Dog","tricks":["sit","roll","fetch"]},"owner":"Ann"}'
    )
    assert remote.trajectory.steps[0].calls[0].observation == observations[0]


def assert_same_requests(remote: list[dict[str, Any]], local: list[dict[str, Any]]) -> None:
    """Equal bodies, but for the wording of the invalid-arguments observation.

    Locally Pydantic words it; for a remote tool jsonschema checks the remote inputSchema
    before the call. Both name the argument and say the tool was not run.
    """
    remote_said, local_said = remote[2]["messages"].pop(), local[2]["messages"].pop()
    assert remote == local
    for said, wording in [
        (remote_said, "0 is less than the minimum of 1"),
        (local_said, "Input should be greater than or equal to 1, got 0"),
    ]:
        assert said["tool_call_id"] == "c2"
        assert said["content"] == (
            "Error: the arguments for look_up_pet are invalid, so it was not run: "
            f"look_up_pet: invalid arguments: limit: {wording}"
        )


def test_served_over_stdio_by_the_command_line_the_agent_behaves_the_same(
    router: respx.MockRouter,
) -> None:
    local, local_sent = local_run(router)
    route = script(router)
    asked: list[str] = []

    async def approve(
        context: Any, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        asked.append(params.message)
        return mcp_types.ElicitResult(action="accept", content={"approve": True})

    params = stdio_params("--name", "pets")
    with ts.mcp.tools(params, elicitation_callback=approve) as remote:
        assert remote.names == [
            "look_up_pet",
            "broken_count",
            "delete_file",
            "server_pid",
            "roll_dice",
        ]
        pid = remote.get("server_pid")()["result"]
        with pytest.raises(typedspy.mcp.RemoteToolError) as info:
            remote.get("broken_count")(word="x")
        with pytest.raises(ts.errors.ToolArgumentsError) as invalid:  # caught before the call
            remote.get("look_up_pet")(pet_name="Rex", limit=0)
        with pytest.raises(typedspy.mcp.RemoteResultError) as lying:
            remote.get("roll_dice")(sides=6)
        assert remote.get("delete_file")(path="/tmp/a") == {"result": "deleted /tmp/a"}
        agent = ts.ReAct(AskAboutPets, tools=[remote.get("look_up_pet")], lm=make_lm())
        prediction = agent(question="What can Rex do?")
    assert info.value.kind == "invalid_result"
    assert [e.path for e in info.value.errors] == [("total",)]
    assert [e.path for e in invalid.value.errors] == [("limit",)]
    assert [(e.path, e.message) for e in lying.value.errors] == [
        (("result",), "42 is greater than the maximum of 10")
    ]
    assert asked == ["Delete /tmp/a?"]
    assert prediction.answer == local.answer
    assert_same_requests(sent(route), local_sent)
    assert pid != os.getpid()
    with pytest.raises(ProcessLookupError):  # leaving the block ended the server process
        os.kill(pid, 0)


def test_in_union_mode_a_remote_tool_is_a_member_with_the_remote_schemas() -> None:
    replies = [
        '{"reasoning": "look", "next": {"_type": "look_up_pet", "pet_name": "Rex", "limit": 2}}',
        '{"reasoning": "done", "next": {"_type": "finish", "answer": "sit and roll"}}',
    ]

    async def main(lm: FakeLM) -> ts.Prediction[Any]:
        async with ts.mcp.tools(ts.mcp.serve(PetLookup())) as remote:
            agent = ts.ReAct(AskAboutPets, tools=remote, lm=lm, mode="union")
            return await agent.acall(question="What can Rex do?")

    lm = FakeLM(replies)
    prediction = asyncio.run(main(lm))
    assert prediction.answer == "sit and roll"
    call = prediction.trajectory.steps[0].calls[0]
    assert call.observation == '{"pet":{"_type":"Dog","tricks":["sit","roll"]},"owner":"Ann"}'
    schema = lm.requests[0].response_format["json_schema"]["schema"]
    member = schema["$defs"]["look_up_pet"]  # the union member is named after the remote tool
    assert member["properties"]["pet_name"] == {"description": "the pet's name", "type": "string"}
    assert member["properties"]["limit"]["minimum"] == 1  # the remote subschema, carried over
