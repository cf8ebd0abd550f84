"""Media inputs: `Image`, `Audio` and `File`, sent as chat content parts (ADR-021)."""

from typedspy.media._media import Audio, File, Image, Media
from typedspy.media._sniff import ACCEPTED

__all__ = ["ACCEPTED", "Audio", "File", "Image", "Media"]
