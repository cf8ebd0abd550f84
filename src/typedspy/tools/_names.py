"""`tool_name`: the snake_case function name a tool is known by, derived from a class name."""

from __future__ import annotations

import re

from typedspy.errors import ToolError

__all__ = ["TOOL_NAME_PATTERN", "check_tool_name", "sent_name", "tool_name"]

TOOL_NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""What OpenAI accepts as a function name (MCP tool names are looser; this is the common part)."""

# Word boundaries inside a CamelCase name: before an upper-case letter that follows a lower-case
# letter or digit (``SearchDocuments``), and before the last capital of an acronym that starts a
# new word (``HTTPFetch`` -> ``HTTP_Fetch``).
_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_INVALID = re.compile(r"[^A-Za-z0-9_]+")
_REPEATED = re.compile(r"_{2,}")


def tool_name(cls_or_name: type | str) -> str:
    """Derive a tool name: the class (or given) name in snake_case, valid as a function name.

    Acronyms stay whole and digits stay with the word before them; anything else that is not a
    letter or digit (dots, spaces, hyphens, ``<>``) becomes an underscore; names over 64
    characters are cut.
    Already snake_case names are returned unchanged.

    Example:
        ```python
        tool_name(SearchDocuments)  # "search_documents"
        tool_name("HTTPFetch")      # "http_fetch"
        tool_name("GetURLForID")    # "get_url_for_id"
        tool_name("Tool2Go")        # "tool2_go"
        ```

    Args:
        cls_or_name: A class (its ``__name__`` is used) or a name.

    Returns:
        A name matching ``^[a-zA-Z0-9_-]{1,64}$``.

    Raises:
        ToolError: Nothing usable is left of the name (for example ``"<>"``).
    """
    raw = cls_or_name.__name__ if isinstance(cls_or_name, type) else str(cls_or_name)
    snake = _BOUNDARY.sub("_", raw)
    snake = _INVALID.sub("_", snake)
    snake = _REPEATED.sub("_", snake).strip("_").lower()[:64].rstrip("_")
    if not snake:
        raise ToolError(f"cannot derive a tool name from {raw!r}: pass name= explicitly")
    return snake


def check_tool_name(name: str) -> str:
    """Return ``name`` if it is a valid function name, else raise `ToolError` saying why.

    Args:
        name: An explicitly chosen tool name.

    Raises:
        ToolError: The name is empty, too long, or holds characters outside ``[A-Za-z0-9_-]``.
    """
    if isinstance(name, str) and TOOL_NAME_PATTERN.match(name):
        return name
    try:
        suggestion = tool_name(name)
    except ToolError:
        suggestion = "my_tool"
    raise ToolError(
        f"invalid tool name {name!r}: use 1 to 64 characters from [A-Za-z0-9_-] "
        f"(for example {suggestion!r})"
    )


def sent_name(name: str) -> str:
    """A model's tool-call name as a request may carry it back: as is when valid, else made so.

    OpenAI refuses a request whose history holds a call to a name outside
    ``^[a-zA-Z0-9_-]{1,64}$`` (a 400 on ``messages[i].tool_calls[j].function.name``), so a
    model's call to a name no tool has (``functions.search``, 10,000 characters) would end the
    run at the next step instead of being answered. The call keeps the model's name; what the
    request carries is `tool_name` of it, or ``unknown_tool`` when nothing of it is usable.
    """
    if TOOL_NAME_PATTERN.match(name):
        return name
    try:
        return tool_name(name)
    except ToolError:
        return "unknown_tool"
