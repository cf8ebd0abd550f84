"""Tools: signature-bound callables a model can call, exported to OpenAI and MCP."""

from typedspy.tools._decorator import tool
from typedspy.tools._names import tool_name
from typedspy.tools._tool import Tool
from typedspy.tools._toolset import Toolset

__all__ = ["Tool", "Toolset", "tool", "tool_name"]
