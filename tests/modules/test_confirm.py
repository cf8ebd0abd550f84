from __future__ import annotations

import asyncio
import contextvars
import json
import pickle
from typing import Any

import pytest
from pydantic import BaseModel

import typedspy as ts
from typedspy.errors import (
    ConfigurationError,
    ResumeStateError,
    ToolArgumentsError,
    ToolError,
    TypedspyError,
)
from typedspy.tools import (
    ConfirmationRejected,
    ConfirmationRequired,
    ResumeState,
    Tool,
    Toolset,
    confirm_first,
    confirmation_id,
    resume,
    tool,
)

SECRET = "test-secret-for-signing-resume-states"


class Calls:
    def __init__(self) -> None:
        self.made: list[dict[str, Any]] = []


def make_delete(calls: Calls) -> Tool:
    @confirm_first
    @tool
    def delete_file(path: str, force: bool = False) -> str:
        """Delete a file."""
        calls.made.append({"path": path, "force": force})
        return f"deleted {path}"

    return delete_file


def pause(t: Tool, arguments: Any) -> ConfirmationRequired:
    with pytest.raises(ConfirmationRequired) as info:
        asyncio.run(t.acall(arguments))
    return info.value


def test_a_confirm_first_tool_raises_instead_of_running() -> None:
    calls = Calls()
    delete = make_delete(calls)
    assert delete.requires_confirmation
    exc = pause(delete, {"path": "/tmp/x"})
    assert calls.made == []
    assert exc.question == 'Run delete_file with {"path": "/tmp/x", "force": false}?'
    assert exc.tool_call == {"name": "delete_file", "arguments": {"path": "/tmp/x", "force": False}}
    assert exc.context == {}
    assert len(exc.confirmation_id) == 32
    assert not isinstance(exc, TypedspyError)  # a pause, not a failure


def test_confirmation_ids_are_stable_and_canonical() -> None:
    delete = make_delete(Calls())
    first = pause(delete, {"path": "/a"}).confirmation_id
    # same final arguments however they were spelled: JSON text, key order, explicit default
    assert pause(delete, '{"path": "/a"}').confirmation_id == first
    assert pause(delete, {"force": False, "path": "/a"}).confirmation_id == first
    assert pause(delete, {"path": "/b"}).confirmation_id != first
    assert pause(delete, {"path": "/a", "force": True}).confirmation_id != first
    assert first == confirmation_id("delete_file", {"force": False, "path": "/a"})
    assert confirmation_id("other_tool", {"path": "/a", "force": False}) != first


def test_approve_runs_once_and_is_consumed() -> None:
    calls = Calls()
    delete = make_delete(calls)
    exc = pause(delete, {"path": "/a"})

    async def main() -> None:
        with resume(ResumeState(exc, "yes")):
            assert await delete.acall({"path": "/a"}) == {"result": "deleted /a"}
            with pytest.raises(ConfirmationRequired):  # the approval was used up
                await delete.acall({"path": "/a"})

    asyncio.run(main())
    assert calls.made == [{"path": "/a", "force": False}]


def test_an_approval_covers_only_its_own_arguments() -> None:
    calls = Calls()
    delete = make_delete(calls)
    exc = pause(delete, {"path": "/a"})

    async def main() -> None:
        with resume(ResumeState(exc, "approve")):
            with pytest.raises(ConfirmationRequired):
                await delete.acall({"path": "/etc"})
            await delete.acall({"path": "/a"})

    asyncio.run(main())
    assert calls.made == [{"path": "/a", "force": False}]


def test_sync_calls_consume_the_approval_in_the_callers_context() -> None:
    calls = Calls()
    delete = make_delete(calls)
    exc = pause(delete, {"path": "/a"})
    with resume(ResumeState(exc, "y")):
        assert delete(path="/a") == {"result": "deleted /a"}
        with pytest.raises(ConfirmationRequired):
            delete(path="/a")
    assert len(calls.made) == 1


def test_reject_raises_rejected_and_does_not_run() -> None:
    calls = Calls()
    delete = make_delete(calls)
    exc = pause(delete, {"path": "/a"})

    async def main() -> ConfirmationRejected:
        with resume(ResumeState(exc, "No")), pytest.raises(ConfirmationRejected) as info:
            await delete.acall({"path": "/a"})
        return info.value

    rejected = asyncio.run(main())
    assert calls.made == []
    assert rejected.confirmation_id == exc.confirmation_id
    assert rejected.tool == "delete_file"
    assert rejected.feedback is None
    assert isinstance(rejected, TypedspyError)


