"""More of typedspy on the two real servers (opt-in: real_engine): the capabilities past one call.

A two-step mode, a deadline cutting a long generation (and the engine's slot stopping), a batch
over the server's parallel slots, a streamed agent, an agent paused for a confirmation and
resumed, a fallback from a dead endpoint, the response cache, `render` against what the engine
received, and a per-call token budget on a stream. Each asserts what must hold whatever the
small model says: a typed value or a typed `TypedspyError`, in a bounded number of requests.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from typing import Annotated, Any

import pytest
from llama import PROFILES, TIMEOUT, Engine, closed_port, recording_proxy
from pydantic import AfterValidator
from tasks import REVIEWS, TEXTS, Classify, Company, Extract, Person

import typedspy as ts
from typedspy.pipeline import last_exchanges
from typedspy.settings import get_settings
from typedspy.streaming import OutputDelta

pytestmark = pytest.mark.real_engine
LONG = 4096  # completion tokens a generation the deadline cuts would otherwise run to


def _lm(engine: Engine, base_url: str, **options: Any) -> ts.LM:
    return ts.LM("smollm2", base_url=base_url, api_key="none", profile=PROFILES[engine], **options)


def test_think_then_format_returns_a_typed_value_or_a_typed_error(lm: ts.LM) -> None:
    # Two requests (ADR-086): a free answer, then the request to write it as the outputs.
    for text in TEXTS[:3]:
        result = ts.Predict(Extract, lm=lm, mode="think_then_format").try_call(text=text)
        if isinstance(result, ts.Prediction):
            assert isinstance(result.entity, Person | Company)
            assert isinstance(result.free_answer, str)
            assert result.free_answer.strip()
        else:
            assert isinstance(result, ts.TypedspyError)
        # The free answer, then the format request and its retries: never more.
        assert 2 <= len(result.attempts) <= 2 + get_settings().max_retries


class Essay(ts.Signature):
    """Write a long essay on the topic."""

    topic: str = ts.InputField()
    essay: str = ts.OutputField()


def _slots(base_url: str) -> list[dict[str, Any]]:
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/slots", timeout=30) as reply:
        slots: list[dict[str, Any]] = json.load(reply)
    return slots


def _decoded(base_url: str) -> float:
    """llama-server's count of `llama_decode` calls (one per generated token, plus prompts)."""
    url = base_url.removesuffix("/v1") + "/metrics"
    with urllib.request.urlopen(url, timeout=30) as reply:
        text = reply.read().decode()
    found = re.search(r"^llamacpp:n_decode_total (\S+)$", text, re.MULTILINE)
    assert found is not None, text
    return float(found.group(1))


def _idle(base_url: str) -> None:
    """Wait until no slot is generating; what was generated is counted, not timed.

    Polled every 2 s: llama-server checks a waiting non-streamed request's connection only
    after a second with no result on its queue, and each ``/slots`` or ``/metrics`` answer is
    one, so polling faster keeps it from seeing that the client went away.
    """
    for _ in range(LONG):  # a slot left running ends by LONG tokens: this bounds the wait
        if not any(slot["is_processing"] for slot in _slots(base_url)):
            return
        time.sleep(2)
    raise AssertionError("a slot was still generating")


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_deadline_cuts_a_long_generation_and_the_slot_stops(
    engine: Engine, base_url: str, stream: bool
) -> None:
    # ignore_eos (llama-server's own parameter): the generation would run to LONG tokens.
    lm = _lm(engine, base_url, timeout=TIMEOUT)
    ignore_eos = {"ignore_eos": True}
    essay = ts.Predict(Essay, lm=lm, mode="prompt", max_tokens=LONG, extra_body=ignore_eos)
    before = 0.0
    if engine == "llama-server":
        _idle(base_url)
        before = _decoded(base_url)
    try:
        with ts.context(deadline=3), pytest.raises(ts.DeadlineExceededError) as cut:
            if stream:
                list(essay.stream(topic="rivers"))
            else:
                essay(topic="rivers")
        assert cut.value.limit == "deadline"
        if engine == "llama-server":  # the first request runs past the deadline
            assert cut.value.requests == 1
        else:  # its server drops ignore_eos: a short reply, a retry, all bounded
            assert 1 <= cut.value.requests <= 1 + get_settings().max_retries
        if engine == "llama-server":
            # The client went away: the engine stopped the slot long before LONG tokens.
            _idle(base_url)
            assert _decoded(base_url) - before < LONG / 2
        # Either way the engine serves the next call.
        after = ts.Predict(Classify, lm=lm).try_call(review=REVIEWS[0])
        assert isinstance(after, ts.Prediction | ts.TypedspyError)
    finally:
        lm.close()


