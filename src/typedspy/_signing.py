"""HMAC-SHA256 signatures over canonical JSON, keyed by an application's secrets (ADR-052).

A signature is ``HMAC-SHA256(secret, purpose, a newline, canonical JSON)`` in hex. The canonical
JSON has its keys sorted, no spaces and only ASCII, so a store that reorders keys or re-spaces
the text (a JSONB column, a queue that re-encodes) keeps the signature valid, while any change
to a value breaks it. The purpose names what is signed, so a signature made for one kind of
record is never valid for another made with the same secret.

Secrets rotate: given several, the first signs and every one verifies.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Sequence
from typing import Any, TypeAlias

from typedspy.errors import ConfigurationError

__all__ = ["MIN_SECRET_BYTES", "Secrets", "canonical", "secret_keys", "sign", "verify"]

Secrets: TypeAlias = str | bytes | Sequence[str | bytes]
"""One secret, or several (newest first: the first signs, each verifies)."""

MIN_SECRET_BYTES = 32
"""The shortest secret accepted, in bytes (UTF-8 for text): ``secrets.token_hex(32)`` makes one."""

_HEX = re.compile(r"[0-9a-f]{64}")


def secret_keys(value: object, *, name: str) -> tuple[bytes, ...]:
    """``value`` (a secret or a sequence of them) as HMAC keys, newest first.

    Raises:
        ConfigurationError: Not a str, bytes or a non-empty sequence of them, or a secret
            shorter than `MIN_SECRET_BYTES` (the message never shows the secret).
    """
    given = [value] if isinstance(value, (str, bytes)) else value
    if not isinstance(given, Sequence) or not given:
        raise ConfigurationError(
            f"{name} must be a secret (str or bytes) or a non-empty list of them, "
            f"not {type(value).__name__}"
        )
    keys = []
    for secret in given:
        if not isinstance(secret, (str, bytes)):
            raise ConfigurationError(
                f"{name}: each secret is a str or bytes, not {type(secret).__name__}"
            )
        key = secret.encode() if isinstance(secret, str) else secret
        if len(key) < MIN_SECRET_BYTES:
            raise ConfigurationError(
                f"{name}: a secret of {len(key)} bytes is too short to sign with; use at least "
                f"{MIN_SECRET_BYTES} random bytes (secrets.token_hex(32) makes one)"
            )
        keys.append(key)
    return tuple(keys)


def canonical(value: Any) -> bytes:
    """``value`` (JSON data: str keys, finite numbers) as canonical JSON bytes.

    Raises:
        ValueError: A value JSON cannot hold (NaN, infinity).
        TypeError: A value that is not JSON data.
    """
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return text.encode("ascii")


def _mac(key: bytes, purpose: str, payload: bytes) -> str:
    return hmac.new(key, purpose.encode() + b"\n" + payload, hashlib.sha256).hexdigest()


def sign(keys: Sequence[bytes], purpose: str, payload: bytes) -> str:
    """The signature of ``payload`` for ``purpose``, with the first (newest) key."""
    return _mac(keys[0], purpose, payload)


def verify(keys: Sequence[bytes], purpose: str, payload: bytes, signature: str) -> bool:
    """Whether ``signature`` is ``payload``'s for ``purpose`` under one of ``keys``.

    Compared in constant time (`hmac.compare_digest`); every key is tried, so the time taken
    does not say which one matched.
    """
    if not _HEX.fullmatch(signature):
        return False
    matched = False
    for key in keys:
        matched |= hmac.compare_digest(_mac(key, purpose, payload), signature)
    return matched
