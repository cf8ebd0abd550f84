"""Compile a signature's schema and parse three messy completions, all offline.

Run: ``python examples/01_schema_and_parsing.py``
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel

import typedspy as ts


class SpawnTask(BaseModel):
    description: str
    priority: Literal["low", "high"]


class CompleteTask(BaseModel):
    task_id: str
    result: str


class Continue(BaseModel):
    reason: str


class Decide(ts.Signature):
    """Decide the agent's next action."""

    task: str = ts.InputField(description="what the user asked for")
    action: SpawnTask | CompleteTask | Continue = ts.OutputField()
    confidence: float = ts.OutputField(ge=0, le=1)


MESSY = {
    "prose, a draft, then the answer in a fence": (
        'A first draft: {"action": {"_type": "Continue"}}\n'
        "Final answer:\n```json\n"
        '{"action": {"_type": "SpawnTask", "description": "Tag v2.1", "priority": "high",},'
        ' "confidence": "0.8"}\n```'
    ),
    "Python literals, single quotes, a comment, unquoted keys, no _type": (
        "{'action': {task_id: 'T-7', 'result': 'done', 'verified': True},"
        " // closes the task\n 'confidence': 0.5,}"
    ),
    "a tag that names no member": (
        '{"action": {"_type": "Launch", "description": "x", "priority": "high"}, "confidence": 1}'
    ),
}


def main() -> None:
    compiled = ts.schema.compile_schema(Decide)
    print(f"response_format name: {compiled.name} (strict={compiled.strict})")
    print(json.dumps(compiled.schema, indent=2))
    print("\nprompt shape:\n" + compiled.shape)
    for label, text in MESSY.items():
        result = ts.parse.parse_outputs(Decide, text)
        print(f"\n{label}:")
        if result.ok:
            assert result.value is not None
            print(f"  ok: {result.value['action']!r}, confidence={result.value['confidence']}")
        else:
            assert result.error is not None
            print(f"  {result.error.kind}:")
            for error in result.error.errors:
                print(f"    {error}")


if __name__ == "__main__":
    main()