def test_edited_arguments_are_merged_validated_and_used() -> None:
    calls = Calls()
    delete = make_delete(calls)
    exc = pause(delete, {"path": "/a"})
    state = ResumeState(exc, {"path": "/a.bak"})

    async def main() -> dict[str, Any]:
        with resume(state):
            return await delete.acall({"path": "/a"})

    assert asyncio.run(main()) == {"result": "deleted /a.bak"}
    assert calls.made == [{"path": "/a.bak", "force": False}]


def test_invalid_edits_are_argument_errors_and_do_not_run() -> None:
    calls = Calls()
    delete = make_delete(calls)
    exc = pause(delete, {"path": "/a"})

    async def main() -> None:
        with resume(ResumeState(exc, {"force": "maybe"})):
            await delete.acall({"path": "/a"})

    with pytest.raises(ToolArgumentsError) as info:
        asyncio.run(main())
    assert [e.path for e in info.value.errors] == [("force",)]
    assert calls.made == []


def test_feedback_does_not_run_and_carries_the_text() -> None:
    calls = Calls()
    delete = make_delete(calls)
    exc = pause(delete, {"path": "/a"})
    state = ResumeState(exc, "  Only delete files under /tmp please ")
    assert state.action == "feedback"

    async def main() -> ConfirmationRejected:
        with resume(state), pytest.raises(ConfirmationRejected) as info:
            await delete.acall({"path": "/a"})
        return info.value

    rejected = asyncio.run(main())
    assert rejected.feedback == "Only delete files under /tmp please"
    assert "Only delete files under /tmp please" in str(rejected)
    assert calls.made == []


@pytest.mark.parametrize(
    ("response", "action"),
    [
        ("yes", "approve"),
        ("Y", "approve"),
        (" APPROVE ", "approve"),
        ("yes.", "approve"),
        (True, "approve"),
        ("no", "reject"),
        ("N", "reject"),
        ("Reject!", "reject"),
        ("", "reject"),
        (False, "reject"),
        ({"path": "/b"}, "edit"),
        ("yes, but use /b", "feedback"),
        ("nope", "feedback"),
    ],
)
def test_resume_state_reads_the_answer(response: Any, action: str) -> None:
    exc = ConfirmationRequired(
        "Run?", confirmation_id="c1", tool_call={"name": "t", "arguments": {}}
    )
    state = ResumeState(exc, response)
    assert state.action == action
    assert state.approved is (action in ("approve", "edit"))
    assert state.rejected is (action == "reject")
    assert (state.edited_arguments is not None) is (action == "edit")
    assert (state.feedback is not None) is (action == "feedback")
    assert state.confirmation_id == "c1"
    assert state.question == "Run?"


def test_resume_state_rejects_other_answer_types() -> None:
    exc = ConfirmationRequired("Run?", confirmation_id="c1")
    with pytest.raises(ConfigurationError, match="a confirmation answer is a str"):
        ResumeState(exc, 42)  # type: ignore[arg-type]


class Note(BaseModel):
    text: str


def test_resume_state_json_round_trip_resumes_in_a_fresh_object() -> None:
    calls = Calls()
    exc = pause(make_delete(calls), {"path": "/a"})
    exc.context["trajectory"] = [{"step": 1, "note": Note(text="paused here")}]
    exc.tool_call["id"] = "call_7"
    saved = ResumeState(exc, {"force": True}).to_json(secret=SECRET)

    data = json.loads(saved)  # plain JSON, nothing Python-specific
    assert data["context"] == {
        "trajectory": [{"step": 1, "note": {"_type": "Note", "text": "paused here"}}]
    }
    assert data["tool_call"]["id"] == "call_7"

    restored = ResumeState.from_json(saved, secret=SECRET)
    assert restored.confirmation_id == exc.confirmation_id
    assert restored.question == exc.question
    assert restored.tool_call == {**exc.tool_call}
    assert restored.action == "edit"
    assert restored.edited_arguments == {"force": True}
    assert restored.context["trajectory"][0]["note"] == {"_type": "Note", "text": "paused here"}
    again = ResumeState.from_json(restored.to_dict(secret=SECRET), secret=SECRET)
    assert again == restored
    assert again.to_json(secret=SECRET) == saved

    fresh = make_delete(calls)  # a new tool object, as after a restart

    async def main() -> dict[str, Any]:
        with resume(restored):
            return await fresh.acall({"path": "/a"})

    assert asyncio.run(main()) == {"result": "deleted /a"}
    assert calls.made == [{"path": "/a", "force": True}]


