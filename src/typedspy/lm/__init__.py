"""The language-model boundary: request and response types, `BaseLM`, and the OpenAI `LM`."""

from __future__ import annotations

from typedspy.lm._base import (
    BaseLM,
    ChatMessage,
    EmbeddingResponse,
    LMRequest,
    LMResponse,
    ToolCall,
)
from typedspy.lm._fallback import FallbackLM, FallbackTrace, Skipped, Trigger
from typedspy.lm._openai import LM

__all__ = [
    "LM",
    "BaseLM",
    "ChatMessage",
    "EmbeddingResponse",
    "FallbackLM",
    "FallbackTrace",
    "LMRequest",
    "LMResponse",
    "Skipped",
    "ToolCall",
    "Trigger",
]
