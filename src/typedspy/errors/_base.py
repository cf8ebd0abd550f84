"""The root of the tree, misuse (configuration, inputs, media) and schema errors."""

from __future__ import annotations

import copyreg
from collections.abc import Callable, Sequence
from dataclasses import InitVar, dataclass
from typing import Any

__all__ = [
    "ConfigurationError",
    "InputError",
    "MediaError",
    "MediaNotSupportedError",
    "SchemaError",
    "TypedspyError",
]

# ``cls.__new__(cls, *args)``: pickle writes it as its NEWOBJ opcode, naming no module of ours.
_NEWOBJ: Callable[..., object] = copyreg.__newobj__  # type: ignore[attr-defined]  # not in typeshed


@dataclass(eq=False, repr=False)
class TypedspyError(Exception):
    """Root of every error typedspy raises.

    An error whose constructor only keeps keyword details declares them as the fields of a
    keyword-only dataclass (``@dataclass(eq=False, repr=False, kw_only=True)``): the message
    stays the one positional argument, and equality, hashing and repr stay the exception's own.
    """

    message: InitVar[str] = ""

    def __post_init__(self, message: str) -> None:
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt from its args and attributes, not through ``__init__``: pickle's default,
        # ``cls(*args)``, cannot pass the keyword-only details many errors require, so an error
        # raised in a worker process could not reach its parent. ``args`` is in the state too:
        # `OSError` subclasses (the timeouts) leave it to ``__init__``, which is not called.
        return (_NEWOBJ, (type(self), *self.args), {**vars(self), "args": self.args})


class ConfigurationError(TypedspyError, ValueError):
    """typedspy was used in a way it cannot honour (settings, event loops, arguments)."""


class InputError(ConfigurationError):
    """The inputs given to a module do not match its signature.

    Attributes:
        missing: Input fields the signature declares that were not given.
        unexpected: Names that were given but are not input fields.
    """

    def __init__(
        self, message: str, *, missing: Sequence[str] = (), unexpected: Sequence[str] = ()
    ) -> None:
        super().__init__(message)
        self.missing = tuple(missing)
        self.unexpected = tuple(unexpected)


class MediaError(InputError):
    """An `Image`, `Audio` or `File` input that cannot be sent (type, size, source, hash).

    Attributes:
        kind: ``"image"``, ``"audio"`` or ``"file"``.
        field: The input field holding the value, when known.
    """

    def __init__(self, message: str, *, kind: str = "", field: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.field = field


class MediaNotSupportedError(MediaError):
    """The LM's profile takes no media of this kind (`Profile.media`); nothing was sent.

    Attributes:
        profile: The name of the profile that refused.
    """

    def __init__(self, message: str, *, kind: str, field: str | None, profile: str) -> None:
        super().__init__(message, kind=kind, field=field)
        self.profile = profile


class SchemaError(TypedspyError, TypeError):
    """A signature, model or schema cannot be compiled.

    Attributes:
        path: Where in the schema or model the problem is (field names, list indices, or a
            JSON pointer split into parts); empty when it concerns the whole thing.
    """

    def __init__(self, message: str, *, path: Sequence[str | int] = ()) -> None:
        super().__init__(message)
        self.path = tuple(path)