def test_a_batch_runs_over_the_parallel_slots(engine: Engine, base_url: str) -> None:
    with recording_proxy(base_url) as (url, recorder):
        lm = _lm(engine, url, timeout=TIMEOUT)
        try:
            inputs = [{"review": review} for review in REVIEWS]
            results = ts.Predict(Classify, lm=lm).batch(inputs, concurrency=2)
        finally:
            lm.close()
    assert len(results) == len(REVIEWS)
    for result in results:
        assert isinstance(result, ts.Prediction | ts.TypedspyError), repr(result)
    assert results.requests == len(recorder.bodies)
    # Two requests were in flight at once, never more: llama-server ran them on its two
    # slots; llama-cpp-python's server, which serves one at a time, queued the second.
    assert recorder.most_in_flight == 2


@ts.tool
def lookup_age(name: str) -> int:
    """Look up a person's age in years."""
    return {"ada": 36}.get(name.lower().split()[0] if name.strip() else "", 40)


class Answer(ts.Signature):
    """Answer the question; look facts up with the tools."""

    question: str = ts.InputField()
    answer: int = ts.OutputField()


def test_a_streamed_react_run_ends_with_a_typed_answer(lm: ts.LM) -> None:
    agent = ts.ReAct(Answer, tools=[lookup_age], lm=lm, max_iters=4)
    events = list(agent.stream(question="How old was Ada?"))
    final = events[-1]
    assert isinstance(final, ts.react.AgentPrediction)
    assert isinstance(final.answer, int)


def test_react_pauses_for_a_confirmation_and_resumes(lm: ts.LM) -> None:
    ran: list[str] = []

    @ts.confirm_first
    @ts.tool
    def lookup_age_checked(name: str) -> int:
        """Look up a person's age in years."""
        ran.append(name)
        return 36

    agent = ts.ReAct(Answer, tools=[lookup_age_checked], lm=lm, max_iters=4)
    question = "How old was Ada? Look it up with lookup_age_checked."
    pauses = 0
    state: ts.ResumeState | None = None
    for _ in range(6):  # each step pauses at most once: max_iters (4) bounds the pauses
        try:
            pred = agent(question=question) if state is None else agent(resume_state=state)
        except ts.ConfirmationRequired as pause:
            assert ran == [] or len(ran) == pauses  # nothing runs before it is approved
            assert pause.tool_call["name"] == "lookup_age_checked"
            pauses += 1
            state = ts.ResumeState(pause, "yes")
            continue
        break
    else:
        pytest.fail(f"still pausing after {pauses} resumes (max_iters=4)")
    assert pauses <= 4
    assert isinstance(pred.answer, int)
    # Each approval ran the paused call once.
    assert len(ran) == pauses


