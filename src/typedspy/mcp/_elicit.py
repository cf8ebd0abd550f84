"""`confirm_first` over MCP: the served tool's question becomes a form elicitation.

The protocol decides the transport. From 2026-07-28 a ``tools/call`` that needs an answer
returns an ``InputRequiredResult`` and the client calls again with ``inputResponses``; older
revisions send an ``elicitation/create`` request in the middle of the call. Either way the
answer is keyed by the call's ``confirmation_id`` (tool name plus canonical arguments), so an
answer given for other arguments never approves this call. A client that declared no form
elicitation gets a clear refusal: the tool does not run.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp_types.version import is_version_at_least

from typedspy.tools import ConfirmationRequired

__all__ = ["Answer", "ask", "supports_elicitation"]

_INPUT_REQUIRED_VERSION = "2026-07-28"  # first revision that elicits inside tools/call results
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Approve",
            "description": "Run the tool with the arguments shown",
        }
    },
    "required": ["approve"],
}

Answer = bool | types.InputRequiredResult
"""True (approved), False (declined, cancelled or not approved), or the round trip to ask."""


def supports_elicitation(ctx: ServerRequestContext[Any]) -> bool:
    """Whether the client declared form elicitation (a bare ``elicitation: {}`` counts)."""
    capabilities = ctx.session.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


async def ask(
    ctx: ServerRequestContext[Any],
    params: types.CallToolRequestParams,
    paused: ConfirmationRequired,
) -> Answer:
    """Ask the client's user about ``paused``: the answer, or the result that asks for one."""
    request = types.ElicitRequest(
        params=types.ElicitRequestFormParams(message=paused.question, requested_schema=_SCHEMA)
    )
    if is_version_at_least(ctx.protocol_version, _INPUT_REQUIRED_VERSION):
        key = f"confirm-{paused.confirmation_id}"
        answer = (params.input_responses or {}).get(key)
        if answer is None:
            return types.InputRequiredResult(input_requests={key: request})
        return isinstance(answer, types.ElicitResult) and _approved(answer)
    result = await ctx.session.elicit_form(
        paused.question, _SCHEMA, related_request_id=ctx.request_id
    )
    return _approved(result)


def _approved(result: types.ElicitResult) -> bool:
    return result.action == "accept" and (result.content or {}).get("approve") is True
