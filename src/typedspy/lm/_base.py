"""The LM boundary: what Predict sends to a language model and what it gets back.

Messages are plain dicts in the OpenAI chat format (ADR: OpenAI-shaped dicts are the message
type), so any OpenAI-compatible endpoint, and any `BaseLM`, speaks the same language.
Nothing here imports `openai`.
"""

from __future__ import annotations

import abc
import json
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from typing_extensions import Unpack

from typedspy._json import MAX_JSON_DEPTH
from typedspy._runtime import run_sync
from typedspy._types import Usage
from typedspy.errors import ConfigurationError, LMResponseError, RefusalError
from typedspy.lm._params import RequestParams, check_params
from typedspy.profiles import Profile, resolve_profile

if TYPE_CHECKING:
    from typedspy.lm._fallback import FallbackLM, Trigger
    from typedspy.lm._stream import LMChunk

__all__ = ["BaseLM", "ChatMessage", "EmbeddingResponse", "LMRequest", "LMResponse", "ToolCall"]

ChatMessage = dict[str, Any]
"""One message in the OpenAI chat format: ``{"role": "user", "content": "..."}``, an assistant
message with ``tool_calls``, or a ``{"role": "tool", "tool_call_id": ..., "content": ...}``."""


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model asked for.

    Attributes:
        id: The call id, to be echoed in the ``tool`` message that answers it.
        name: The function name.
        arguments: The arguments exactly as the model wrote them (JSON text, not yet parsed).
    """

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class EmbeddingResponse:
    """One ``/v1/embeddings`` reply: a vector per text, and what it cost.

    Attributes:
        vectors: One vector per text, in the order the texts were sent.
        usage: Token counts reported by the endpoint (zeros when it reported none).
        model: The embedding model that was asked.
        headers: The rate-limit headers of the HTTP response, lower-cased.
    """

    vectors: list[list[float]]
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LMRequest:
    """One chat-completion request, independent of any SDK.

    Attributes:
        messages: The conversation so far.
        response_format: Sent as is (e.g. ``{"type": "json_schema", "json_schema": {...}}``).
        tools: Function tools in the OpenAI format.
        tool_choice: ``"auto"``, ``"required"``, ``"none"`` or a named function.
        parallel_tool_calls: Sent only when there are tools and this is not ``None``.
        params: Sampling and other request parameters (``temperature``, ``max_tokens``,
            ``seed``, ...), merged over the LM's defaults.
    """

    messages: tuple[ChatMessage, ...]
    response_format: Mapping[str, Any] | None = None
    tools: tuple[Mapping[str, Any], ...] = ()
    tool_choice: str | Mapping[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LMResponse:
    """The parts of a chat completion that typedspy uses, plus the completion itself.

    Attributes:
        text: The message content (``None`` when the model sent none, e.g. only tool calls).
        refusal: The model's refusal text, if it refused (``""`` is normalised to ``None``).
        finish_reason: ``"stop"``, ``"length"``, ``"tool_calls"``, ``"content_filter"``, ...
            (``""`` is normalised to ``None``).
        tool_calls: The tool calls of the message, in order.
        usage: Token counts reported by the endpoint (zeros when it reported none).
        model: The model that answered, as the endpoint names it.
        raw: The whole completion as a JSON-ready dict.
        headers: The rate-limit headers of the HTTP response (``retry-after``,
            ``x-ratelimit-*``), lower-cased; empty when there was no HTTP response.
        reasoning: The model's reasoning, where the server sends it apart from the content
            (``reasoning_content``, or ``reasoning``); never parsed as the answer.
    """

    text: str | None
    refusal: str | None
    finish_reason: str | None
    tool_calls: tuple[ToolCall, ...]
    usage: Usage
    model: str
    raw: Mapping[str, Any]
    headers: Mapping[str, str] = field(default_factory=dict)
    reasoning: str | None = None

    @classmethod
    def build(
        cls,
        *,
        text: str | None,
        model: str,
        usage: Usage,
        refusal: str | None = None,
        finish_reason: str | None = "stop",
        tool_calls: tuple[ToolCall, ...] = (),
        reasoning: str | None = None,
    ) -> LMResponse:
        """A response assembled here (joined stream chunks, a scripted reply).

        ``raw`` is the ``chat.completion`` body a non-streamed endpoint would have sent.
        """
        message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": refusal}
        if reasoning is not None:
            message["reasoning_content"] = reasoning
        if tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in tool_calls
            ]
        raw = {
            "object": "chat.completion",
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": {
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
                "total_tokens": usage.total_tokens,
            },
        }
        return cls(text, refusal, finish_reason, tool_calls, usage, model, raw, reasoning=reasoning)

    @classmethod
    def from_completion(cls, completion: object, *, model: str) -> LMResponse:
        """Read a chat completion (the decoded JSON body) leniently.

        Only the first choice is used; ``raw`` keeps the others. Extra keys, unknown enum
        values and ``""`` where ``null`` was meant (as some OpenAI-compatible servers send)
        are tolerated.

        Args:
            completion: The decoded response body.
            model: The model to report when the completion does not name one.

        Returns:
            The response.

        Raises:
            LMResponseError: The body is not a completion with at least one choice.
        """
        if not isinstance(completion, dict):
            raise LMResponseError(
                f"the endpoint returned {type(completion).__name__}, not a chat completion object"
            )
        choices = completion.get("choices")
        if not isinstance(choices, list) or not choices:
            error = completion.get("error")  # some proxies send their errors with status 200
            said = error.get("message") if isinstance(error, dict) else None
            why = f" (it said: {said})" if isinstance(said, str) else ""
            raise LMResponseError(f"the endpoint returned no choices{why}")
        choice = choices[0] if isinstance(choices[0], dict) else {}
        message = choice.get("message")
        if not isinstance(message, dict):
            raise LMResponseError("the endpoint returned a choice without a message")
        served = completion.get("model")
        return cls(
            text=_content_text(message.get("content")),
            refusal=_non_empty(message.get("refusal")),
            finish_reason=_non_empty(choice.get("finish_reason")),
            tool_calls=_tool_calls(message.get("tool_calls")),
            usage=_usage(completion.get("usage")),
            model=served if isinstance(served, str) and served else model,
            raw=completion,
            reasoning=_reasoning(message),
        )


class BaseLM(abc.ABC):
    """Anything `Predict` can call: one async chat-completion method.

    Subclasses implement `acomplete`; `__call__` and `acall` (prompt in, text out) come free.

    Args:
        model: The model name.
        profile: The endpoint's `Profile`, or a built-in profile's name; ``"openai"`` when
            not given.

    Attributes:
        model: The model name.
    """

    model: str
    _profile: Profile | None = None

    def __init__(self, model: str, *, profile: str | Profile | None = None) -> None:
        self.model = model
        self._profile = resolve_profile(profile, None)

    @property
    def profile(self) -> Profile:
        """What this endpoint accepts and how it fails, with what it was seen to reject."""
        if self._profile is None:  # a subclass that did not call BaseLM.__init__
            self._profile = resolve_profile(None, None)
        return self._profile

    @profile.setter
    def profile(self, profile: str | Profile) -> None:
        self._profile = resolve_profile(profile, None)

    @property
    def max_json_depth(self) -> int:
        """Deepest nesting of objects and arrays read from this endpoint's output (256).

        Model output is parsed within it (`Predict`, streaming, ReAct's tool arguments).
        """
        return MAX_JSON_DEPTH

    @staticmethod
    def fallback(
        *lms: BaseLM,
        on: Collection[Trigger] = frozenset({"transport", "rate_limit"}),
    ) -> FallbackLM:
        """A `FallbackLM`: ``lms`` tried in order, moving on after an outcome in ``on``.

        Triggers: ``"transport"``, ``"rate_limit"``, ``"refusal"``, ``"not_enforced"``,
        ``"validation"``, ``"budget"`` (docs/fallbacks.md). The prediction records which
        endpoint answered in ``pred.extras["fallback"]``.

        Example:
            ```python
            lm = ts.LM.fallback(ts.LM("gpt-4o"), ts.LM("gpt-4o-mini"), on={"rate_limit"})
            ```

        Raises:
            ConfigurationError: Fewer than two LMs, a nested chain, or an unknown trigger.
        """
        from typedspy.lm._fallback import FallbackLM

        return FallbackLM(*lms, on=on)

    @property
    def endpoint(self) -> str | None:
        """The base URL requests go to (part of a response-cache key); ``None`` when local."""
        return None

    def request_body(self, request: LMRequest) -> dict[str, Any]:
        """The JSON body this LM sends for ``request``, without credentials.

        It is what a response cache hashes and what a Batch API file holds. The default is
        the OpenAI chat-completions body; `LM` returns exactly what it puts on the wire.
        """
        body: dict[str, Any] = {"model": self.model, "messages": list(request.messages)}
        if request.response_format is not None:
            body["response_format"] = dict(request.response_format)
        if request.tools:
            body["tools"] = list(request.tools)
            if request.parallel_tool_calls is not None:
                body["parallel_tool_calls"] = request.parallel_tool_calls
        if request.tool_choice is not None:
            body["tool_choice"] = request.tool_choice
        body.update(request.params)
        return body

    @abc.abstractmethod
    async def acomplete(self, request: LMRequest) -> LMResponse:
        """Send one chat-completion request and return the response.

        Args:
            request: What to send.

        Returns:
            The endpoint's response, read leniently.

        Raises:
            LMError: The endpoint could not be used (a subclass names the reason).
        """

    async def astream(self, request: LMRequest) -> AsyncIterator[LMChunk]:
        """Stream one completion as chunks.

        The default sends a normal request and yields the whole reply as one chunk, so every
        `BaseLM` can serve streaming callers; `LM` streams for real.
        """
        from typedspy.lm._stream import chunk_of

        yield chunk_of(await self.acomplete(request))

    async def aembed(self, texts: Sequence[str], *, model: str | None = None) -> list[list[float]]:
        """Embed ``texts``, one vector per text (`LM` calls ``/v1/embeddings``).

        Raises:
            ConfigurationError: This LM cannot embed.
        """
        return (await self.aembed_response(texts, model=model)).vectors

    async def aembed_response(
        self, texts: Sequence[str], *, model: str | None = None
    ) -> EmbeddingResponse:
        """Embed ``texts`` in one request; the vectors with the usage and rate-limit headers.

        Raises:
            ConfigurationError: This LM cannot embed.
        """
        raise ConfigurationError(f"{type(self).__name__} cannot embed texts; use typedspy.LM")

    async def acall(
        self, prompt: str | Sequence[ChatMessage], **params: Unpack[RequestParams]
    ) -> str:
        """Send a prompt (or a list of messages) and return the reply text.

        Args:
            prompt: A user message, or the whole conversation as chat messages.
            **params: Request parameters for this call (``temperature``, ``max_tokens``, ...).

        Returns:
            The message content; ``""`` when the model sent only tool calls.

        Raises:
            ConfigurationError: An unknown or reserved request parameter.
            RefusalError: The model refused.
            LMError: The endpoint could not be used.
        """
        check_params(params, where=f"{type(self).__name__}.acall")
        messages = (
            ({"role": "user", "content": prompt},) if isinstance(prompt, str) else tuple(prompt)
        )
        response = await self.acomplete(LMRequest(messages=messages, params=params))
        if response.text is None and response.refusal is not None:
            raise RefusalError(
                f"{self.model} refused: {response.refusal}", refusal=response.refusal
            )
        return response.text or ""

    def __call__(self, prompt: str | Sequence[ChatMessage], **params: Unpack[RequestParams]) -> str:
        """Synchronous `acall`: ``lm("Say hi")`` returns the reply text.

        Raises:
            ConfigurationError: Called from a thread that is running an event loop; use
                ``await lm.acall(...)`` there.
        """
        return run_sync(
            lambda: self.acall(prompt, **params), async_name=f"{type(self).__name__}.acall"
        )


def _reasoning(message: Mapping[str, Any]) -> str | None:
    # llama.cpp, vLLM and DeepSeek send `reasoning_content`; some servers `reasoning`.
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _non_empty(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _content_text(content: object) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts, as a few compatible servers send
        texts = [p.get("text") for p in content if isinstance(p, dict)]
        return "".join(t for t in texts if isinstance(t, str))
    return None


def _tool_calls(calls: object) -> tuple[ToolCall, ...]:
    if not isinstance(calls, list):
        return ()
    found = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        arguments = function.get("arguments")
        if not isinstance(arguments, str):  # a few servers send the object itself
            arguments = json.dumps(arguments if arguments is not None else {})
        found.append(
            ToolCall(
                id=str(call.get("id") or ""),
                name=str(function.get("name") or ""),
                arguments=arguments,
            )
        )
    return tuple(found)


def _usage(usage: object) -> Usage:
    if not isinstance(usage, dict):
        return Usage()
    prompt = _count(usage.get("prompt_tokens"))
    completion = _count(usage.get("completion_tokens"))
    total = _count(usage.get("total_tokens")) or prompt + completion
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=total)


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    return int(value)
