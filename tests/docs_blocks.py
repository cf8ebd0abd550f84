"""Collect and run the Python blocks of README.md and docs/*.md (ADR-032).

The blocks of one Markdown file run in order in one namespace, as a reader would run them, in
a child process with the bundled stand-in as the endpoint (`OPENAI_BASE_URL`), so no block
touches the network or the test process's settings. A page under docs/ starts from the README's
first block (``import typedspy as ts`` and the agent signature ``Decide``), as docs/index.md
says. A block that uses top-level ``await``
runs on one event loop kept for the whole file, like a notebook cell. A block preceded by
``<!-- not-run: reason -->`` is deliberately partial and is skipped.

Run as a script (``python tests/docs_blocks.py FILE.md``) it prints one JSON line per block:
``{"line": N, "error": null | "traceback"}``.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import io
import json
import os
import re
import sys
import traceback
import types
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOT_RUN = re.compile(r"<!--\s*not-run:\s*(?P<reason>\S.*?)\s*-->")
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w+-]*)\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced Python block: its file, the line of its first code line, its source."""

    path: Path
    line: int
    source: str
    skip_reason: str | None

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def doc_files() -> list[Path]:
    """README.md and every Markdown page under docs/ (pages added later are picked up)."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]


def blocks(path: Path) -> list[Block]:
    """The Python blocks of one Markdown file, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent = len(opening["indent"])
        end = next(
            (j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"),
            len(lines),
        )
        if opening["lang"] in ("python", "py"):
            body = "\n".join(line[indent:] for line in lines[i + 1 : end])
            previous = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            marker = NOT_RUN.search(previous)
            found.append(Block(path, i + 2, body, marker["reason"] if marker else None))
        i = end + 1
    return found


def prelude(path: Path) -> list[Block]:
    """What a docs page assumes: the README's first block (``ts`` and the agent's ``Decide``)."""
    readme = ROOT / "README.md"
    return [] if path == readme else blocks(readme)[:1]


def run_file(path: Path) -> list[tuple[int, str | None]]:
    """Run a file's blocks in order; stop at the first failure (later blocks build on it)."""
    from typedspy.testing import StandIn

    results: list[tuple[int, str | None]] = []
    loop = asyncio.new_event_loop()
    page = types.ModuleType("docs_page")  # a real module: pickling and Pydantic find it
    sys.modules[page.__name__] = page
    namespace = page.__dict__
    with StandIn() as server:
        os.environ["OPENAI_BASE_URL"] = server.base_url
        os.environ["OPENAI_API_KEY"] = "docs-test"
        for block in [*prelude(path), *blocks(path)]:
            if block.skip_reason is not None:
                continue
            with contextlib.redirect_stdout(io.StringIO()):
                error = _run_block(block, namespace, loop)
            if block.path == path or error is not None:
                results.append((block.line if block.path == path else 0, error))
            if error is not None:
                break
    loop.run_until_complete(loop.shutdown_asyncgens())  # closes the LM clients built on it
    loop.close()
    return results


def _run_block(
    block: Block, namespace: dict[str, object], loop: asyncio.AbstractEventLoop
) -> str | None:
    padded = "\n" * (block.line - 1) + block.source  # tracebacks show the Markdown line
    try:
        code = compile(
            padded, str(block.path), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True
        )
        result = eval(code, namespace)
        if asyncio.iscoroutine(result):
            loop.run_until_complete(result)
    except BaseException:
        return traceback.format_exc(limit=-8)
    return None


if __name__ == "__main__":
    for line, error in run_file(Path(sys.argv[1]).resolve()):
        print(json.dumps({"line": line, "error": error}), flush=True)