def test_a_fallback_from_a_dead_endpoint_answers_on_the_real_engine(
    engine: Engine, base_url: str
) -> None:
    dead = _lm(engine, f"http://127.0.0.1:{closed_port()}/v1", max_retries=0, timeout=TIMEOUT)
    real = _lm(engine, base_url, timeout=TIMEOUT)
    chain = ts.LM.fallback(dead, real)
    try:
        result = ts.Predict(Classify, lm=chain).try_call(review=REVIEWS[0])
    finally:
        dead.close()
        real.close()
    assert isinstance(result, ts.Prediction | ts.TypedspyError), repr(result)
    trace = result.extras["fallback"] if isinstance(result, ts.Prediction) else None
    if trace is not None:
        assert trace.model == "smollm2"
        assert trace.endpoint == real.endpoint
        assert [s.trigger for s in trace.skipped] == ["transport"]


def test_the_cache_answers_a_repeated_real_call(engine: Engine, base_url: str) -> None:
    with recording_proxy(base_url) as (url, recorder):
        lm = _lm(engine, url, timeout=TIMEOUT)
        try:
            with ts.context(cache=ts.cache.MemoryCache()):
                first = ts.Predict(Classify, lm=lm)(review=REVIEWS[1])
                sent = len(recorder.bodies)
                second = ts.Predict(Classify, lm=lm)(review=REVIEWS[1])
        finally:
            lm.close()
    assert sent >= 1
    assert len(recorder.bodies) == sent  # the repeat never reached the engine
    assert second.sentiment == first.sentiment
    assert last_exchanges(1)[0].cached


def test_render_is_what_the_engine_receives(engine: Engine, base_url: str) -> None:
    with recording_proxy(base_url) as (url, recorder):
        lm = _lm(engine, url, timeout=TIMEOUT)
        try:
            calls: list[tuple[ts.Module, dict[str, str]]] = [
                (ts.Predict(Extract, lm=lm), {"text": TEXTS[0]}),
                (ts.ChainOfThought(Classify, lm=lm), {"review": REVIEWS[0]}),
                (ts.ReAct(Answer, tools=[lookup_age], lm=lm, max_iters=2), {"question": "Ada?"}),
            ]
            for module, inputs in calls:
                rendered = module.render(**inputs)
                before = len(recorder.bodies)
                result = module.try_call(**inputs)
                assert isinstance(result, ts.Prediction | ts.TypedspyError), repr(result)
                assert recorder.requests()[before] == rendered
                history = ts.inspect_history(1)
                assert last_exchanges(1)[0].body == recorder.requests()[-1]
                assert history
        finally:
            lm.close()


def _never(value: str) -> str:
    raise ValueError("never valid")


class Rejected(ts.Signature):
    """Name the city the text is about."""

    text: str = ts.InputField()
    city: Annotated[str, AfterValidator(_never)] = ts.OutputField()


def test_a_per_call_token_budget_stops_a_streamed_call(lm: ts.LM) -> None:
    # llama-cpp-python's streams report no usage: the budget counts its estimate (ADR-091).
    # Every reply fails validation: only the budget (1 token) stops the retries.
    predict = ts.Predict(Rejected, lm=lm, token_budget=1, max_retries=3)
    with pytest.raises(ts.OutputError) as failed:
        list(predict.stream(text="Paris is the capital of France."))
    assert isinstance(failed.value, ts.errors.TokenBudgetExceededError), repr(failed.value)
    assert len(failed.value.attempts) == 1


def test_a_batch_item_timeout_cuts_long_generations_on_both_slots(
    engine: Engine, base_url: str
) -> None:
    lm = _lm(engine, base_url, timeout=TIMEOUT)
    ignore_eos = {"ignore_eos": True}
    essay = ts.Predict(Essay, lm=lm, mode="prompt", max_tokens=LONG, extra_body=ignore_eos)
    before = 0.0
    if engine == "llama-server":
        _idle(base_url)
        before = _decoded(base_url)
    try:
        inputs = [{"topic": "rivers"}, {"topic": "mountains"}]
        results = essay.batch(inputs, concurrency=2, timeout=3)
    finally:
        lm.close()
    for result in results:
        assert isinstance(result, ts.TypedspyError), repr(result)
    # Every request sent counts, answered or not (on the code before, these read 0).
    assert 2 <= results.requests <= 2 * (1 + get_settings().max_retries)
    if engine == "llama-server":  # each first request runs past the timeout
        assert all(isinstance(r, ts.errors.ItemTimeoutError) for r in results), list(results)
        assert results.requests == 2
        # Both clients went away: both slots stopped long before LONG tokens each.
        _idle(base_url)
        assert _decoded(base_url) - before < LONG / 2


