"""Media inputs: `Image`, `Audio` and `File`, sent as chat content parts (ADR-021)."""

from typedspy.media._media import ACCEPTED, Audio, File, Image, Media

__all__ = ["ACCEPTED", "Audio", "File", "Image", "Media"]
