"""Bound a call's total time with ``deadline``, and a stream's with ``stream_deadline``; offline.

Run: ``python examples/12_deadlines.py``

The model is typedspy's stand-in server (real HTTP on 127.0.0.1) streaming its reply slowly: a
chunk every 50 ms. ``LM(timeout=...)`` would never stop it (each socket read is quick); the
deadlines do, with a `DeadlineExceededError` that says which limit ran out and how far the call
got.
"""

from __future__ import annotations

import typedspy as ts
from typedspy.testing import StandIn

REPLY = '{"answer": "' + "a long and slowly streamed answer " * 12 + '"}'


def main() -> None:
    with StandIn(chunk_delay=0.05) as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-standin", timeout=1)
        predict = ts.Predict("question -> answer", mode="prompt")
        with ts.context(lm=lm):
            server.enqueue('{"answer": "quick"}')
            with ts.context(deadline=30):  # plenty: the call ends well within it
                print("within the deadline:", predict(question="warm up").answer)

            server.enqueue(REPLY)
            try:
                with ts.context(deadline=0.5):  # the whole call: attempts, streams, tools
                    for _ in predict.stream(question="take your time"):
                        pass
            except ts.DeadlineExceededError as exc:
                print(f"stopped: limit={exc.limit}, {exc.seconds:g} s, while {exc.stage}")
                print(f"  how far: {exc.requests} request(s), streamed some={exc.streamed > 0}")

            server.enqueue(REPLY)
            try:
                with ts.context(stream_deadline=0.3):  # one streamed request (default 600 s)
                    for _ in predict.stream(question="take your time"):
                        pass
            except ts.DeadlineExceededError as exc:
                print(f"stopped: limit={exc.limit}, {exc.seconds:g} s")
        lm.close()


if __name__ == "__main__":
    main()
