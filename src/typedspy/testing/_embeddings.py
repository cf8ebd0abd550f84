"""Deterministic embeddings for the stand-in: hashed bag of words, L2-normalised.

Texts that share words get close vectors, so nearest-neighbour code (KNNFewShot) behaves as
it would with a real embedding model, offline and reproducibly.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import struct
from typing import Any

from typedspy.testing._payloads import Outcome, error_body

__all__ = ["DIMENSIONS", "embed_text", "embeddings_outcome"]

DIMENSIONS = 64
_WORD = re.compile(r"\w+")


def embed_text(text: str, dimensions: int = DIMENSIONS) -> list[float]:
    """The stand-in's vector for ``text``: each lower-cased word hashed into a bucket."""
    vector = [0.0] * dimensions
    for word in _WORD.findall(text.lower()):
        digest = hashlib.sha256(word.encode()).digest()
        bucket = int.from_bytes(digest[:4], "little") % dimensions
        vector[bucket] += 1.0 if digest[4] % 2 else -1.0
    norm = math.sqrt(sum(v * v for v in vector))
    return [v / norm for v in vector] if norm else vector


def embeddings_outcome(body: Any, model: str) -> Outcome:
    """The answer to a ``POST /v1/embeddings`` request."""
    if not isinstance(body, dict) or "input" not in body:
        return Outcome(400, error_body("Missing required parameter: 'input'.", param="input"))
    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
    if not texts or not all(isinstance(t, str) for t in texts):
        return Outcome(
            400, error_body("'input' must be a string or a list of strings.", param="input")
        )
    as_base64 = body.get("encoding_format") == "base64"
    data = []
    for index, text in enumerate(texts):
        vector = embed_text(text)
        value: Any = (
            base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            if as_base64
            else vector
        )
        data.append({"object": "embedding", "index": index, "embedding": value})
    tokens = sum(len(_WORD.findall(t)) for t in texts)
    usage = {"prompt_tokens": tokens, "total_tokens": tokens}
    return Outcome(
        200, {"object": "list", "data": data, "model": body.get("model", model), "usage": usage}
    )
