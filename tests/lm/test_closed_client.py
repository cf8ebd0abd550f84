"""A call after a client was closed: typedspy's own are rebuilt, an injected one is named closed.

`LM.close()` promises that a later call builds a fresh client; a client closed by hand
(``lm.client.close()``) was handed out again and the SDK raised a bare ``RuntimeError``. An
injected client its owner closed raised that bare ``RuntimeError`` (older SDKs: "could not
connect"); it is now the `ConfigurationError` saying so, before anything is sent.
"""

from __future__ import annotations

import asyncio

import httpx
import openai
import pytest

import typedspy as ts
from typedspy.lm import LMRequest
from typedspy.testing import StandIn

CLOSED = r"LM\('standin-1'\) was given client=\.\.\., and that AsyncOpenAI client is closed"


def test_a_call_after_close_builds_a_fresh_client() -> None:
    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="offline", max_retries=0)
        assert lm("hi") == "standin reply"
        lm.close()
        assert lm("hi") == "standin reply"

        async def main() -> None:
            assert await lm.acall("hi") == "standin reply"
            await lm.aclose()
            assert await lm.acall("hi") == "standin reply"
            await lm.client.close()  # typedspy's client, closed by hand
            assert await lm.acall("hi") == "standin reply"
            await lm.aclose()

        asyncio.run(main())
        assert len(server.requests) == 5


def test_an_injected_client_its_owner_closed_is_named_closed_before_anything_is_sent() -> None:
    with StandIn() as server:

        async def main() -> None:
            client = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
            lm = ts.LM("standin-1", client=client)
            assert await lm.acall("hi") == "standin reply"
            await lm.aclose()  # the owner's client: left open
            assert await lm.acall("hi") == "standin reply"
            await client.close()
            with pytest.raises(ts.ConfigurationError, match=CLOSED):
                await lm.acall("hi")
            request = LMRequest(messages=[{"role": "user", "content": "hi"}])
            with pytest.raises(ts.ConfigurationError, match=CLOSED):
                async for _ in lm.astream(request):
                    pass
            with pytest.raises(ts.ConfigurationError, match=CLOSED):
                await ts.Predict("question -> answer", lm=lm).acall(question="q")

        asyncio.run(main())
        assert len(server.requests) == 2


def test_an_injected_client_its_owner_closes_while_it_sends_is_named_closed() -> None:
    class ClosedMeanwhile(httpx.AsyncBaseTransport):
        """The owner closes the client while the request is out; the send then fails."""

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            await client.close()
            raise httpx.ReadError("the connection was closed")

    client = openai.AsyncOpenAI(
        base_url="http://127.0.0.1:9/v1",
        api_key="k",
        max_retries=0,
        http_client=httpx.AsyncClient(transport=ClosedMeanwhile()),
    )
    lm = ts.LM("standin-1", client=client)
    with pytest.raises(ts.ConfigurationError, match=CLOSED):
        asyncio.run(lm.acall("hi"))
