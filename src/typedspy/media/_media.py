"""`Image`, `Audio` and `File`: media inputs of a signature, sent as chat content parts.

A media value holds its bytes as base64 with their SHA-256 (or, for images, a URL the endpoint
fetches itself). It is a frozen Pydantic model, so it validates as a signature input, saves in
demos and cache entries as plain JSON, and loads back checked against its hash (ADR-021).

Only the formats the OpenAI chat content parts take are sniffed from the bytes; anything else
must be named by the caller (``mime_type=``) and is then checked against the kind's accepted list.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import pathlib
import re
import stat
from collections.abc import Mapping
from typing import Any, ClassVar, Literal
from urllib.parse import SplitResult, urlsplit

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from typedspy._types import format_path
from typedspy.errors import MediaError

__all__ = ["ACCEPTED", "Audio", "File", "Image", "Media"]

_MIB = 1024 * 1024
_CHUNK = _MIB  # read past a file's reported size in pieces of this many bytes
# Never block in open() (a FIFO swapped in after the stat), never take a controlling terminal.
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_BINARY", 0)
)
_NOT_REGULAR = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # what URL parsers drop or read differently

# The content part of each kind takes these types (image_url: PNG, JPEG, GIF, WebP;
# input_audio: "wav" or "mp3"; file: PDF). A profile decides whether a kind is taken at all.
ACCEPTED: dict[str, frozenset[str]] = {
    "image": frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"}),
    "audio": frozenset({"audio/wav", "audio/mpeg"}),
    "file": frozenset({"application/pdf", "text/plain", "text/markdown", "text/csv"}),
}

_AUDIO_FORMATS: dict[str, str] = {"audio/wav": "wav", "audio/mpeg": "mp3"}
"""``input_audio.format`` for each accepted audio type."""

_EXTENSIONS: dict[str, str] = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".wav": "audio/wav",
    ".mp3": "audio/mpeg",
    ".pdf": "application/pdf",
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".csv": "text/csv",
}


class Media(BaseModel):
    """What `Image`, `Audio` and `File` share: a source, a MIME type and a content hash.

    Build one with `from_url`, `from_bytes` or `from_path`; as a signature input a `bytes`
    value, a `pathlib.Path`, an ``http(s)://`` URL or a ``data:`` URL is converted for you.

    Attributes:
        url: Where the endpoint fetches the content (images only), or ``None``.
        data: The content as base64, or ``None`` for a URL.
        mime_type: The content's MIME type (sniffed from the bytes or the file name).
        sha256: The SHA-256 of the content (hex), checked when a saved value loads.
        filename: The file name to report (files), if known.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: ClassVar[str] = "file"
    max_bytes: ClassVar[int] = 20 * _MIB
    """The largest content accepted, in bytes (a typedspy bound, checked before sending)."""

    url: str | None = None
    data: str | None = None
    mime_type: str | None = None
    sha256: str | None = None
    filename: str | None = None

    @classmethod
    def from_url(cls, url: str, **extra: Any) -> Any:
        """A value the endpoint fetches from ``url`` (``http(s)://``), or a ``data:`` URL.

        Raises:
            MediaError: Not a URL, a type this kind does not take, or a kind that cannot be
                sent by URL.
        """
        return _validated(cls, {**_from_url(cls, url), **extra})

    @classmethod
    def from_bytes(cls, data: bytes, *, mime_type: str | None = None, **extra: Any) -> Any:
        """A value holding ``data``; the MIME type is sniffed when not given.

        Raises:
            MediaError: An unknown or unaccepted MIME type, or more than `max_bytes`.
        """
        return _validated(cls, {**_from_bytes(cls, data, mime_type), **extra})

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], **extra: Any) -> Any:
        """A value holding the file at ``path`` (type from its bytes, else its extension).

        At most `max_bytes` + 1 bytes are read. A FIFO, a device, a directory or a socket is
        refused without being read (or opened in a way that could block).

        Raises:
            MediaError: The path is not a regular file or cannot be read, its type is not
                accepted, or it holds more than `max_bytes`.
        """
        return _validated(cls, {**_from_path(cls, pathlib.Path(path)), **extra})

    @model_validator(mode="before")
    @classmethod
    def _coerce(cls, value: Any) -> Any:
        if isinstance(value, (bytes, bytearray, memoryview)):
            value = _from_bytes(cls, bytes(value), None)
        elif isinstance(value, pathlib.PurePath):
            value = _from_path(cls, pathlib.Path(value))
        elif isinstance(value, str):
            value = _from_url(cls, value)
        if isinstance(value, Mapping):
            return _checked_mapping(cls, dict(value))
        return value

    @field_validator("url")
    @classmethod
    def _check_url(cls, url: str | None) -> str | None:
        # Here, not in the coercion above: a mapping (a saved demo, a dataset row, a tool
        # argument, model_validate_json) reaches the endpoint through this check too.
        if url is None:
            return None
        if _is_data_url(url):  # still here only when `data` is given beside it
            raise MediaError(
                f"{cls.__name__} needs exactly one source: a url or base64 data", kind=cls.kind
            )
        _http_url(cls, url)
        return url

    @model_validator(mode="after")
    def _check(self) -> Media:
        if (self.url is None) == (self.data is None) and not self._other_source():
            raise MediaError(
                f"{type(self).__name__} needs exactly one source: a url or base64 data",
                kind=self.kind,
            )
        if self.mime_type is not None and self.mime_type not in ACCEPTED[self.kind]:
            raise MediaError(
                f"{type(self).__name__} does not take {self.mime_type!r} (accepted: "
                f"{', '.join(sorted(ACCEPTED[self.kind]))})",
                kind=self.kind,
            )
        if self.data is not None and self.mime_type is None:
            raise MediaError(
                f"{type(self).__name__}: unknown content type; pass mime_type= (one of "
                f"{', '.join(sorted(ACCEPTED[self.kind]))})",
                kind=self.kind,
            )
        return self

    def _other_source(self) -> bool:
        return False

    def data_url(self) -> str:
        """The content as a ``data:`` URL (the URL itself for a URL value)."""
        if self.data is None:
            return self.url or ""
        return f"data:{self.mime_type};base64,{self.data}"

    def content_part(self) -> dict[str, Any]:
        """The chat content part that carries this value."""
        raise NotImplementedError

    def __repr_args__(self) -> Any:
        for name, value in super().__repr_args__():
            if value is None:
                continue
            if name == "data" and isinstance(value, str):
                yield name, f"<{len(value) * 3 // 4 - value[-2:].count('=')} bytes>"
            else:
                yield name, value


