"""`Profile`: what one endpoint accepts and how it fails, decided in one place.

Every provider-specific choice above the LM layer is read from the `Profile` the LM owns: the
schema target, the wire format of each output mode, whether the schema hint goes into the
prompt, whether ``response_format`` may travel with tools, whether tool calling is dependable,
the token cap for structured calls, the remedies for silent failures, and what the endpoint
has been seen to reject or fail at run time (ADR-016). Nothing here imports ``openai``.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from typedspy.errors import ConfigurationError
from typedspy.schema import Target

__all__ = ["MAX_TOKEN_CAP", "LoopRemedy", "Mode", "Profile", "token_cap_problem"]

Mode = Literal["json_schema", "json_object", "prompt", "tools"]
"""How a call asks for its outputs: native structured outputs, JSON mode, a prompted shape, or
one forced tool call."""


@dataclass(frozen=True)
class LoopRemedy:
    """One bounded re-ask after a runaway completion (at most once per call).

    Attributes:
        note: The instruction sent instead of the runaway reply (which is not sent back).
        params: Request parameters for the re-ask (e.g. ``{"frequency_penalty": 1.0}``).
    """

    note: str
    params: Mapping[str, Any] = field(default_factory=dict)


_VARY = LoopRemedy(note="", params={"temperature": 0.7})
"""After a failed reply repeated byte for byte: sample instead of decoding greedily."""

_CAPS = frozenset({"max_tokens", "max_completion_tokens"})
"""The request parameters that cap a completion's length: either one set keeps the profile's off."""

MAX_TOKEN_CAP = 2**31 - 1
"""The largest token cap sent: servers read it as a 32-bit count (llama.cpp's ``n_predict``), and
no model writes more; a larger one was refused by the endpoint, or wrapped round by it."""


def token_cap_problem(cap: object) -> str | None:
    """Why ``cap`` cannot be a ``max_tokens`` (or ``max_completion_tokens``); None when it can."""
    if cap is None or (
        isinstance(cap, int) and not isinstance(cap, bool) and 1 <= cap <= MAX_TOKEN_CAP
    ):
        return None
    return f"a positive int up to {MAX_TOKEN_CAP:_} (2**31 - 1), or None for no cap"


_COMPACT = LoopRemedy(
    note=(
        "Your previous reply ran to the token limit with whitespace. Reply again with the "
        "complete output as compact JSON on one line: no indentation, no blank lines."
    )
)
_SHORT_STRINGS = LoopRemedy(
    note=(
        "Your previous reply repeated itself until the token limit. Reply again with the "
        "complete output as one JSON object; keep every string short (one sentence at most) "
        "and do not repeat words, phrases or symbols."
    ),
    params={"frequency_penalty": 1.0},
)


@dataclass(eq=False)
class Profile:
    """What an OpenAI-compatible endpoint accepts and how it fails.

    An `LM` owns one (``LM(model, profile="llama.cpp")``, or a `Profile` instance); every
    provider-specific decision typedspy makes is read from it. Built-in profiles come from
    `Profile.named`; define your own with `derive` (or a subclass overriding the methods).

    Example:
        ```python
        lm = ts.LM("qwen3", base_url="http://127.0.0.1:8080/v1", profile="llama.cpp")
        mine = ts.Profile.named("vllm").derive(name="my-vllm", max_tokens=4096)
        ```

    Attributes:
        name: The profile's name (``"openai"``, ``"llama.cpp"``, ...).
        target: The schema target sent to the endpoint: ``"openai-strict"`` (the strict subset)
            or ``"json-schema"`` (full JSON Schema, for engines that take it).
        modes: The output modes ``auto`` tries, in order (at least one); a mode the endpoint
            rejects is skipped from then on, and ``auto`` never leaves them.
        json_object_schema: ``json_object`` mode carries the schema in ``response_format``
            (``{"type": "json_object", "schema": ...}``, which llama.cpp enforces).
        schema_hint: The output shape goes into the prompt even when the schema is sent in
            ``response_format`` or a tool (servers that constrain decoding without showing the
            schema to the model). Modes without an enforced schema always get it.
        response_format_with_tools: ``response_format`` may be sent together with tools (False
            where it would constrain tool steps too).
        dependable_tool_calling: Native tool calling works well enough to drive an agent; when
            False, agents use one strict step schema under ``response_format`` instead.
        parallel_tool_calls: What to send as ``parallel_tool_calls`` with strict tools
            (``None``: leave it out).
        max_tokens: The ``max_tokens`` cap sent with structured calls (`Predict`, ReAct's
            steps) when neither the call nor the LM's defaults set ``max_tokens`` or
            ``max_completion_tokens`` (``None``: no cap).
        on_whitespace_loop: The re-ask after a truncation whose tail is only whitespace.
        on_repetition_loop: The re-ask after a truncation inside a repetition loop.
        on_repeated_reply: What the next attempt changes after a failed reply identical to an
            earlier attempt's (its ``params``, from then on in the call; its ``note``, if any,
            after the feedback); at most once per call. ``None``, or a second repeat: the call
            ends at once (``repeated_reply``) instead of paying for the same answer again.
        reasoning_tags: Tags around reasoning the server leaves in the content
            (``("<think>", "</think>")``): split off into ``reasoning_content``.
        media: The media input kinds the endpoint takes as content parts (``"image"``,
            ``"audio"``, ``"file"``); a `ts.Image`/`ts.Audio`/`ts.File` input of another kind
            raises `MediaNotSupportedError` before anything is sent (ADR-021).
    """

    name: str = "generic"
    target: str = "openai-strict"
    modes: tuple[Mode, ...] = ("json_schema", "json_object", "prompt")
    json_object_schema: bool = False
    schema_hint: bool = True
    response_format_with_tools: bool = False
    dependable_tool_calling: bool = False
    parallel_tool_calls: bool | None = False
    max_tokens: int | None = 1024
    on_whitespace_loop: LoopRemedy | None = _COMPACT
    on_repetition_loop: LoopRemedy | None = _SHORT_STRINGS
    on_repeated_reply: LoopRemedy | None = _VARY
    reasoning_tags: tuple[str, str] | None = ("<think>", "</think>")
    media: frozenset[str] = frozenset({"image"})
    _rejected: set[str] = field(default_factory=set, init=False, repr=False)
    _seen: set[str] = field(default_factory=set, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        problems = _problems(self)
        if problems:
            raise ConfigurationError(f"Profile {self.name!r}: " + "; ".join(problems))

    # -- building profiles --

    @classmethod
    def named(cls, name: str) -> Profile:
        """A fresh copy of a built-in profile (its own run-time memory).

        Raises:
            ConfigurationError: No built-in profile has that name (the message lists them).
        """
        from typedspy.profiles._builtin import builtin

        return builtin(name)

    def derive(self, **changes: Any) -> Profile:
        """A copy with ``changes`` applied and an empty run-time memory.

        Raises:
            ConfigurationError: A change names no profile attribute, or a value it cannot take.
        """
        known = {f.name for f in dataclasses.fields(self) if f.init}
        if unknown := sorted(set(changes) - known):
            raise ConfigurationError(
                f"Profile.derive: no attribute {', '.join(map(repr, unknown))} "
                f"(the attributes: {', '.join(sorted(known))})"
            )
        return dataclasses.replace(self, **changes)

    # -- run-time memory --

    def reject(self, feature: str) -> None:
        """Remember that the endpoint rejected ``feature`` (a mode name, ``"tools"``, ...)."""
        with self._lock:
            self._rejected.add(feature)

    def rejects(self, feature: str) -> bool:
        """Whether the endpoint was seen to reject ``feature``."""
        return feature in self._rejected

    @property
    def rejected(self) -> frozenset[str]:
        """Every feature the endpoint was seen to reject."""
        return frozenset(self._rejected)

    def observe(self, kind: str) -> None:
        """Remember a failure kind the endpoint showed (e.g. ``"not_enforced"``)."""
        with self._lock:
            self._seen.add(kind)

    @property
    def observed(self) -> frozenset[str]:
        """Every failure kind the endpoint was seen to show."""
        return frozenset(self._seen)

    # -- decisions --

    def auto_mode(self) -> Mode:
        """The mode ``auto`` uses now: the first of `modes` not rejected.

        When the endpoint rejected every one, the first again (its refusal is the call's
        error): ``auto`` never leaves the profile's modes.
        """
        for mode in self.modes:
            if not self.rejects(mode):
                return mode
        return self.modes[0]

    def next_mode(self, rejected: Mode) -> Mode | None:
        """Record that ``rejected`` was refused; the mode ``auto`` steps down to, if any."""
        self.reject(rejected)
        following = self.modes[self.modes.index(rejected) + 1 :] if rejected in self.modes else ()
        return next((m for m in following if not self.rejects(m)), None)

    def agent_step(self, asked: str) -> Literal["tools", "union"]:
        """How an agent in mode ``asked`` steps now: native tool calls, or the union step.

        ``"auto"`` takes the union step, whose strict schema constrained decoding enforces,
        where tool calling is not dependable or was rejected (ADR-016, ADR-037).
        """
        if asked == "union" or (
            asked == "auto" and (not self.dependable_tool_calling or self.rejects("tools"))
        ):
            return "union"
        return "tools"

    def sends_schema(self, mode: Mode) -> bool:
        """Whether ``mode`` puts the schema on the wire (``response_format`` or the tool)."""
        return mode in ("json_schema", "tools") or (
            mode == "json_object" and self.json_object_schema
        )

    def hint_schema(self, mode: Mode) -> bool:
        """Whether the prompt carries the output shape in ``mode``.

        Always where no schema goes on the wire; otherwise when the profile says the server
        does not show the schema to the model. It does not change with what was observed, so
        the same call sends the same request (caches and replays rely on it).
        """
        return self.schema_hint or not self.sends_schema(mode)

    def target_for(self, mode: Mode) -> str:
        """The schema target ``mode`` compiles to.

        The profile's own where the schema goes on the wire; plain JSON Schema where it only
        guides the prompt.
        """
        return self.target if self.sends_schema(mode) else "json-schema"

    def response_format(
        self, mode: Mode, name: str, schema: Mapping[str, Any], strict: bool
    ) -> dict[str, Any] | None:
        """The ``response_format`` of ``mode`` (``None``: send none)."""
        if mode == "json_schema":
            return {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": strict},
            }
        if mode == "json_object":
            if self.json_object_schema:
                return {"type": "json_object", "schema": schema}
            return {"type": "json_object"}
        return None

    def takes_media(self, kind: str) -> bool:
        """Whether the endpoint takes ``kind`` media as a content part (`media`)."""
        return kind in self.media

    def structured_params(
        self, params: Mapping[str, Any], *, defaults: Mapping[str, Any]
    ) -> dict[str, Any]:
        """A structured call's ``params``, with the profile's ``max_tokens`` cap as a default.

        The cap is added only when the user set none: ``max_tokens`` or
        ``max_completion_tokens`` in ``params`` (the call's own) or in ``defaults`` (the LM's
        request defaults, merged under ``params`` when sent) keeps it off the request.

        Args:
            params: The call's request parameters.
            defaults: The request defaults of the LM the call goes to (`BaseLM.defaults`).
        """
        out = dict(params)
        if self.max_tokens is not None and not (_CAPS & {*out, *defaults}):
            out["max_tokens"] = self.max_tokens
        return out

    def __getstate__(self) -> dict[str, Any]:
        return {**vars(self), "_lock": None}  # a lock does not pickle

    def __setstate__(self, state: dict[str, Any]) -> None:
        vars(self).update(state)  # a copy gets a memory and a lock of its own
        self._rejected, self._seen = set(self._rejected), set(self._seen)
        self._lock = threading.Lock()


_MEDIA = frozenset({"image", "audio", "file"})


_FLAGS = (
    "json_object_schema",
    "schema_hint",
    "response_format_with_tools",
    "dependable_tool_calling",
)
_REMEDIES = ("on_whitespace_loop", "on_repetition_loop", "on_repeated_reply")


def _problems(profile: Profile) -> list[str]:
    """What is wrong with ``profile``'s attributes, each naming the attribute."""
    problems = _kind_problems(profile)
    if profile.target not in get_args(Target):
        problems.append(f"target={profile.target!r}: one of {', '.join(get_args(Target))}")
    given: dict[str, object] = vars(profile)  # as given, whatever the annotations say
    modes = given["modes"]
    if not isinstance(modes, (tuple, list)) or not modes:
        problems.append(f"modes={modes!r}: a tuple of modes, e.g. ('json_schema',)")
    elif bad := [m for m in profile.modes if m not in get_args(Mode)]:
        problems.append(f"modes: {bad!r} are not modes (modes are {', '.join(get_args(Mode))})")
    if why := token_cap_problem(profile.max_tokens):
        problems.append(f"max_tokens={profile.max_tokens!r}: {why}")
    media = given["media"]
    if not isinstance(media, (frozenset, set, tuple, list)):
        problems.append(f"media={media!r}: a set of media kinds, e.g. {{'image'}}")
    elif bad_media := sorted(set(profile.media) - _MEDIA, key=repr):
        problems.append(f"media: {bad_media!r} are not media kinds ({', '.join(sorted(_MEDIA))})")
    tags = profile.reasoning_tags
    if tags is not None and (len(tags) != 2 or not all(isinstance(t, str) and t for t in tags)):
        problems.append(f"reasoning_tags={tags!r}: an opening and a closing tag, or None")
    return problems


def _kind_problems(profile: Profile) -> list[str]:
    """The attributes of the wrong kind: a name, the flags, the remedies."""
    problems = []
    given: dict[str, object] = vars(profile)
    name = given["name"]
    if not isinstance(name, str) or not name:
        problems.append(f"name={name!r}: a non-empty str")
    for attr in _FLAGS:
        if not isinstance(value := getattr(profile, attr), bool):
            problems.append(f"{attr}={value!r}: True or False")
    if not isinstance(value := given["parallel_tool_calls"], bool | None):
        problems.append(f"parallel_tool_calls={value!r}: True, False, or None to leave it out")
    for attr in _REMEDIES:
        value = getattr(profile, attr)
        if value is not None and not isinstance(value, LoopRemedy):
            problems.append(f"{attr}={value!r}: a ts.profiles.LoopRemedy, or None")
    return problems
