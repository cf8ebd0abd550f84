"""The language-model boundary: request and response types, `BaseLM`, and the OpenAI `LM`."""

from __future__ import annotations

from typedspy.lm._base import BaseLM
from typedspy.lm._base import route_calls as route_calls
from typedspy.lm._bound import (
    RequestBound as RequestBound,
)
from typedspy.lm._bound import (
    counted as counted,
)
from typedspy.lm._bound import (
    counted_stream as counted_stream,
)
from typedspy.lm._fallback import FallbackLM, FallbackTrace, Skipped, Trigger
from typedspy.lm._identify import forget as forget
from typedspy.lm._messages import (
    ChatMessage,
    EmbeddingResponse,
    LMRequest,
    LMResponse,
    ToolCall,
)
from typedspy.lm._openai import LM

# The package's interface to typedspy's other packages (not public API): they import from the
# package, never from its modules (ADR-034, checked by import-linter).
from typedspy.lm._params import (
    CHAT_COMPLETIONS_PARAMS as CHAT_COMPLETIONS_PARAMS,
)
from typedspy.lm._params import RequestParams
from typedspy.lm._params import (
    check_params as check_params,
)
from typedspy.lm._scrub import (
    scrub_chain as scrub_chain,
)
from typedspy.lm._scrub import (
    split_userinfo as split_userinfo,
)
from typedspy.lm._stream import (
    LMChunk as LMChunk,
)
from typedspy.lm._stream import (
    StreamAccumulator as StreamAccumulator,
)
from typedspy.lm._stream import (
    chunk_of as chunk_of,
)

__all__ = [
    "LM",
    "BaseLM",
    "ChatMessage",
    "EmbeddingResponse",
    "FallbackLM",
    "FallbackTrace",
    "LMRequest",
    "LMResponse",
    "RequestParams",
    "Skipped",
    "ToolCall",
    "Trigger",
]
