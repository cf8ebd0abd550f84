"""Balanced ``{...}`` / ``[...]`` regions of a completion's text, found in one scan.

The scan minds strings and comments inside regions and skips brackets that cannot start JSON
(bracketed prose, ``{{`` runs), so prose full of placeholders and notes costs next to nothing.
`Forest` keeps the regions in post-order, plus the openers still unclosed at the end of the
text; `typedspy.parse._extract` decodes them.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterator

from typedspy.parse._lenient import GAP, STRING_REST

__all__ = ["OPENER", "PLAUSIBLE", "Forest"]

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
