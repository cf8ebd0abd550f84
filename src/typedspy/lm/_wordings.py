"""What OpenAI-compatible endpoints say, read as facts: "unsupported feature" and context 400s.

Provider knowledge, kept in one place beside the LM: how servers word "I don't support
<feature>" and "the request does not fit the context window", and which substrings of an
error message may be credentials.
"""

from __future__ import annotations

import re

__all__ = ["context_overflow", "redact_patterns", "unsupported_feature"]

_SECRET_PATTERNS = (
    (re.compile(r"\bsk-[A-Za-z0-9*_.\-]{2,}"), "[redacted]"),  # OpenAI-style keys, masked too
    (re.compile(r"(?i)(api key provided:\s*)\S+?(?=[.,;]?(?:\s|$))"), r"\1[redacted]"),
    # A URL's userinfo, whatever its shape (a user alone may be a token): up to its last @.
    (re.compile(r"(?<=//)[^/?#\s]+@"), "[redacted]@"),
)

# Provider knowledge: how OpenAI-compatible endpoints say "I don't support <feature>" in a 400.
# Subjects name the feature; checked in order ("parallel_tool_calls" also contains "tool").
_FEATURE_SUBJECTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("parallel_tool_calls", re.compile(r"parallel_tool_calls")),
    ("response_format", re.compile(r"response_format|json_schema|structured.outputs?|json.mode")),
    ("tools", re.compile(r"\btools?\b|tool.choice|tool_calls?|function.call|\bfunctions\b")),
)
_UNSUPPORTED_WORDINGS = re.compile(
    r"not supported"  # OpenAI: "'response_format' of type 'json_schema' is not supported with..."
    r"|unsupported"  # OpenAI "Unsupported parameter: ...", LiteLLM "UnsupportedParamsError"
    r"|not available|unavailable"  # DeepSeek: "This response_format type is unavailable now"
    r"|unrecognized"  # OpenAI: "Unrecognized request argument supplied: tools"
    r"|does not support|doesn't support"  # Ollama: "... does not support tools"
    r"|enabled only for|only supported (?:for|with|on)"  # Azure: "enabled only for api versions"
    r"|not one of the allowed values"  # Groq: "'response_format.type' : value is not one of..."
    r"|--enable-auto-tool-choice"  # vLLM started without tool calling
    r"|'response_format\.type' must be"  # LM Studio on json_object (lmstudio-bug-tracker#189)
)
# A request model that lists the response_format types it takes refuses any other in its
# validation error (pydantic's literal_error at body.response_format.type, "Input should be
# 'text' or 'json_object'"); llama-cpp-python's error handler sends it as a 500
# (llama_cpp/server/errors.py; ADR-088).
_REFUSED_FORMAT_TYPE = re.compile(
    r"""literal_error.{0,20}["']loc["']: ?[(\[]["']body["'], ?["']response_format["'], ?["']type"""
)
# The feature works but the request's schema or arguments are wrong: not "unsupported".
_NOT_ABOUT_SUPPORT = re.compile(r"invalid schema for|is not permitted|invalid_json_schema")
_UNSUPPORTED_CODES = frozenset({"unsupported_parameter", "unsupported_value"})


def unsupported_feature(
    status_code: int, message: str, *, code: str | None = None, param: str | None = None
) -> str | None:
    """Tell whether an HTTP error says the endpoint does not support a request feature.

    Args:
        status_code: The HTTP status (400; or 500 for a request model's refusal of the
            ``response_format`` type).
        message: The provider's error message.
        code: The provider's error code, if any (e.g. ``"unsupported_parameter"``).
        param: The request parameter the provider blamed, if any.

    Returns:
        ``"response_format"`` (structured outputs / JSON schema), ``"tools"``,
        ``"parallel_tool_calls"``, the blamed parameter for other ``unsupported_parameter``
        errors, or ``None`` when the error is about something else.
    """
    if status_code in (400, 500) and _REFUSED_FORMAT_TYPE.search(message):
        return "response_format"
    if status_code != 400:
        return None
    if code in _UNSUPPORTED_CODES and param:
        return _feature_named_in(param.lower()) or re.split(r"[.\[]", param)[0]
    text = message.lower()
    if code == "invalid_json_schema" or _NOT_ABOUT_SUPPORT.search(text):
        return None
    if not _UNSUPPORTED_WORDINGS.search(text):
        return None
    return _feature_named_in(text)


