"""Find the JSON candidates in a completion's text.

Plain JSON, and text whose bracketed regions are all strict JSON, take a fast path through the
C decoder. Otherwise the text is scanned once for balanced ``{...}`` / ``[...]`` regions (minding
strings and comments inside them, skipping brackets that cannot start JSON, so prose full of
placeholders and notes costs next to nothing: `Forest`), and the regions are decoded leniently
from the last one back. When a region fails, the regions nested in it are tried instead, except
those containing the point of failure (they would fail the same way), so the work stays roughly
linear in the length of the text, whatever the text.
"""

from __future__ import annotations

import bisect
import re
from array import array
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from typedspy.parse._lenient import GAP, STRING_REST, LenientDecodeError, scan_strict, scan_value

__all__ = ["MAX_CANDIDATES", "Candidate", "Extraction", "extract_candidates"]

MAX_CANDIDATES = 64
"""At most this many candidates are kept: the last ones in the text."""

MAX_DECODES = 4096
"""Regions decoded at most per text, from the end back: bounds the work on hostile input."""

NO_JSON = "no JSON object found"


@dataclass(frozen=True)
class Candidate:
    """One JSON value found in the text.

    Attributes:
        value: The decoded value: dict, list, str, int, float, bool, None, or `NonFinite`.
        start: Offset of the value in the original text.
        end: Offset just after the value (the end of the text for a supplied closing brace).
        repaired: A lenient rule, or a supplied closing brace, was needed.
    """

    value: object
    start: int
    end: int
    repaired: bool


@dataclass(frozen=True)
class Extraction:
    """The candidates found in one completion.

    Attributes:
        candidates: In order of appearance in the text; possibly empty.
        error: When there are no candidates, a short reason; otherwise None.
        error_path: The field the reason concerns, when it names one.
        limit: A region past a limit (nesting, a number's digits), said as ``error`` says it,
            even beside candidates (they may be its fragments' neighbours, not the answer).
        limit_path: The field ``limit`` concerns, when it names one.
    """

    candidates: tuple[Candidate, ...]
    error: str | None
    error_path: tuple[str | int, ...] = ()
    limit: str | None = None
    limit_path: tuple[str | int, ...] = ()


# -- balanced regions of the text, found in one scan --

_QUOTES = "\"'“”‘"
_IDENT = r"(?:[^\W\d]|\$)[\w$]*"
_LITERAL = r"(?:true|false|null|True|False|None|NaN|-?Infinity)\b"
# What can follow an opener in (lenient) JSON. Regions failing this are bracketed prose and are
# neither decoded nor reported.
_OBJECT_START = f"{GAP.pattern}(?:[{_QUOTES}}}]|/[/*]|{_IDENT}{GAP.pattern}:|\\Z)"
_ARRAY_START = (
    f"{GAP.pattern}(?:[{_QUOTES}\\]\\[]|/[/*]|\\{{{_OBJECT_START}|-?[0-9]|{_LITERAL}|\\Z)"
)
PLAUSIBLE = re.compile(f"\\{{{_OBJECT_START}|\\[{_ARRAY_START}")
# A region with no brackets and no quotes inside: matched in one step instead of char by char.
_FLAT_BODY = f"[^{{}}\\[\\]{_QUOTES}]*"
_FLAT = re.compile(f"\\{{{_FLAT_BODY}\\}}|\\[{_FLAT_BODY}\\]")
# An opener at depth 0, skipping (inside the regex engine) flat regions that are not plausible,
# so that prose full of "{placeholders}" and "[notes]" costs next to nothing.
OPENER = re.compile(
    f"\\{{(?!(?!{_OBJECT_START}){_FLAT_BODY}\\}})|\\[(?!(?!{_ARRAY_START}){_FLAT_BODY}\\])"
)
# Inside a region a quote opens a string only where JSON allows a key or value to start (after
# "{[,:" and any comments), so an apostrophe in bracketed prose ("[it's]") cannot swallow the
# rest of the text; comments are skipped like the decoder skips them. At depth 0 neither quotes
# nor comments mean anything.
_GAP_AND_COMMENTS = re.compile(f"{GAP.pattern}(?:(?://[^\\n]*|/\\*.*?\\*/){GAP.pattern})*", re.S)
_QUOTE = re.compile(f"[{_QUOTES}]")
# Starts with a plain character class so the regex engine scans fast; "," and ":" match only
# before a string or a comment, so commas in bracketed prose cost no Python-level step.
_STRUCTURE = re.compile(
    f"[{{}}\\[\\],:/](?:(?<=[{{}}\\[\\]])|(?<=[,:])(?={GAP.pattern}(?:[{_QUOTES}]|/[/*]))"
    "|(?<=/)(?=[/*]))"
)
_RUN = re.compile(r"\[\[+|\{\{+")


