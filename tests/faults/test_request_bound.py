"""Issue 10, case 8: one bound on a call's HTTP requests, the SDK's transport retries included."""

from __future__ import annotations

import pytest

import typedspy as ts
from faults.server import FaultServer, Reply

# A 500 the SDK retries at once (retry-after-ms), then a reply that fails validation.
FLAKY = Reply(500, {"retry-after-ms": "1", "content-type": "application/json"}, lambda: [b"{}"])
# An int where a string is required, a different one each attempt: a reply repeated byte for
# byte would end the call early (repeated_reply), and these tests count retries.
WRONG = [Reply.completion(f'{{"answer": {n}}}') for n in range(4)]


class Answer(ts.Signature):
    """Answer."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


def run(max_requests: int | None) -> tuple[BaseException, int]:
    with FaultServer(*[part for n in range(4) for part in (FLAKY, FLAKY, WRONG[n])]) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=2)
        try:
            with ts.context(lm=lm, max_requests=max_requests), pytest.raises(Exception) as caught:
                ts.Predict(Answer)(question="q")
        finally:
            lm.close()
        return caught.value, len(server.requests)


def test_without_a_bound_a_call_sends_nine_requests() -> None:
    error, requests = run(None)
    assert isinstance(error, ts.errors.OutputValidationError)
    assert requests == 9  # 3 attempts x 3 transport attempts: the defect the bound fixes


def test_the_default_bound_stops_at_six_requests() -> None:
    assert ts.settings.get_settings().max_requests == 6
    error, requests = run(6)
    assert isinstance(error, ts.errors.RequestLimitError)
    assert (error.limit, error.allowed, error.requests) == ("max_requests", 6, 6)
    assert requests == 6
    assert "max_requests=6" in str(error)


def test_the_bound_cuts_the_sdk_retries_of_the_last_request() -> None:
    error, requests = run(4)
    # Attempt 1 took 3 requests; attempt 2 had room for one, without SDK retries: its 500 ends it.
    assert isinstance(error, ts.errors.LMStatusError) and error.status_code == 500
    assert requests == 4


@pytest.mark.parametrize("bound", [1, 3, 5])
def test_a_call_never_sends_more_than_its_bound(bound: int) -> None:
    _, requests = run(bound)
    assert requests == bound


def test_a_streamed_call_is_bounded_the_same_way() -> None:
    with FaultServer(FLAKY, FLAKY, FLAKY, FLAKY) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=5)
        with ts.context(lm=lm, max_requests=3), pytest.raises(ts.errors.LMStatusError):
            list(ts.Predict(Answer).stream(question="q"))
        lm.close()
    assert len(server.requests) == 3


def test_a_bad_bound_is_a_configuration_error() -> None:
    with pytest.raises(ts.ConfigurationError, match="max_requests"):
        ts.context(max_requests=0)
