"""Telling a runaway completion from a long one, and reasoning left in the content."""

from __future__ import annotations

import pytest

from typedspy.parse import runaway_kind, split_reasoning

PROSE = " ".join(f"item {i} is {'odd' if i % 2 else 'even'}" for i in range(200))
# SmolLM2-135M on a real llama-server, cut at 512 tokens in a ReAct step: one sentence over and
# over, a paragraph break now and then, cut right after one (read as a long answer before).
SENTENCE = "I'm afraid that the response format is not compatible with the client's service."
PARAGRAPHED = (
    "\n\n".join(" ".join([SENTENCE] * n) for n in (9, 3, 10, 4)) + "\n\nI'm afraid that the"
)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ('{"a": "hi' + " " * 40, "whitespace_loop"),
        ('{"a": 1,' + "\n\n\n\n", "whitespace_loop"),
        ('{"a": "' + "the cat sat. " * 20, "repetition_loop"),
        ('{"a": "' + "\U0001f389" * 60, "repetition_loop"),
        ('{"a": "' + "ab" * 40, "repetition_loop"),
        (PARAGRAPHED, "repetition_loop"),
        ("[" + ",\n    ".join(["{}"] * 20), "repetition_loop"),  # copies with new lines
        ('{"a": "' + PROSE, None),  # a long answer, no loop
        ('{"a": "short', None),
        ('{"a": "ab' + "ab" * 5, None),  # too little to call it a loop
        ('{"a": [\n    1,\n    2,\n    ', None),  # indentation, not a loop
    ],
)
def test_runaway_kind(text: str, kind: str | None) -> None:
    assert runaway_kind(text) == kind


def test_only_the_tail_is_examined() -> None:
    assert runaway_kind("x" * 1_000_000 + PROSE) is None


@pytest.mark.parametrize(
    ("text", "answer", "reasoning"),
    [
        ('<think>maybe {"a": 1}</think>\n{"a": 2}', '{"a": 2}', 'maybe {"a": 1}'),
        ('  <think>x</think>{"a": 2}', '{"a": 2}', "x"),
        ("<think>never closed", "", "never closed"),
        ('{"a": 2} <think>late</think>', '{"a": 2} <think>late</think>', None),
    ],
)
def test_split_reasoning(text: str, answer: str, reasoning: str | None) -> None:
    assert split_reasoning(text, ("<think>", "</think>")) == (answer, reasoning)
    assert split_reasoning(text, None) == (text, None)
