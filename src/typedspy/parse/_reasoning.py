"""Reasoning a server leaves in the content (``<think>...</think>``), split off the answer.

One rule, applied twice: `split_reasoning` to a whole completion (the final parse), and
`ReasoningSplitter` to a streamed one piece by piece, so partial outputs are read from the same
answer text the final parse reads (ADR-027). The block counts only at the very start of the
content (after whitespace); an unclosed block is all reasoning.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["ReasoningSplitter", "split_reasoning"]


def split_reasoning(text: str, tags: tuple[str, str] | None) -> tuple[str, str | None]:
    """Split reasoning a server left in the content (``<think>...</think>`` first) off the answer.

    Returns:
        The answer text, and the reasoning (``None`` when the content starts with no such
        block). An unclosed block is all reasoning: the answer is then ``""``.
    """
    if tags is None:
        return text, None
    opening, closing = tags
    body = text.lstrip()
    if not body.startswith(opening):
        return text, None
    inner = body[len(opening) :]
    end = inner.find(closing)
    if end < 0:
        return "", inner.strip()
    return inner[end + len(closing) :].lstrip(), inner[:end].strip()


class ReasoningSplitter:
    """`split_reasoning` for a streamed content: each piece split into reasoning and answer.

    `feed` returns ``(aside, answer)``: ``aside`` is the reasoning block's text (its tags and
    the whitespace around it included), ``answer`` the answer text, in that order. The answers
    of every `feed` and of `flush` add up to the answer `split_reasoning` gives for the whole
    content, and the asides and answers together add up to the content. Until the content
    could still open a block (whitespace, then a prefix of the opening tag), it is held back;
    inside a block, an end that could begin the closing tag is, so a tag split across pieces
    is found. The work per piece is that piece plus a tag's length.

    Example:
        ```python
        splitter = ReasoningSplitter(("<think>", "</think>"))
        splitter.feed("<think>hm {")  # ("<think>hm {", "")
        splitter.feed("}</thi")  # ("}", ""): "</thi" may begin the closing tag
        splitter.feed('nk> {"a": 1}')  # ("</think> ", '{"a": 1}')
        ```
    """

    def __init__(self, tags: tuple[str, str] | None) -> None:
        self._tags = tags
        self._state: Literal["lead", "inside", "after", "answer"] = (
            "answer" if tags is None else "lead"
        )
        self._lead: list[str] = []  # "lead": the whitespace the content starts with
        self._held = ""  # "lead": a prefix of the opening tag; "inside": of the closing tag

    def feed(self, piece: str) -> tuple[str, str]:
        """Take the next piece of the content; return its ``(aside, answer)`` text."""
        if self._state == "answer":
            return "", piece
        if self._state == "after":
            return self._after(piece, "")
        if self._state == "inside":
            return self._inside(piece, "")
        return self._opening(piece)

    def flush(self) -> tuple[str, str]:
        """The text held back (the content ended): an opening never completed is answer."""
        held, self._held = self._held, ""
        if self._state == "inside":
            return held, ""
        if self._state == "lead":
            self._state = "answer"
            return "", "".join(self._lead) + held
        return "", ""

    def _opening(self, piece: str) -> tuple[str, str]:
        assert self._tags is not None
        opening = self._tags[0]
        if not self._held:  # still in the leading whitespace
            rest = piece.lstrip()
            self._lead.append(piece[: len(piece) - len(rest)])
            piece = rest
        self._held += piece
        if self._held.startswith(opening):
            self._state = "inside"
            aside = "".join(self._lead) + opening
            rest, self._held = self._held[len(opening) :], ""
            return self._inside(rest, aside)
        if opening.startswith(self._held):  # "" included: the tag may still come
            return "", ""
        self._state = "answer"
        answer, self._held = "".join(self._lead) + self._held, ""
        return "", answer

    def _inside(self, piece: str, aside: str) -> tuple[str, str]:
        assert self._tags is not None
        closing = self._tags[1]
        text = self._held + piece
        end = text.find(closing)
        if end < 0:
            cut = len(text) - _tag_start(text, closing)
            self._held = text[cut:]
            return aside + text[:cut], ""
        self._held = ""
        self._state = "after"
        end += len(closing)
        return self._after(text[end:], aside + text[:end])

    def _after(self, piece: str, aside: str) -> tuple[str, str]:
        answer = piece.lstrip()
        if answer:
            self._state = "answer"
        return aside + piece[: len(piece) - len(answer)], answer


def _tag_start(text: str, tag: str) -> int:
    """The length of the longest end of ``text`` that is a proper prefix of ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0
