"""An offline OpenAI-compatible server for tests, examples and demos.

A real HTTP server on 127.0.0.1 (stdlib only) that speaks enough of the Chat Completions API
for the ``openai`` SDK: ``POST /v1/chat/completions`` (also ``/chat/completions``) with and
without streaming, and ``GET /v1/models``. It rejects strict schemas the way OpenAI does and
answers structured-output requests with schema-valid generated data, unless replies were
scripted with :meth:`StandIn.enqueue`.

Run it by hand with ``python -m typedspy.testing.standin --port 8000``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import signal
import socket
import socketserver
import sys
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from typedspy.lm import forget
from typedspy.testing._embeddings import embeddings_outcome
from typedspy.testing._payloads import Outcome, error_body, sse_event
from typedspy.testing._quirks import SERVERS, Quirks, models_reply
from typedspy.testing._responder import Reply, Responder

__all__ = ["Quirks", "Reply", "StandIn", "main"]

_CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
_MODELS_PATHS = ("/v1/models", "/models")
_EMBEDDINGS_PATHS = ("/v1/embeddings", "/embeddings")
_request_ids = itertools.count(1)


class StandIn:
    """The stand-in server; use as a context manager or call :meth:`start` / :meth:`stop`.

    Attributes:
        requests: Every chat-completions request body received (parsed JSON objects), in
            order.
        embedding_requests: Every ``/v1/embeddings`` request body received, in order.
        disconnects: How many streams the client cut off before they were complete.
        models_requests: How many ``GET /v1/models`` requests were received.
        chunk_delay: Seconds to wait before each streamed chunk.

    Every ``response_format`` JSON schema is checked against the JSON Schema meta-schema (an
    invalid one is a 400, as OpenAI answers), and every reply against the request's schema:
    generated data that does not validate is a stand-in bug, answered with a 500 naming it;
    scripted replies that do not validate are listed in :attr:`schema_mismatches`.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        supports_json_schema: bool = True,
        supports_tools: bool = True,
        seed: int = 0,
        model: str = "standin-1",
        chunk_delay: float = 0.0,
        answer: Callable[[dict[str, Any]], Reply | str | dict[str, Any] | None] | None = None,
        quirks: Quirks | None = None,
        server: str = "openai",
    ) -> None:
        """Configure the server; nothing listens until :meth:`start`.

        Args:
            host: Interface to bind.
            port: TCP port; 0 picks a free one (read it back from :attr:`url`).
            supports_json_schema: False makes ``response_format`` ``json_schema`` a 400, like
                servers without structured outputs.
            supports_tools: False makes any ``tools`` a 400.
            seed: Offset for generated data; request ``n`` (from 0) uses ``seed + n``.
            model: Model reported by ``/v1/models`` and used when a request names none.
            chunk_delay: Seconds to wait before each streamed chunk.
            answer: A function of the request body that decides the reply (as for
                :meth:`enqueue`); returning None falls back to generated data. Scripted
                replies still come first. ``/v1/embeddings`` always answers with
                deterministic bag-of-words vectors (texts sharing words are close).
            quirks: Misbehave like a non-OpenAI server (`Quirks.of("vllm")`, ...): ignore
                ``strict``, fail open, loop, reject JSON mode, constrain tool steps.
            server: Which server ``GET /v1/models`` presents (its headers and model entries,
                as `LM` reads them to pick a profile, ADR-084): ``"openai"`` (the default),
                ``"llama.cpp"``, ``"vllm"``, ``"sglang"``, ``"ollama"``, ``"lmstudio"``,
                ``"llama-cpp-python"``, ``"unknown"``; ``"none"`` answers 404 and
                ``"garbage"`` a body that is not JSON.

        Raises:
            ValueError: An unknown ``server``.
        """
        if server not in SERVERS:
            raise ValueError(f"StandIn(server={server!r}): one of {sorted(SERVERS)}")
        self.server = server
        self.host = host
        self.requests: list[dict[str, Any]] = []
        self.embedding_requests: list[dict[str, Any]] = []
        self.disconnects = 0
        self.models_requests = 0
        self.chunk_delay = chunk_delay
        self.model = model
        self._port = port
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._responder = Responder(
            supports_json_schema=supports_json_schema,
            supports_tools=supports_tools,
            seed=seed,
            model=model,
            answer=answer,
            quirks=quirks or Quirks(),
        )
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://HOST:PORT`` (the actual port once started)."""
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT/v1``, the ``base_url`` for an OpenAI client."""
        return f"{self.url}/v1"

    @property
    def port(self) -> int:
        """The bound port (the requested one before :meth:`start`)."""
        return self._server.server_address[1] if self._server else self._port

    @property
    def schema_mismatches(self) -> list[str]:
        """Replies that did not validate against their request's schema, one line each.

        A scripted reply lands here when its content is not valid for the request's
        ``response_format`` schema (a strict endpoint never sends one; tests script them to
        exercise retries); generated data lands here too, answered with a 500, as a bug.
        """
        return list(self._responder.mismatches)

    def enqueue(self, *replies: Reply | str | dict[str, Any]) -> None:
        """Script the next replies; they are used in order before any generated reply.

        Args:
            *replies: A ``str`` is the assistant's content; a ``dict`` is a complete
                ``chat.completion`` body sent as is; a :class:`Reply` covers refusals, tool
                calls, finish reasons, error statuses and headers.
        """
        self._responder.enqueue(*replies)

    def start(self) -> StandIn:
        """Bind and serve on a background thread.

        Returns:
            This server, so ``server = StandIn().start()`` works.
        """
        if self._server is not None:
            return self
        self._stopping.clear()
        self._server = _Server((self.host, self._port), _Handler, self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"typedspy-standin-{self.port}",
            daemon=True,
        )
        self._thread.start()
        forget(self.base_url)  # a new server at this URL: what was found for it no longer holds
        return self

    def stop(self) -> None:
        """Stop serving, cut open connections and release the port."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.close_connections()
        server.server_close()
        if thread is not None:
            thread.join()
        self._server = self._thread = None

    def __enter__(self) -> StandIn:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # Connections are cut in stop(), so there is nothing worth waiting for on close.
    block_on_close = False
    # The default backlog of 5 refuses bursts of new connections (hundreds of concurrent calls).
    request_queue_size = 256

    def __init__(self, address: tuple[str, int], handler: type[_Handler], standin: StandIn) -> None:
        self.standin = standin
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host's FQDN, a reverse DNS lookup that can stall
        # for seconds on machines without a resolver; the name is never used here.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)

    def track(self, connection: socket.socket, *, open_: bool) -> None:
        with self._connections_lock:
            if open_:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def close_connections(self) -> None:
        """Wake handler threads parked on idle keep-alive connections so they exit."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already gone

    def handle_error(self, request: object, client_address: object) -> None:
        """Stay silent: a test server must not litter stderr with client hang-ups."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: without TCP_NODELAY, Nagle's algorithm and the
    # client's delayed ACK add ~40 ms to every keep-alive response.
    disable_nagle_algorithm = True
    server_version = "typedspy-standin"
    sys_version = ""
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Log nothing; tests read ``StandIn.requests`` instead."""

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, open_=True)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass  # the client is gone; nothing left to flush to
        finally:
            self.server.track(self.connection, open_=False)

    def handle(self) -> None:
        try:
            super().handle()
        except OSError:
            self.close_connection = True

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in _MODELS_PATHS:
            standin = self.server.standin
            with standin._lock:
                standin.models_requests += 1
            status, headers, data = models_reply(standin.server, standin.model)
            self._send(Outcome(status, {}, headers), data)
        else:
            self._send(_not_found("GET", path))

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        try:
            raw = self._body()
        except ValueError:  # a malformed chunk size: the connection cannot be trusted further
            self.close_connection = True
            self._send(Outcome(400, error_body("Malformed chunked request body.")))
            return
        if path not in _CHAT_PATHS and path not in _EMBEDDINGS_PATHS:
            self._send(_not_found("POST", path))
            return
        try:
            outcome = self._answer(path, raw)
            # Encode before any byte is sent, so a failure can still become a clean 500.
            events = None if outcome.chunks is None else [sse_event(c) for c in outcome.chunks]
            data = json.dumps(outcome.body).encode()
        except Exception as exc:  # the server must outlive any bug in the responder
            message = f"The stand-in failed to answer: {exc!r}"
            outcome, events = Outcome(500, error_body(message, type="server_error")), None
            data = json.dumps(outcome.body).encode()
        if events is None:
            self._send(outcome, data)
        else:
            self._stream(outcome, events)

    def _body(self) -> bytes:
        if "chunked" not in self.headers.get("Transfer-Encoding", "").lower():
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))
        # Read the whole chunked body, or the next request on this connection would be garbage.
        parts = []
        while size := int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16):
            parts.append(self.rfile.read(size))
            self.rfile.readline()
        while self.rfile.readline().strip():
            pass  # trailer fields
        return b"".join(parts)

    def _answer(self, path: str, raw: bytes) -> Outcome:
        try:
            body = json.loads(raw)
        except ValueError:
            return Outcome(400, error_body("We could not parse the JSON body of your request."))
        standin = self.server.standin
        if path in _EMBEDDINGS_PATHS:
            if isinstance(body, dict):
                with standin._lock:
                    standin.embedding_requests.append(body)
            return embeddings_outcome(body, standin.model)
        if isinstance(body, dict):
            with standin._lock:
                standin.requests.append(body)
        return standin._responder.respond(body)

    def _start(self, status: int, headers: dict[str, str]) -> None:
        self.send_response(status)
        headers.setdefault("x-request-id", f"req_standin_{next(_request_ids):06d}")
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()

    def _send(self, outcome: Outcome, data: bytes | None = None) -> None:
        data = json.dumps(outcome.body).encode() if data is None else data
        headers = {
            **outcome.headers,
            "Content-Type": "application/json",
            "Content-Length": str(len(data)),
        }
        try:
            self._start(outcome.status, headers)
            self.wfile.write(data)
        except OSError:
            self.close_connection = True

    def _stream(self, outcome: Outcome, events: list[bytes]) -> None:
        # Chunked transfer keeps the connection reusable; the SDK's client reads it natively.
        headers = {
            **outcome.headers,
            "Content-Type": "text/event-stream; charset=utf-8",
            "Cache-Control": "no-cache",
            "Transfer-Encoding": "chunked",
        }
        standin = self.server.standin
        try:
            self._start(outcome.status, headers)
            for event in events:
                if standin.chunk_delay and standin._stopping.wait(standin.chunk_delay):
                    self.close_connection = True
                    return
                self._write_chunk(event)
            # [DONE] and the terminating chunk go out together, so a client that hangs up
            # right after [DONE] is not mistaken for one that cut the stream.
            self._write_chunk(sse_event("[DONE]"), last=True)
        except OSError:
            self.close_connection = True
            with standin._lock:
                standin.disconnects += 1

    def _write_chunk(self, data: bytes, *, last: bool = False) -> None:
        frame = f"{len(data):x}\r\n".encode() + data + b"\r\n"
        self.wfile.write(frame + (b"0\r\n\r\n" if last else b""))


def _not_found(method: str, path: str) -> Outcome:
    return Outcome(404, error_body(f"Invalid URL ({method} {path})"))


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until SIGTERM or Ctrl-C: ``python -m typedspy.testing.standin --help``.

    Args:
        argv: Arguments (defaults to ``sys.argv[1:]``).

    Returns:
        The exit status.
    """
    parser = argparse.ArgumentParser(
        prog="python -m typedspy.testing.standin",
        description="Offline OpenAI-compatible server for typedspy tests and demos.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default="standin-1")
    parser.add_argument("--no-json-schema", action="store_true", help="reject json_schema")
    parser.add_argument("--no-tools", action="store_true", help="reject tools")
    parser.add_argument("--quirks", metavar="PROFILE", help="misbehave like that profile's server")
    args = parser.parse_args(argv)
    server = StandIn(
        host=args.host,
        port=args.port,
        supports_json_schema=not args.no_json_schema,
        supports_tools=not args.no_tools,
        seed=args.seed,
        model=args.model,
        quirks=Quirks.of(args.quirks) if args.quirks else None,
    )
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: done.set())
    with server:
        print(f"typedspy stand-in listening on {server.base_url}", flush=True)
        try:
            while not done.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
