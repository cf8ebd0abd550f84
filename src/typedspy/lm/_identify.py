"""Which server is behind a base URL, asked once per process (ADR-084), and the probe (ADR-085).

An `LM` given no ``profile=`` and a base URL that names no provider asks the server once: one
``GET {base_url}/models`` (`Sender.models`), read by `typedspy.profiles.identify_server`. The
answer is kept process-wide per base URL: every LM on that URL, in any thread or event loop,
uses it without asking again, and calls made while the first one asks wait for that one answer
(a `concurrent.futures.Future`, which any loop can await). A probe's refined profile replaces
the base URL's entry.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from typedspy.errors import LMError, LMStatusError
from typedspy.lm._bound import RequestBound, counted
from typedspy.lm._messages import LMRequest
from typedspy.profiles import Canary, ProbeReport, Profile, Seen, canaries, findings

if TYPE_CHECKING:
    from typedspy.lm._base import BaseLM

__all__ = [
    "DETECT_TIMEOUT",
    "PROBE_TIMEOUT",
    "Identified",
    "forget",
    "identified",
    "known",
    "probe",
    "remember",
]

logger = logging.getLogger("typedspy")

DETECT_TIMEOUT = 5.0
"""Seconds the identifying request may take (less when the LM's own ``timeout`` is less)."""
_MAX_URLS = 256  # base URLs remembered; the oldest is forgotten past it
_HANDOVERS = 3  # times a waiter takes over a detection whose owner was cancelled


@dataclass(frozen=True)
class Identified:
    """The profile for a base URL (a template each LM copies) and why it was chosen."""

    profile: Profile
    reason: str


_lock = threading.Lock()
_urls: OrderedDict[str, concurrent.futures.Future[Identified]] = OrderedDict()


def known(url: str) -> Identified | None:
    """The finished answer for ``url``, if any (never waits, never sends)."""
    with _lock:
        entry = _urls.get(url)
    if entry is None or not entry.done() or entry.cancelled():
        return None
    return entry.result()


def remember(url: str, answer: Identified) -> None:
    """Make ``answer`` the profile for ``url`` (a probe's refinement)."""
    done: concurrent.futures.Future[Identified] = concurrent.futures.Future()
    done.set_result(answer)
    with _lock:
        _put(url, done)


def _put(url: str, entry: concurrent.futures.Future[Identified]) -> None:
    """Keep ``entry`` for ``url`` as the newest, forgetting the oldest past `_MAX_URLS` (locked)."""
    _urls[url] = entry
    _urls.move_to_end(url)
    while len(_urls) > _MAX_URLS:
        _urls.popitem(last=False)


def forget(url: str | None = None) -> None:
    """Forget what was found for ``url`` (every base URL when ``None``): it is asked again."""
    with _lock:
        if url is None:
            _urls.clear()
        else:
            _urls.pop(url, None)


async def identified(
    url: str, detect: Callable[[], Awaitable[Identified]], shown: str
) -> Identified:
    """The answer for ``url``: known, awaited from the detection under way, or detected now.

    ``detect`` runs at most once per URL at a time; it must not raise (a failure is an answer).
    A caller cancelled while detecting hands over: a waiting caller detects instead. The log
    names the URL as ``shown`` (its credentials redacted).
    """
    for _ in range(_HANDOVERS):
        with _lock:
            entry = _urls.get(url)
            owner = entry is None
            if entry is None:
                entry = concurrent.futures.Future[Identified]()
                _put(url, entry)
        if not owner:
            # shield: a waiter cancelled must not cancel the detection the others wait for
            waited = asyncio.shield(asyncio.wrap_future(entry))
            try:
                return await waited
            except asyncio.CancelledError:
                if not entry.cancelled():
                    raise  # this caller was cancelled, not the detection
                continue
        try:
            answer = await detect()
        except BaseException:
            with _lock:
                if _urls.get(url) is entry:
                    del _urls[url]
            entry.cancel()
            raise
        entry.set_result(answer)
        unsure = answer.profile.name == "generic"
        logger.log(
            logging.WARNING if unsure else logging.INFO,
            "typedspy: %s gets profile %r: %s%s",
            shown,
            answer.profile.name,
            answer.reason,
            " (unsure: pass profile= to choose one)" if unsure else "",
        )
        return answer
    return await detect()  # every owner was cancelled: this caller asks itself


PROBE_TIMEOUT = 30.0
"""Seconds each probe request may take, by default."""


async def probe(lm: BaseLM, profile: Profile, url: str | None, timeout: float) -> ProbeReport:
    """Send each canary once (no transport retry) and judge the replies (ADR-085)."""
    pairs: list[tuple[Canary, Seen]] = []
    sent = 0
    for canary in canaries(profile):
        bound = RequestBound(1, f"{lm.model}: probe", parent=None)
        seen = await counted(bound, functools.partial(_send, lm, canary, timeout))
        pairs.append((canary, seen))
        sent += max(bound.sent, 1)
    return ProbeReport(
        base_url=url, model=lm.model, profile=profile.name, requests=sent, findings=findings(pairs)
    )


async def _send(lm: BaseLM, canary: Canary, timeout: float) -> Seen:
    request = LMRequest(
        messages=canary.messages,
        response_format=canary.response_format,
        tools=canary.tools,
        tool_choice=canary.tool_choice,
        parallel_tool_calls=False if canary.tools else None,
        params={**canary.params, "timeout": timeout},
    )
    try:
        if canary.stream:
            text, usage = "", None
            async for chunk in lm.astream(request):
                text, usage = text + chunk.text, chunk.usage or usage
            tokens = None if usage is None else usage.completion_tokens
            return Seen(200, text=text, completion_tokens=tokens)
        reply = await lm.acomplete(request)
    except LMStatusError as exc:
        return Seen(exc.status_code, error=str(exc))
    except LMError as exc:  # a timeout, a dropped connection, a body that is no completion
        return Seen(None, error=f"{type(exc).__name__}: {exc}"[:160])
    raw = reply.raw
    usage_sent = isinstance(raw.get("usage"), Mapping)
    return Seen(
        200,
        text=reply.text,
        tool_arguments=reply.tool_calls[0].arguments if reply.tool_calls else None,
        finish_reason=reply.finish_reason,
        completion_tokens=reply.usage.completion_tokens if usage_sent else None,
        logprobs=_has_logprobs(raw),
    )


def _has_logprobs(raw: Mapping[str, Any]) -> bool:
    try:  # a body is decoded JSON: a missing key or an unexpected type is no logprobs
        return bool(raw["choices"][0]["logprobs"]["content"])
    except (KeyError, IndexError, TypeError):
        return False