@pytest.mark.parametrize("value", [object(), float("nan")], ids=["object", "NaN"])
def test_context_that_is_not_json_ready_cannot_be_saved(value: object) -> None:
    exc = ConfirmationRequired("Run?", confirmation_id="c1", context={"value": value})
    with pytest.raises(ConfigurationError, match="JSON-ready"):  # NaN is not turned into null
        ResumeState(exc, "yes").to_json(secret=SECRET)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("not json", "not a saved ResumeState: not JSON"),
        (b"\xff{}", "not a saved ResumeState: not JSON"),
        ("[]", "not a saved ResumeState: expected a JSON object, not list"),
        ('{"question": "q"}', "the state is not signed"),
        ({"question": "q"}, "the state is not signed"),
        ({"question": "q", "signature": 7}, "signature does not match"),
        ({"question": float("nan"), "signature": "0" * 64}, "not a saved ResumeState: "),
        (5, "expected JSON text or a mapping, not int"),
    ],
)
def test_from_json_rejects_what_is_not_a_saved_state(data: Any, message: str) -> None:
    with pytest.raises(ResumeStateError, match=message):
        ResumeState.from_json(data, secret=SECRET)


def test_saving_and_reading_need_a_secret() -> None:
    state = ResumeState(ConfirmationRequired("Run?", confirmation_id="c1"), "yes")
    with pytest.raises(ConfigurationError, match="to_json needs the secret"):
        state.to_json()
    with pytest.raises(ConfigurationError, match="from_json needs the secret"):
        ResumeState.from_json("{}")
    with pytest.raises(ConfigurationError, match="4 bytes is too short"):
        state.to_json(secret="abcd")
    with pytest.raises(
        ConfigurationError, match="setting resume_secret: a secret of 6 bytes"
    ) as info:
        ts.configure(resume_secret="hunter")
    assert "hunter" not in str(info.value)  # a secret is never shown
    with pytest.raises(ConfigurationError, match="non-empty list"):
        state.to_json(secret=[])
    with pytest.raises(ConfigurationError, match="each secret is a str or bytes, not int"):
        state.to_json(secret=["o" * 32, 42])  # type: ignore[list-item]


def test_the_setting_signs_and_rotated_secrets_still_verify() -> None:
    state = ResumeState(ConfirmationRequired("Run?", confirmation_id="c1"), "yes")
    old, new = "o" * 32, "n" * 32
    with ts.context(resume_secret=old) as settings:
        saved = state.to_json()
        assert "o" * 32 not in repr(settings) and settings.resume_secret == (old.encode(),)
    with ts.context(resume_secret=[new, old]):  # newest first: it signs, both verify
        assert ResumeState.from_json(saved) == state
        assert state.to_json() == state.to_json(secret=new) != saved
    with pytest.raises(ResumeStateError, match="signature does not match"):
        ResumeState.from_json(saved, secret=new)  # the old secret was dropped


def test_a_resume_state_is_one_pydantic_model() -> None:
    exc = ConfirmationRequired(
        "Run?", confirmation_id="c1", tool_call={"name": "t"}, context={"step": 2}
    )
    state = ResumeState(exc, "yes")
    assert isinstance(state, BaseModel)
    assert state.model_dump() == {
        "version": 2,
        "question": "Run?",
        "confirmation_id": "c1",
        "tool_call": {"name": "t"},
        "context": {"step": 2},
        "response": "yes",
    }
    rebuilt = state.exception
    assert (rebuilt.question, rebuilt.confirmation_id, rebuilt.context) == (
        "Run?",
        "c1",
        {"step": 2},
    )
    assert pickle.loads(pickle.dumps(state)) == state
    # Pydantic's own reader does not check signatures: a signed text does not pass it.
    with pytest.raises(ValueError, match="signature"):
        ResumeState.model_validate_json(state.to_json(secret=SECRET))


def test_confirmation_required_pickles_with_its_data() -> None:
    exc = ConfirmationRequired(
        "Run?", confirmation_id="c1", tool_call={"name": "t"}, context={"step": 2}
    )
    copy = pickle.loads(pickle.dumps(exc))
    assert (copy.question, copy.confirmation_id, copy.tool_call, copy.context) == (
        "Run?",
        "c1",
        {"name": "t"},
        {"step": 2},
    )


def test_approvals_are_isolated_between_concurrent_tasks() -> None:
    calls = Calls()
    delete = make_delete(calls)
    paused = pause(delete, {"path": "/a"})
    approved = asyncio.Event()
    checked = asyncio.Event()
    outcomes: dict[str, str] = {}

    async def approver() -> None:
        ResumeState(paused, "yes").apply()  # recorded in this task's context only
        approved.set()
        await checked.wait()
        await delete.acall({"path": "/a"})
        outcomes["approver"] = "ran"

    async def bystander() -> None:
        await approved.wait()
        try:
            await delete.acall({"path": "/a"})
            outcomes["bystander"] = "ran"
        except ConfirmationRequired:
            outcomes["bystander"] = "asked"
        checked.set()

    async def main() -> None:
        await asyncio.gather(approver(), bystander())

    asyncio.run(main())
    assert outcomes == {"approver": "ran", "bystander": "asked"}
    assert len(calls.made) == 1


