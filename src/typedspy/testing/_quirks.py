"""How OpenAI-compatible servers other than OpenAI misbehave, for the stand-in to impersonate.

Each quirk is a documented behaviour of a real server (reference/local-servers.md, the public
threads cited on each field below); `Quirks.of` bundles them per built-in profile so a test can
run typedspy with a profile against a server that fails the way that profile expects.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["QUIRK_PRESETS", "SERVERS", "Quirks", "models_reply", "spoil"]

_LOOP_PHRASE = "and so on, "
_DEFAULT_CAP = 512  # tokens a quirky reply runs to when the request sets no max_tokens


@dataclass(frozen=True)
class Quirks:
    """Misbehaviours of a non-OpenAI server that `StandIn(quirks=...)` reproduces.

    Attributes:
        ignores_strict: ``strict`` is ignored: any JSON Schema is accepted in
            ``response_format`` and tools, none is checked against OpenAI's strict subset
            (llama.cpp, vLLM, Ollama).
        fails_open: Answers 200 with output the schema does not constrain: number bounds are
            broken where the schema has them (llama.cpp does not enforce ``minimum``/
            ``maximum``), else a required property is left out (a grammar that failed to parse
            is dropped silently, ggml-org/llama.cpp#19051).
        whitespace_loop: A structured reply stops halfway and fills the rest of
            ``max_tokens`` with whitespace, ``finish_reason`` ``length`` (vLLM/xgrammar allow
            unbounded whitespace, vllm-project/vllm#38696).
        repetition_loop: A structured reply repeats a phrase inside its first string until
            ``max_tokens`` (small local models; one real run: 4 of 12 calls).
        ignores_response_format: ``response_format`` is accepted, whatever it holds, and
            ignored: the reply is what it would be without one (Ollama's MLX backend,
            ollama/ollama#17933, #17183, #16563).
        rejects_json_object: ``response_format`` ``json_object`` is a 400 (LM Studio:
            "'response_format.type' must be 'json_schema'", lmstudio-bug-tracker#189).
        constrains_tool_steps: ``response_format`` constrains every generation, tool steps
            included, so a request with both tools and ``response_format`` gets the formatted
            content and never a tool call (vLLM, pydantic/pydantic-ai#6552).
        times: How many structured replies ``fails_open`` and the loops spoil before the
            server behaves (``None``: every one).
    """

    ignores_strict: bool = False
    fails_open: bool = False
    whitespace_loop: bool = False
    repetition_loop: bool = False
    rejects_json_object: bool = False
    constrains_tool_steps: bool = False
    ignores_response_format: bool = False
    times: int | None = None

    @classmethod
    def of(cls, profile: str, *, times: int | None = None) -> Quirks:
        """The quirks of the server a built-in profile names (``"openai"`` has none).

        Raises:
            KeyError: No preset for that profile name (the message lists them).
        """
        try:
            preset = QUIRK_PRESETS[profile]
        except KeyError:
            raise KeyError(
                f"no quirks preset {profile!r}; known: {sorted(QUIRK_PRESETS)}"
            ) from None
        return cls(**preset, times=times)

    @property
    def spoils_output(self) -> bool:
        """Whether any quirk changes the content of structured replies."""
        return self.fails_open or self.whitespace_loop or self.repetition_loop


QUIRK_PRESETS: dict[str, dict[str, bool]] = {
    "openai": {},
    "azure": {},
    "generic": {},
    "vllm": {"ignores_strict": True, "whitespace_loop": True, "constrains_tool_steps": True},
    "llama.cpp": {"ignores_strict": True, "fails_open": True},
    "ollama": {"ignores_strict": True},
    "lmstudio": {"rejects_json_object": True},
}


def spoil(
    quirks: Quirks, content: str, schema: dict[str, Any], max_tokens: int | None
) -> tuple[str, str]:
    """The content and finish reason a quirky server sends instead of the valid ``content``."""
    cap = max_tokens or _DEFAULT_CAP
    if quirks.whitespace_loop:
        return content[: max(1, len(content) // 2)] + "\n" * cap, "length"
    if quirks.repetition_loop:
        return _repeating(content, cap), "length"
    value = json.loads(content)
    if isinstance(value, dict):
        _break(value, schema)
    return json.dumps(value, separators=(",", ":")), "stop"


def _repeating(content: str, cap: int) -> str:
    """The reply cut inside its first string, that string repeating one phrase to the cap."""
    start = content.find(':"')
    prefix = content[: start + 2] if start >= 0 else content[: len(content) // 2] + ' "'
    return prefix + _LOOP_PHRASE * max(8, cap // 3)


def _break(value: dict[str, Any], schema: dict[str, Any]) -> None:
    """Break a number bound where the schema has one, else drop the last required property."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return
    for name, spec in properties.items():
        if not isinstance(spec, dict) or name not in value:
            continue
        if "maximum" in spec:
            value[name] = spec["maximum"] + 9
            return
        if "minimum" in spec:
            value[name] = spec["minimum"] - 9
            return
    required = [name for name in schema.get("required", []) if name in value]
    if required:
        del value[required[-1]]


# What each server answers to GET /v1/models: its headers, and the fields of each model entry
# (typedspy/profiles/_detect.py cites the source of each). "none" has no /v1/models (404);
# "garbage" answers 200 with a body that is not JSON.
SERVERS: dict[str, tuple[dict[str, str], dict[str, Any]]] = {
    "openai": ({"openai-version": "2020-10-01"}, {"owned_by": "system", "created": 0}),
    "llama.cpp": ({}, {"owned_by": "llamacpp", "created": 0, "meta": {"n_ctx_train": 8192}}),
    "vllm": ({"server": "uvicorn"}, {"owned_by": "vllm", "created": 0, "max_model_len": 8192}),
    "sglang": ({"server": "uvicorn"}, {"owned_by": "sglang", "created": 0, "root": "m"}),
    "ollama": ({}, {"owned_by": "library", "created": 0}),
    "lmstudio": ({}, {"owned_by": "organization_owner"}),
    "llama-cpp-python": ({"server": "uvicorn"}, {"owned_by": "me", "permissions": []}),
    "unknown": ({}, {"owned_by": "someone", "created": 0}),
    "none": ({}, {}),
    "garbage": ({}, {}),
}


def models_reply(server: str, model: str) -> tuple[int, dict[str, str], bytes]:
    """The status, headers and body ``server`` answers to ``GET /v1/models``."""
    headers, fields = SERVERS[server]
    if server == "none":
        return 404, headers, b'{"error": {"message": "Not found"}}'
    if server == "garbage":
        return 200, headers, b"<html>not an API</html>"
    entry = {"id": model, "object": "model", **fields}
    return 200, headers, json.dumps({"object": "list", "data": [entry]}).encode()
