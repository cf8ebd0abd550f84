"""The probe (ADR-085): canary requests over a real socket, the stand-in's quirk modes, the
report's table, the profile it refines, the file it saves, the command line."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

import typedspy as ts
from faults.server import FaultServer, Reply, Seen, completion_body
from typedspy.profiles import ProbeReport, Verdict
from typedspy.testing import Quirks, StandIn

CAPABILITIES = (
    "json_schema",
    "strict_rules",
    "json_object",
    "tools",
    "stream_usage",
    "logprobs",
    "max_tokens",
)


def probed(quirks: Quirks | None = None, **options: object) -> tuple[ProbeReport, ts.LM, StandIn]:
    with StandIn(quirks=quirks, **options) as standin:  # type: ignore[arg-type]
        lm = ts.LM("m", base_url=standin.base_url, api_key="k", max_retries=0)
        try:
            report = lm.probe(timeout=10)
        finally:
            lm.close()
    return report, lm, standin


def verdicts(report: ProbeReport) -> dict[str, Verdict]:
    return {f.capability: f.verdict for f in report.findings}


# The stand-in returns no logprobs, and its short plain reply stops by itself within any cap.
BASE: dict[str, Verdict] = {
    "json_schema": "enforced",
    "strict_rules": "enforced",
    "json_object": "enforced",
    "tools": "enforced",
    "stream_usage": "enforced",
    "logprobs": "ignored",
    "max_tokens": "unknown",
}


@pytest.mark.parametrize(
    ("quirks", "changed"),
    [
        (None, {}),
        (Quirks(ignores_strict=True), {"strict_rules": "ignored"}),
        (Quirks(fails_open=True), {"json_schema": "ignored"}),
        (Quirks(rejects_json_object=True), {"json_object": "refused"}),
        (
            Quirks(ignores_response_format=True),
            {"json_schema": "ignored", "strict_rules": "ignored", "json_object": "ignored"},
        ),
    ],
    ids=["plain", "ignores_strict", "fails_open", "rejects_json_object", "ignores_format"],
)
def test_each_quirk_mode_gives_its_table(
    quirks: Quirks | None, changed: dict[str, Verdict]
) -> None:
    report, _, standin = probed(quirks)

    assert verdicts(report) == {**BASE, **changed}
    assert report.requests == len(standin.requests) == len(CAPABILITIES)
    assert [f.capability for f in report.findings] == list(CAPABILITIES)


def test_every_canary_is_small_and_its_token_is_not_in_the_prompt() -> None:
    _, _, standin = probed()
    for body in standin.requests:
        assert body["max_tokens"] <= 48
        fmt = body.get("response_format") or {}
        schema = fmt.get("json_schema", {}).get("schema") or fmt.get("schema")
        if schema:
            ((name, spec),) = schema["properties"].items()
            assert name not in json.dumps(body["messages"])
            assert spec["enum"][0] not in json.dumps(body["messages"])


def test_a_server_that_ignores_the_format_is_not_trusted_with_it() -> None:
    report, lm, _ = probed(Quirks(ignores_response_format=True), server="vllm")

    assert report.profile == "vllm"
    assert lm.profile.modes[0] == "prompt"  # enforced modes first; ignored ones last
    assert lm.profile.schema_hint is True
    assert "200 without the canary token" in next(
        f.detail for f in report.findings if f.capability == "json_schema"
    )


def test_a_refused_mode_is_dropped_and_the_refinement_holds_for_the_base_url() -> None:
    with StandIn(quirks=Quirks(rejects_json_object=True), server="llama.cpp") as standin:
        lm = ts.LM("m", base_url=standin.base_url, api_key="k", max_retries=0)
        lm.probe()
        lm.close()
        assert lm.profile.modes == ("json_schema",)  # llama.cpp's profile never prompts
        later = ts.LM("m", base_url=standin.base_url, api_key="k")  # not used: nothing to close
        assert later.profile.modes == ("json_schema",)
        assert standin.models_requests == 1


def test_the_report_prints_as_a_table_and_saves_as_json(tmp_path: Path) -> None:
    with StandIn(quirks=Quirks(fails_open=True)) as standin:
        lm = ts.LM("m", base_url=standin.base_url, api_key="k", max_retries=0)
        report = lm.probe(save=tmp_path / "probe.json")
        lm.close()

    lines = str(report).splitlines()
    assert lines[1].split() == ["capability", "verdict", "detail"]
    assert lines[2].split()[:2] == ["json_schema", "ignored"]
    assert ProbeReport.load(tmp_path / "probe.json") == report
    with pytest.raises(ts.ConfigurationError, match=r"not\.json"):
        ProbeReport.load(tmp_path / "not.json")


def test_the_async_probe_is_the_same_path() -> None:
    async def run(url: str) -> ProbeReport:
        lm = ts.LM("m", base_url=url, api_key="k", max_retries=0)
        report = await lm.aprobe()
        await lm.aclose()
        return report

    with StandIn(quirks=Quirks(ignores_strict=True)) as standin:
        report = asyncio.run(run(standin.base_url))
    assert report.verdict("strict_rules") == "ignored"


def test_an_unreachable_server_is_unknown_everywhere_in_seven_requests() -> None:
    lm = ts.LM("m", base_url="http://127.0.0.1:9/v1", api_key="k", max_retries=3)
    report = lm.probe(timeout=2)
    lm.close()
    assert {f.verdict for f in report.findings} == {"unknown"}
    assert report.requests == len(CAPABILITIES)  # no transport retry


def test_the_command_line_prints_the_table(tmp_path: Path) -> None:
    with StandIn(server="llama.cpp", quirks=Quirks(fails_open=True)) as standin:
        done = subprocess.run(
            [
                *(sys.executable, "-m", "typedspy.probe", standin.base_url),
                *("--model", "m", "--save", str(tmp_path / "r.json")),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert "identified: profile 'llama.cpp'" in done.stdout
    assert "json_object   ignored" in done.stdout  # llama.cpp's json_object carries the schema
    assert ProbeReport.load(tmp_path / "r.json").profile == "llama.cpp"


def chunk(**choice: object) -> dict[str, object]:
    return {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": {}, "finish_reason": None, **choice}]}  # fmt: skip


def misbehaving(max_tokens_reply: Reply) -> Reply:
    """A server that refuses json_schema, ignores a forced tool_choice and stream usage."""

    def answer(seen: Seen) -> Reply:
        body = seen.json()
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            return Reply.json({"error": {"message": "no json_schema here"}}, status=400)
        if "tools" in body:
            return Reply.completion("I would rather not call it.")
        if body.get("stream"):
            return Reply.sse([chunk(delta={"content": "hi"}), chunk(finish_reason="stop")])
        if body.get("max_tokens") == 3:
            return max_tokens_reply
        return Reply.completion("{}")

    return Reply(echo=answer)


def no_usage(**message: object) -> dict[str, object]:
    body = completion_body(message.pop("content", None), **message)
    del body["usage"]
    return body


@pytest.mark.parametrize(
    ("max_tokens_reply", "max_tokens"),
    [
        (Reply.json({**no_usage(content="1 2 3 4"), "usage": {"completion_tokens": 40}}),
         ("ignored", "40 completion tokens for max_tokens=3")),
        (Reply.json(no_usage(content="1 2 3 4 5 6 7 8 9 " * 8)),
         ("ignored", "144 characters for max_tokens=3")),
        (Reply.json({**completion_body("1 2"), "usage": {"completion_tokens": 3},
                     "choices": [{"index": 0, "finish_reason": "length",
                                  "message": {"role": "assistant", "content": "1 2"}}]}),
         ("enforced", "finish_reason length at 3 tokens")),
    ],
    ids=["usage_past_the_cap", "text_past_the_cap", "cut_at_the_cap"],
)  # fmt: skip
def test_a_misbehaving_server_gets_each_verdict_that_shows_it(
    max_tokens_reply: Reply, max_tokens: tuple[Verdict, str]
) -> None:
    with FaultServer(misbehaving(max_tokens_reply)) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        report = lm.probe(timeout=10)
        lm.close()
    found = {f.capability: (f.verdict, f.detail) for f in report.findings}
    assert found["json_schema"][0] == "refused"
    assert found["strict_rules"] == ("unknown", "json_schema was refused")
    assert found["tools"] == ("ignored", "no tool call for a forced tool_choice")
    assert found["stream_usage"] == ("ignored", "no usage chunk at the end of the stream")
    assert found["max_tokens"] == max_tokens
    assert "json_schema" not in lm.profile.modes
    assert lm.profile.dependable_tool_calling is False  # tool calls were not honoured
    unchecked = report.model_copy(update={"findings": report.findings[:1]})
    assert unchecked.verdict("tools") == "unknown"  # a report without that finding
