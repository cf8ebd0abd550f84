"""MIME types from the first bytes of a file, and the types each media kind accepts.

Only the formats the OpenAI chat content parts take are recognised; anything else must be
named by the caller (``mime_type=``) and is then checked against the kind's accepted list.
"""

from __future__ import annotations

__all__ = ["ACCEPTED", "AUDIO_FORMATS", "EXTENSIONS", "sniff"]

# The content part of each kind takes these types (image_url: PNG, JPEG, GIF, WebP;
# input_audio: "wav" or "mp3"; file: PDF). A profile decides whether a kind is taken at all.
ACCEPTED: dict[str, frozenset[str]] = {
    "image": frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"}),
    "audio": frozenset({"audio/wav", "audio/mpeg"}),
    "file": frozenset({"application/pdf", "text/plain", "text/markdown", "text/csv"}),
}

AUDIO_FORMATS: dict[str, str] = {"audio/wav": "wav", "audio/mpeg": "mp3"}
"""``input_audio.format`` for each accepted audio type."""

EXTENSIONS: dict[str, str] = {
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
