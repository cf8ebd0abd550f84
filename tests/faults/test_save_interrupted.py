"""A save that fails midway leaves the file already there as it was (a compiled program is costly).

The failure is real: a child process saves under a file-size limit (``RLIMIT_FSIZE``, with
``SIGXFSZ`` ignored, so the write fails with ``EFBIG`` as on a full disk) over a program it
saved before the limit.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import typedspy as ts

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")

CHILD = textwrap.dedent(
    """
    import resource, signal, sys
    import typedspy as ts

    path = sys.argv[1]
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    small = ts.Predict("question -> answer", demos=[{"question": "q", "answer": "a"}])
    big = ts.Predict("question -> answer", demos=[{"question": "q" * 50_000, "answer": "a"}])
    small.save(path)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4_000, resource.RLIM_INFINITY))
    try:
        big.save(path)
    except OSError as error:
        print("refused:", error.errno)
    """
)


def test_a_program_save_that_fails_midway_leaves_the_saved_program_whole(tmp_path: Path) -> None:
    path = tmp_path / "program.json"
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.startswith("refused:"), done.stdout + done.stderr
    reloaded = ts.Predict("question -> answer")
    reloaded.load(path)  # the first save, whole (a truncated file is a SavedStateError)
    assert [dict(d) for d in reloaded.demos] == [{"question": "q", "answer": "a"}]
    assert [p.name for p in tmp_path.iterdir()] == ["program.json"]  # no temporary file left


def test_a_save_that_cannot_replace_its_target_leaves_no_temporary_file(tmp_path: Path) -> None:
    # In process: the target is a directory, so the final replace fails after the write.
    (tmp_path / "program.json").mkdir()
    with pytest.raises(IsADirectoryError):
        ts.Predict("question -> answer").save(tmp_path / "program.json")
    assert [p.name for p in tmp_path.iterdir()] == ["program.json"]
    assert (tmp_path / "program.json").is_dir()
