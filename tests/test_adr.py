"""ADR.md is a log (ADR-078): records in number order, every gap named, later decisions as
records of their own linked both ways by their Status lines; each record carries a Date and a
Status and names only files and modules that exist."""

from __future__ import annotations

import importlib.util
import itertools
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


def test_records_are_in_number_order() -> None:
    numbers = [int(adr[4:]) for adr in HEADING.findall(ADR.read_text(encoding="utf-8"))]
    misplaced = [f"ADR-{b:03}" for a, b in itertools.pairwise(numbers) if b < a]
    assert misplaced == [], f"put these records at their number: {misplaced}"


GAPS = re.compile(r"^Gaps: (?P<text>.*?)(?:\n\n|\Z)", re.MULTILINE | re.DOTALL)
NUMBERS = re.compile(r"ADR-(?P<first>\d{3})(?: to ADR-(?P<last>\d{3}))?")


def named_gaps(header: str) -> set[int]:
    """The numbers the header's ``Gaps:`` paragraph names (``ADR-062 to ADR-069`` is a range)."""
    found = GAPS.search(header)
    if found is None:
        return set()
    return {
        n
        for m in NUMBERS.finditer(found["text"])
        for n in range(int(m["first"]), int(m["last"] or m["first"]) + 1)
    }


def test_the_header_names_every_gap_and_only_gaps() -> None:
    header = ADR.read_text(encoding="utf-8").split("\n## ADR-", 1)[0]
    used = {int(adr[4:]) for adr in RECORDS}
    unused = set(range(1, max(used) + 1)) - used
    named = named_gaps(header)
    assert sorted(unused - named) == [], "numbers no record uses: name them in the Gaps paragraph"
    assert sorted(named & used) == [], "the Gaps paragraph names numbers records now use"


AMENDMENT = re.compile(r"^\*\*Amendment\b|\(Amended by ", re.MULTILINE)


@pytest.mark.parametrize("adr", RECORDS, ids=str)
def test_record_has_no_amendment_paragraph(adr: str) -> None:
    assert not AMENDMENT.search(RECORDS[adr]), (
        f"{adr}: a later decision is a record of its own; this one's Status says 'amended by'"
    )


STATUS = re.compile(r"^Date: .*?(?:\n\n|\Z)", re.MULTILINE | re.DOTALL)
BACK = re.compile(r"\b(?:amended|superseded) by (?P<refs>.*?)(?:;|\.\s|\.$|$)", re.IGNORECASE)
FORWARD = re.compile(
    r"\b(?:amends|refines|supersedes|completes) (?P<refs>.*?)(?:;|\.\s|\.$|$)", re.IGNORECASE
)
REF = re.compile(r"ADR-\d{3}")


def status_links(record: str) -> tuple[set[str], set[str]]:
    """The records a Status line says amended this one, and those this one amends.

    What a parenthesis says (why a record was amended) is not read.
    """
    found = STATUS.search(record)
    line = " ".join(found.group(0).split()) if found else ""
    while (plain := re.sub(r"\([^()]*\)", "", line)) != line:
        line = plain
    back = {ref for m in BACK.finditer(line) for ref in REF.findall(m["refs"])}
    forward = {ref for m in FORWARD.finditer(line) for ref in REF.findall(m["refs"])}
    return back, forward


@pytest.mark.parametrize("adr", RECORDS, ids=str)
def test_status_links_go_both_ways(adr: str) -> None:
    back, forward = status_links(RECORDS[adr])
    for later in sorted(back):
        assert later in RECORDS, f"{adr} says it was amended by {later}, which is no record"
        assert adr in status_links(RECORDS[later])[1], f"{later}'s Status: say it amends {adr}"
    for earlier in sorted(forward):
        assert earlier in RECORDS, f"{adr} says it amends {earlier}, which is no record"
        assert adr in status_links(RECORDS[earlier])[0], (
            f"{earlier}'s Status: say it was amended (or superseded) by {adr}"
        )


def test_a_superseded_record_names_what_replaced_it() -> None:
    superseded = [adr for adr, text in RECORDS.items() if "Status: superseded" in text]
    assert superseded  # ADR-007
    unnamed = [adr for adr in superseded if "Status: superseded by ADR-" not in RECORDS[adr]]
    assert unnamed == []


def test_the_status_reader() -> None:
    record = (
        "Date: 2026-11-22. Status: accepted; amended by ADR-016 (why; and ADR-099) and\n"
        "ADR-060 (the loop is `engine.x`). Amends ADR-003, ADR-005 and ADR-006's list.\n\nText."
    )
    assert status_links(record) == ({"ADR-016", "ADR-060"}, {"ADR-003", "ADR-005", "ADR-006"})
    gaps = named_gaps("Gaps: ADR-033 and ADR-050 were never used; ADR-062 to ADR-064 are.")
    assert gaps == {33, 50, 62, 63, 64}


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


ARCHITECTURE = ROOT / "docs" / "architecture.md"
IDENTIFIER = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


CONFIG_TEXT = "\n".join(
    (ROOT / name).read_text(encoding="utf-8") for name in (".importlinter", "pyproject.toml")
)


def unknown_names(page: str) -> list[str]:
    """Backticked code names (`Run.native_step`, `stepping_down`) whose last part no source has.

    The package's source and its lint configuration (`TID253`, `ignore_imports`) are read.
    """
    spans = {span.rstrip(".,:;") for span in SPAN.findall(page)}
    known = SOURCE_TEXT + CONFIG_TEXT
    return sorted(
        span
        for span in spans
        if IDENTIFIER.fullmatch(span)
        and not FILE_LIKE.match(span)
        and not re.search(rf"\b{re.escape(span.rsplit('.', 1)[-1])}\b", known)
    )


def test_the_architecture_page_names_what_exists() -> None:
    """The walks of a call name files, functions and methods the code has (ADR-078)."""
    page = ARCHITECTURE.read_text(encoding="utf-8")
    assert missing_paths(page) == []
    assert unknown_names(page) == []
    assert unknown_names("`Run.reask_runaway` and `stepping_down`") == ["Run.reask_runaway"]