def test_identical_batch_items_send_one_request_under_the_cache(
    engine: Engine, base_url: str
) -> None:
    with recording_proxy(base_url) as (url, recorder):
        lm = _lm(engine, url, timeout=TIMEOUT)
        try:
            with ts.context(cache=ts.cache.MemoryCache()):
                inputs = [{"review": REVIEWS[2]}] * 4
                results = ts.Predict(Classify, lm=lm).batch(inputs, concurrency=2)
        finally:
            lm.close()
    assert len(recorder.bodies) == 1, recorder.requests()
    assert results.requests == 1
    assert results.cached == 3
    assert len({repr(result) for result in results}) == 1


def test_a_streamed_repeat_is_answered_from_the_cache(engine: Engine, base_url: str) -> None:
    with recording_proxy(base_url) as (url, recorder):
        lm = _lm(engine, url, timeout=TIMEOUT)
        try:
            with ts.context(cache=ts.cache.MemoryCache()):
                first = list(ts.Predict(Extract, lm=lm).stream(text=TEXTS[3]))[-1]
                sent = len(recorder.bodies)
                second = list(ts.Predict(Extract, lm=lm).stream(text=TEXTS[3]))[-1]
        finally:
            lm.close()
    assert isinstance(first, ts.Prediction) and isinstance(second, ts.Prediction)
    assert all(body["stream"] for body in recorder.requests())
    assert len(recorder.bodies) == sent
    assert second.entity == first.entity


def test_a_streamed_call_falls_back_from_a_dead_endpoint(engine: Engine, base_url: str) -> None:
    dead = _lm(engine, f"http://127.0.0.1:{closed_port()}/v1", max_retries=0, timeout=TIMEOUT)
    real = _lm(engine, base_url, timeout=TIMEOUT)
    try:
        final = list(ts.Predict(Extract, lm=ts.LM.fallback(dead, real)).stream(text=TEXTS[0]))[-1]
    finally:
        dead.close()
        real.close()
    assert isinstance(final, ts.Prediction)
    assert isinstance(final.entity, Person | Company)
    trace = final.extras["fallback"]
    assert trace.endpoint == real.endpoint
    assert [s.trigger for s in trace.skipped] == ["transport"]


def test_a_streamed_react_run_pauses_for_a_confirmation_and_resumes(lm: ts.LM) -> None:
    ran: list[str] = []

    @ts.confirm_first
    @ts.tool
    def lookup_age_checked(name: str) -> int:
        """Look up a person's age in years."""
        ran.append(name)
        return 36

    agent = ts.ReAct(Answer, tools=[lookup_age_checked], lm=lm, max_iters=4)
    question = "How old was Ada? Look it up with lookup_age_checked."
    pauses = 0
    state: ts.ResumeState | None = None
    for _ in range(6):  # each step pauses at most once: max_iters (4) bounds the pauses
        events = (
            agent.stream(question=question) if state is None else agent.stream(resume_state=state)
        )
        try:
            final = list(events)[-1]
        except ts.ConfirmationRequired as pause:
            assert len(ran) == pauses  # nothing runs before it is approved
            pauses += 1
            state = ts.ResumeState(pause, "yes")
            continue
        break
    else:
        pytest.fail(f"still pausing after {pauses} resumes (max_iters=4)")
    assert pauses <= 4
    assert len(ran) == pauses
    assert isinstance(final, ts.react.AgentPrediction)
    assert isinstance(final.answer, int)


