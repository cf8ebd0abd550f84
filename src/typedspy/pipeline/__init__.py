"""The request pipeline: the ordered stages every request to a model passes (ADR-061).

observe → record → cache → admit → bound → transport: see `typedspy.pipeline._exchange`. Users
meet it through its settings (``callbacks``, ``history_size``, ``cache``, ``budget``,
``rate_limit``, ``deadline``), `inspect_history` and `last_exchanges`; typedspy's modules send
through `complete` and `stream`, and a direct ``lm("...")`` through `complete` too.
"""

from __future__ import annotations

from typedspy.lm import route_calls
from typedspy.pipeline._exchange import Exchange as Exchange
from typedspy.pipeline._exchange import Rendered as Rendered
from typedspy.pipeline._exchange import Stage as Stage
from typedspy.pipeline._exchange import complete as complete
from typedspy.pipeline._exchange import rendering as rendering
from typedspy.pipeline._exchange import stream as stream
from typedspy.pipeline._history import HISTORY as HISTORY
from typedspy.pipeline._history import Entry, inspect_history, last_exchanges
from typedspy.pipeline._stages import embed as embed
from typedspy.pipeline._stages import notify as notify

__all__ = ["Entry", "inspect_history", "last_exchanges"]

route_calls(complete)  # `lm("...")` takes the road a module's requests take (ADR-092)
