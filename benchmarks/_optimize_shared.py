"""What both sides of `optimize_real_engine.py` share: the data, a run's row, a counting proxy.

The proxy sits between a library and the server (llama-server or the stand-in) on loopback: it
forwards every request unchanged, counts requests and the ``usage`` tokens of the replies, and
can log each request and reply, so typedspy and DSPy are measured by the same instrument.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TextIO

DATA = Path(__file__).resolve().parent / "data"
TEAMS = ("billing", "shipping", "technical", "account")
RUNS = {
    "none": "no demos",
    "labeled": "LabeledFewShot",
    "bootstrap": "BootstrapFewShot",
    "search": "RandomSearch",
    "gepa": "GEPA",
}  # --only's names for each library's runs, by the start of the run's name


def chosen(runs: list[tuple[str, Any]], only: set[str]) -> list[tuple[str, Any]]:
    """The runs whose --only name is in ``only``."""
    keep = {RUNS[key] for key in only}
    return [(name, value) for name, value in runs if name.split("(")[0] in keep]


def rows(split: str) -> list[dict[str, str]]:
    """The ``train`` or ``dev`` rows of the shop-messages task (``message``, ``team``)."""
    path = DATA / f"shop_messages_{split}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def feedback(expected: str, got: object) -> tuple[float, str]:
    """The metric of every run on both sides: exact team, with a line of feedback."""
    if got == expected:
        return 1.0, f"right: {expected}"
    return 0.0, f"wrong: the message belongs to {expected!r}, the program said {got!r}"


@dataclass
class Tally:
    """Requests and tokens the proxy has seen."""

    requests: int = 0
    tokens: int = 0

    def __sub__(self, other: Tally) -> Tally:
        return Tally(self.requests - other.requests, self.tokens - other.tokens)


@dataclass
class Spent:
    """What a measured block sent and how long it took."""

    tally: Tally = field(default_factory=Tally)
    seconds: float = 0.0


@dataclass
class Row:
    """One optimizer's run: its compile's cost and the compiled program's dev score."""

    library: str
    optimizer: str
    score: float = 0.0
    compile: Tally = field(default_factory=Tally)
    seconds: float = 0.0
    evaluation: Tally = field(default_factory=Tally)
    eval_seconds: float = 0.0
    demos: dict[str, Counter[str]] = field(default_factory=dict)  # predictor -> class counts
    notes: list[str] = field(default_factory=list)

    @property
    def single_class(self) -> bool:
        """Whether a predictor holds two or more demos that all show one class."""
        return any(sum(c.values()) > 1 and len(c) == 1 for c in self.demos.values())

    def coverage(self) -> str:
        """Each predictor's demos by class, or ``-`` when it has none."""
        shown = [
            f"{path}: " + " ".join(f"{team} {counts[team]}" for team in TEAMS if counts[team])
            for path, counts in self.demos.items()
            if counts
        ]
        return "; ".join(shown) or "-"


def table(rows: list[Row]) -> str:
    """The runs as a Markdown table."""
    lines = [
        "| library | optimizer | dev score | compile LM calls | compile tokens | compile s "
        "| dev eval calls | dev eval s | demos by class |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.library} | {r.optimizer} | {r.score:.1f}% | {r.compile.requests} "
            f"| {r.compile.tokens} | {r.seconds:.0f} | {r.evaluation.requests} "
            f"| {r.eval_seconds:.0f} | {r.coverage()} |"
        )
    return "\n".join(lines)


class RecordingProxy:
    """A loopback HTTP proxy to ``upstream`` (``http://HOST:PORT``) that counts what passes.

    Attributes:
        label: Written with each logged exchange (the run under way).
    """

    def __init__(self, upstream: str, log: TextIO | None = None) -> None:
        self.upstream = upstream.rstrip("/")
        self.log = log
        self.label = ""
        self._tally = Tally()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def tally(self) -> Tally:
        """The requests and tokens so far."""
        with self._lock:
            return Tally(self._tally.requests, self._tally.tokens)

    @contextmanager
    def measure(self, label: str) -> Iterator[Spent]:
        """Label the requests of a block, and count and time them into the `Spent` yielded."""
        self.label = label
        spent, before, started = Spent(), self.tally(), time.perf_counter()
        yield spent
        spent.seconds, spent.tally = time.perf_counter() - started, self.tally() - before

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def _record(self, body: bytes, status: int, reply: bytes) -> None:
        try:
            usage = json.loads(reply).get("usage") or {}
        except (ValueError, AttributeError):
            usage = {}
        tokens = int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)
        with self._lock:
            self._tally.requests += 1
            self._tally.tokens += tokens
            if self.log is not None:
                entry: dict[str, Any] = {"run": self.label, "status": status}
                entry["request"] = _json_or_text(body)
                entry["reply"] = _json_or_text(reply)
                self.log.write(json.dumps(entry) + "\n")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._forward(None)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self._forward(self.rfile.read(length))

            def _forward(self, body: bytes | None) -> None:
                headers = {"Content-Type": self.headers.get("Content-Type", "application/json")}
                if self.headers.get("Authorization"):
                    headers["Authorization"] = self.headers["Authorization"]
                request = urllib.request.Request(
                    proxy.upstream + self.path, data=body, headers=headers, method=self.command
                )
                try:
                    with urllib.request.urlopen(request, timeout=600) as response:
                        status, reply = response.status, response.read()
                        kind = response.headers.get("Content-Type", "application/json")
                except urllib.error.HTTPError as error:
                    status, reply = error.code, error.read()
                    kind = error.headers.get("Content-Type", "application/json")
                if body is not None and self.path.endswith("/chat/completions"):
                    proxy._record(body, status, reply)
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

        return Handler


def _json_or_text(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")