class Forest:
    """Balanced regions in post-order, plus the openers still unclosed at the end of the text.

    A closed region ``r`` spans ``starts[r]:ends[r]``; its subtree is the ``sizes[r]`` regions
    ending at index ``r``. Unclosed opener ``k`` starts at ``open_starts[k]``, and the regions
    recorded before it opened number ``open_counts[k]``.
    """

    def __init__(self, text: str) -> None:
        self.starts = array("q")
        self.ends = array("q")
        self.sizes = array("q")
        self.open_starts: list[int] = []
        self.open_counts: list[int] = []
        self._chars: list[str] = []
        self._unclosed = {"{": 0, "[": 0}
        self._scan(text)

    def _scan(self, text: str) -> None:
        pos = 0
        while True:
            match = (_STRUCTURE if self._chars else OPENER).search(text, pos)
            if match is None:
                return
            i = match.start()
            ch = text[i]
            if ch == "}" or ch == "]":
                self._close("{" if ch == "}" else "[", i)
                pos = i + 1
                continue
            if ch == "{" or ch == "[":
                pos = self._open(text, i, ch)
                if pos < 0:
                    pos = -pos
                    continue
            else:
                pos = i if ch == "/" else i + 1
            gap = _GAP_AND_COMMENTS.match(text, pos)
            pos = pos if gap is None else gap.end()
            if text.startswith("/*", pos):  # an unterminated comment runs to the end
                return
            if ch != "/" and _QUOTE.match(text, pos):
                rest = STRING_REST[text[pos]].match(text, pos + 1)
                if rest is None:  # so does an unterminated string
                    return
                pos = rest.end()

    def _open(self, text: str, i: int, ch: str) -> int:
        """Handle the opener at ``i``; return where to go on, negated if it opened nothing."""
        run = _RUN.match(text, i)
        if run is not None:
            # A run of one opener is plausible as a whole or not at all ("{{" never is), so all
            # but the last are pushed or dropped in a single step.
            i = run.end() - 1
            if ch == "[" and PLAUSIBLE.match(text, i) is not None:
                self.open_starts.extend(range(run.start(), i))
                self.open_counts.extend([len(self.starts)] * (i - run.start()))
                self._chars.extend("[" * (i - run.start()))
                self._unclosed["["] += i - run.start()
        flat = _FLAT.match(text, i)
        if flat is not None:
            self.starts.append(i)
            self.ends.append(flat.end())
            self.sizes.append(1)
            return -flat.end()
        if PLAUSIBLE.match(text, i) is None:
            # Cannot start JSON ("{{", "[see"): leaving it out changes no candidate, and keeps
            # 50,000 nested "{" from becoming 50,000 regions.
            return -(i + 1)
        self.open_starts.append(i)
        self.open_counts.append(len(self.starts))
        self._chars.append(ch)
        self._unclosed[ch] += 1
        return i + 1

    def _close(self, opener: str, i: int) -> None:
        if not self._unclosed[opener]:
            return  # a stray closer in prose
        # A mismatched closer abandons the openers above its match (counted, so amortised O(1)).
        while True:
            ch = self._chars.pop()
            start = self.open_starts.pop()
            count = self.open_counts.pop()
            self._unclosed[ch] -= 1
            if ch == opener:
                break
        self.starts.append(start)
        self.ends.append(i + 1)
        self.sizes.append(len(self.starts) - count)

    def span(self, node: int, length: int) -> tuple[int, int]:
        """Offsets of a node: a closed region (>= 0) or an unclosed opener (``~k``)."""
        if node >= 0:
            return self.starts[node], self.ends[node]
        return self.open_starts[~node], length

    def children(self, node: int) -> Iterator[int]:
        """The nodes directly inside ``node``, last first."""
        if node >= 0:
            return self._roots(node - self.sizes[node] + 1, node)
        return self.open_children(~node)

    def open_children(self, k: int) -> Iterator[int]:
        """The nodes directly inside unclosed opener ``k`` (-1: the whole text), last first."""
        nxt = k + 1
        if nxt < len(self.open_starts):
            yield ~nxt
            hi = self.open_counts[nxt]
        else:
            hi = len(self.starts)
        yield from self._roots(self.open_counts[k] if k >= 0 else 0, hi)

    def _roots(self, lo: int, hi: int) -> Iterator[int]:
        node = hi - 1
        while node >= lo:
            yield node
            node -= self.sizes[node]


