"""Which server answers at a base URL, read from one ``GET {base_url}/models`` (ADR-084).

Every server typedspy has a profile for answers ``GET /v1/models``, and most write a fixed
string of their own into each entry's ``owned_by``. That one reply (its status, headers and
body) is read here; nothing here sends it (the LM does, once per base URL). What each server
reports, from its source:

- llama.cpp ``llama-server``: ``owned_by: "llamacpp"`` on every entry, beside a ``meta``
  object (tools/server/server.cpp ``handle_models``, since moved into
  tools/server/server-context.cpp; the router mode's list in tools/server/server-models.cpp
  says the same).
- vLLM: ``ModelCard.owned_by = "vllm"`` (vllm/entrypoints/openai/protocol.py, later
  vllm/entrypoints/openai/engine/protocol.py), with ``root``, ``parent``, ``max_model_len``.
- SGLang: ``ModelCard.owned_by = "sglang"`` (python/sglang/srt/entrypoints/openai/protocol.py).
- Ollama: ``owned_by`` is the model name's namespace (openai/openai.go ``ToListCompletion``,
  ``model.ParseName(id).Namespace``), ``"library"`` for every model pulled by its plain name
  (openai/openai_test.go checks the fallback).
- llama-cpp-python: ``owned_by: "me"`` and ``permissions: []`` on every entry
  (llama_cpp/server/app.py ``get_models``).
- LM Studio (closed source): ``owned_by: "organization_owner"``, no ``created``
  (JetBrains/koog#139 quotes a reply).
- OpenAI: an ``openai-version`` response header on every reply (OpenAI API reference,
  "Debugging requests"), which no local server sends. ``owned_by`` is ``"openai"`` or
  ``"system"`` at OpenAI, but proxies (LiteLLM) write ``"openai"`` for any backend, so it says
  nothing on its own.

The ``Server`` header says little: vLLM, SGLang and llama-cpp-python all run under uvicorn
(``server: uvicorn``) and Ollama sends none. Their version endpoints (``/version`` on vLLM,
``/api/version`` on Ollama, ``/props`` on llama-server) would each cost a request of their own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

__all__ = ["Identification", "identify_server"]

# owned_by value -> (profile, server), each from the server's source (module docstring).
_OWNERS: dict[str, tuple[str, str]] = {
    "llamacpp": ("llama.cpp", "llama.cpp llama-server"),
    "vllm": ("vllm", "vLLM"),
    "library": ("ollama", "Ollama"),
    "organization_owner": ("lmstudio", "LM Studio"),
    # SGLang constrains decoding with xgrammar as vLLM does, but no fact about its failures is
    # sourced here: the generic profile until one is.
    "sglang": ("generic", "SGLang (no profile of its own yet)"),
}


_SHOWN = 5  # owners a reason names


@dataclass(frozen=True)
class Identification:
    """What one ``GET /models`` said about the server behind a base URL.

    Attributes:
        profile: The built-in profile to use (``"generic"`` when unsure).
        reason: Why, in one line (what the reply showed, or why it showed nothing).
    """

    profile: str
    reason: str


def identify_server(
    status: int | None, headers: Mapping[str, str], body: object, *, failure: str = ""
) -> Identification:
    """The profile for a server, from its reply to ``GET {base_url}/models``.

    Never raises: a reply that names no known server, an error status or no reply at all
    (``status=None``, with ``failure`` saying why) is ``generic``.

    Args:
        status: The HTTP status, ``None`` when no reply came.
        headers: The response headers (any case).
        body: The decoded JSON body (anything: it is checked here).
        failure: Why no reply came (a timeout, a refused connection).
    """
    if status is None:
        return Identification("generic", f"GET /models failed ({failure or 'no reply'})")
    lower = {str(k).lower(): str(v) for k, v in headers.items()}
    if "openai-version" in lower:
        version = lower["openai-version"][:40]
        return Identification("openai", f"openai-version: {version} header")
    if status != 200:
        return Identification("generic", f"GET /models answered {status}")
    entries = _entries(body)
    if not entries:
        return Identification("generic", "GET /models listed no models")
    owners = sorted({str(e.get("owned_by")) for e in entries})
    if len(owners) == 1 and owners[0] in _OWNERS:
        profile, server = _OWNERS[owners[0]]
        return Identification(profile, f"{server}: owned_by {owners[0]!r}")
    if owners == ["me"] and all("permissions" in e for e in entries):
        return Identification("llama-cpp-python", "llama-cpp-python: owned_by 'me', permissions")
    return Identification("generic", f"no known server's models list (owned_by {_few(owners)})")


def _few(owners: list[str]) -> str:
    """The first owners, each cut short, and how many more: one line, however long the list."""
    shown = ", ".join(repr(o if len(o) <= 40 else o[:37] + "...") for o in owners[:_SHOWN])
    more = len(owners) - _SHOWN
    return f"[{shown}{f', and {more} more' if more > 0 else ''}]"


def _entries(body: object) -> list[Mapping[str, Any]]:
    if not isinstance(body, Mapping):
        return []
    data: Any = cast("Mapping[str, Any]", body).get("data")
    if not isinstance(data, list):
        return []
    entries = cast("list[object]", data)[:1000]
    return [cast("Mapping[str, Any]", e) for e in entries if isinstance(e, Mapping)]
