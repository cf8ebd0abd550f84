"""Cache keys: a hash of the request as it goes on the wire.

The key covers everything that can change the reply: the endpoint's base URL, the model, the
messages, the response format, the tools and every sampling parameter, exactly as sent
(`BaseLM.request_body`, ``extra_body`` merged in), and what is sent beside the body: the query
string and the headers the request sets (`BaseLM.request_options`: ``extra_query``, such as
Azure's ``api-version``, and ``extra_headers``, such as a routing header). Credentials are
left out: they are never in the body, and credential headers (``Authorization``, ``api-key``)
are dropped from the options; the key itself is a SHA-256, so the cache file holds no request
text. A user salt draws several samples of one request, and the schema compiler's version
retires entries when typedspy changes how schemas are compiled. Peers omit the base URL (DSPy)
or the tools (instructor) from their keys (reference/peers.md); both are in this one.

The options are in the material only when there are some, so the keys of requests without
them are those of earlier versions (recorded cassettes keep answering).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from typedspy.lm import BaseLM, LMRequest
from typedspy.schema import SCHEMA_COMPILER_VERSION

__all__ = ["KEY_FORMAT", "cache_key", "embedding_key", "key_material"]

KEY_FORMAT = 1
"""Version of the key material's layout; part of every key."""


def key_material(
    lm: BaseLM, request: LMRequest, *, salt: str = "", body: dict[str, Any] | None = None
) -> dict[str, Any]:
    """What a request's cache key hashes (shown to help debug an unexpected miss).

    ``body``: the request's `BaseLM.request_body` when already built (the pipeline's).
    """
    material: dict[str, Any] = {
        "format": KEY_FORMAT,
        "compiler": SCHEMA_COMPILER_VERSION,
        "endpoint": lm.endpoint,
        "body": lm.request_body(request) if body is None else body,
        "salt": salt,
    }
    options = lm.request_options(request)
    if options:
        material["options"] = options
    return material


def cache_key(
    lm: BaseLM, request: LMRequest, *, salt: str = "", body: dict[str, Any] | None = None
) -> str:
    """The hex SHA-256 of the canonical JSON of `key_material`."""
    return _digest(key_material(lm, request, salt=salt, body=body))


def embedding_key(lm: BaseLM, texts: Sequence[str], model: str, *, salt: str = "") -> str:
    """The key of an ``/v1/embeddings`` request: endpoint, model and texts (as sent), salt."""
    body = {"model": model, "input": list(texts), "encoding_format": "float"}
    material: dict[str, Any] = {
        "format": KEY_FORMAT,
        "endpoint": lm.endpoint,
        "embeddings": body,
        "salt": salt,
    }
    options = lm.request_options()
    if options:
        material["options"] = options
    return _digest(material)


def _digest(material: Mapping[str, Any]) -> str:
    canonical = json.dumps(
        material, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    return hashlib.sha256(canonical.encode()).hexdigest()
