"""What a tool call costs through MCP, against calling the same typedspy tool locally (not a test).

Prints the median time per call of one code-backed tool: ``Tool.acall`` locally, a `RemoteTool`
over the real MCP client to the server in process, and over stdio to a subprocess started
with ``python -m typedspy.mcp``; each as a ratio to the local call.
Run: ``python benchmarks/mcp_overhead.py``
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp import StdioServerParameters

import typedspy as ts
import typedspy.mcp

HERE = Path(__file__).parent
ARGS = {"pet_name": "Rex", "limit": 2}


async def per_call(call: Callable[[], Awaitable[Any]], n: int) -> float:
    for _ in range(20):
        await call()  # warm up
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            await call()
        runs.append((time.perf_counter() - start) / n)
    return statistics.median(runs)


async def main() -> None:
    sys.path.insert(0, str(HERE.parent / "tests" / "mcp_extra"))
    from mcp_app import PetLookup

    local = ts.Tool.from_module(PetLookup())
    base = await per_call(lambda: local.acall(ARGS), 500)
    print(f"local Tool.acall: {base * 1e6:.0f} µs per call")
    async with ts.mcp.tools(ts.mcp.serve(PetLookup())) as remote:
        tool = remote.get("look_up_pet")
        t = await per_call(lambda: tool.acall(ARGS), 200)
        print(f"MCP in process:  {t * 1e6:.0f} µs per call ({t / base:.1f}x local)")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "typedspy.mcp", "mcp_app:tools"],
        env={"PYTHONPATH": str(HERE.parent / "tests" / "mcp_extra")},
    )
    async with ts.mcp.tools(params, include=["look_up_pet"]) as remote:
        tool = remote.get("look_up_pet")
        t = await per_call(lambda: tool.acall(ARGS), 100)
        print(f"MCP over stdio:  {t * 1e6:.0f} µs per call ({t / base:.1f}x local)")


if __name__ == "__main__":
    asyncio.run(main())
