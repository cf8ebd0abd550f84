"""Evaluate a program, optimize its demos, evaluate again, save, reload and verify it; offline.

Run: ``python examples/13_evaluate_and_optimize.py``

The dataset is the support-ticket set shipped in `typedspy.testing` (24 tickets, a union
output: Billing | Bug | Account). The model is the stand-in server answering as `NearestDemo`:
it copies the answer of the demo most like the ticket, and knows nothing else. So every point
the score gains comes from the demos the optimizers chose. The demos are spread over the six
classes of the output (ADR-082); the compiled program keeps the score it reached on the dev set
and, reloaded, verifies it from a replayed cassette with the server stopped (ADR-083).
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
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        with StandIn(answer=model) as server, ts.cache.SQLiteCache(tmp / "cassette.db") as cache:
            url = server.base_url  # a cassette's entries are keyed by the endpoint
            lm = ts.LM("standin-1", base_url=url, api_key="sk-standin")
            ts.configure(lm=lm, cache=cache)  # every reply is recorded in the cassette
            program = ts.ChainOfThought(RouteTicket)

            baseline = ts.evaluate(program, dev)
            print(baseline)

            optimizer = ts.optimize.BootstrapFewShot(max_bootstrapped_demos=8, max_labeled_demos=8)
            compiled = optimizer.compile(program, train, valset=dev)  # plan, then coverage
            print(f"bootstrapped from training examples {optimizer.result.passed}")
            assert optimizer.coverage is not None and not optimizer.coverage["self"].missing
            assert compiled.score_record is not None  # the score it reached on dev
            optimized = ts.evaluate(compiled, dev)
            print(optimized)

            knn = ts.optimize.KNNFewShot(k=2).compile(ts.Predict(RouteTicket), train)
            print(f"KNNFewShot(k=2): {ts.evaluate(knn, dev).percent}%")

            compiled.save(tmp / "router.json")  # with its score record
            reloaded = ts.ChainOfThought(RouteTicket)
            reloaded.load(tmp / "router.json")
            again = ts.evaluate(reloaded, dev)
            knn.save(tmp / "knn.json")  # with its training examples and their vectors
            knn_again = ts.optimize.KNNProgram(ts.Predict(RouteTicket))
            knn_again.load(tmp / "knn.json")
            knn_reloaded = ts.evaluate(knn_again, dev)
            print(f"before {baseline.percent}%, after {optimized.percent}%")
            print(f"reloaded {again.percent}%")
            print(f"KNN program reloaded: {knn_reloaded.percent}%, {knn_reloaded.cached} cached")
            assert again.score == optimized.score > baseline.score
            assert knn_reloaded.score == 1.0
            lm.close()

        # The server is gone: the saved program verifies its score from the cassette alone.
        offline = ts.LM("standin-1", base_url=url, api_key="sk-standin")
        with ts.cache.SQLiteCache(tmp / "cassette.db") as cassette:
            with ts.context(lm=offline, cache=cassette, cache_mode="replay"):
                saved = ts.ChainOfThought(RouteTicket)
                saved.load(tmp / "router.json")
                print(ts.optimize.verify(saved, dev))
                saved.demos = []  # degraded: it now sends what the baseline sent (recorded)
                try:
                    ts.optimize.verify(saved, dev, tolerance=0.05)
                    raise AssertionError("a degraded program passed verify")
                except ts.errors.VerificationError as error:
                    print(f"caught ({error.reason}): {error.got:.4f} < {error.expected:.4f}")
        offline.close()


if __name__ == "__main__":
    main()
