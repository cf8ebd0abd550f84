"""Import time of ``typedspy`` against ``openai`` alone, each in a fresh interpreter (not a test).

Each round starts one new interpreter per statement, in alternating order so drift hits both
alike, and times the import inside that interpreter (``perf_counter`` around the statement, so
interpreter start-up is not counted). The medians are compared; the target (ADR-034) is
``import typedspy`` at most 1.1x ``import openai``, since typedspy leaves the SDK unimported
until an `LM` sends its first request. Modules ``import typedspy`` loads that take longest
(from ``-X importtime``, one run) are listed to show where the time goes.
Run: ``python benchmarks/import_time.py [rounds]`` (default 30).
"""

from __future__ import annotations

import statistics
import subprocess
import sys

STATEMENTS = ("import typedspy", "import openai", "import pydantic")
PROBE = (
    "import sys, time; t = time.perf_counter(); {statement}; "
    "print(time.perf_counter() - t, 'openai' in sys.modules)"
)


def _once(statement: str) -> tuple[float, bool]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(statement=statement)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return float(out[0]), out[1] == "True"


def _heaviest(statement: str, count: int) -> list[tuple[int, str]]:
    """The top-level packages (cumulative microseconds) the statement imports, slowest first."""
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement],
        check=True,
        capture_output=True,
        text=True,
    ).stderr
    totals: dict[str, int] = {}
    for line in err.splitlines():
        parts = line.split("|")
        if len(parts) != 3 or not parts[1].strip().isdigit():
            continue
        name = parts[2].strip()
        if "." not in name:  # a top-level package: its cumulative time covers its submodules
            totals[name] = max(totals.get(name, 0), int(parts[1]))
    return sorted(((us, name) for name, us in totals.items()), reverse=True)[:count]


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    times: dict[str, list[float]] = {statement: [] for statement in STATEMENTS}
    loads_openai = False
    for index in range(rounds):
        order = STATEMENTS if index % 2 == 0 else tuple(reversed(STATEMENTS))
        for statement in order:
            seconds, loaded = _once(statement)
            times[statement].append(seconds)
            if statement == "import typedspy":
                loads_openai = loads_openai or loaded
    medians = {statement: statistics.median(values) for statement, values in times.items()}
    for statement, median in medians.items():
        spread = f"{min(times[statement]) * 1e3:.0f}-{max(times[statement]) * 1e3:.0f}"
        print(f"{statement:<18} median {median * 1e3:6.1f} ms  (range {spread} ms, {rounds} runs)")
    ratio = medians["import typedspy"] / medians["import openai"]
    print(f"import typedspy / import openai: {ratio:.2f}x (target <= 1.10x)")
    print(f"'openai' in sys.modules after import typedspy: {loads_openai}")
    print("slowest top-level packages under import typedspy (one -X importtime run, ms):")
    for us, name in _heaviest("import typedspy", 8):
        print(f"  {name:<20} {us / 1e3:6.1f}")


if __name__ == "__main__":
    main()
