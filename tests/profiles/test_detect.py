"""Identifying the server behind a base URL (ADR-084): over a real socket, the stand-in
presenting itself as each server, its failures, the cache, concurrent first calls."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

import typedspy as ts
from faults.server import FaultServer, Reply
from typedspy.testing import StandIn


class Answer(ts.Signature):
    """Answer."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


@contextmanager
def lm_for(server: StandIn | str, **options: object) -> Iterator[ts.LM]:
    url = server if isinstance(server, str) else server.base_url
    lm = ts.LM("m", base_url=url, api_key="k", max_retries=0, **options)  # type: ignore[arg-type]
    try:
        yield lm
    finally:
        lm.close()


@pytest.mark.parametrize(
    ("server", "profile"),
    [
        ("openai", "openai"),
        ("llama.cpp", "llama.cpp"),
        ("vllm", "vllm"),
        ("ollama", "ollama"),
        ("lmstudio", "lmstudio"),
        ("llama-cpp-python", "llama-cpp-python"),
        ("sglang", "generic"),
        ("unknown", "generic"),
        ("none", "generic"),
        ("garbage", "generic"),
    ],
)
def test_each_server_gets_its_profile_on_the_first_call(
    server: str, profile: str, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        StandIn(server=server) as standin,
        caplog.at_level(logging.INFO, "typedspy"),
        lm_for(standin) as lm,
    ):
        assert lm.profile.name == "generic"  # nothing asked yet
        pred = ts.Predict(Answer, lm=lm)(question="q")
        assert lm.profile.name == profile
        assert isinstance(pred.answer, str)
        assert standin.models_requests == 1
        url = standin.base_url
    (line,) = [r.getMessage() for r in caplog.records if "gets profile" in r.getMessage()]
    assert f"gets profile {profile!r}" in line and url in line


def test_the_answer_is_kept_per_base_url_for_the_process() -> None:
    with StandIn(server="llama.cpp") as standin, lm_for(standin) as first:
        first.identify()
        with lm_for(standin) as later:  # built after: takes the answer, asks nothing
            assert later.profile.name == "llama.cpp"
            assert later.profile is not first.profile  # each LM has its own run-time memory
            with ts.context(lm=later):
                ts.Predict(Answer)(question="a")
                ts.Predict(Answer)(question="b")
        assert standin.models_requests == 1


def test_profile_given_wins_and_nothing_is_asked() -> None:
    with StandIn(server="llama.cpp") as standin:
        with lm_for(standin, profile="vllm") as lm:
            ts.Predict(Answer, lm=lm)(question="q")
            assert lm.profile.name == "vllm"
        with lm_for(standin) as chosen:
            chosen.profile = "ollama"  # set before the first call: not asked either
            ts.Predict(Answer, lm=chosen)(question="q")
            assert chosen.profile.name == "ollama"
        assert standin.models_requests == 0


def test_render_asks_first_so_it_shows_what_the_call_sends() -> None:
    with StandIn(server="llama.cpp") as standin, lm_for(standin) as lm:
        body = ts.Predict(Answer, lm=lm).render(question="q")
        assert standin.models_requests == 1
        assert body["max_tokens"] == 512  # the llama.cpp profile's cap, not generic's 1024


def test_concurrent_first_calls_share_one_request() -> None:
    with StandIn(server="vllm") as standin:
        lms = [ts.LM("m", base_url=standin.base_url, api_key="k") for _ in range(4)]

        async def calls() -> list[str]:
            await asyncio.gather(*(ts.Predict(Answer, lm=lm).acall(question="q") for lm in lms))
            for lm in lms:
                await lm.aclose()
            return [lm.profile.name for lm in lms]

        threads = [threading.Thread(target=lambda: lms[0].identify()) for _ in range(2)]
        for thread in threads:
            thread.start()
        assert asyncio.run(calls()) == ["vllm"] * 4
        for thread in threads:
            thread.join()
        assert standin.models_requests == 1


def test_a_server_that_never_answers_is_generic_within_the_timeout() -> None:
    with socket.socket() as silent:  # accepts connections (backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        port = silent.getsockname()[1]
        with lm_for(f"http://127.0.0.1:{port}/v1", timeout=0.3) as lm:
            assert lm.identify().name == "generic"


def test_an_unreachable_server_is_generic_and_the_call_fails_as_before() -> None:
    # A path no other test uses: the answer is kept per base URL for the process (ADR-084), and
    # other tests reach 127.0.0.1:9/v1 through proxies that answer as OpenAI.
    with lm_for("http://127.0.0.1:9/unreachable/v1") as lm:
        with pytest.raises(ts.errors.LMConnectionError):
            ts.Predict(Answer, lm=lm)(question="q")
        assert lm.profile.name == "generic"


def test_a_pickled_lm_not_yet_identified_asks_again() -> None:
    import pickle

    with StandIn(server="ollama") as standin, lm_for(standin) as lm:
        copy = pickle.loads(pickle.dumps(lm))
        try:
            assert copy.identify().name == "ollama"
            assert pickle.loads(pickle.dumps(copy)).profile.name == "ollama"
        finally:
            copy.close()


@pytest.mark.parametrize("body", [{"data": "standin-1"}, {"data": [5, "m"]}, [{"id": "m"}]])
def test_a_model_list_of_the_wrong_shape_is_generic(body: object) -> None:
    with FaultServer(models=Reply.json(body)) as server, lm_for(server.url) as lm:
        assert lm.identify().name == "generic"
    assert server.models_requests == 1


def test_forget_makes_every_base_url_asked_again() -> None:
    with StandIn(server="vllm") as standin:
        with lm_for(standin) as lm:
            lm.identify()
        ts.lm.forget()
        with lm_for(standin) as again:
            assert again.identify().name == "vllm"
        assert standin.models_requests == 2


def test_a_cancelled_caller_leaves_the_detection_to_the_others() -> None:
    with StandIn(server="ollama") as standin, lm_for(standin) as first, lm_for(standin) as second:

        async def main() -> tuple[bool, str]:
            # Each task's first step runs to its first wait: the first asks, the second waits.
            asking = asyncio.create_task(first.aidentify())
            await asyncio.sleep(0)
            waiting = asyncio.create_task(second.aidentify())
            await asyncio.sleep(0)
            waiting.cancel()  # the waiter alone: the detection goes on
            with pytest.raises(asyncio.CancelledError):
                await waiting
            return waiting.cancelled(), (await asking).name  # the asker still answers

        assert asyncio.run(main()) == (True, "ollama")
        assert second.identify().name == "ollama" and standin.models_requests == 1


def test_a_caller_cancelled_while_asking_hands_over_to_one_that_waits() -> None:
    with StandIn(server="ollama") as standin, lm_for(standin) as first, lm_for(standin) as second:

        async def main() -> str:
            asking = asyncio.create_task(first.aidentify())
            await asyncio.sleep(0)
            waiting = asyncio.create_task(second.aidentify())
            await asyncio.sleep(0)
            asking.cancel()  # the asker: the waiter asks instead
            with pytest.raises(asyncio.CancelledError):
                await asking
            return (await waiting).name

        assert asyncio.run(main()) == "ollama"
        assert first.profile.name == "generic"  # cancelled before it had an answer
        assert first.identify().name == "ollama"  # kept for the base URL
        assert 1 <= standin.models_requests <= 2  # the first request may not have been sent
