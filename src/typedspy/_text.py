"""Text typedspy passes on: made encodable as UTF-8, and cut to a bound."""

from __future__ import annotations

import re

__all__ = ["MAX_SHOWN_CHARS", "bounded", "cut_middle", "encodable", "printable"]

_SURROGATES = re.compile("[\ud800-\udfff]")


def encodable(text: str) -> str:
    """``text`` with lone surrogates (which UTF-8 cannot encode) replaced by U+FFFD.

    A model may send an escaped lone surrogate in its JSON (half an emoji); echoed back in a
    request it made the SDK fail to encode it (issue 10), and as a signature's instructions
    (an optimizer's rewrite) Python could not make the class.
    """
    try:
        text.encode()
    except UnicodeEncodeError:
        return _SURROGATES.sub("\ufffd", text)
    return text


MAX_SHOWN_CHARS = 1000
"""What the model is shown of an error, an observation or a metric's feedback, at most: a stack of
validation messages or a huge exception text must not crowd out the conversation."""


def bounded(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying so when it was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters cut]"


def cut_middle(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    """``text`` cut to ``limit`` characters in its middle, saying so: its start and end kept."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]} [... {len(text) - 2 * half} characters ...] {text[-half:]}"


_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # all but tab and newline


def printable(text: str) -> str:
    r"""``text`` for a terminal: control characters other than tab and newline as ``\xNN``.

    What typedspy prints (``ts.inspect_history``, the probe's table) carries text a server
    sent: an escape sequence in it (ESC, a carriage return) would otherwise be run by the
    terminal, recolouring, retitling or overwriting what the user reads.
    """
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
