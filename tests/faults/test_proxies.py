"""Proxies named in the environment are used, and the response-size cap holds through them.

`LM` builds its HTTP client around its own capped transport, and an HTTP client given a
transport ignores ``HTTP_PROXY`` on its own: before, typedspy went straight to the endpoint
where the raw SDK went through the proxy, and nothing capped what a proxy sent back.
Here the proxy is a FaultServer: a plain-HTTP proxy receives the absolute URL in the request line.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

import typedspy as ts
from faults.server import FaultServer, Reply

PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


class Answer(ts.Signature):
    """Answer."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


@pytest.fixture(autouse=True)
def clean_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def ask(lm: ts.LM, *, sync: bool) -> str:
    predict = ts.Predict(Answer, lm=lm)
    if sync:
        return predict(question="q").answer
    return asyncio.run(predict.acall(question="q")).answer


@pytest.mark.parametrize("sync", [True, False], ids=["sync", "async"])
@pytest.mark.parametrize(
    ("no_proxy", "route"), [(None, "proxied"), ("127.0.0.1", "direct")], ids=["proxy", "no_proxy"]
)
def test_a_request_takes_the_route_the_environment_names(
    monkeypatch: pytest.MonkeyPatch, sync: bool, no_proxy: str | None, route: str
) -> None:
    with FaultServer(Reply.completion('{"answer": "direct"}')) as endpoint:
        with FaultServer(Reply.completion('{"answer": "proxied"}')) as proxy:
            monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
            if no_proxy is not None:
                monkeypatch.setenv("NO_PROXY", no_proxy)
            lm = ts.LM("m", base_url=endpoint.url, api_key="sk-test", max_retries=0)
            try:
                assert ask(lm, sync=sync) == route
            finally:
                lm.close()
            through_proxy = [seen.path for seen in proxy.requests]
            direct = [seen.path for seen in endpoint.requests]
    if route == "proxied":  # a plain-HTTP proxy gets the absolute URL
        assert (through_proxy, direct) == ([f"{endpoint.url}/chat/completions"], [])
    else:
        assert (through_proxy, direct) == ([], ["/v1/chat/completions"])


@pytest.mark.parametrize("sync", [True, False], ids=["sync", "async"])
def test_what_a_proxy_sends_back_is_capped_too(monkeypatch: pytest.MonkeyPatch, sync: bool) -> None:
    with FaultServer(Reply.gzip_bomb(8 << 20)) as proxy:
        monkeypatch.setenv("ALL_PROXY", f"http://127.0.0.1:{proxy.port}")
        lm = ts.LM(
            "m",
            base_url="http://127.0.0.1:9/v1",  # never reached: the proxy answers
            api_key="sk-test",
            max_retries=0,
            max_response_bytes=1 << 20,
        )
        try:
            with pytest.raises(ts.errors.LMResponseLimitError) as caught:
                ask(lm, sync=sync)
        finally:
            lm.close()
        assert caught.value.limit == "max_response_bytes"
        assert len(proxy.requests) == 1


def raw_sdk_route(base_url: str) -> None:
    """One request with the raw SDK's own client, which reads the environment itself."""
    import openai

    with openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0) as client:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}])


_HTTPX_28 = pytest.mark.skipif(
    tuple(int(p) for p in httpx.__version__.split(".")[:2]) < (0, 28),
    reason="httpx 0.27 reads this NO_PROXY form otherwise",
)
# NO_PROXY forms, each read as the raw SDK reads it (curl's rules); `{port}` is the endpoint's.
NO_PROXY_FORMS: list[Any] = [
    "127.0.0.1",
    "127.0.0.0/8",  # a network
    "127.0.0.2,10.0.0.0/8",  # other addresses and networks
    "*",
    "other.example, .example",  # other names
    "http://127.0.0.1:{port}",  # a URL
    "127.0.0.1:{port}",  # a host and port
    "127.0.0.1:1",  # another port
    "[zz], bad entry, 127.0.0.0/99, 127.0.0.1",  # entries that cannot be parsed are skipped
    # httpx before 0.28 (the lowest supported: 0.27) fails on IPv6 entries and reads a URL with
    # a path otherwise; typedspy reads them as httpx does since.
    pytest.param("::1, ::1/128, *.example", marks=_HTTPX_28),  # IPv6, a wildcard name
    "other.example/8, 127.0.0.1%1/8",  # a name with a prefix, an address with a zone
    pytest.param("http://127.0.0.1/abc, http://127.0.0.1:{port}/8", marks=_HTTPX_28),  # paths
]


@pytest.mark.parametrize("no_proxy", NO_PROXY_FORMS)
def test_no_proxy_exempts_what_the_raw_sdk_exempts(
    monkeypatch: pytest.MonkeyPatch, no_proxy: str
) -> None:
    # typedspy reads the environment itself (the HTTP library's reader is private, ADR-064):
    # each form routes as the raw SDK routes it, for sync and async calls alike.
    with FaultServer(Reply.completion('{"answer": "direct"}')) as endpoint:
        with FaultServer(Reply.completion('{"answer": "proxied"}')) as proxy:
            monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
            monkeypatch.setenv("NO_PROXY", no_proxy.format(port=endpoint.port))
            raw_sdk_route(endpoint.url)
            expected = "proxied" if proxy.requests else "direct"
            lm = ts.LM("m", base_url=endpoint.url, api_key="sk-test", max_retries=0)
            try:
                routes = [ask(lm, sync=True), ask(lm, sync=False)]
            finally:
                lm.close()
    assert routes == [expected, expected]
