"""Issue 10, case 4: a reply with no choice is the endpoint's fault, streamed or not.

One request, a transport-level `LMResponseError`, never a feedback turn to the model.
"""

from __future__ import annotations

import pytest

import typedspy as ts
from faults.server import FaultServer, Reply, completion_body


class Answer(ts.Signature):
    """Answer."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


CHOICELESS = {
    "stream ignored (a JSON completion)": Reply.completion('{"answer": "4"}'),
    "an HTML page as SSE": Reply(
        200, {"content-type": "text/event-stream"}, lambda: [b"<html><body>Gateway</body></html>"]
    ),
    "an HTML page in data lines": Reply.sse(["<html>", "<body>Gateway</body>"], done=False),
    "choices: [] only": Reply.sse([{"choices": [], "usage": None}]),
    "a plain-text 200": Reply.raw("upstream says hello"),
    "an empty 200": Reply.raw(b"", content_type="text/event-stream"),
}


@pytest.mark.parametrize("reply", CHOICELESS.values(), ids=CHOICELESS.keys())
@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "unstreamed"])
def test_a_choiceless_reply_is_one_request_and_an_lm_error(reply: Reply, streamed: bool) -> None:
    if not streamed and reply.headers.get("content-type") != "text/event-stream":
        if reply is CHOICELESS["stream ignored (a JSON completion)"]:
            pytest.skip("a valid completion when nothing asked to stream")
    with FaultServer(reply) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=2)
        predict = ts.Predict(Answer)
        with ts.context(lm=lm), pytest.raises(ts.errors.LMResponseError):
            if streamed:
                list(predict.stream(question="q"))
            else:
                predict(question="q")
        lm.close()
    assert len(server.requests) == 1
    assert all(m["role"] != "assistant" for m in server.requests[0].json()["messages"])


def test_a_stream_with_choices_then_a_usage_chunk_still_works() -> None:
    delta = {"choices": [{"index": 0, "delta": {"content": '{"answer": "4"}'}}]}
    end = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    usage = {"choices": [], "usage": completion_body(None)["usage"]}
    with FaultServer(Reply.sse([delta, end, usage])) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k")
        with ts.context(lm=lm):
            events = list(ts.Predict(Answer).stream(question="q"))
        lm.close()
    assert events[-1].answer == "4"


def test_an_empty_stream_says_the_endpoint_failed_after_answering() -> None:
    # llama-cpp-python answers a streamed prompt past its context window so (ADR-093): the
    # message said "no choice 0 ... not a chat-completion stream", which pointed elsewhere.
    empty = Reply.raw(b"", content_type="text/event-stream")
    with FaultServer(empty) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        with pytest.raises(ts.errors.LMResponseError, match="sent no chunk at all"):
            list(ts.Predict(Answer, lm=lm).stream(question="q"))
        lm.close()
