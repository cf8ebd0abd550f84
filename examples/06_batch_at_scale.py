"""A batch with a progress bar, rate limits, a budget and a response cache, all offline.

Run: ``python examples/06_batch_at_scale.py`` (the bar needs ``pip install "typedspy[progress]"``).
Labels 60 support tickets against the bundled stand-in server: at most 8 at once, under 1,200
requests per minute, with a budget; then runs the same batch again from a SQLite cache, which
sends nothing.
"""

from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path
from typing import Literal

import typedspy as ts
from typedspy.testing import StandIn


class Label(ts.Signature):
    """Label the support ticket."""

    ticket: str = ts.InputField()
    topic: Literal["billing", "bug", "account", "other"] = ts.OutputField()
    urgent: bool = ts.OutputField()


TICKETS = [{"ticket": f"Ticket {n}: I was charged twice, order {1000 + n}."} for n in range(60)]


def main() -> None:
    with StandIn() as server, tempfile.TemporaryDirectory() as tmp:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="offline")
        label = ts.Predict(Label, lm=lm)
        cache = ts.cache.SQLiteCache(Path(tmp) / "responses.sqlite3")
        budget = ts.limits.Budget(requests=200, total_tokens=100_000)
        limit = ts.limits.RateLimit(requests_per_minute=1_200, tokens_per_minute=500_000)

        with ts.context(cache=cache):
            results = label.batch(
                TICKETS,
                concurrency=8,
                rate_limit=limit,
                budget=budget,
                progress=importlib.util.find_spec("tqdm") is not None,  # the progress extra
            )
            print(f"first run:  {results}")
            print(f"budget:     {budget}")
            first = results[0]
            assert isinstance(first, ts.Prediction)
            print(f"ticket 0 -> topic={first.topic} urgent={first.urgent}")

            again = label.batch(TICKETS, concurrency=8)  # every reply comes from the cache
            print(f"second run: {again}")
            assert again.requests == 0 and list(again) == list(results)
        print(f"the server saw {len(server.requests)} requests in all")
        lm.close()


if __name__ == "__main__":
    main()
