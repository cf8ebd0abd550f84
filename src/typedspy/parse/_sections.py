"""DSPy-style ``[[ ## field ## ]]`` sections: a completion split into fields, and their values."""

from __future__ import annotations

import re
from typing import Any, Literal, get_args, get_origin

from typedspy.parse._lenient import LenientDecodeError, decode_lenient
from typedspy.signature import is_union

__all__ = ["MARKER", "decode_section", "section_value", "split_marker_sections"]

MARKER = re.compile(r"\[\[ *## *(\w+) *## *\]\]")
_FENCE_TAG = re.compile(r"[ \t]*(?:[A-Za-z][\w+.#-]*)?[ \t\r]*")
_INLINE_TAG = re.compile(r"[A-Za-z][\w+.#-]*\s+(?=[\[{\"'])")


def split_marker_sections(text: str) -> dict[str, str] | None:
    """Split DSPy-style ``[[ ## name ## ]]`` sections.

    Text before the first marker is dropped; ``[[ ## completed ## ]]`` ends the section before
    it and is not returned. When a name repeats, the last section wins.

    Args:
        text: The completion text.

    Returns:
        Section name to stripped section text, or None when the text has no marker. Never
        raises.
    """
    try:
        sections: dict[str, str] = {}
        name: str | None = None
        body = 0
        seen = False
        for marker in MARKER.finditer(text):
            seen = True
            if name is not None:
                sections[name] = text[body : marker.start()].strip()
            name = None if marker.group(1) == "completed" else marker.group(1)
            body = marker.end()
        if name is not None:
            sections[name] = text[body:].strip()
        return sections if seen else None
    except Exception:  # documented as never raising; a non-str simply has no sections
        return None


def _unfence(text: str) -> str:
    """Remove one enclosing ``` fence (with or without a language tag), if there is one."""
    if not text.startswith("```"):
        return text
    body = text[3:]
    if len(body) >= 3 and body.endswith("```"):
        body = body[:-3]
    newline = body.find("\n")
    if newline >= 0:
        if _FENCE_TAG.fullmatch(body, 0, newline):
            body = body[newline + 1 :]
    else:
        tag = _INLINE_TAG.match(body)
        if tag is not None:
            body = body[tag.end() :]
    return body.strip()


def decode_section(text: str) -> tuple[bool, object, str | None]:
    """Decode the section of a non-``str`` field: unfence once, then decode leniently.

    Args:
        text: The section's text, as returned by `split_marker_sections`.

    Returns:
        ``(ok, value, error)``: ``(True, value, None)`` on success, else
        ``(False, None, reason)``. Never raises.
    """
    try:
        body = _unfence(text.strip())
        if not body:
            return False, None, "empty section"
        return True, decode_lenient(body), None
    except LenientDecodeError as exc:
        return False, None, exc.message
    except Exception as exc:  # documented as never raising
        return False, None, f"could not decode section: {type(exc).__name__}: {exc}"


def section_value(annotation: Any, text: str) -> tuple[bool, object, str | None]:
    """A marker section's value: text for ``str`` (and ``Optional[str]``), else JSON.

    A ``Literal`` section that is not JSON is taken as the bare text (``high``, not
    ``"high"``), for validation to check.
    """
    members = get_args(annotation) if is_union(annotation) else ()
    non_null = [a for a in members if a is not type(None)]
    if annotation is str:
        return True, text, None
    if non_null == [str]:
        return True, None if text in ("null", "None") else text, None
    ok, value, message = decode_section(text)
    literal = non_null[0] if len(non_null) == 1 else annotation
    if not ok and get_origin(literal) is Literal:
        return True, text, None
    return ok, value, message
