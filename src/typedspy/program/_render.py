"""What a module call would send, shown without sending it (`Module.render`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from typedspy import pipeline
from typedspy.errors import ConfigurationError
from typedspy.settings import context
from typedspy.streaming import closing

if TYPE_CHECKING:
    from typedspy.program._module import Module

__all__ = ["arender"]


async def arender(module: Module, inputs: dict[str, Any]) -> dict[str, Any]:
    """The JSON body of the first request ``module(**inputs)`` would send; nothing is sent.

    The call runs as it would (inputs checked, the profile's rules, demos, history) up to its
    first request, which is returned instead of sent: no callbacks, cache, budget, rate limit or
    history take part.

    Raises:
        ConfigurationError: The call sent no request to a model (a code-backed module).
        InputError: Missing, unexpected or invalid inputs.
    """
    with pipeline.rendering(), context(callbacks=()):
        try:
            async with closing(module.aexecute(stream=False, **inputs)) as events:
                async for _ in events:
                    pass
        except pipeline.Rendered as shown:
            return shown.body
    raise ConfigurationError(f"{module!r} sent no request to a model: there is nothing to render")
