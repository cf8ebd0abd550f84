"""Issue 10, cases 1, 3, 6: replies past a reading limit end in a typed LMResponseLimitError."""

from __future__ import annotations

import asyncio
import gzip
import json
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import openai
import pytest

import typedspy as ts
from faults.server import FaultServer, Reply, completion_body

# openai < 2.31 wraps and retries whatever its transport raises, a capped body too (ADR-044):
# each of the 1 + max_retries reads is capped; later releases send the request once.
CAPPED_SENDS = 1 if tuple(map(int, openai.__version__.split(".")[:2])) >= (2, 31) else 3


class Answer(ts.Signature):
    """Answer."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


def call(reply: Reply, **options: object) -> tuple[ts.TypedspyError, int]:
    """The error one Predict call ends with, and how many requests reached the server."""
    with FaultServer(reply) as server:
        lm = ts.LM("m", base_url=server.url, api_key="sk-test-key", max_retries=2, **options)  # type: ignore[arg-type]
        try:
            with ts.context(lm=lm), pytest.raises(ts.TypedspyError) as caught:
                ts.Predict(Answer)(question="q")
        finally:
            lm.close()
        return caught.value, len(server.requests)


def test_a_body_past_the_cap_is_stopped_while_read() -> None:
    error, requests = call(Reply.json({"pad": "x" * 300_000}), max_response_bytes=100_000)
    assert isinstance(error, ts.errors.LMResponseLimitError)
    assert (error.limit, error.allowed) == ("max_response_bytes", 100_000)
    assert "max_response_bytes=100000" in str(error)
    assert requests == CAPPED_SENDS  # not retried by the SDK: the same body would come again


def test_a_gzip_body_is_capped_on_its_inflated_size() -> None:
    error, requests = call(Reply.gzip_bomb(8 << 20), max_response_bytes=1 << 20)
    assert isinstance(error, ts.errors.LMResponseLimitError) and error.limit == "max_response_bytes"
    assert requests == CAPPED_SENDS


def test_an_error_status_with_a_huge_body_is_capped_too() -> None:
    bomb = Reply.gzip_bomb(8 << 20)
    error, _ = call(Reply(500, bomb.headers, bomb.pieces), max_response_bytes=1 << 20)
    assert isinstance(error, ts.errors.LMResponseLimitError)


def test_a_body_in_an_encoding_not_asked_for_is_typed() -> None:
    error, _ = call(Reply(200, {"content-encoding": "br"}, lambda: [b"\x0b\x02\x80{}\x03"]))
    assert isinstance(error, ts.errors.LMResponseError)
    assert "'br'" in str(error)


COMPRESS = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,  # zlib-wrapped, as HTTP's "deflate" is
    "deflate-raw": lambda data: zlib.compress(data, wbits=-15),  # what some servers send
}


def encoded(encoding: str, data: bytes, *, split: int | None = None) -> Reply:
    headers = {"content-type": "application/json", "content-encoding": encoding.split("-")[0]}
    if split is None:
        return Reply(200, headers, lambda: [data])
    # Written in two pieces, apart: the first read is likely to hold only the first piece.
    return Reply(200, headers, lambda: [data[:split], data[split:]], drip=0.05)


def ask(server: FaultServer, *, sync: bool) -> str:
    lm = ts.LM("m", base_url=server.url, api_key="sk-test-key", max_retries=0)
    try:
        predict = ts.Predict(Answer, lm=lm)
        if sync:
            return predict(question="q").answer
        return asyncio.run(predict.acall(question="q")).answer
    finally:
        lm.close()


@pytest.mark.parametrize("sync", [True, False], ids=["sync", "async"])
@pytest.mark.parametrize("encoding", ["gzip", "deflate", "deflate-raw"])
def test_a_compressed_body_is_decoded_whole(encoding: str, sync: bool) -> None:
    body = json.dumps(completion_body(json.dumps({"answer": "a" * 200_000}))).encode()
    with FaultServer(encoded(encoding, COMPRESS[encoding](body))) as server:
        assert ask(server, sync=sync) == "a" * 200_000  # past one 64 KiB decoding step
    # A first read of one byte: too few to tell a zlib header from raw deflate, so it is held.
    with FaultServer(encoded(encoding, COMPRESS[encoding](body), split=1)) as server:
        assert ask(server, sync=sync) == "a" * 200_000


@pytest.mark.parametrize("sync", [True, False], ids=["sync", "async"])
@pytest.mark.parametrize(
    ("encoding", "body"),
    [
        ("gzip", b"not gzip at all"),
        ("deflate", b"not deflate either"),
        ("gzip", gzip.compress(b"")[:10] + b"\xff" * 8),  # a header, then no valid block
        ("br", b"\x0b\x02\x80{}\x03"),  # an encoding not asked for
    ],
    ids=["gzip", "deflate", "gzip-corrupt", "br"],
)
def test_a_body_that_cannot_be_decoded_is_typed(encoding: str, body: bytes, sync: bool) -> None:
    with FaultServer(encoded(encoding, body)) as server, pytest.raises(ts.TypedspyError) as caught:
        ask(server, sync=sync)
    assert type(caught.value) is ts.errors.LMResponseError  # not retried, not a size limit
    assert f"{encoding}" in str(caught.value) and "sk-test-key" not in str(caught.value)


def test_a_gzip_bomb_of_1_gb_ends_typed_with_bounded_peak_memory() -> None:
    # In a fresh process, so its peak RSS is this call's (the server inside it sends ~1 MB).
    script = textwrap.dedent(
        """
        import resource, sys
        import typedspy as ts
        from faults.server import FaultServer, Reply, completion_body

        class A(ts.Signature):
            '''A.'''
            q: str = ts.InputField()
            a: str = ts.OutputField()

        with FaultServer(Reply.gzip_bomb(1 << 30)) as server:
            lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
            try:
                ts.Predict(A, lm=lm)(q="x")
            except ts.errors.LMResponseLimitError as exc:
                print(exc.limit, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
            lm.close()
        """
    )
    tests = Path(__file__).parent.parent
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tests,
        env={"PYTHONPATH": str(tests), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    limit, peak_mb = done.stdout.split()
    assert limit == "max_response_bytes"
    # The default cap (64 MiB), its copies and the interpreter: ~130 MB alone, 425 once on a loaded
    # 2-core machine (session 11); unbounded reading peaked at ~3 GB.
    assert int(peak_mb) < 800


@pytest.mark.parametrize("depth", [300, 1_100, 100_000])
def test_a_body_nested_too_deep_is_typed(depth: int) -> None:
    body = '{"choices": ' + "[" * depth + "]" * depth + "}"
    error, requests = call(Reply.raw(body, content_type="application/json"))
    assert isinstance(error, ts.errors.LMResponseLimitError)
    assert (error.limit, error.allowed) == ("max_json_depth", 256)
    assert requests == 1


def test_the_depth_limit_is_configurable() -> None:
    body = json.dumps({"choices": [], "x": [[[[[[1]]]]]]})
    error, _ = call(Reply.raw(body, content_type="application/json"), max_json_depth=4)
    assert isinstance(error, ts.errors.LMResponseLimitError) and error.allowed == 4


def test_a_huge_number_in_a_body_is_named_not_called_not_json() -> None:
    body = '{"choices": [], "usage": {"prompt_tokens": ' + "9" * 5_000 + "}}"
    error, _ = call(Reply.raw(body, content_type="application/json"))
    assert isinstance(error, ts.errors.LMResponseLimitError) and error.limit == "max_number_digits"
    assert "usage/prompt_tokens" in str(error) and "4300" in str(error)
    assert "not JSON" not in str(error)


@pytest.mark.parametrize(
    ("chunk", "limit", "max_depth"),
    [
        ("[" * 5_000 + "]" * 5_000, "max_json_depth", 256),
        # a limit set past what the JSON decoder can read: the decoder's is the one named
        ("[" * 5_000 + "]" * 5_000, "max_json_depth", 100_000),
        ('{"n": ' + "1" * 5_000 + "}", "max_number_digits", 256),
    ],
)
def test_a_hostile_stream_chunk_is_typed(chunk: str, limit: str, max_depth: int) -> None:
    with FaultServer(Reply.sse([chunk])) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0, max_json_depth=max_depth)
        with ts.context(lm=lm), pytest.raises(ts.errors.LMResponseLimitError) as caught:
            list(ts.Predict(Answer).stream(question="q"))
        lm.close()
    assert caught.value.limit == limit
    if limit == "max_json_depth":
        assert caught.value.allowed == min(max_depth, sys.getrecursionlimit())
    assert len(server.requests) == 1


def test_a_huge_number_in_the_output_names_the_field_and_the_limit() -> None:
    output = '{"answer": "a", "confidence": ' + "7" * 5_000 + "}"

    class Scored(ts.Signature):
        """Scored."""

        question: str = ts.InputField()
        answer: str = ts.OutputField()
        confidence: float = ts.OutputField()

    with FaultServer(Reply.completion(output)) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        with ts.context(lm=lm, max_retries=1), pytest.raises(ts.errors.OutputDecodeError) as caught:
            ts.Predict(Scored)(question="q")
        lm.close()
    feedback = server.requests[1].json()["messages"][-1]["content"]
    assert "confidence" in feedback and "4300" in feedback
    assert "missing" not in feedback and "answer" not in feedback.split("schema")[0]
    assert caught.value.errors[0].path == ("confidence",)


def tool_call_reply(call_id: str, name: str, arguments: str, *, streamed: bool) -> Reply:
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    if not streamed:
        return Reply.completion(None, tool_calls=[call])
    delta = {"role": "assistant", "tool_calls": [{"index": 0, **call}]}
    end = {"index": 0, "delta": {}, "finish_reason": "tool_calls"}
    return Reply.sse([{"choices": [{"index": 0, "delta": delta}]}, {"choices": [end]}])


@pytest.mark.parametrize("streamed", [False, True], ids=["called", "streamed"])
def test_deeply_nested_tool_arguments_from_the_model_are_an_observation(streamed: bool) -> None:
    ran: list[object] = []

    def search(query: str) -> str:
        """Search."""
        ran.append(query)
        return "nothing"

    deep = '{"query": ' + "[" * 5_000 + "]" * 5_000 + "}"
    replies = [
        tool_call_reply("c1", "search", deep, streamed=streamed),
        tool_call_reply("c2", "finish", json.dumps({"answer": "done"}), streamed=streamed),
    ]
    with FaultServer(*replies) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        agent = ts.ReAct(Answer, tools=[search], lm=lm, max_iters=3)
        if streamed:
            events = list(agent.stream(question="q"))
            answer = events[-1].answer
        else:
            answer = agent(question="q").answer
        lm.close()
    assert answer == "done" and ran == []  # the tool never ran on arguments it cannot take
    observation = server.requests[1].json()["messages"][-1]
    assert observation["role"] == "tool" and "invalid" in observation["content"]


@pytest.mark.parametrize(
    "reply",
    [
        Reply.sse([{"choices": [{"index": 0, "delta": {"content": "x" * 1_000}}]}] * 2_000),
        Reply.gzip_bomb(8 << 20, content_type="text/event-stream"),
    ],
    ids=["plain", "gzip"],
)
def test_a_stream_past_the_cap_is_stopped_while_read(reply: Reply) -> None:
    with FaultServer(reply) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0, max_response_bytes=1 << 20)
        with ts.context(lm=lm), pytest.raises(ts.errors.LMResponseLimitError) as caught:
            list(ts.Predict(Answer).stream(question="q"))
        lm.close()
    assert (caught.value.limit, caught.value.allowed) == ("max_response_bytes", 1 << 20)
