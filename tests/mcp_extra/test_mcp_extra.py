"""The extra stays optional: the core does not pull mcp, and its absence is one clear line."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[2]


def python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )


def test_importing_typedspy_loads_no_mcp() -> None:
    done = python(
        "import sys, typedspy\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')))"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_without_the_sdk_importing_typedspy_mcp_is_one_line_naming_the_extra() -> None:
    blocked = (
        "import sys\n"
        "sys.modules['mcp'] = None  # what an environment without the SDK looks like\n"
        "try:\n"
        "    import typedspy.mcp\n"
        "except ImportError as exc:\n"
        "    print(repr(str(exc)))\n"
        "import typedspy\n"
        "try:\n"
        "    typedspy.mcp\n"
        "except ImportError as exc:\n"
        "    print(repr(str(exc)))\n"
    )
    done = python(blocked)
    assert done.returncode == 0, done.stderr
    expected = repr("typedspy.mcp needs the MCP SDK: pip install 'typedspy[mcp]'")
    assert done.stdout.splitlines() == [expected, expected]


def test_mcp_is_an_extra_and_in_dev_but_not_a_core_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not any(d.startswith("mcp") for d in project["dependencies"])
    assert project["optional-dependencies"]["mcp"] == ["mcp>=2.3,<3", "google-re2>=1.1"]
    dev = project["optional-dependencies"]["dev"]
    in_dev = {e for d in dev if d.startswith("typedspy[") for e in d[9:-1].split(",")}
    assert "mcp" in in_dev