# Provider knowledge: how endpoints say a request does not fit the model's context window (its
# prompt plus the completion it reserves with max_tokens). A cap on the completion alone is
# another error, whatever the prompt: OpenAI's "max_tokens is too large: N. This model supports
# at most M completion tokens" (code invalid_value, param max_tokens) stays an LMStatusError.
_CONTEXT_CODES = frozenset(
    {
        "context_length_exceeded",  # OpenAI, Groq (OpenHands/OpenHands#1902), llama-cpp-python
        "exceed_context_size_error",  # llama-server's error type (tools/server, llama.cpp)
    }
)
# Each alternative captures the window's size in tokens when the wording states it.
_CONTEXT_WORDINGS = re.compile(
    # OpenAI ("... However, your messages resulted in N tokens"), vLLM ("However, you requested
    # N tokens (M in the messages, K in the completion)", vllm-project/vllm#20409; and "'max_tokens'
    # or 'max_completion_tokens' is too large: K. This model's maximum context length is N
    # tokens and your request has M input tokens"), llama-cpp-python (checked on the engine)
    r"maximum context length is (\d+)"
    # llama-server: "request (M tokens) exceeds the available context size (N tokens), try
    # increasing it" (checked on the engine; older builds leave the counts out)
    r"|exceeds the available context size(?: \((\d+) tokens\))?"
    # vLLM's V1 engine: "The decoder prompt (length M) is longer than the maximum model length
    # of N" (vllm/v1/engine/input_processor.py)
    r"|is longer than the maximum model length of (\d+)"
    # Groq: "Please reduce the length of the messages or completion." (OpenHands/OpenHands#1902);
    # Cerebras adds "Current length is M while limit is N" (cline/cline#5140)
    r"|reduce the length of the messages"
    r"(?: or completion\.? current length is \d+ while limit is (\d+))?"
    # Hugging Face TGI, Together: "Input validation error: `inputs` tokens + `max_new_tokens`
    # must be <= N. Given: ..." (huggingface/text-generation-inference#628, BerriAI/litellm#4934)
    r"|`inputs` tokens \+ `max_new_tokens` must be <= (\d+)"
    # LM Studio: "Trying to keep the first M tokens when context the overflows. However, the
    # model is loaded with context length of only N tokens" (lmstudio-bug-tracker#237)
    r"|loaded with context length of only (\d+)"
)


def context_overflow(
    status_code: int, message: str, *, code: str | None = None, kind: str | None = None
) -> tuple[bool, int | None]:
    """Tell whether an HTTP error says the request does not fit the model's context window.

    Args:
        status_code: The HTTP status (400; 422 from TGI's validation).
        message: The provider's error message.
        code: The provider's error code, if any (``"context_length_exceeded"``).
        kind: The provider's error type, if any (llama-server's ``"exceed_context_size_error"``).

    Returns:
        Whether it does, and the window's size in tokens when the message states it.
    """
    if status_code not in (400, 422):
        return False, None
    found = _CONTEXT_WORDINGS.search(message.lower())
    window = next((int(size) for size in found.groups() if size), None) if found else None
    return (found is not None or code in _CONTEXT_CODES or kind in _CONTEXT_CODES), window


def _feature_named_in(text: str) -> str | None:
    for feature, subject in _FEATURE_SUBJECTS:
        if subject.search(text):
            return feature
    return None


def redact_patterns(text: str) -> str:
    """``text`` with anything shaped like a credential replaced by ``[redacted]``."""
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text
