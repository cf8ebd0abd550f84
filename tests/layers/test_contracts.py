"""The layer contracts in `.importlinter` hold, and import-linter does catch a broken one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).parent / "lint-imports"
# Where dev is installed, .ci/run's own lint-imports step fails first if it is missing.
pytestmark = pytest.mark.skipif(not LINT.exists(), reason="import-linter (dev) is not installed")


def lint(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT), "--config", str(config), "--no-cache", "--no-logo"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,  # bounds a hang only
    )


def test_every_contract_is_kept() -> None:
    done = lint(ROOT / ".importlinter")

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_no_import_is_excepted_and_modules_and_tools_are_independent() -> None:
    # ADR-042: the last exceptions (ReAct's and the confirmations' imports) are gone.
    text = (ROOT / ".importlinter").read_text()

    assert "ignore_imports" not in text
    assert "[importlinter:contract:modules-tools]\n" in text
    assert "type = independence\nmodules =\n    typedspy.modules\n    typedspy.tools\n" in text


def test_a_layer_importing_upwards_is_reported(tmp_path: Path) -> None:
    # signature imports errors: with errors placed above it, the contract must break.
    config = tmp_path / "contracts.ini"
    config.write_text(
        "[importlinter]\nroot_packages =\n    typedspy\n\n"
        "[importlinter:contract:upside-down]\nname = upside down\ntype = layers\n"
        "layers =\n    typedspy.errors\n    typedspy.signature\n"
    )

    done = lint(config)

    assert done.returncode == 1
    assert "typedspy.signature is not allowed to import typedspy.errors" in done.stdout


def test_a_package_module_imported_from_outside_is_reported(tmp_path: Path) -> None:
    # The private-lm contract, applied to a two-package tree where `b` reaches into `a._base`.
    text = (ROOT / ".importlinter").read_text()
    start = text.index("[importlinter:contract:private-lm]")
    contract = text[start : text.index("\n[", start)].replace("typedspy.lm", "pkg.a")
    for name, body in {
        "pkg/__init__.py": "",
        "pkg/a/__init__.py": "from pkg.a._base import Request as Request\n",
        "pkg/a/_base.py": "class Request: ...\n",
        "pkg/b/__init__.py": "from pkg.b.use import run as run\n",
        "pkg/b/use.py": (
            "from pkg.a import Request\nfrom pkg.a._base import Request as R\nrun = (Request, R)\n"
        ),
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    config = tmp_path / "contracts.ini"
    config.write_text(f"[importlinter]\nroot_packages =\n    pkg\n\n{contract}")

    done = subprocess.run(
        [str(LINT), "--config", str(config), "--no-cache", "--no-logo"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=600,  # bounds a hang only
    )

    assert done.returncode == 1, done.stdout
    assert "pkg.b.use -> pkg.a._base" in done.stdout
    assert "pkg.b.use -> pkg.a " not in done.stdout  # importing the package itself is fine