# -- the candidates --

_FENCE_OPEN = re.compile(r"```[ \t]*(?:[A-Za-z][\w+.#-]*)?[ \t]*\r?\n")


class _Spans:
    """Sorted, disjoint spans of the text (string candidates) whose insides are not searched."""

    def __init__(self, candidates: list[Candidate]) -> None:
        self.starts = [c.start for c in candidates]
        self.ends = [c.end for c in candidates]

    def end_of(self, pos: int) -> int:
        """The end of the span containing ``pos``, or -1."""
        i = bisect.bisect_right(self.starts, pos) - 1
        return self.ends[i] if i >= 0 and pos < self.ends[i] else -1


def _strict_chain(text: str, skip: _Spans) -> list[Candidate] | None:
    """Fast path: the candidates when the text has a few regions, all strict JSON; else None."""
    found: deque[tuple[object, int, int]] = deque(maxlen=MAX_CANDIDATES)
    pos = 0
    for _ in range(4 * MAX_CANDIDATES):  # beyond that, the walk from the end does less work
        opener = OPENER.search(text, pos)
        if opener is None:
            return [Candidate(value, start, end, False) for value, start, end in found]
        pos = opener.start()
        if skip.end_of(pos) >= 0:
            pos = skip.end_of(pos)
            continue
        strict = scan_strict(text, pos)
        if strict is None:
            return None
        found.append((strict[0], pos, strict[1]))
        pos = strict[1]
    return None


class _Walk:
    """Decode the regions of a forest, last first, until enough candidates are found."""

    def __init__(self, text: str, forest: Forest, skip: _Spans) -> None:
        self.text = text
        self.forest = forest
        self.skip = skip
        self.found: list[Candidate] = []
        self.error: str | None = None
        self.error_path: tuple[str | int, ...] = ()
        self.limit_error: str | None = None  # the first region past a limit (depth, digits)
        self.limit_path: tuple[str | int, ...] = ()

    def run(self) -> None:
        text, forest = self.text, self.forest
        # Each entry: the siblings still to visit, and where their failed parent stopped.
        stack: list[tuple[Iterator[int], int]] = [(forest.open_children(-1), -1)]
        budget = MAX_DECODES
        while stack and len(self.found) < MAX_CANDIDATES and budget:
            siblings, failed_at = stack[-1]
            node = next(siblings, None)
            if node is None:
                stack.pop()
                continue
            start, end = forest.span(node, len(text))
            if self.skip.starts and self.skip.end_of(start) >= 0:
                continue
            # A region containing the point where its parent failed fails there too; one that
            # starts right there does not (the parent failed on its opener, not inside it).
            if start < failed_at < end:
                stack.append((forest.children(node), failed_at))
            elif PLAUSIBLE.match(text, start, end) is None:
                # Not JSON: fail at its first token without decoding, and say nothing about it.
                first = GAP.match(text, start + 1, end)
                stack.append((forest.children(node), start + 1 if first is None else first.end()))
            else:
                budget -= 1
                failed = self._decode(node, start, end, strict_first=failed_at < 0)
                if failed >= 0:
                    stack.append((forest.children(node), failed))

    def _decode(self, node: int, start: int, end: int, strict_first: bool) -> int:
        """Decode one region into a candidate; return -1, or where a syntax error stopped it."""
        try:
            value, stop, repaired = scan_value(
                self.text,
                start,
                stop=end,
                allow_truncated_root=node < 0 and self.text[start] == "{",
                # Nested regions are tried only once their parent failed; they are rarely
                # strict JSON, and strict attempts on them could add up to quadratic work.
                strict_first=strict_first,
            )
        except LenientDecodeError as exc:
            if exc.kind in ("depth", "digits") and self.limit_error is None:
                self.limit_error, self.limit_path = exc.message, exc.path
            if self.error is None:
                self.error, self.error_path = exc.message, exc.path
            # Truncated or past a limit: whatever is nested inside is a fragment, not an answer
            # (an answer with a 5,000-digit number is not its "action" object alone).
            return exc.offset if exc.kind == "syntax" else -1
        self.found.append(Candidate(value, start, stop, repaired))
        return -1


