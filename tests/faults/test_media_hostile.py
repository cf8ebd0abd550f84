"""Issue 21, D13: hostile media inputs end in a typed error, quickly, with nothing sent.

A file is read only up to its class's ``max_bytes`` (a 50 MB file once cost its whole size in
memory, ``/dev/zero`` a `MemoryError`); a FIFO, a device, a directory or a socket is refused
by what it is (a FIFO once blocked for ever); a URL the endpoint must not fetch (``file://``,
``ftp://``, ``javascript:``) is refused on every way a value is built, a mapping included (a
dataset row, a saved demo, JSON), where it once reached the endpoint.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

import typedspy as ts
from typedspy.testing import StandIn

PNG = b"\x89PNG\r\n\x1a\n" + bytes(24)
HOSTILE_URLS = ["file:///etc/passwd", "ftp://example.invalid/cat.png", "javascript:alert(1)"]
posix_only = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs and devices: POSIX")


class Describe(ts.Signature):
    """Describe the photo."""

    photo: ts.Image = ts.InputField()
    caption: str = ts.OutputField()


class Small(ts.Image):
    max_bytes = 1024


def open_fds() -> int | None:
    fds = Path("/proc/self/fd")
    return len(list(fds.iterdir())) if fds.is_dir() else None


def sparse_png(path: Path, size: int) -> Path:
    with path.open("wb") as file:
        file.write(PNG)
        file.truncate(size)
    return path


def peak_bytes(call: Callable[[], object]) -> tuple[BaseException, int]:
    """The exception ``call`` raised and the peak of Python memory while it ran."""
    tracemalloc.start()
    try:
        with pytest.raises(ts.TypedspyError) as caught:
            call()
        return caught.value, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# -- files --


def test_a_big_file_is_refused_without_being_read(tmp_path: Path) -> None:
    big = sparse_png(tmp_path / "big.png", 50 << 20)
    before = open_fds()
    error, peak = peak_bytes(lambda: Small.from_path(big))
    assert isinstance(error, ts.errors.MediaError)
    assert str(error) == (
        f"Small: {str(big)!r} (52,428,800 bytes) is more than the 1,024 bytes accepted (max_bytes)"
    )
    assert peak < 4 << 20  # the 50 MB were never read (once: 50 MB, then their base64)
    assert open_fds() == before


def test_a_big_file_as_a_signature_input_is_an_input_error_and_nothing_is_sent(
    tmp_path: Path, standin: tuple[StandIn, ts.LM]
) -> None:
    server, lm = standin
    big = sparse_png(tmp_path / "big.png", 50 << 20)  # over Image.max_bytes (20 MiB)
    predict = ts.Predict(Describe, lm=lm)
    error, peak = peak_bytes(lambda: predict(photo=big))
    assert isinstance(error, ts.InputError)
    assert "photo" in str(error) and "more than the 20,971,520 bytes accepted" in str(error)
    assert peak < 16 << 20
    assert server.requests == []


def test_a_file_shorter_than_the_limit_is_read_whole(tmp_path: Path) -> None:
    exact = tmp_path / "exact.png"
    exact.write_bytes(PNG + bytes(1024 - len(PNG)))
    assert base64.b64decode(Small.from_path(exact).data or "") == exact.read_bytes()
    exact.write_bytes(exact.read_bytes() + b"\x00")
    with pytest.raises(ts.errors.MediaError, match="1,025 bytes"):
        Small.from_path(exact)


@posix_only
@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="no /proc")
def test_a_file_that_reports_no_size_is_read_only_up_to_the_bound() -> None:
    maps = Path("/proc/self/maps")  # a regular file of size 0, longer than 1,024 bytes
    assert maps.stat().st_size == 0

    with pytest.raises(ts.errors.MediaError) as caught:
        Small.from_path(maps)

    assert (
        str(caught.value)
        == f"Small: {str(maps)!r} is more than the 1,024 bytes accepted (max_bytes)"
    )


@pytest.mark.parametrize("kind", ["directory", "socket"])
def test_a_directory_or_socket_is_refused_by_what_it_is(tmp_path: Path, kind: str) -> None:
    path = tmp_path / kind
    with contextlib.ExitStack() as stack:
        if kind == "directory":
            path.mkdir()
        else:
            stack.enter_context(socket.socket(socket.AF_UNIX)).bind(str(path))
        before = open_fds()
        with pytest.raises(ts.errors.MediaError) as caught:
            ts.Image.from_path(path)
        assert open_fds() == before
    assert str(caught.value) == f"Image: {str(path)!r} is a {kind}, not a regular file"


def bounded(call: Callable[[], object], fifo: Path) -> BaseException | None:
    """What ``call`` raised, run on a thread; a failure if it blocked (then it is released)."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(10)
    blocked = worker.is_alive()
    if blocked:  # a writer end lets a reader blocked in open() go on, to EOF
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(10)
    assert not blocked, "blocked on a FIFO"
    return outcome[0]


@posix_only
def test_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "photo.png"
    os.mkfifo(fifo)
    before = open_fds()
    error = bounded(lambda: ts.Image.from_path(fifo), fifo)
    assert isinstance(error, ts.errors.MediaError)
    assert str(error) == f"Image: {str(fifo)!r} is a FIFO (named pipe), not a regular file"
    assert open_fds() == before


