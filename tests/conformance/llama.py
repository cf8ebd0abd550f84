"""Real llama.cpp-based servers with a real small model, for the opt-in real-engine suite.

Two independent implementations of the OpenAI API over the same model: llama.cpp's own
``llama-server`` (C++) and llama-cpp-python's ``python -m llama_cpp.server`` (FastAPI over the
llama.cpp bindings). Set up once with ``bash tests/conformance/real_engine.sh`` (see
docs/conformance.md), or point ``TYPEDSPY_LLAMA_SERVER`` at a ``llama-server`` binary,
``TYPEDSPY_LCP_PYTHON`` at a Python that has ``llama-cpp-python[server]``, and
``TYPEDSPY_LLAMA_MODEL`` at a GGUF file.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Literal

ROOT = Path(__file__).resolve().parents[2]
ENGINE_DIR = ROOT / ".real-engine"
MODEL_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
STARTUP_SECONDS = 120
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

    ``--no-repack``: the repacked CPU kernels die with SIGILL on some virtual CPUs (AMX).
    ``threads``: its CPU threads (``-t``; default: the server's own choice).
    """
    binary, model = server_binary(), model_file()
    assert binary is not None and model is not None, missing_reason("llama-server")
    port = _free_port()
    command = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port)]
    command += ["-c", "8192", "-np", str(parallel), "--jinja", "--seed", "7", "--no-repack"]
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
    command += ["--verbose", "False"]
    with _serving("llama-cpp-python", command, f"http://127.0.0.1:{port}", "/v1/models") as url:
        yield url


def serve(engine: Engine) -> AbstractContextManager[str]:
    """Start ``engine`` (two slots for llama-server); yield its ``/v1`` base URL; stop it."""
    return llama_server() if engine == "llama-server" else llama_cpp_python_server()


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