def _whole_string(text: str, lo: int, hi: int) -> Candidate | None:
    """A candidate when ``text[lo:hi]`` is exactly one JSON string literal."""
    if hi - lo < 2 or text[lo] != '"':
        return None
    try:
        value, end, repaired = scan_value(text, lo, stop=hi)
    except LenientDecodeError:
        return None
    if end != hi or not isinstance(value, str):
        return None
    return Candidate(value, lo, hi, repaired)


def _strip_bounds(text: str, lo: int, hi: int) -> tuple[int, int]:
    part = text[lo:hi].lstrip()
    lo = hi - len(part)
    return lo, lo + len(part.rstrip())


def _fenced_strings(text: str) -> list[Candidate]:
    """Fences whose whole content is a JSON string literal (double-encoded JSON, usually)."""
    found: list[Candidate] = []
    pos = 0
    while True:
        opening = _FENCE_OPEN.search(text, pos)
        if opening is None:
            return found
        closing = text.find("```", opening.end())
        if closing < 0:
            return found
        candidate = _whole_string(text, *_strip_bounds(text, opening.end(), closing))
        if candidate is not None:
            found.append(candidate)
        pos = closing + 3


def _extract(text: str) -> Extraction:
    lo, hi = _strip_bounds(text, 0, len(text))
    if lo == hi:
        return Extraction((), f"{NO_JSON} (empty text)")
    if text[lo] in "{[":
        strict = scan_strict(text, lo)
        if strict is not None and strict[1] == hi:  # plain JSON: nothing else can be a candidate
            return Extraction((Candidate(strict[0], lo, hi, False),), None)
    whole = _whole_string(text, lo, hi)
    if whole is not None:
        return Extraction((whole,), None)
    strings = _fenced_strings(text) if "```" in text else []
    spans = _Spans(strings)
    regions = _strict_chain(text, spans)
    error: str | None = None
    path: tuple[str | int, ...] = ()
    limit: str | None = None
    limit_path: tuple[str | int, ...] = ()
    if regions is None:
        walk = _Walk(text, Forest(text), spans)
        walk.run()
        regions, error, path = walk.found, walk.error, walk.error_path
        limit, limit_path = walk.limit_error, walk.limit_path
    merged = sorted(strings + regions, key=lambda c: c.start)[-MAX_CANDIDATES:]
    if merged:
        return Extraction(tuple(merged), None, (), limit, limit_path)
    if limit is not None:
        return Extraction((), limit, limit_path, limit, limit_path)
    return Extraction((), error or NO_JSON, path)


def extract_candidates(text: str) -> Extraction:
    """Find every JSON object, array or whole-text string literal in a completion.

    Args:
        text: The completion text: bare JSON, fenced JSON, JSON in tags or prose, or anything.

    Returns:
        The candidates in order of appearance (the last `MAX_CANDIDATES` of them); when there
        are none, an error saying why. Never raises.
    """
    try:
        return _extract(text)
    except Exception as exc:  # a parse stage must report, never crash the caller
        return Extraction((), f"could not extract JSON: {type(exc).__name__}: {exc}")
