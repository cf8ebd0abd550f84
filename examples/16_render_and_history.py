"""See what is sent: `render` shows the next request without sending it, and
`ts.inspect_history` prints the last exchanges, a retry's feedback turn included.

Offline: the bundled stand-in server answers (scripted here: a first reply out of range).
Run: python examples/16_render_and_history.py
"""

from __future__ import annotations

import json

import typedspy as ts
from typedspy.testing import StandIn


class Score(ts.Signature):
    """Rate how urgent the ticket is, from 1 (can wait) to 5 (drop everything)."""

    ticket: str = ts.InputField()
    urgency: int = ts.OutputField(ge=1, le=5)


with StandIn() as server:
    lm = ts.LM("standin-1", base_url=server.base_url, api_key="offline", temperature=0)
    rate = ts.Predict(Score, lm=lm)

    body = rate.render(ticket="The checkout page is down for everyone.")
    print("render() sent nothing:", server.requests == [])
    print("it would send:", json.dumps(body)[:160], "...")

    server.enqueue(json.dumps({"urgency": 7}), json.dumps({"urgency": 5}))
    print("urgency:", rate(ticket="The checkout page is down for everyone.").urgency)
    print("the body sent matches render():", json.loads(json.dumps(body)) == server.requests[0])
    lm.close()

ts.inspect_history(2)  # both attempts: the reply out of range, the feedback, the fixed reply
