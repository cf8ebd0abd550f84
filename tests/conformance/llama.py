"""Real llama.cpp-based servers with a real small model, for the opt-in real-engine suite.

Two independent implementations of the OpenAI API over the same model: llama.cpp's own
``llama-server`` (C++) and llama-cpp-python's ``python -m llama_cpp.server`` (FastAPI over the
llama.cpp bindings). Set up once with ``bash tests/conformance/real_engine.sh`` (see
docs/conformance.md), or point ``TYPEDSPY_LLAMA_SERVER`` at a ``llama-server`` binary,
``TYPEDSPY_LCP_PYTHON`` at a Python that has ``llama-cpp-python[server]``, and
``TYPEDSPY_LLAMA_MODEL`` at a GGUF file.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parents[2]
ENGINE_DIR = ROOT / ".real-engine"
MODEL_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
STARTUP_SECONDS = 120
TIMEOUT = 300  # seconds: no request waits longer (512 tokens on a loaded 2-core machine)
SETUP = "run `bash tests/conformance/real_engine.sh` to build it"

Engine = Literal["llama-server", "llama-cpp-python"]
ENGINES: tuple[Engine, ...] = ("llama-server", "llama-cpp-python")
PROFILES: dict[Engine, str] = {"llama-server": "llama.cpp", "llama-cpp-python": "llama-cpp-python"}
"""The built-in profile each engine is run through."""


def server_binary() -> Path | None:
    """The ``llama-server`` to run, or ``None`` when there is none."""
    given = os.environ.get("TYPEDSPY_LLAMA_SERVER")
    path = Path(given) if given else ENGINE_DIR / "llama-server"
    return path if path.is_file() and os.access(path, os.X_OK) else None


def model_file() -> Path | None:
    """The GGUF model to serve, or ``None`` when there is none."""
    given = os.environ.get("TYPEDSPY_LLAMA_MODEL")
    path = Path(given) if given else ENGINE_DIR / MODEL_NAME
    return path if path.is_file() else None


def lcp_python() -> Path | None:
    """The Python that runs llama-cpp-python's server, or ``None`` when there is none."""
    given = os.environ.get("TYPEDSPY_LCP_PYTHON")
    path = Path(given) if given else ENGINE_DIR / "lcp-venv" / "bin" / "python"
    if not (path.is_file() and os.access(path, os.X_OK)):
        return None
    # Finding the top-level package does not import it (nor load its shared libraries).
    check = "import importlib.util, sys; sys.exit(importlib.util.find_spec('llama_cpp') is None)"
    found = subprocess.run([str(path), "-c", check], timeout=60, check=False)
    return path if found.returncode == 0 else None


def missing_reason(engine: Engine = "llama-server") -> str | None:
    """Why ``engine`` cannot run here, in one line, or ``None`` when it can."""
    if engine == "llama-server" and server_binary() is None:
        return f"no llama-server (TYPEDSPY_LLAMA_SERVER): {SETUP}"
    if engine == "llama-cpp-python" and lcp_python() is None:
        return f"no llama-cpp-python server (TYPEDSPY_LCP_PYTHON): {SETUP}"
    if model_file() is None:
        return f"no {MODEL_NAME} (TYPEDSPY_LLAMA_MODEL): {SETUP}"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@contextmanager
def llama_server(*, parallel: int = 2, threads: int | None = None) -> Iterator[str]:
    """Start ``llama-server`` on a free loopback port; yield its ``/v1`` base URL; stop it.

    It serves ``GET /slots`` (each slot's state) and ``GET /metrics`` (Prometheus counters).
    ``--no-repack``: the repacked CPU kernels die with SIGILL on some virtual CPUs (AMX).
    ``threads``: its CPU threads (``-t``; default: the server's own choice).
    """
    binary, model = server_binary(), model_file()
    assert binary is not None and model is not None, missing_reason("llama-server")
    port = _free_port()
    command = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port)]
    command += ["-c", "8192", "-np", str(parallel), "--jinja", "--seed", "7", "--no-repack"]
    command += ["--metrics"]  # GET /metrics beside GET /slots, for what the engine did
    command += ["-t", str(threads)] if threads is not None else []
    with _serving("llama-server", command, f"http://127.0.0.1:{port}", "/health") as url:
        yield url


@contextmanager
def llama_cpp_python_server() -> Iterator[str]:
    """Start llama-cpp-python's server on a free loopback port; yield its ``/v1`` base URL.

    It serves one request at a time (no slots), has no /health route, and its context
    defaults to 2048 tokens. Repacking is a build option there (GGML_CPU_REPACK).
    """
    python, model = lcp_python(), model_file()
    assert python is not None and model is not None, missing_reason("llama-cpp-python")
    port = _free_port()
    command = [str(python), "-m", "llama_cpp.server", "--model", str(model)]
    command += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", "8192", "--seed", "7"]
    command += ["--n_threads", "1", "--verbose", "False"]
    with _serving("llama-cpp-python", command, f"http://127.0.0.1:{port}", "/v1/models") as url:
        yield url


def serve(engine: Engine) -> AbstractContextManager[str]:
    """Start ``engine`` (two slots and one thread for llama-server); yield its ``/v1`` base URL."""
    return llama_server(threads=1) if engine == "llama-server" else llama_cpp_python_server()


@contextmanager
def _serving(name: str, command: list[str], url: str, health: str) -> Iterator[str]:
    """Run ``command`` until ``url + health`` answers 200; yield ``url/v1``; stop it."""
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while not _healthy(url + health):
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} not healthy after {STARTUP_SECONDS} s")
            time.sleep(0.5)
        yield f"{url}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Recorder:
    """What a `recording_proxy` passed on: each request body, and the most in flight at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.bodies: list[bytes] = []
        self.replies: list[bytes] = []
        self.in_flight = 0
        self.most_in_flight = 0

    def requests(self) -> list[dict[str, Any]]:
        """The JSON request bodies the engine received, in order."""
        with self.lock:
            return [json.loads(body) for body in self.bodies]


@contextmanager
def recording_proxy(base_url: str) -> Iterator[tuple[str, Recorder]]:
    """A loopback HTTP proxy in front of ``base_url``: yield its ``/v1`` URL and its `Recorder`.

    It forwards each request as it came and its reply whole (a stream's events all at once, at
    its end), so what it records is byte for byte what the engine received.
    """
    upstream = base_url.removesuffix("/v1")
    recorder = Recorder()

    class Forward(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._forward(None)

        def do_POST(self) -> None:
            self._forward(self.rfile.read(int(self.headers.get("content-length", "0"))))

        def _forward(self, body: bytes | None) -> None:
            with recorder.lock:
                if body is not None:
                    recorder.bodies.append(body)
                recorder.in_flight += 1
                recorder.most_in_flight = max(recorder.most_in_flight, recorder.in_flight)
            headers = {"content-type": self.headers.get("content-type", "application/json")}
            request = urllib.request.Request(upstream + self.path, data=body, headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=600) as response:
                    status, reply = response.status, response.read()
                    kind = response.headers.get("content-type", "application/json")
            except urllib.error.HTTPError as exc:
                status, reply, kind = exc.code, exc.read(), "application/json"
            finally:
                with recorder.lock:
                    recorder.in_flight -= 1
            with recorder.lock:
                recorder.replies.append(reply)
            self.send_response(status)
            self.send_header("content-type", kind)  # a stream's events go on whole, at its end
            self.send_header("content-length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Forward)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1", recorder
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    return _free_port()
