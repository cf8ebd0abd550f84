"""Tools served by ``python -m typedspy.mcp served_mcp:tools`` in tests/faults/test_mcp_hostile.py.

Their results and failures hold what a real file system hands a tool: a name with a byte that
is not UTF-8, as Python decodes it (``surrogateescape``: a lone surrogate).
"""

from __future__ import annotations

import os

import typedspy as ts

NAME = os.fsdecode(b"report-\xff.txt")


def file_name() -> str:
    """The name of the report file."""
    return NAME


def open_report() -> str:
    """Open the report file."""
    raise FileNotFoundError(f"no such file: {NAME}")


def ping() -> str:
    """Answer pong."""
    return "pong"


@ts.confirm_first(question="Erase the report?")
def erase_report() -> str:
    """Erase the report file (pretend)."""
    return "erased"


tools = [file_name, open_report, ping, erase_report]
