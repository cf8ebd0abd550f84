"""Files typedspy writes for the user: whole, or not at all."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from typedspy._text import encodable

__all__ = ["write_atomically"]


def write_atomically(
    path: str | os.PathLike[str], text: str, *, newline: str | None = None
) -> None:
    """Write ``text`` to ``path`` as UTF-8, replacing the file only once all of it is on disk.

    A write that fails midway (disk full, a file-size limit, an interrupt) leaves the file as it
    was: a saved program or report is never left truncated. The text goes to a new file beside
    ``path`` (created as ``open`` would, the umask applied), which then replaces ``path``. A
    lone surrogate (half an emoji a model sent), which UTF-8 cannot encode, is written as U+FFFD,
    as a request carries it.
    """
    target = Path(path)
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with open(descriptor, "w", encoding="utf-8", newline=newline) as file:
            file.write(encodable(text))
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