@posix_only
def test_a_fifo_as_a_signature_input_is_an_input_error_and_nothing_is_sent(
    tmp_path: Path, standin: tuple[StandIn, ts.LM]
) -> None:
    server, lm = standin
    fifo = tmp_path / "photo.png"
    os.mkfifo(fifo)
    error = bounded(lambda: ts.Predict(Describe, lm=lm)(photo=fifo), fifo)
    assert isinstance(error, ts.InputError)
    assert "photo" in str(error) and "FIFO" in str(error)
    assert server.requests == []


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_dev_zero_is_refused_without_being_read() -> None:
    # In a process of its own, under a 1 GiB address-space cap: reading /dev/zero never ends.
    code = (
        "import resource\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "import typedspy as ts\n"
        "try:\n"
        "    ts.Image.from_path('/dev/zero')\n"
        "except BaseException as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.stdout.strip() == (
        "MediaError Image: '/dev/zero' is a character device, not a regular file"
    ), done.stderr[-2000:]


def test_a_path_with_a_nul_is_a_media_error() -> None:
    with pytest.raises(ts.errors.MediaError, match="cannot read media file"):
        ts.Image.from_path("photo\x00.png")


# -- URLs --


def url_error(error: ValidationError) -> BaseException:
    """The `MediaError` the ``url`` field's check raised inside Pydantic's error."""
    (detail,) = error.errors()
    assert detail["loc"] == ("url",)
    cause: BaseException = detail["ctx"]["error"]
    return cause


BUILDERS: dict[str, Callable[[str], object]] = {
    "constructor": lambda url: ts.Image(url=url),
    "model_validate": lambda url: ts.Image.model_validate({"url": url}),
    "model_validate_json": lambda url: ts.Image.model_validate_json(json.dumps({"url": url})),
    "with a mime_type": lambda url: ts.Image.model_validate({"url": url, "mime_type": "image/png"}),
}


@pytest.mark.parametrize("build", BUILDERS.values(), ids=BUILDERS.keys())
@pytest.mark.parametrize("url", HOSTILE_URLS)
def test_a_hostile_url_is_refused_by_the_model_itself(
    url: str, build: Callable[[str], object]
) -> None:
    with pytest.raises(ValidationError) as caught:
        build(url)
    error = url_error(caught.value)
    assert isinstance(error, ts.errors.MediaError)
    assert str(error) == f"{url!r} is not an http(s) or data: URL; pass a pathlib.Path for a file"


@pytest.mark.parametrize("url", HOSTILE_URLS)
def test_a_hostile_url_from_url_is_a_media_error(url: str) -> None:
    with pytest.raises(ts.errors.MediaError, match=r"is not an http\(s\) or data: URL"):
        ts.Image.from_url(url)


@pytest.mark.parametrize("url", HOSTILE_URLS)
def test_a_hostile_url_as_a_signature_input_is_never_sent(
    url: str, standin: tuple[StandIn, ts.LM]
) -> None:
    server, lm = standin
    with pytest.raises(ts.InputError, match=r"photo\.url: .*is not an http\(s\) or data: URL"):
        ts.Predict(Describe, lm=lm)(photo={"url": url})
    assert server.requests == []


@pytest.mark.parametrize("url", HOSTILE_URLS)
def test_a_hostile_url_in_a_saved_demo_fails_to_load(
    url: str, standin: tuple[StandIn, ts.LM]
) -> None:
    server, lm = standin
    demo = {"photo": ts.Image.from_url("https://example.invalid/cat.png"), "caption": "a cat"}
    state = ts.Predict(Describe, demos=[demo]).dump_state()
    state["predictors"]["self"]["demos"][0]["photo"]["url"] = url  # the saved format (ADR-054)
    predict = ts.Predict(Describe, lm=lm)
    with pytest.raises(ts.ConfigurationError, match=r"photo[\s\S]*not an http\(s\) or data: URL"):
        predict.load_state(state)
    with pytest.raises(ts.InputError):  # nothing of the state was kept: no demo to send
        predict(photo="file:///etc/passwd")
    assert server.requests == []


@pytest.mark.parametrize("url", HOSTILE_URLS)
def test_a_hostile_url_in_a_dataset_row_names_the_row(url: str) -> None:
    rows: list[dict[str, Any]] = [
        {"photo": {"url": "https://example.invalid/a.png"}, "caption": "a"},
        {"photo": {"url": url}, "caption": "b"},
    ]
    with pytest.raises(ts.errors.DatasetError) as caught:
        ts.evaluation.load_dataset(rows, Describe)
    assert [row.row for row in caught.value.rows] == [2]
    assert "not an http(s) or data: URL" in str(caught.value)


def test_audio_by_url_is_refused_from_a_mapping_too() -> None:
    # An input_audio part carries data only: an Audio URL would be sent as no data at all.
    with pytest.raises(ValidationError) as caught:
        ts.Audio.model_validate({"url": "https://example.invalid/a.wav"})
    assert "Audio cannot be sent by URL" in str(url_error(caught.value))


def test_a_data_url_in_a_mapping_is_held_to_max_bytes_and_its_hash() -> None:
    big = "data:image/png;base64," + base64.b64encode(PNG + bytes(2048)).decode()
    with pytest.raises(ValidationError, match="more than the 1,024 bytes accepted"):
        Small.model_validate({"url": big})
    small = ts.Image.model_validate(
        {"url": "data:image/png;base64," + base64.b64encode(PNG).decode()}
    )
    assert small == ts.Image.from_bytes(PNG)  # data, type and hash, no URL
