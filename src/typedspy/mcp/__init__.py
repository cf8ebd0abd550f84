"""MCP both ways, on the official SDK (the ``typedspy[mcp]`` extra).

`serve` builds an MCP server from typedspy tools and signature-bound modules; `run` (and
``python -m typedspy.mcp module:attribute``) runs one over stdio or streamable HTTP; `tools`
turns a server's tools into typedspy tools for ReAct, their schemas checked on both sides.
"""

try:
    import mcp as _mcp  # noqa: F401
except ImportError as _exc:  # pragma: no cover - the extra is installed where tests run
    raise ImportError("typedspy.mcp needs the MCP SDK: pip install 'typedspy[mcp]'") from _exc
try:
    import re2 as _re2  # type: ignore[import-untyped]  # noqa: F401
except ImportError as _exc:  # pragma: no cover - the extra is installed where tests run
    raise ImportError(
        "typedspy.mcp needs google-re2 (remote schemas' patterns run on RE2): "
        "pip install 'typedspy[mcp]'"
    ) from _exc

from typedspy.mcp._connect import RemoteTools, Source, tools
from typedspy.mcp._remote import RemoteResultError, RemoteTool, RemoteToolError
from typedspy.mcp._run import run
from typedspy.mcp._serve import Servable, serve

__all__ = [
    "RemoteResultError",
    "RemoteTool",
    "RemoteToolError",
    "RemoteTools",
    "Servable",
    "Source",
    "run",
    "serve",
    "tools",
]
