"""Every Python block in README.md and docs/ runs against the stand-in (ADR-032)."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from docs_blocks import ROOT, Block, blocks, doc_files

BLOCKS = [block for path in doc_files() for block in blocks(path)]
# Deliberately partial blocks are marked `<!-- not-run: reason -->`; keep them few.
MAX_NOT_RUN = 12


@functools.cache
def outcomes(path: Path) -> dict[int, str | None]:
    """Run one file's blocks in a child process; the outcome of each block that ran, by line.

    The child runs in a fresh directory (blocks may write files) and answers "yes" to
    every `input()`.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TYPEDSPY_"))}
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run(
            [sys.executable, "-W", "error", str(ROOT / "tests" / "docs_blocks.py"), str(path)],
            input="yes\n" * 20,
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
            cwd=scratch,
            check=False,
        )
    ran = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"line"')]
    if done.returncode != 0:
        pytest.fail(f"{path.relative_to(ROOT)}: the block runner crashed:\n{done.stderr[-3000:]}")
    return {entry["line"]: entry["error"] for entry in ran}


def test_the_collector_finds_the_blocks() -> None:
    assert len(BLOCKS) >= 60
    assert all(block.source.strip() for block in BLOCKS)


def test_few_blocks_are_marked_not_run() -> None:
    skipped = [block.where for block in BLOCKS if block.skip_reason is not None]
    assert len(skipped) <= MAX_NOT_RUN, skipped


# Pages about an extra, by the module the extra installs: skipped where it is not installed.
PAGE_NEEDS = {"mcp.md": "mcp", "tracing.md": "opentelemetry.sdk"}


@pytest.mark.parametrize("block", BLOCKS, ids=lambda block: block.where)
def test_docs_block_runs(block: Block) -> None:
    if block.skip_reason is not None:
        pytest.skip(f"not-run: {block.skip_reason}")
    needs = PAGE_NEEDS.get(block.path.name)
    if needs is not None:
        pytest.importorskip(needs, reason=f"{needs} is not installed (an extra's page)")
    ran = outcomes(block.path)
    if block.line not in ran:
        failed = next(line for line, error in ran.items() if error is not None)
        pytest.fail(f"{block.where}: not run, an earlier block failed at line {failed}")
    error = ran[block.line]
    if error is not None:
        pytest.fail(f"{block.where}: this block fails:\n{error}", pytrace=False)
