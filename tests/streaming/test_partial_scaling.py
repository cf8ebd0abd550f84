"""The partial parser's work does not grow with the text so far (ADR-031).

What is observable from outside: how often a long value in progress is shown changed (re-read),
that completed members are never re-read (a later malformed member cannot undo them), and that
pieces may cut anything anywhere, keys included.
"""

from __future__ import annotations

import json

import typedspy as ts
from typedspy.parse._partial import PartialParser


class Essay(ts.Signature):
    """Write."""

    topic: str = ts.InputField()
    text: str = ts.OutputField()
    words: int = ts.OutputField()


class Listing(ts.Signature):
    """List."""

    topic: str = ts.InputField()
    items: list[str] = ts.OutputField()
    count: int = ts.OutputField()


def pieces(text: str, size: int = 8) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def shown(sig: type[ts.Signature], text: str) -> tuple[list[dict[str, object]], PartialParser]:
    parser = PartialParser(sig)
    seen = []
    for piece in pieces(text):
        parser.feed(piece)
        news = parser.news()
        if news is not None:
            seen.append(news)
    parser.flush()
    last = parser.news()
    if last is not None:
        seen.append(last)
    return seen, parser


def test_a_long_string_in_progress_is_shown_a_logarithmic_number_of_times() -> None:
    body = "lorem ipsum " * 20_000  # 240,000 characters
    seen, parser = shown(Essay, json.dumps({"text": body, "words": 2}))
    texts = [s["text"] for s in seen if "text" in s]
    # Every piece up to 2,048 characters (256 pieces), then once per eighth of growth: about
    # 40 more, not the 29,744 pieces of the rest.
    assert 256 <= len(texts) <= 256 + 60
    assert all(body.startswith(str(t)) for t in texts)  # each one a prefix of the final text
    assert seen[-1] == {"text": body, "words": 2}
    assert parser.values() == {"text": body, "words": 2}


def test_a_long_list_in_progress_is_throttled_the_same_way_and_ends_complete() -> None:
    items = [f"item {i:07d}" for i in range(20_000)]
    seen, _ = shown(Listing, json.dumps({"items": items, "count": 3}))
    lengths = [len(s["items"]) for s in seen if "items" in s]  # type: ignore[arg-type]
    assert lengths == sorted(lengths)  # the items so far only ever grow
    assert len(lengths) < 400
    assert seen[-1] == {"items": items, "count": 3}


def test_a_stream_that_ends_inside_a_long_value_shows_all_of_it_at_the_end() -> None:
    body = "x" * 50_000
    seen, parser = shown(Essay, '{"words": 4, "text": "' + body)
    assert seen[-1] == {"words": 4, "text": body}
    assert parser.current == "text"


def test_a_member_that_ended_is_kept_whatever_follows() -> None:
    parser = PartialParser(Essay)
    for piece in pieces('{"words": 6, "text": "ok", "words": oops'):
        parser.feed(piece)
    assert parser.values() == {"text": "ok"}  # the repeated key, being written, wins
    parser.feed("}")
    assert parser.values() == {"text": "ok"}  # invalid once complete: left out
    parser = PartialParser(Essay)
    for piece in pieces('{"words": 6, "text": "ok", "other": [1, {"a": 2}], '):
        parser.feed(piece)
    assert parser.values() == {"words": 6, "text": "ok"}


def test_keys_cut_anywhere_and_a_huge_key_name_no_field() -> None:
    text = '{"' + "k" * 10_000 + '": 1, "te\\u0078t": "a", "words": 2}'
    for size in (1, 3, 4096):
        parser = PartialParser(Essay)
        segments = []
        for piece in pieces(text, size):
            segments += parser.feed(piece)
        assert "".join(t for _, t in segments) == text
        assert parser.values() == {"text": "a", "words": 2}


def test_a_long_marker_section_is_throttled_and_ends_validated() -> None:
    body = "lorem ipsum " * 20_000
    text = f"[[ ## text ## ]]\n{body}\n\n[[ ## words ## ]]\n7\n\n[[ ## completed ## ]]\n"
    seen, parser = shown(Essay, text)
    texts = [s["text"] for s in seen if "text" in s]
    assert len(texts) <= 256 + 60 + 5
    assert all(body.startswith(str(t)) for t in texts)
    assert seen[-1] == {"text": body.strip(), "words": 7}
    assert parser.current is None
