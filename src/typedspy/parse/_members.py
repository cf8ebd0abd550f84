"""The values of streamed output fields, kept member by member (ADR-031).

`JsonScan` says where each top-level member's value starts and ends (or the markers say where
each ``[[ ## field ## ]]`` section does); `ObjectValues` is given each member's value text as it
arrives. A member that ends is decoded and validated once, and never read again; only the member
still being written is re-read, and once its text is long, only after it grew by an eighth.
So the work per piece of text does not grow with the text before it: a completed member
costs nothing more, and re-reading a long open value is spread over the text that grew it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["READ_EVERY_PIECE", "ObjectValues"]

UNSET: Any = object()
READ_EVERY_PIECE = 2_048
"""An open value up to this many characters is re-read at every piece; a longer one once it
grew by an eighth since its last reading (and always at the end of the stream)."""
_TAIL = 256  # how much of the open value's end the ``_type`` check looks at


class ObjectValues:
    """Completed members (validated) and the member being written (partial) of one object.

    Args:
        complete: A complete field's validated value from its text (`UNSET`: left out).
        partial: The open field's partial value from its text and the end of its text
            (`UNSET`: nothing to show yet).
    """

    def __init__(
        self,
        complete: Callable[[str, str], Any],
        partial: Callable[[str, str, str], Any],
    ) -> None:
        self._complete_value = complete
        self._partial = partial
        self._complete: dict[str, Any] = {}
        self._key: str | None = None  # the field being written, if any
        self._parts: list[str] = []
        self._length = 0
        self._tail = ""
        self._read_at = -1  # the open value's length when it was last read
        self._open: Any = UNSET

    def open(self, key: str) -> None:
        """The value of field ``key`` starts."""
        self._key, self._parts, self._length, self._tail = key, [], 0, ""
        self._read_at, self._open = -1, UNSET

    def add(self, text: str) -> None:
        """More of the open value's text."""
        self._parts.append(text)
        self._length += len(text)
        self._tail = (self._tail + text[-_TAIL:])[-_TAIL:]

    def close(self) -> None:
        """The open value ended: decode and validate it, once."""
        key = self._key
        if key is None:
            return
        self._key, self._open = None, UNSET
        text, self._parts = "".join(self._parts), []
        value = self._complete_value(key, text)
        if value is UNSET:  # invalid: left out (the final validation reports it)
            self._complete.pop(key, None)
        else:
            self._complete[key] = value

    def values(self, *, final: bool = False) -> dict[str, Any]:
        """The completed fields, then the open one as far as it was last read."""
        values = dict(self._complete)
        key = self._key
        if key is None:
            return values
        length = self._length
        if final or length <= READ_EVERY_PIECE or length - self._read_at >= length >> 3:
            self._read_at = length
            self._open = self._read(key)
        if self._open is not UNSET:
            values[key] = self._open
        elif key in values:  # a repeated key being written again: the last one wins
            del values[key]
        return values

    def _read(self, key: str) -> Any:
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]  # joined once, not at every reading
        return self._partial(key, self._parts[0] if self._parts else "", self._tail)
