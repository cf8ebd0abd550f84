"""The built-in profiles and the base-URL detection of the default one.

Facts come from reference/local-servers.md and reference/structured-outputs.md (the lines in
comments name their public source threads); docs/profiles.md tabulates them.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from typedspy.errors import ConfigurationError
from typedspy.profiles._profile import Profile

__all__ = ["PROFILE_NAMES", "builtin", "detect_profile", "model_for_endpoint"]

# OpenAI enforces the strict subset server-side (structured-outputs.md §1); a schema it
# accepted is enforced, so the prompt need not repeat it. Large hosted models: no cap and
# no loop remedies by default (a truncation is reported, typed, not retried).
_OPENAI = Profile(
    name="openai",
    target="openai-strict",
    media=frozenset({"image", "audio", "file"}),
    schema_hint=False,
    response_format_with_tools=True,
    dependable_tool_calling=True,
    max_tokens=None,
    on_whitespace_loop=None,
    on_repetition_loop=None,
    on_repeated_reply=None,
    reasoning_tags=None,
)

# The servers built on llama.cpp's grammar converter (llama-server, llama-cpp-python, Ollama,
# LM Studio) take full JSON Schema and do not show it to the model, trust no tool calling, and
# get a 512-token cap; each entry below says where its server differs and where the facts are.
_LLAMA = Profile(
    name="llama.cpp",
    target="json-schema",
    schema_hint=True,
    response_format_with_tools=False,
    dependable_tool_calling=False,
    max_tokens=512,
)

# Media (ADR-021): the content parts each server's chat endpoint documents (image_url,
# input_audio, file). The reference/ notes hold no media facts: these are typedspy's defaults,
# whether a given model can see or hear is the model's business (derive a profile to change).
# Every other profile, the generic one included, takes images only.
_PROFILES: dict[str, Profile] = {
    "openai": _OPENAI,
    # Azure OpenAI: the same strict subset, and it also rejects `default` (structured-outputs.md
    # §1.6, openai/openai-agents-python#4390), which the openai-strict target strips.
    "azure": _OPENAI.derive(name="azure"),
    # vLLM (local-servers.md): full JSON Schema through xgrammar/guidance; `strict` ignored; the
    # grammar allows unbounded whitespace, so models loop to max_tokens (vllm#38696): a cap and
    # the compact re-ask; response_format constrains tool steps too (pydantic/pydantic-ai#6552).
    # The schema is only a decoding constraint, not shown to the model (inference): hint it.
    "vllm": Profile(
        name="vllm",
        target="json-schema",
        media=frozenset({"image", "audio"}),
        schema_hint=True,
        response_format_with_tools=False,
        dependable_tool_calling=True,
        max_tokens=1024,
    ),
    # llama.cpp llama-server (local-servers.md): json_schema.schema used, `strict` ignored;
    # json_object takes an optional `schema` (tools/server/server-common.cpp); the schema is not
    # put into the prompt; number bounds are not enforced and grammar parse failures fail open
    # (#19051, #24097): outputs are checked against the sent schema (`not_enforced`). A real
    # run with SmolLM2 looped in tools mode and rambled to 1,300+ tokens without a cap.
    # Every llama-server constrains json_schema and json_object (with its schema), so `auto`
    # never steps down to unconstrained prompting: on SmolLM2-135M prompt mode gave no typed
    # value in 2 of 2 calls, each constrained mode 2 of 2 (docs/conformance.md).
    "llama.cpp": _LLAMA.derive(
        modes=("json_schema", "json_object"),
        media=frozenset({"image", "audio"}),
        json_object_schema=True,
    ),
    # llama-cpp-python's server (`python -m llama_cpp.server`, 0.3.36; ADR-088), read in its
    # source: `response_format.type` may be only "text" or "json_object"
    # (llama_cpp/llama_types.py ChatCompletionRequestResponseFormat), and its error handler
    # turns the failed request validation into a 500 (llama_cpp/server/errors.py), so `auto`
    # never asks for json_schema. `json_object` takes an optional `schema`, turned into a
    # grammar by its own Python port of llama.cpp's converter (llama_cpp/llama_grammar.py); a
    # schema it cannot convert falls back to any JSON (`_grammar_for_json_schema`,
    # llama_cpp/llama_chat_format.py): fails open. A `tool_choice` naming a function constrains
    # the arguments by that function's schema the same way, so `tools` mode is constrained too;
    # with "auto" or "required" the chat template sees the tools but no reply is read as a tool
    # call, so agents use the union step. The schema is not put into the prompt. `max_tokens` is
    # honoured; `max_completion_tokens`, `stream_options` (no usage in streams) and
    # `parallel_tool_calls` are not in its request model and are dropped
    # (llama_cpp/server/types.py CreateChatCompletionRequest).
    "llama-cpp-python": _LLAMA.derive(
        name="llama-cpp-python", modes=("json_object", "tools"), json_object_schema=True
    ),
    # Ollama /v1 (local-servers.md): json_schema becomes native `format` through llama.cpp's
    # converter; the schema is not in the prompt (ollama#8162); violations reported (#8063).
    "ollama": _LLAMA.derive(name="ollama"),
    # LM Studio (local-servers.md): `json_object` gives 400 "'response_format.type' must be
    # 'json_schema'" (lmstudio-bug-tracker#189), so auto goes from json_schema to prompt.
    "lmstudio": _LLAMA.derive(name="lmstudio", modes=("json_schema", "prompt")),
    # An unknown server: the narrowest schema every server accepts, the shape in the prompt,
    # no trust in tool calling, a cap, and every remedy.
    "generic": Profile(name="generic"),
}

PROFILE_NAMES: tuple[str, ...] = tuple(sorted(_PROFILES))


def builtin(name: str) -> Profile:
    """A fresh copy (own memory) of the built-in profile ``name``.

    Raises:
        ConfigurationError: No built-in profile has that name.
    """
    try:
        template = _PROFILES[name]
    except KeyError:
        raise ConfigurationError(
            f"unknown profile {name!r}; use one of {list(PROFILE_NAMES)} or a ts.Profile"
        ) from None
    return template.derive()


def detect_profile(base_url: str | None) -> str | None:
    """The built-in profile for an endpoint whose URL names its provider; else ``None``.

    Only host names that belong to one provider count: ``api.openai.com`` (or no base URL) is
    ``openai``, ``*.openai.azure.com`` is ``azure``. Ports and local addresses say nothing
    reliable about the server behind them: ``None``, and `LM` asks the server (ADR-084).
    """
    if not base_url:
        return "openai"
    host = _host(base_url)
    if host.endswith(".openai.azure.com"):
        return "azure"
    return "openai" if host == "api.openai.com" else None


_ROUTED = re.compile(r"^(?P<provider>[a-z][a-z0-9_-]*)/(?P<name>.+)$")
_PROVIDERS = frozenset(
    {
        "openai",
        "anthropic",
        "gemini",
        "vertex_ai",
        "bedrock",
        "azure",
        "ollama",
        "ollama_chat",
        "groq",
        "mistral",
        "cohere",
        "together_ai",
        "deepseek",
        "xai",
        "openrouter",
        "huggingface",
        "hosted_vllm",
        "lm_studio",
        "fireworks_ai",
    }
)  # LiteLLM's routing prefixes, as DSPy users write them ("openai/gpt-4o-mini")


def model_for_endpoint(model: str, base_url: str | None) -> str:
    """The model name to send to OpenAI's own endpoint, for a LiteLLM-style ``provider/model``.

    ``openai/gpt-4o-mini`` (DSPy's spelling, routed by LiteLLM) is ``gpt-4o-mini`` at OpenAI.
    Any other provider's prefix cannot be served by OpenAI's endpoint: refused, naming the fix.
    Elsewhere (a base URL of the user's) the name is the server's business
    (``meta-llama/Llama-3.1-8B`` on vLLM, a LiteLLM proxy's own routes) and is sent as given.

    Raises:
        ConfigurationError: Another provider's prefix on OpenAI's endpoint.
    """
    routed = _ROUTED.match(model)
    at_openai = not base_url or _host(base_url) == "api.openai.com"
    if not at_openai or routed is None or routed["provider"] not in _PROVIDERS:
        return model
    if routed["provider"] == "openai":
        return routed["name"]
    raise ConfigurationError(
        f"LM({model!r}): {routed['provider']!r} is a LiteLLM-style provider prefix, and LM "
        "talks to one OpenAI-compatible endpoint, OpenAI's here: give that provider's "
        f"OpenAI-compatible base_url= and the model name it knows (LM({routed['name']!r}, "
        "base_url=...)), or a LiteLLM proxy's base_url to keep the prefix"
    )


def _host(url: str) -> str:
    """The host name of ``url`` (a scheme-less ``host:port/path`` too), lower-cased."""
    return (urlsplit(url if "//" in url else f"//{url}").hostname or "").lower()
