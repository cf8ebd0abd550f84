"""The probe's canaries, how each reply is judged, and the report that refines a profile (ADR-085).

A canary is one small request whose answer a model cannot give by accident: its schema has one
required property with a random name whose value must be a random token (a one-value ``enum``),
and the prompt names neither. A reply that carries the token was constrained by the server; a
reply without it was not, whatever the status said. Nothing here sends: `LM.aprobe` sends each
canary once and hands the reply back as a `Seen`.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from typedspy._files import write_atomically
from typedspy.errors import ConfigurationError
from typedspy.profiles._profile import Mode, Profile

__all__ = [
    "CANARY_MAX_TOKENS",
    "Canary",
    "Capability",
    "Finding",
    "ProbeReport",
    "Seen",
    "Verdict",
    "canaries",
    "findings",
    "judge",
]

Capability = Literal[
    "json_schema", "strict_rules", "json_object", "tools", "stream_usage", "logprobs", "max_tokens"
]
"""What the probe checks: strict ``json_schema`` decoding, the strict subset's rules checked,
``json_object`` (with the profile's schema, where it sends one), a forced strict tool call's
arguments, the usage chunk of a stream, ``logprobs``, and a small ``max_tokens`` kept to."""

Verdict = Literal["enforced", "ignored", "refused", "unknown"]
"""``enforced``: the server did it; ``ignored``: it answered 200 without doing it; ``refused``:
it answered an error status; ``unknown``: no answer (timeout, connection) or nothing to tell."""

CANARY_MAX_TOKENS = 48
"""The ``max_tokens`` of every canary but the ``max_tokens`` one (the canary JSON is ~15)."""
_CAP = 3  # the max_tokens canary's cap: any reply to its prompt runs past it


@dataclass(frozen=True)
class Canary:
    """One probe request: the body's parts (without ``model``) and whether it is streamed."""

    capability: Capability
    messages: tuple[dict[str, Any], ...]
    params: Mapping[str, Any]
    response_format: Mapping[str, Any] | None = None
    tools: tuple[Mapping[str, Any], ...] = ()
    tool_choice: Mapping[str, Any] | None = None
    stream: bool = False
    token: str = ""
    name: str = ""
    schema_in_format: bool = field(default=True)


@dataclass(frozen=True)
class Seen:
    """What came back for a canary, read by the LM (no SDK types here).

    Attributes:
        status: The HTTP status (200, or the error's), ``None`` when nothing came back.
        error: The error's message, when there was one.
        text: The reply's content.
        tool_arguments: The first tool call's arguments, if any.
        finish_reason: The reply's finish reason.
        completion_tokens: The usage reported, ``None`` when none was.
        logprobs: Whether the reply carried token logprobs.
    """

    status: int | None
    error: str = ""
    text: str | None = None
    tool_arguments: str | None = None
    finish_reason: str | None = None
    completion_tokens: int | None = None
    logprobs: bool = False


def canaries(profile: Profile) -> list[Canary]:
    """The probe's requests for an endpoint under ``profile``, with fresh random tokens."""
    token, name = f"zq{secrets.token_hex(4)}", f"k_{secrets.token_hex(3)}"
    schema = {
        "type": "object",
        "properties": {name: {"type": "string", "enum": [token]}},
        "required": [name],
        "additionalProperties": False,
    }
    loose = {k: v for k, v in schema.items() if k != "additionalProperties"}
    greet = ({"role": "user", "content": "Reply with a short greeting."},)
    prose = ({"role": "user", "content": "Answer in one plain sentence, not JSON: what is a cat?"},)
    small = {"max_tokens": CANARY_MAX_TOKENS}
    tool = f"record_{secrets.token_hex(3)}"
    strict = profile.response_format("json_schema", "probe", schema, True)
    loosened = profile.response_format("json_schema", "probe", loose, True)
    json_object = profile.response_format("json_object", "probe", schema, True)
    return [
        Canary("json_schema", greet, small, strict, token=token, name=name),
        Canary("strict_rules", greet, small, loosened, token=token, name=name),
        Canary(
            "json_object",
            prose,
            small,
            json_object,
            schema_in_format=profile.json_object_schema,
            token=token,
            name=name,
        ),
        Canary(
            "tools",
            greet,
            small,
            tools=(
                {
                    "type": "function",
                    "function": {
                        "name": tool,
                        "description": "Record the reply.",
                        "strict": True,
                        "parameters": schema,
                    },
                },
            ),
            tool_choice={"type": "function", "function": {"name": tool}},
            token=token,
            name=name,
        ),
        Canary("stream_usage", greet, small, stream=True),
        Canary("logprobs", greet, {**small, "logprobs": True}),
        Canary(
            "max_tokens",
            ({"role": "user", "content": "Count from 1 to 50, separated by spaces."},),
            {"max_tokens": _CAP},
        ),
    ]


def judge(canary: Canary, seen: Seen) -> tuple[Verdict, str]:
    """The verdict on ``canary`` from what came back, and what showed it."""
    if seen.status is None:
        return "unknown", seen.error or "no reply"
    if canary.capability == "strict_rules":
        if seen.status >= 400:
            return "enforced", f"{seen.status} for a schema outside the strict subset"
        return "ignored", "200 for a schema without additionalProperties: false"
    if seen.status >= 400:
        return "refused", f"{seen.status}: {seen.error}"[:160]
    if canary.capability == "stream_usage":
        if seen.completion_tokens is None:
            return "ignored", "no usage chunk at the end of the stream"
        return "enforced", f"usage chunk: {seen.completion_tokens} completion tokens"
    if canary.capability == "logprobs":
        return ("enforced", "logprobs in the reply") if seen.logprobs else ("ignored", "none")
    if canary.capability == "max_tokens":
        return _cap_kept(seen)
    if canary.capability == "tools" and seen.tool_arguments is None:
        return "ignored", "no tool call for a forced tool_choice"
    text = seen.tool_arguments if canary.capability == "tools" else seen.text
    if canary.capability == "json_object" and not canary.schema_in_format:
        shaped = isinstance(_decoded(text), dict)
        return ("enforced", "a JSON object") if shaped else ("ignored", f"{_cut(text)}")
    if canary.token in (text or ""):
        return "enforced", "the canary token came back"
    return "ignored", f"200 without the canary token: {_cut(text)}"


def _cap_kept(seen: Seen) -> tuple[Verdict, str]:
    tokens = seen.completion_tokens
    if tokens is not None and tokens > _CAP:
        return "ignored", f"{tokens} completion tokens for max_tokens={_CAP}"
    if tokens is None and len(seen.text or "") > 16 * _CAP:
        return "ignored", f"{len(seen.text or '')} characters for max_tokens={_CAP}"
    if seen.finish_reason == "length":
        return "enforced", f"finish_reason length at {tokens} tokens"
    return "unknown", f"stopped by itself ({seen.finish_reason}) within max_tokens={_CAP}"


def _decoded(text: str | None) -> object:
    try:
        return json.loads(text or "")
    except ValueError:
        return None


def _cut(text: str | None) -> str:
    shown = repr(text or "")
    return shown if len(shown) <= 60 else shown[:57] + "..."


class Finding(BaseModel):
    """The verdict on one capability.

    Attributes:
        capability: What was checked.
        verdict: ``enforced``, ``ignored``, ``refused`` or ``unknown``.
        detail: What showed it (a status, the reply cut short, the usage).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    capability: Capability
    verdict: Verdict
    detail: str = ""


class ProbeReport(BaseModel):
    """What an endpoint enforces, ignores or refuses, per capability (``lm.probe()``).

    Attributes:
        base_url: The endpoint probed (credentials removed).
        model: The model the canaries named.
        profile: The profile the endpoint was probed under (what the canaries sent follows it).
        requests: How many requests the probe sent.
        findings: One verdict per capability, in the probe's order.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str | None
    model: str
    profile: str
    requests: int
    findings: tuple[Finding, ...]

    def verdict(self, capability: Capability) -> Verdict:
        """The verdict on ``capability`` (``unknown`` when it was not checked)."""
        for finding in self.findings:
            if finding.capability == capability:
                return finding.verdict
        return "unknown"

    def refine(self, profile: Profile) -> Profile:
        """``profile`` changed by what the probe showed (a copy with an empty memory).

        A refused mode is dropped; enforced modes go first, ``prompt`` before modes whose
        schema was ignored (it is added for them, or when every mode was refused, and is not
        for a profile whose modes hold: llama.cpp's never prompts); any ignored schema puts the
        shape into the prompt; tool calling that was refused or ignored is not trusted to drive
        an agent.
        """
        by_mode: dict[Mode, Verdict] = {
            "json_schema": self.verdict("json_schema"),
            "json_object": self.verdict("json_object"),
            "tools": self.verdict("tools"),
            "prompt": "unknown",
        }
        kept: list[Mode] = [m for m in profile.modes if by_mode[m] != "refused"]
        if not kept or any(by_mode[m] == "ignored" for m in kept):
            kept.append("prompt")
        rank = {"enforced": 0, "unknown": 1, "ignored": 3}

        def place(mode: Mode) -> int:
            return 2 if mode == "prompt" else rank[by_mode[mode]]

        unique: list[Mode] = list(dict.fromkeys(kept))
        order = sorted(unique, key=place)
        schema_ignored = "ignored" in (by_mode["json_schema"], by_mode["json_object"])
        changes: dict[str, Any] = {"modes": tuple(order)}
        if schema_ignored:
            changes["schema_hint"] = True
        if self.verdict("tools") in ("ignored", "refused"):
            changes["dependable_tool_calling"] = False
        return profile.derive(**changes)

    def table(self) -> str:
        """The findings as a plain-text table, one capability a line."""
        rows = [("capability", "verdict", "detail")]
        rows += [(f.capability, f.verdict, f.detail) for f in self.findings]
        width = [max(len(r[i]) for r in rows) for i in range(2)]
        lines = [f"{r[0]:<{width[0]}}  {r[1]:<{width[1]}}  {r[2]}".rstrip() for r in rows]
        head = f"{self.base_url or 'OpenAI'} ({self.model}, profile {self.profile!r}, "
        return head + f"{self.requests} requests)\n" + "\n".join(lines)

    def save(self, path: str | Path) -> None:
        """Write the report as JSON to ``path`` (`load` reads it back)."""
        write_atomically(path, self.model_dump_json(indent=2) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> ProbeReport:
        """A report `save` wrote.

        Raises:
            ConfigurationError: The file cannot be read or is not a probe report.
        """
        try:
            return cls.model_validate_json(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"ProbeReport.load({str(path)!r}): {exc}") from exc

    def __str__(self) -> str:
        return self.table()


def findings(pairs: Sequence[tuple[Canary, Seen]]) -> tuple[Finding, ...]:
    """The verdicts on the canaries sent.

    ``strict_rules`` is unknown where ``json_schema`` was refused: the loose schema's error then
    says nothing about the strict rules.
    """
    out: list[Finding] = []
    for canary, seen in pairs:
        verdict, detail = judge(canary, seen)
        out.append(Finding(capability=canary.capability, verdict=verdict, detail=detail))
    if any(f.capability == "json_schema" and f.verdict == "refused" for f in out):
        out = [
            Finding(capability=f.capability, verdict="unknown", detail="json_schema was refused")
            if f.capability == "strict_rules"
            else f
            for f in out
        ]
    return tuple(out)
