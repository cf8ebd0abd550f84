"""Print pip constraints pinning each direct dependency to the lowest version pyproject.toml allows.

Usage: ``python .ci/min_constraints.py EXTRA... > constraints.txt`` pins the core dependencies and
those of the named extras (ADR-044). Every pinned requirement must carry a ``>=`` lower bound, so
a dependency added without one fails here rather than going untested. Transitive dependencies are
left to pip: they are whatever the pinned direct ones accept.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

# name[extras] (>=X[, <Y]); no markers or URLs in typedspy's pyproject.toml.
REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*(.*)$")
LOWER = re.compile(r">=\s*([0-9][0-9A-Za-z.]*)")


def lower_bounds(extras: list[str]) -> dict[str, str]:
    """Each direct requirement's name mapped to its ``>=`` bound, the core's and the extras'."""
    pyproject = tomllib.loads(Path(__file__).parent.parent.joinpath("pyproject.toml").read_text())
    project = pyproject["project"]
    optional: dict[str, list[str]] = project["optional-dependencies"]
    requirements = list(project["dependencies"])
    for extra in extras:
        if extra not in optional:
            raise SystemExit(f"no extra {extra!r} in pyproject.toml (have {sorted(optional)})")
        requirements.extend(optional[extra])
    pins: dict[str, str] = {}
    for requirement in requirements:
        match = REQUIREMENT.match(requirement)
        if match is None:
            raise SystemExit(f"cannot read requirement {requirement!r}")
        name, spec = match.group(1), match.group(3)
        if name == project["name"]:
            continue  # a self-reference such as typedspy[otel]: its extra must be named itself
        lower = LOWER.search(spec)
        if lower is None:
            raise SystemExit(f"{requirement!r} has no >= lower bound to test")
        pins[name] = lower.group(1)
    return pins


if __name__ == "__main__":
    for name, version in sorted(lower_bounds(sys.argv[1:]).items()):
        print(f"{name}=={version}")