class Image(Media):
    """An image input, sent as an ``image_url`` content part (PNG, JPEG, GIF or WebP).

    Example:
        ```python
        class Describe(ts.Signature):
            photo: ts.Image = ts.InputField()
            caption: str = ts.OutputField()

        ts.Predict(Describe)(photo=ts.Image.from_path("cat.png"))
        ```

    Attributes:
        detail: The ``detail`` hint (``"low"``, ``"high"``, ``"auto"``), sent when set.
    """

    kind: ClassVar[str] = "image"
    detail: Literal["auto", "low", "high"] | None = None

    def content_part(self) -> dict[str, Any]:
        """``{"type": "image_url", "image_url": {"url": ..., "detail": ...}}``."""
        image: dict[str, Any] = {"url": self.data_url()}
        if self.detail is not None:
            image["detail"] = self.detail
        return {"type": "image_url", "image_url": image}


class Audio(Media):
    """An audio input (WAV or MP3), sent as an ``input_audio`` content part.

    The part carries base64 data only, so an `Audio` comes from bytes or a path, not a URL.
    """

    kind: ClassVar[str] = "audio"
    max_bytes: ClassVar[int] = 25 * _MIB

    def content_part(self) -> dict[str, Any]:
        """``{"type": "input_audio", "input_audio": {"data": ..., "format": "wav"}}``."""
        return {
            "type": "input_audio",
            "input_audio": {"data": self.data, "format": _AUDIO_FORMATS[str(self.mime_type)]},
        }


class File(Media):
    """A document input (PDF, plain text, Markdown or CSV), sent as a ``file`` content part.

    From bytes or a path (sent as ``file_data``), or an id the endpoint already stores
    (``File(file_id="file-...")``); not from a URL.

    Attributes:
        file_id: An id of a file uploaded to the endpoint beforehand.
    """

    kind: ClassVar[str] = "file"
    max_bytes: ClassVar[int] = 32 * _MIB
    file_id: str | None = None

    def _other_source(self) -> bool:
        return self.file_id is not None and self.data is None and self.url is None

    def content_part(self) -> dict[str, Any]:
        """``{"type": "file", "file": {"file_data": ..., "filename": ...}}`` or a file id."""
        if self.file_id is not None:
            return {"type": "file", "file": {"file_id": self.file_id}}
        name = self.filename or f"{(self.sha256 or 'file')[:12]}.pdf"
        return {"type": "file", "file": {"file_data": self.data_url(), "filename": name}}


