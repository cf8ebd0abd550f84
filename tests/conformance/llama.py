"""A real `llama-server` with a real small model, for the opt-in real-engine suite.

Set up once with ``bash tests/conformance/real_engine.sh`` (see docs/conformance.md), or point
``TYPEDSPY_LLAMA_SERVER`` and ``TYPEDSPY_LLAMA_MODEL`` at a binary and a GGUF file.
llama-cpp-python's server (a second, independent engine over the same model) runs from the
Python that ``TYPEDSPY_LCP_PYTHON`` names (one with ``llama-cpp-python[server]`` installed).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENGINE_DIR = ROOT / ".real-engine"
MODEL_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
STARTUP_SECONDS = 120


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


def missing_reason() -> str | None:
    """Why the real-engine suite cannot run here, in one line, or ``None`` when it can."""
    if server_binary() is None:
        return "no llama-server: run `bash tests/conformance/real_engine.sh` to build one"
    if model_file() is None:
        return f"no {MODEL_NAME}: run `bash tests/conformance/real_engine.sh` to fetch it"
    return None


def lcp_python() -> Path | None:
    """The Python that runs llama-cpp-python's server, or ``None`` when none is given."""
    given = os.environ.get("TYPEDSPY_LCP_PYTHON")
    path = Path(given) if given else None
    return path if path is not None and path.is_file() and os.access(path, os.X_OK) else None


def lcp_missing_reason() -> str | None:
    """Why llama-cpp-python's server cannot run here, in one line, or ``None`` when it can."""
    if lcp_python() is None:
        return "no llama-cpp-python: set TYPEDSPY_LCP_PYTHON to a Python that has it installed"
    if model_file() is None:
        return f"no {MODEL_NAME}: run `bash tests/conformance/real_engine.sh` to fetch it"
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
    assert binary is not None and model is not None, missing_reason()
    port = _free_port()
    command = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port)]
    command += ["-c", "8192", "-np", str(parallel), "--jinja", "--seed", "7", "--no-repack"]
    command += ["-t", str(threads)] if threads is not None else []
    with _serving("llama-server", command, f"http://127.0.0.1:{port}", "/health") as url:
        yield url


@contextmanager
def llama_cpp_python_server() -> Iterator[str]:
    """Start llama-cpp-python's server on a free loopback port; yield its ``/v1`` base URL."""
    python, model = lcp_python(), model_file()
    assert python is not None and model is not None, lcp_missing_reason()
    port = _free_port()
    command = [str(python), "-m", "llama_cpp.server", "--model", str(model)]
    command += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", "8192", "--seed", "7"]
    command += ["--verbose", "False"]
    with _serving("llama-cpp-python", command, f"http://127.0.0.1:{port}", "/v1/models") as url:
        yield url


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
