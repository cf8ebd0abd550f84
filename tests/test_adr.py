"""ADR.md records carry a Date and a Status and name only files and modules that exist."""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

import pytest

from docs_blocks import ROOT

ADR = ROOT / "ADR.md"
SRC = ROOT / "src" / "typedspy"
HEADING = re.compile(r"^## (?P<id>ADR-\d{3}):", re.MULTILINE)
DATE_STATUS = re.compile(
    r"^Date: \d{4}-\d{2}-\d{2}( \(revised \d{4}-\d{2}-\d{2}\))?\. "
    r"Status: (accepted|superseded|proposed)\b",
    re.MULTILINE,
)
SPAN = re.compile(r"`([^`\s]+)`")
FILE_LIKE = re.compile(r"^[\w./-]+\.(py|md|toml|sh|json|yaml|yml)$|^[\w./-]+/$")


def records() -> dict[str, str]:
    text = ADR.read_text(encoding="utf-8")
    starts = list(HEADING.finditer(text))
    return {
        m["id"]: text[m.start() : starts[i + 1].start() if i + 1 < len(starts) else len(text)]
        for i, m in enumerate(starts)
    }


RECORDS = records()


def missing_paths(record: str) -> list[str]:
    """Backticked file paths and `typedspy.` names in a record that do not exist."""
    missing = []
    for span in SPAN.findall(record):
        name = span.rstrip(".,:;")
        if any(len(part.strip("_")) == 1 for part in name.split(".")):
            continue  # a placeholder such as `typedspy.x._y`
        if name.startswith("typedspy.") and re.fullmatch(r"[\w.]+", name):
            if not (_module_or_attribute(name) or f'"{name}"' in SOURCE_TEXT):
                missing.append(name)
        elif FILE_LIKE.match(name) and not name.startswith(("http", "../")):
            if not _file_exists(name):
                missing.append(name)
    return missing


def _repository_files() -> set[str]:
    found = set()
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d == ".ci" or (not d.startswith(".") and d != "__pycache__")]
        base = Path(folder).relative_to(ROOT)
        found.update((base / d).as_posix() + "/" for d in dirs)
        found.update((base / f).as_posix() for f in files)
    return found


FILES = _repository_files()
SOURCE_TEXT = "\n".join(p.read_text(encoding="utf-8") for p in SRC.rglob("*.py"))
IGNORED = (ROOT / ".gitignore").read_text(encoding="utf-8").split()


def _file_exists(name: str) -> bool:
    """A path relative to the repository, or the tail of one (`lm/_openai.py`); or git-ignored."""
    tail = name.lstrip("./") if name.startswith("./") else name
    ignored = tail in IGNORED or tail.rstrip("/") in IGNORED  # `.real-engine/` or the symlink
    return ignored or any(f == tail or f.endswith("/" + tail) for f in FILES)


def _module_or_attribute(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        try:
            if importlib.util.find_spec(module) is None:
                continue
        except ModuleNotFoundError:  # a dotted name below a plain module
            continue
        try:
            value: object = importlib.import_module(module)
        except ImportError:  # it exists; its extra is not installed (typedspy.mcp)
            return True
        for attribute in parts[cut:]:
            if not hasattr(value, attribute):
                return False
            value = getattr(value, attribute)
        return True
    return False


def test_records_have_unique_numbers() -> None:
    headings = HEADING.findall(ADR.read_text(encoding="utf-8"))
    assert len(headings) >= 27
    assert len(headings) == len(set(headings))


@pytest.mark.parametrize("adr", RECORDS, ids=str)
def test_record_has_date_and_status(adr: str) -> None:
    assert DATE_STATUS.search(RECORDS[adr]), f"{adr}: no 'Date: YYYY-MM-DD. Status: ...' line"


@pytest.mark.parametrize("adr", RECORDS, ids=str)
def test_record_names_only_existing_files(adr: str) -> None:
    assert missing_paths(RECORDS[adr]) == [], f"{adr} names files or modules that do not exist"


def test_the_checker_sees_a_missing_file() -> None:
    assert missing_paths("see `lm/_openai.py` and `typedspy.settings.configure`") == []
    assert missing_paths("a `typedspy.failure_kind` span attribute, in `targets/`") == []
    assert missing_paths("see `lm/_gone.py` and `typedspy.nothing_here`") == [
        "lm/_gone.py",
        "typedspy.nothing_here",
    ]
