"""Settings: process-wide `configure`, and `context` overrides scoped to a thread or task."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Iterator

import pytest

from typedspy.callbacks import BaseCallback
from typedspy.errors import ConfigurationError
from typedspy.settings import Settings, SettingsKeywords, configure, context, get_settings
from typedspy.testing._fake_lm import FakeLM


@pytest.fixture
def restore_defaults() -> Iterator[None]:
    """`configure` is process-wide by design; put back what the test changed."""
    before = get_settings()
    yield
    configure(**{f.name: getattr(before, f.name) for f in dataclasses.fields(Settings)})


def test_defaults() -> None:
    assert Settings() == Settings(
        lm=None,
        max_retries=2,
        mode="auto",
        token_budget=None,
        callbacks=(),
        retry_wait=0.0,
    )


def test_configure_changes_the_process_wide_defaults(restore_defaults: None) -> None:
    lm = FakeLM([])
    observer = BaseCallback()
    configure(lm=lm, max_retries=5, callbacks=[observer])

    settings = get_settings()

    assert settings.lm is lm
    assert settings.max_retries == 5
    assert settings.callbacks == (observer,)  # any sequence is stored as a tuple
    assert settings.mode == "auto"  # untouched keys keep their values
    seen_in_thread: list[int] = []
    thread = threading.Thread(target=lambda: seen_in_thread.append(get_settings().max_retries))
    thread.start()
    thread.join()
    assert seen_in_thread == [5]


def test_context_overrides_only_inside_and_nested_blocks_restore() -> None:
    outer_lm, inner_lm = FakeLM([], model="outer"), FakeLM([], model="inner")
    before = get_settings()

    with context(lm=outer_lm, max_retries=0) as outer:
        assert outer.lm is outer_lm
        with context(lm=inner_lm, mode="json_object") as inner:
            assert (inner.lm, inner.max_retries, inner.mode) == (inner_lm, 0, "json_object")
        assert get_settings() == outer
        assert (get_settings().lm, get_settings().mode) == (outer_lm, before.mode)

    assert get_settings() == before


def test_context_restores_after_an_exception() -> None:
    before = get_settings()

    with pytest.raises(RuntimeError), context(max_retries=9):
        raise RuntimeError("boom")

    assert get_settings() == before


def test_context_overrides_configure_inside_the_block(restore_defaults: None) -> None:
    with context(max_retries=1):
        configure(max_retries=4, retry_wait=0.5)
        assert (get_settings().max_retries, get_settings().retry_wait) == (1, 0.5)
    assert get_settings().max_retries == 4


def test_threads_do_not_see_each_others_overrides() -> None:
    barrier = threading.Barrier(2)
    seen: dict[str, list[str]] = {}

    def worker(name: str) -> None:
        lm = FakeLM([], model=name)
        with context(lm=lm):
            barrier.wait()  # both are inside their blocks now
            current = get_settings().lm
            seen[name] = [current.model if current else "none"]
            barrier.wait()
        current = get_settings().lm
        seen[name].append(current.model if current else "none")

    threads = [threading.Thread(target=worker, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    default = get_settings().lm
    after = default.model if default else "none"
    assert seen == {"a": ["a", after], "b": ["b", after]}


def test_a_thread_started_inside_a_context_does_not_inherit_it() -> None:
    seen: list[int] = []
    with context(max_retries=8):
        thread = threading.Thread(target=lambda: seen.append(get_settings().max_retries))
        thread.start()
        thread.join()

    assert seen == [get_settings().max_retries]
    assert seen != [8]


def test_200_tasks_each_see_only_their_own_lm() -> None:
    lms = [FakeLM([], model=f"lm-{n}") for n in range(200)]

    async def task(lm: FakeLM) -> list[str]:
        seen = []
        with context(lm=lm):
            for _ in range(3):
                await asyncio.sleep(0)  # let the other 199 tasks run in between
                current = get_settings().lm
                seen.append(current.model if current else "none")
        return seen

    async def main() -> list[list[str]]:
        return await asyncio.gather(*(task(lm) for lm in lms))

    results = asyncio.run(main())

    assert results == [[lm.model] * 3 for lm in lms]


def test_tasks_created_inside_a_context_inherit_it() -> None:
    async def child() -> int:
        return get_settings().max_retries

    async def main() -> tuple[int, int]:
        async with context(max_retries=6):
            inherited = await asyncio.create_task(child())
        return inherited, get_settings().max_retries

    inherited, after = asyncio.run(main())

    assert inherited == 6
    assert after != 6


def test_unknown_keys_are_rejected_with_the_valid_ones_listed() -> None:
    with pytest.raises(ConfigurationError) as info:
        context(max_retry=3)
    assert "'max_retry'" in str(info.value)
    for key in ("lm", "max_retries", "mode", "token_budget", "callbacks", "retry_wait"):
        assert key in str(info.value)

    with pytest.raises(ConfigurationError, match="'temperature'"):
        configure(temperature=0)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("lm", "gpt-4o"),
        ("max_retries", -1),
        ("max_retries", True),
        ("token_budget", 0),
        ("mode", ""),
        ("mode", "json"),
        ("retry_wait", -0.5),
        ("retry_wait", float("nan")),
        ("retry_wait", float("inf")),
        ("deadline", float("nan")),
        ("callbacks", "print"),
        ("callbacks", [42]),  # accepted, and observed nothing
    ],
)
def test_values_of_the_wrong_kind_are_rejected(key: str, value: object) -> None:
    before = get_settings()

    with pytest.raises(ConfigurationError, match=key):
        configure(**{key: value})

    assert get_settings() == before


def test_track_usage_is_gone_it_was_never_read() -> None:
    with pytest.raises(ConfigurationError, match=r"unknown setting.*'track_usage'"):
        configure(**{"track_usage": False})  # type: ignore[arg-type]


def test_the_typed_keywords_are_exactly_the_settings_fields() -> None:
    assert set(SettingsKeywords.__annotations__) == {f.name for f in dataclasses.fields(Settings)}


def test_a_snapshot_does_not_change_afterwards() -> None:
    snapshot = get_settings()
    with context(max_retries=snapshot.max_retries + 1):
        assert get_settings() != snapshot
    with pytest.raises(dataclasses.FrozenInstanceError):
        snapshot.max_retries = 0  # type: ignore[misc]
