"""Constraints a target cannot send, restated in the description so the model still reads them."""

from __future__ import annotations

import json
from typing import Any

from typedspy.schema._generate import JSONSchema

__all__ = ["restate", "say", "with_notes"]


def say(value: Any) -> str:
    """``value`` as compact JSON text."""
    return json.dumps(value, ensure_ascii=False, default=str)


def restate(node: JSONSchema, notes: list[str], *keys: str) -> None:
    """Remove the unsupported ``keys`` that ``node`` has, keeping their meaning as text."""
    for key in keys:
        if key not in node:
            continue
        value = node.pop(key)
        phrases = {
            "minLength": f"at least {value} characters",
            "maxLength": f"at most {value} characters",
            "uniqueItems": "items must be unique" if value else "",
            "minProperties": f"at least {value} entries",
            "maxProperties": f"at most {value} entries",
            "format": f"format: {value}",
            "default": f"default: {say(value)}",
        }
        phrase = phrases.get(key, f"{key}: {say(value)}")
        if phrase:
            notes.append(phrase)


def with_notes(node: JSONSchema, notes: list[str]) -> JSONSchema:
    """``node`` with ``notes`` appended to its description."""
    if notes:
        text = "; ".join(notes)
        desc = node.get("description")
        node["description"] = f"{desc} ({text})" if desc else text[0].upper() + text[1:]
    return node
