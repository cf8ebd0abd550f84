"""The user turn with media: text parts for tagged inputs, content parts for media (ADR-021).

Without media the user turn stays one string, exactly as before. With media it becomes a
list of content parts: each input keeps its ``<name>`` tags as text, and a media value (or a
list of them) goes between its tags as the endpoint's own part (``image_url``,
``input_audio``, ``file``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from typedspy.errors import MediaNotSupportedError
from typedspy.media import Media
from typedspy.profiles import Profile
from typedspy.signature import Signature

__all__ = ["user_content"]


def _media_items(value: Any) -> list[Media] | None:
    if isinstance(value, Media):
        return [value]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, Media) for v in value):
        return list(value)
    return None


def user_content(
    sig: type[Signature], inputs: Mapping[str, Any], profile: Profile, text: str
) -> str | list[dict[str, Any]]:
    """``text`` (the inputs formatted as text) or, when inputs hold media, content parts.

    Raises:
        MediaNotSupportedError: The profile takes no media of an input's kind.
    """
    found = {n: m for n in sig.input_fields if n in inputs and (m := _media_items(inputs[n]))}
    if not found:
        return text
    from typedspy.adapter._chat import render_value  # _chat imports this module

    parts: list[dict[str, Any]] = []
    for name, info in sig.input_fields.items():
        if name not in inputs:
            continue
        items = found.get(name)
        if items is None:
            rendered = render_value(inputs[name], info.annotation)
            _text(parts, f"<{name}>\n{rendered}\n</{name}>")
            continue
        _text(parts, f"<{name}>")
        for item in items:
            _check(item, name, profile)
            parts.append(item.content_part())
        _text(parts, f"</{name}>")
    return parts


def _text(parts: list[dict[str, Any]], text: str) -> None:
    if parts and parts[-1]["type"] == "text":
        parts[-1] = {"type": "text", "text": parts[-1]["text"] + "\n" + text}
    else:
        parts.append({"type": "text", "text": text})


def _check(item: Media, name: str, profile: Profile) -> None:
    if not profile.takes_media(item.kind):
        raise MediaNotSupportedError(
            f"input {name!r}: the {profile.name!r} profile takes no {item.kind} inputs "
            f"(it takes: {', '.join(sorted(profile.media)) or 'none'}); use an LM whose "
            f"profile lists {item.kind!r} in media, e.g. profile.derive(media=...)",
            kind=item.kind,
            field=name,
            profile=profile.name,
        )