def test_approvals_scope_forgets_its_decisions_on_exit() -> None:
    calls = Calls()
    delete = make_delete(calls)
    paused = pause(delete, {"path": "/a"})

    def scenario() -> None:
        with resume():
            ResumeState(paused, "yes").apply()
        with pytest.raises(ConfirmationRequired):
            delete(path="/a")
        ResumeState(paused, "yes").apply()  # outside a scope: kept in this context until used
        with resume():  # an inner scope inherits it
            delete(path="/a")
        delete(path="/a")  # ... and consuming it inside did not consume the outer one

    contextvars.copy_context().run(scenario)
    assert len(calls.made) == 2


def test_reject_with_feedback_function() -> None:
    delete = make_delete(Calls())
    paused = pause(delete, {"path": "/a"})

    def scenario() -> None:
        with resume():
            ResumeState(paused, "not that one").apply()
            with pytest.raises(ConfirmationRejected, match="not that one"):
                delete(path="/a")

    contextvars.copy_context().run(scenario)


# -- marking: tools, functions, modules; decorator order --


def test_decorator_order_does_not_matter_and_custom_questions_render() -> None:
    @tool
    @confirm_first(question="Really delete {path}?")
    def remove(path: str) -> str:
        return path

    @confirm_first(question=lambda args: f"Wipe {args['path']} now?")
    @tool
    def wipe(path: str) -> str:
        return path

    assert pause(remove, {"path": "/a"}).question == "Really delete /a?"
    assert pause(wipe, {"path": "/b"}).question == "Wipe /b now?"


def test_a_template_naming_an_unknown_field_is_shown_as_written() -> None:
    @confirm_first(question="Proceed with {nothing}?")
    @tool
    def act(x: int) -> int:
        return x

    assert pause(act, {"x": 1}).question == "Proceed with {nothing}?"


def test_confirm_first_on_a_tool_returns_a_marked_copy() -> None:
    @tool
    def plain(x: int) -> int:
        return x

    marked = confirm_first(plain)
    assert marked is not plain
    assert marked.requires_confirmation and not plain.requires_confirmation
    assert plain(x=1) == {"result": 1}


def test_toolset_keeps_the_mark_of_a_plain_function() -> None:
    @confirm_first
    def send_email(to: str) -> str:
        return to

    # the function itself is only marked: called directly it just runs
    assert send_email("a@b.c") == "a@b.c"
    tools = Toolset([send_email])
    assert tools.get("send_email").requires_confirmation
    with pytest.raises(ConfirmationRequired):
        asyncio.run(tools.acall("send_email", {"to": "a@b.c"}))


class Transfer(ts.Signature):
    """Move money."""

    amount: int = ts.InputField(gt=0)
    receipt: str = ts.OutputField()


def test_confirm_first_on_a_module_class_and_instance() -> None:
    @confirm_first
    class Bank(ts.Module):
        signature = Transfer

        async def aforward(self, **inputs: Any) -> Any:
            return f"sent {inputs['amount']}"

    class Shop(ts.Module):
        signature = Transfer

        async def aforward(self, **inputs: Any) -> Any:
            return f"paid {inputs['amount']}"

    bank_tool = Tool.from_module(Bank())
    assert bank_tool.requires_confirmation
    shop = Shop()
    assert not Tool.from_module(shop).requires_confirmation
    assert confirm_first(shop) is shop
    shop_tool = Tool.from_module(shop, name="shop")
    assert shop_tool.requires_confirmation
    exc = pause(shop_tool, {"amount": 3})
    assert exc.tool_call == {"name": "shop", "arguments": {"amount": 3}}

    async def main() -> dict[str, Any]:
        with resume(ResumeState(exc, "yes")):
            return await shop_tool.acall({"amount": 3})

    assert asyncio.run(main()) == {"receipt": "paid 3"}


def test_invalid_arguments_fail_before_any_confirmation() -> None:
    delete = make_delete(Calls())
    with pytest.raises(ToolArgumentsError):
        asyncio.run(delete.acall({"path": 5}))


def test_confirm_first_refuses_what_cannot_carry_a_mark() -> None:
    with pytest.raises(ToolError, match="cannot mark"):
        confirm_first(len)
    with pytest.raises(ToolError, match="needs a Tool, Module or function"):
        confirm_first(42)
