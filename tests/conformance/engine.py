"""A real constrained-decoding engine for tests: llguidance, driven by a random byte sampler.

llguidance is the grammar engine vLLM and others use for ``response_format`` (see
../shared/reference/local-servers.md). A model is not needed to test what matters here: the
engine turns a compiled schema into a grammar, and any byte sequence the grammar accepts is an
output a conforming server could send. Sampling random accepted bytes, with a growing bias
towards closing strings and containers, explores those outputs cheaply and deterministically.
"""

from __future__ import annotations

import functools
import json
import random
from typing import Any

import pytest

llguidance = pytest.importorskip(
    "llguidance", reason="llguidance (dev extra) is not installed: no engine to run"
)

_EOS = 256
_CLOSERS = frozenset(b'"}],')


class _ByteTokens:
    """A vocabulary of the 256 single bytes plus an end-of-sequence token."""

    def __init__(self) -> None:
        self.tokens = [bytes([i]) for i in range(256)] + [b"<eos>"]
        self.eos_token_id = _EOS
        self.bos_token_id = None
        self.special_token_ids = [_EOS]

    def __call__(self, text: str | bytes) -> list[int]:
        return list(text if isinstance(text, bytes) else text.encode())


_TOKENIZER = llguidance.LLTokenizer(llguidance.TokenizerWrapper(_ByteTokens()), slices=[])


def grammar_error(schema: dict[str, Any]) -> str | None:
    """The engine's complaint about a schema, or ``None`` when it compiles to a grammar."""
    return _grammar_error(json.dumps(schema))


@functools.cache
def _grammar_error(schema: str) -> str | None:
    try:
        grammar = llguidance.LLMatcher.grammar_from_json_schema(json.loads(schema))
    except ValueError as exc:
        return str(exc)
    is_error, messages = llguidance.LLMatcher.validate_grammar_with_warnings(grammar, _TOKENIZER)
    return messages[0] if is_error else None


@functools.cache
def _compact_grammar(schema: str) -> str:
    # Whitespace between tokens is switched off, as servers do for compact output.
    grammar: str = llguidance.LLMatcher.grammar_from_json_schema(
        json.loads(schema), defaults={"whitespace_flexible": False}
    )
    return grammar


def samples(schema: dict[str, Any], count: int = 4) -> list[str]:
    """Outputs the engine accepts for ``schema``, seeds 0 to ``count - 1`` (those that finish).

    Raises:
        AssertionError: The engine refuses the schema, or no sample finished.
    """
    error = grammar_error(schema)
    assert error is None, error
    texts = [t for seed in range(count) if (t := sample(schema, seed=seed)) is not None]
    assert texts, "the sampler finished no output within its byte bound"
    return texts


def sample(
    schema: dict[str, Any],
    *,
    seed: int,
    max_bytes: int = 4000,
    steer: tuple[bytes, bytes] | None = None,
) -> str | None:
    """One output the engine accepts for ``schema``, or ``None`` if it ran past ``max_bytes``.

    Whitespace between tokens is switched off, as servers do for compact output. With
    ``steer=(marker, then)``, the first time the output ends with ``marker`` the sampler writes
    ``then`` (a union member's tag, say); the engine must accept it.
    """
    matcher = llguidance.LLMatcher(_TOKENIZER, _compact_grammar(json.dumps(schema)), log_level=0)
    if matcher.is_error():
        raise AssertionError(matcher.get_error())
    rng = random.Random(seed)
    out = bytearray()
    while len(out) < max_bytes:
        if steer is not None and out.endswith(steer[0]):
            if not matcher.consume_tokens(list(steer[1])):
                raise AssertionError(f"the engine refused {steer[1]!r} after {bytes(out)!r}")
            out += steer[1]
            steer = None
            continue
        forced = matcher.compute_ff_bytes()
        if forced and steer is not None:  # byte by byte, so the marker is not skipped over
            forced = forced[:1]
        if forced:
            matcher.consume_tokens(list(forced))
            out += forced
            continue
        mask = matcher.compute_bitmask()
        allowed = [t for t in range(_EOS + 1) if mask[t >> 3] >> (t & 7) & 1]
        if _EOS in allowed or not allowed:
            break
        closers = [t for t in allowed if t in _CLOSERS]
        pressure = min(0.95, 0.15 + len(out) / 300)
        token = rng.choice(closers) if closers and rng.random() < pressure else rng.choice(allowed)
        if not matcher.consume_token(token):
            raise AssertionError(matcher.get_error())
        out.append(token)
    else:
        return None
    if steer is not None:
        raise AssertionError(f"the output never reached {steer[0]!r}: {bytes(out)!r}")
    if matcher.is_error():
        raise AssertionError(matcher.get_error())
    return out.decode("utf-8")