def test_render_is_what_the_engine_receives_in_every_mode(engine: Engine, base_url: str) -> None:
    with recording_proxy(base_url) as (url, recorder):
        lm = _lm(engine, url, timeout=TIMEOUT)
        try:
            for mode in (*lm.profile.modes, "think_then_format"):
                predict = ts.Predict(Extract, lm=lm, mode=mode)
                rendered = predict.render(text=TEXTS[4])
                before = len(recorder.bodies)
                result = predict.try_call(text=TEXTS[4])
                assert isinstance(result, ts.Prediction | ts.TypedspyError), repr(result)
                assert recorder.requests()[before] == rendered, mode
        finally:
            lm.close()


def test_a_streamed_think_then_format_call_ends_typed_or_in_a_typed_error(lm: ts.LM) -> None:
    predict = ts.Predict(Extract, lm=lm, mode="think_then_format")
    try:
        final = list(predict.stream(text=TEXTS[2]))[-1]
    except ts.OutputError as failed:
        assert 2 <= len(failed.attempts) <= 2 + get_settings().max_retries
        return
    assert isinstance(final, ts.Prediction)
    assert isinstance(final.entity, Person | Company)
    assert final.free_answer


def test_a_deadline_cuts_a_streamed_react_run(engine: Engine, base_url: str) -> None:
    @ts.tool
    def write_report(topic: str) -> str:
        """Write a long report on a topic."""
        return "It is long. " * 50

    class Report(ts.Signature):
        """Write the longest report you can on the topic, then answer with it."""

        topic: str = ts.InputField()
        report: str = ts.OutputField()

    lm = _lm(engine, base_url, timeout=TIMEOUT)
    # No ignore_eos here: under a step's grammar llama-server fails the stream with it.
    agent = ts.ReAct(Report, tools=[write_report], lm=lm, max_iters=50)
    events: list[object] = []
    stopped: ts.TypedspyError | None = None
    try:
        with ts.context(deadline=0.5):  # about a first step's time on an idle machine
            for event in agent.stream(topic="rivers"):
                events.append(event)
    except ts.TypedspyError as exc:
        stopped = exc
    finally:
        lm.close()
    if stopped is None:  # the model finished within the deadline
        assert isinstance(events[-1], ts.react.AgentPrediction)
        assert isinstance(events[-1].report, str)
    elif isinstance(stopped, ts.DeadlineExceededError):
        assert stopped.limit == "deadline"
        assert stopped.requests >= 1
    if engine == "llama-server":
        _idle(base_url)


# Hostile input on a real engine: what the engines refuse must come back typed.


def test_every_mode_even_one_the_engine_refuses_ends_typed(lm: ts.LM) -> None:
    # llama-cpp-python refuses json_schema (HTTP 500); prompt and tools fail on this model.
    for mode in ("json_schema", "json_object", "tools", "prompt"):
        predict = ts.Predict(Classify, lm=lm, mode=mode, max_tokens=64)
        try:
            result = predict.try_call(review=REVIEWS[1])
        except ts.TypedspyError as exc:  # the endpoint's refusal, raised as typed
            assert isinstance(exc, ts.LMError | ts.ConfigurationError), (mode, repr(exc))
            continue
        if isinstance(result, ts.Prediction):
            assert result.sentiment in ("positive", "negative", "neutral")
        else:
            assert len(result.attempts) <= 1 + get_settings().max_retries


def test_an_input_past_the_context_window_is_a_typed_error(lm: ts.LM) -> None:
    text = "Ada Lovelace wrote the first program. " * 3000  # about 27,000 tokens
    with pytest.raises(ts.errors.LMContextLengthError) as refused:
        ts.Predict(Extract, lm=lm).try_call(text=text)
    # Both engines answer 400 at once, naming the size: llama-server with its error type
    # exceed_context_size_error, llama-cpp-python with OpenAI's code and wording.
    assert refused.value.status_code == 400
    assert refused.value.context_window is not None
    assert refused.value.context_window < 27_000
    if "available context size" in str(refused.value):  # llama-server
        assert refused.value.code == "400"
    else:
        assert refused.value.code == "context_length_exceeded"


