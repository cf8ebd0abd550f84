"""`from typedspy.errors import *` gives type checkers each error (mypy reads a literal __all__)."""

# ruff: noqa: F403, F405
from __future__ import annotations

from typedspy.errors import *


def every_private_module_reaches_the_star() -> list[type[TypedspyError]]:
    return [
        ConfigurationError,
        DatasetError,
        LMContextLengthError,
        OutputDecodeError,
        BatchFileError,
    ]
