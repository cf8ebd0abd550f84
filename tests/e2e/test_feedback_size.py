"""The retry turn does not restate a schema that response_format already carries (issue #9).

At the wire, over a real socket: a 60-member union in json_schema mode; the retry request is
the first one plus the failed reply and a compact error list, not a second copy of the schema.
Where no enforced schema is shown to the model (prompted modes), the feedback keeps the hint.
"""

from __future__ import annotations

import json

from pydantic import create_model

import typedspy as ts
from typedspy.testing import StandIn

MEMBERS = [create_model(f"Kind{i:02d}", value=(int, ...), note=(str, ...)) for i in range(60)]
Union60 = MEMBERS[0]
for _member in MEMBERS[1:]:
    Union60 = Union60 | _member  # type: ignore[assignment,operator]


class Pick(ts.Signature):
    """Pick the kind."""

    text: str = ts.InputField()
    kind: Union60 = ts.OutputField()  # type: ignore[valid-type]


BAD = '{"kind": {"_type": "Kind07", "value": "not a number", "note": "x"}}'


def sizes(mode: str) -> tuple[int, int, str]:
    with StandIn() as server:
        server.enqueue(BAD)
        lm = ts.LM("gpt-4o-mini", base_url=server.base_url, api_key="test", max_retries=0)
        ts.Predict(Pick, lm=lm, mode=mode, max_retries=1)(text="hello")  # type: ignore[arg-type]
        lm.close()
        first, retry = server.requests[0], server.requests[1]
    feedback = retry["messages"][-1]["content"]
    return len(json.dumps(first)), len(json.dumps(retry)), feedback


def test_json_schema_retry_does_not_restate_the_schema() -> None:
    first, retry, feedback = sizes("json_schema")
    assert "Kind59" not in feedback
    assert "value" in feedback  # the error list names the failing field
    assert retry < first + 1000, (first, retry)


def test_prompted_mode_retry_keeps_the_schema_hint() -> None:
    _, _, feedback = sizes("json_object")
    assert "Kind59" in feedback
