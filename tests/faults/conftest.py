"""The MCP cases need the ``typedspy[mcp]`` extra (in ``dev``); without it, it is not collected."""

from __future__ import annotations

import importlib.util

collect_ignore = [] if importlib.util.find_spec("mcp") else ["test_mcp_hostile.py"]
