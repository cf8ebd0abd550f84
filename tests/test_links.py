"""No link in README.md, docs/, ADR.md or examples/ leaves the repository (ADR-032).

Markdown links and autolinks must be relative and resolve to a file or folder in the
repository (and an anchor, when given, to a heading of the target page). Web addresses in prose
or in the examples' comments and docstrings may only use hosts that never leave the machine or
are reserved for documentation (localhost, 127.0.0.1, ``.test``, ``.invalid``, ``.example``,
example.com). Code is not prose: addresses in code blocks and code spans are data.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from docs_blocks import FENCE, ROOT

PAGES = [ROOT / "README.md", ROOT / "ADR.md", *sorted((ROOT / "docs").glob("**/*.md"))]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
LINK = re.compile(r"!?\[[^\]]*\]\((?P<target><[^>]*>|[^)\s]+)(?:\s+\"[^\"]*\")?\)")
REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*(?P<target>\S+)")
AUTOLINK = re.compile(r"<(?P<target>[a-zA-Z][a-zA-Z0-9+.-]*:[^>\s]*)>")
URL = re.compile(r"(?P<target>https?://[^\s)>\]\"'`]+)")
LOCAL_HOSTS = re.compile(
    r"^(localhost|127\.0\.0\.1|example\.(com|org|net)|.*\.(test|invalid|example))$"
)


def path_spans(path: Path) -> list[tuple[int, str]]:
    """Code spans in prose that name a file by a relative path upwards (``../x``)."""
    found = []
    fenced = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            found += [(number, m[1]) for m in re.finditer(r"`(\.\./[^`\s]*)`", line)]
    return found


def prose_lines(path: Path) -> list[tuple[int, str]]:
    """The lines of a Markdown page outside fenced blocks, with code spans blanked."""
    lines: list[tuple[int, str]] = []
    fenced = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append((number, re.sub(r"(`+)[^`]*?\1", "", line)))
    return lines


def anchors(path: Path) -> set[str]:
    """GitHub's anchors for a page's headings."""
    found = set()
    for _, line in prose_lines(path):
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


def link_problems(path: Path) -> list[str]:
    problems = []
    for number, line in prose_lines(path):
        where = f"{path.relative_to(ROOT)}:{number}"
        targets = [m["target"].strip("<>") for m in LINK.finditer(line)]
        targets += [m["target"] for m in REFERENCE.finditer(line)]
        targets += [m["target"] for m in AUTOLINK.finditer(line)]
        for target in targets:
            problem = _target_problem(path, target)
            if problem:
                problems.append(f"{where}: {target}: {problem}")
        stripped = LINK.sub("", line)
        for match in URL.finditer(stripped):
            if not _local(match["target"]):
                problems.append(f"{where}: {match['target']}: a web address outside the repo")
    for number, span in path_spans(path):
        problem = _target_problem(path, span)
        if problem:
            problems.append(f"{path.relative_to(ROOT)}:{number}: {span}: {problem}")
    return problems


def _local(url: str) -> bool:
    return LOCAL_HOSTS.match(urlsplit(url).hostname or "") is not None


def _target_problem(page: Path, target: str) -> str | None:
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return "leaves the repository (use a relative path to a file in it)"
    if target.startswith("/"):
        return "an absolute path (use a path relative to the page)"
    resolved = (page.parent / parts.path).resolve() if parts.path else page
    if not resolved.is_relative_to(ROOT):
        return "points outside the repository"
    if not resolved.exists():
        return "no such file in the repository"
    if parts.fragment and resolved.suffix == ".md" and parts.fragment not in anchors(resolved):
        return f"no heading #{parts.fragment} in {resolved.relative_to(ROOT)}"
    return None


def example_problems(path: Path) -> list[str]:
    problems = []
    source = path.read_text(encoding="utf-8")
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        prose = token.type == tokenize.COMMENT or (
            token.type == tokenize.STRING
            and token.string.lstrip("rbuRBU").startswith(('"""', "'''"))
        )
        if not prose:
            continue
        for match in URL.finditer(token.string):
            if not _local(match["target"]):
                line = token.start[0] + token.string[: match.start()].count("\n")
                problems.append(f"{path.relative_to(ROOT)}:{line}: {match['target']}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_stay_in_the_repository(page: Path) -> None:
    assert link_problems(page) == []


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_examples_link_nowhere_outside(example: Path) -> None:
    assert example_problems(example) == []


def test_the_checker_finds_bad_links() -> None:
    page = ROOT / "docs" / "index.md"
    assert _target_problem(page, "https://platform.openai.com/docs") is not None
    assert _target_problem(page, "../../outside.md") == "points outside the repository"
    assert _target_problem(page, "missing.md") == "no such file in the repository"
    assert _target_problem(page, "predict.md#no-such-heading") is not None
    assert _target_problem(page, "predict.md#static-types") is None
    assert _target_problem(page, "../examples/") is None
    assert _local("http://localhost:8000/v1") and not _local("https://api.openai.com/v1")