@pytest.mark.parametrize(
    "text",
    ["Zoë, 30, ünïcödé 🙂", "Ada\x00 is 36", "\u202eAda is 36", "Ada is 36\ud800"],
    ids=["unicode", "nul", "rtl", "lone-surrogate"],
)
def test_hostile_text_ends_typed(lm: ts.LM, text: str) -> None:
    try:
        result = ts.Predict(Extract, lm=lm).try_call(text=text)
    except ts.TypedspyError:
        return
    assert isinstance(result, ts.Prediction | ts.OutputError), repr(result)


def test_a_react_run_past_the_context_window_leaves_its_oldest_steps_out(lm: ts.LM) -> None:
    # One result is ~9,000 tokens, past either engine's window (4,096 a slot on llama-server,
    # 8,192 on llama-cpp-python): the next step no longer fits, and the run must go on without
    # its oldest steps (ADR-094) instead of ending.
    calls: list[str] = []

    @ts.tool
    def lookup_age_page(name: str) -> str:
        """Look up a person's age in years (a long page)."""
        calls.append(name)
        return f"{name} was 36. " + "Ada Lovelace was a mathematician. " * 1300

    agent = ts.ReAct(Answer, tools=[lookup_age_page], lm=lm, max_iters=5)
    question = "How old was Ada? Look it up with lookup_age_page."
    with ts.context(history_size=40):
        try:
            pred = agent(question=question)
        except ts.TypedspyError as exc:  # the small model may still fail: typed, never cut-off
            assert not isinstance(exc, ts.errors.LMContextLengthError), exc
            return
        errors = [e.error or "" for e in ts.pipeline.last_exchanges(40)]
    assert isinstance(pred.answer, int)
    if not calls:
        pytest.skip("the model read no page: the window was never passed")
    assert any("context" in e for e in errors)  # the engine refused one step, the run went on
    assert len(pred.trajectory) >= 2  # every step kept in the prediction


@pytest.mark.parametrize("cut", ["consumer stops", "stream_deadline"])
def test_a_stream_cut_midway_counts_in_the_budget_and_frees_the_slot(
    engine: Engine, base_url: str, cut: str
) -> None:
    # llama-server reports usage only in a stream's last chunk: a stream cut before it counted
    # nothing in a Budget, and the stream_deadline's error said "0 request(s) sent" (ADR-103).
    if engine != "llama-server":  # its server drops ignore_eos: the reply ends before a cut
        pytest.skip("llama-cpp-python's server drops ignore_eos; its streams report no usage")
    lm = _lm(engine, base_url, timeout=TIMEOUT)
    essay = ts.Predict(
        Essay, lm=lm, mode="prompt", max_tokens=LONG, extra_body={"ignore_eos": True}
    )
    budget = ts.limits.Budget(total_tokens=1_000_000)
    text: list[str] = []
    _idle(base_url)
    try:
        with ts.context(budget=budget, stream_deadline=3 if cut == "stream_deadline" else 600):
            try:
                for event in essay.stream(topic="rivers"):
                    if isinstance(event, OutputDelta):
                        text.append(event.text)
                    if cut == "consumer stops" and len(text) == 20:
                        break
            except ts.DeadlineExceededError as exc:
                assert exc.limit == cut
                assert (exc.requests, exc.streamed) == (1, len("".join(text)))
        assert budget.usage.prompt_tokens > 0
        assert budget.usage.completion_tokens >= len("".join(text)) // 4 > 0
        _idle(base_url)  # the engine stopped the cut stream's slot
        after = ts.Predict(Classify, lm=lm).try_call(review=REVIEWS[0])
        assert isinstance(after, ts.Prediction | ts.TypedspyError), repr(after)
    finally:
        lm.close()