def sniff(data: bytes) -> str | None:
    """The MIME type the leading bytes of ``data`` announce, or ``None`` when unknown."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "audio/wav"
    if data.startswith(b"ID3") or data[:2] in (b"\xff\xfb", b"\xff\xf3", b"\xff\xf2"):
        return "audio/mpeg"
    if data.startswith(b"%PDF-"):
        return "application/pdf"
    return None


def _validated(cls: type[Media], fields: dict[str, Any]) -> Any:
    """``cls`` built from ``fields``; a failed check is a `MediaError`, not a ValidationError."""
    try:
        return cls.model_validate(fields)
    except ValidationError as exc:
        detail = "; ".join(
            (f"{format_path(tuple(e['loc']))}: " if e["loc"] else "")
            + str(e["msg"]).removeprefix("Value error, ").removeprefix(f"{cls.__name__}: ")
            for e in exc.errors()
        )
        raise MediaError(f"{cls.__name__}: {detail}", kind=cls.kind) from exc


def _too_big(cls: type[Media], what: str) -> MediaError:
    return MediaError(
        f"{cls.__name__}: {what} is more than the {cls.max_bytes:,} bytes accepted (max_bytes)",
        kind=cls.kind,
    )


def _from_bytes(cls: type[Media], data: bytes, mime_type: str | None) -> dict[str, Any]:
    if len(data) > cls.max_bytes:
        raise _too_big(cls, f"{len(data):,} bytes")
    return {
        "data": base64.b64encode(data).decode("ascii"),
        "mime_type": mime_type or sniff(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def _from_path(cls: type[Media], path: pathlib.Path) -> dict[str, Any]:
    data = _read_regular(cls, path)
    fields = _from_bytes(cls, data, sniff(data) or _EXTENSIONS.get(path.suffix.lower()))
    return {**fields, "filename": path.name}


def _read_regular(cls: type[Media], path: pathlib.Path) -> bytes:
    """The bytes of the regular file at ``path``, reading at most ``max_bytes + 1`` of them.

    The path is checked before it is opened (opening a FIFO waits for a writer, reading
    ``/dev/zero`` never ends), opened without blocking, and checked again on the open file, so
    a special file swapped in between is refused too. The size the file reports is not
    trusted: a file that grows, or reports none, is still read only up to the bound.
    """
    shown = repr(str(path))
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        raise _unreadable(cls, shown, exc) from exc
    _check_regular(cls, shown, mode)
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        raise _unreadable(cls, shown, exc) from exc
    with open(fd, "rb") as file:  # closes fd, whatever happens below
        try:
            status = os.fstat(fd)
            _check_regular(cls, shown, status.st_mode)
            if status.st_size > cls.max_bytes:
                raise _too_big(cls, f"{shown} ({status.st_size:,} bytes)")
            data = file.read(status.st_size + 1)
            while len(data) <= cls.max_bytes and (
                more := file.read(min(_CHUNK, cls.max_bytes + 1 - len(data)))
            ):
                data += more
        except OSError as exc:
            raise _unreadable(cls, shown, exc) from exc
    if len(data) > cls.max_bytes:
        raise _too_big(cls, shown)
    return data


def _unreadable(cls: type[Media], shown: str, exc: OSError | ValueError) -> MediaError:
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return MediaError(f"cannot read media file {shown}: {reason}", kind=cls.kind)


def _check_regular(cls: type[Media], shown: str, mode: int) -> None:
    if not stat.S_ISREG(mode):
        what = next((name for test, name in _NOT_REGULAR if test(mode)), "a special file")
        raise MediaError(f"{cls.__name__}: {shown} is {what}, not a regular file", kind=cls.kind)


def _is_data_url(url: str) -> bool:
    return url[:5].lower() == "data:"


def _from_url(cls: type[Media], url: str) -> dict[str, Any]:
    if _is_data_url(url):
        # RFC 2397: data:[<type>][;<name>=<value>]...;base64,<data>. The parameters (a file
        # name, a charset) are not sent: the part carries data:<type>;base64, as OpenAI takes it.
        head, sep, payload = url.partition(",")
        mime_type, *params = head[5:].split(";")
        if not sep or not params or params[-1].strip().lower() != "base64":
            raise MediaError(
                "a data: URL must be base64 (data:<type>;base64,<data>)", kind=cls.kind
            )
        return {"data": payload, "mime_type": mime_type.strip().lower() or None}
    path = pathlib.PurePosixPath(_http_url(cls, url).path)
    return {"url": url, "mime_type": _EXTENSIONS.get(path.suffix)}


def _http_url(cls: type[Media], url: str) -> SplitResult:
    """``url`` split, when the endpoint may fetch it (http(s), a host); else a `MediaError`."""
    parts: SplitResult | None
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:  # an unparseable host ("http://[::1")
        parts, host = None, None
    if parts is None or parts.scheme not in ("http", "https") or not host or _CONTROL.search(url):
        raise MediaError(
            f"{url[:80]!r} is not an http(s) or data: URL; pass a pathlib.Path for a file",
            kind=cls.kind,
        )
    if cls.kind != "image":
        raise MediaError(
            f"{cls.__name__} cannot be sent by URL (its content part carries the data); "
            "pass bytes or a path",
            kind=cls.kind,
        )
    return parts


_NOT_BASE64 = re.compile(r"[^A-Za-z0-9+/=]")


def _base64_problem(data: str) -> str | None:
    """Why ``data`` is not standard, padded base64 (as a ``data:`` URL carries it), or None.

    Endpoints decode the URL's data strictly: whitespace, the URL-safe alphabet, missing or
    excess padding are refused there (or misread), so they are refused here, before sending.
    """
    bad = _NOT_BASE64.search(data)
    if bad is not None:
        at, char = bad.start(), bad.group()
        if char in "-_":
            return (
                f"{char!r} at character {at} is the URL-safe alphabet; encode with "
                "base64.b64encode (standard: '+' and '/'), or pass the bytes"
            )
        if char.isspace():
            return (
                f"whitespace at character {at} (a line break of wrapped base64?); remove it, "
                "or pass the bytes"
            )
        return f"character {at} ({char!r}) is not in the base64 alphabet"
    body = data.rstrip("=")
    padding = len(data) - len(body)
    if "=" in body:
        return f"'=' at character {body.index('=')} is padding inside the data"
    if len(body) % 4 == 1:
        return f"{len(body)} characters of data cannot be base64 (one too many or too few)"
    needed = -len(body) % 4
    if padding != needed:
        return (
            f"{padding} '=' of padding where {needed} belong (base64 comes in groups of 4 "
            "characters)"
        )
    return None


def _excerpt(data: str) -> str:
    """``data`` as named in a message: short as is, long by its start and length."""
    return repr(data) if len(data) <= 24 else f"{data[:16]!r}... ({len(data):,} characters)"


def _checked_mapping(cls: type[Media], value: dict[str, Any]) -> dict[str, Any]:
    """A saved value: decode its data, check size and hash (fill the hash when absent).

    A ``data:`` URL given as ``url`` becomes ``data``, so it is checked the same way.
    """
    url = value.get("url")
    if isinstance(url, str) and _is_data_url(url) and value.get("data") is None:
        fields = _from_url(cls, value.pop("url"))
        value = {**value, **fields, "mime_type": value.get("mime_type") or fields["mime_type"]}
    data = value.get("data")
    if not isinstance(data, str):
        return value
    if len(data) // 4 * 3 - data[-2:].count("=") > cls.max_bytes:  # before decoding it
        raise _too_big(cls, f"{len(data):,} characters of base64")
    problem, raw = _base64_problem(data), b""
    if problem is None:
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError) as exc:  # not expected after the check: say so
            problem = str(exc)
    if problem is not None:
        raise MediaError(
            f"{cls.__name__}: data {_excerpt(data)} is not valid base64: {problem}", kind=cls.kind
        )
    if not raw:
        raise MediaError(f"{cls.__name__}: the content is empty (0 bytes)", kind=cls.kind)
    if len(raw) > cls.max_bytes:
        raise _too_big(cls, f"{len(raw):,} bytes")
    digest = hashlib.sha256(raw).hexdigest()
    if value.get("sha256") not in (None, digest):
        raise MediaError(
            f"{cls.__name__}: the data does not match its sha256 (corrupted or edited)",
            kind=cls.kind,
        )
    if value.get("mime_type") is None:
        value["mime_type"] = sniff(raw)
    return {**value, "sha256": digest}
