"""Evaluate a program, optimize its demos, evaluate again, save and reload it; offline.

Run: ``python examples/13_evaluate_and_optimize.py``

The dataset is the support-ticket set shipped in `typedspy.testing` (24 tickets, a union
output: Billing | Bug | Account). The model is the stand-in server answering as `NearestDemo`:
it copies the answer of the demo most like the ticket, and knows nothing else. So every point
the score gains comes from the demos the optimizers chose.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import typedspy as ts
from typedspy.testing import (
    TICKET_FALLBACK,
    TICKET_STOPWORDS,
    NearestDemo,
    RouteTicket,
    StandIn,
    support_tickets,
)


def main() -> None:
    train, dev = support_tickets()
    model = NearestDemo(TICKET_FALLBACK, ignore=TICKET_STOPWORDS)
    with StandIn(answer=model) as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-standin")
        ts.configure(lm=lm)
        program = ts.ChainOfThought(RouteTicket)

        baseline = ts.evaluate(program, dev)
        print(baseline)

        optimizer = ts.optimize.BootstrapFewShot(max_bootstrapped_demos=8, max_labeled_demos=8)
        compiled = optimizer.compile(program, train)
        print(f"bootstrapped from training examples {optimizer.result.passed}")
        optimized = ts.evaluate(compiled, dev)
        print(optimized)

        knn = ts.optimize.KNNFewShot(k=2).compile(ts.Predict(RouteTicket), train)
        print(f"KNNFewShot(k=2): {ts.evaluate(knn, dev).percent}%")

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "router.json"
            compiled.save(path)
            reloaded = ts.ChainOfThought(RouteTicket)
            reloaded.load(path)
            again = ts.evaluate(reloaded, dev)
            knn.save(Path(tmp) / "knn.json")  # with its training examples and their vectors
            knn_again = ts.optimize.KNNProgram(ts.Predict(RouteTicket))
            knn_again.load(Path(tmp) / "knn.json")
            knn_reloaded = ts.evaluate(knn_again, dev)
        print(f"before {baseline.percent}%, after {optimized.percent}%, reloaded {again.percent}%")
        print(f"KNN program reloaded: {knn_reloaded.percent}%, {knn_reloaded.calls} requests")
        assert again.score == optimized.score > baseline.score
        assert knn_reloaded.score == 1.0
        lm.close()


if __name__ == "__main__":
    main()
