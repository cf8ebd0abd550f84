"""A paused ReAct run as JSON-ready data, and where a `ResumeState` says to continue.

When a tool asks for a confirmation, the run's state goes into
``ConfirmationRequired.context["react"]``: the inputs, the trajectory (the paused step
included, its pending calls without observations), the step and call that paused, the mode,
the names of the tools in use and the tokens spent so far. All of it is plain JSON, so a web
app can store the `ResumeState` and resume in another process with a fresh agent object.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from typedspy._types import Usage
from typedspy.errors import ConfigurationError
from typedspy.react._trajectory import Trajectory
from typedspy.signature import Signature, to_jsonable
from typedspy.tools import ResumeState

__all__ = ["CONTEXT_KEY", "ResumePoint", "pause_state", "resume_point"]

CONTEXT_KEY = "react"
"""The key of ReAct's state in ``ConfirmationRequired.context`` (other keys are left alone)."""

_VERSION = 1


def pause_state(
    *,
    signature: type[Signature],
    inputs: Mapping[str, Any],
    trajectory: Trajectory,
    step: int,
    call: int,
    mode: str,
    tools: list[str],
    usage: Usage,
) -> dict[str, Any]:
    """The JSON-ready state of a run paused at ``trajectory[step].calls[call]``."""
    fields = signature.input_fields
    return {
        "version": _VERSION,
        "pause_id": uuid.uuid4().hex,
        "signature": signature.__name__,
        "inputs": {n: to_jsonable(v, fields[n].annotation) for n, v in inputs.items()},
        "trajectory": trajectory.to_json(),
        "step": step,
        "call": call,
        "pending_call": trajectory[step].calls[call].to_json(),
        "mode": mode,
        "tools": tools,
        "usage": {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens,
        },
    }


@dataclass(frozen=True)
class ResumePoint:
    """Where to continue a paused run, read back from a `ResumeState`."""

    inputs: dict[str, Any]
    trajectory: Trajectory
    step: int
    call: int
    mode: Literal["tools", "union"]
    tools: frozenset[str]
    usage: Usage
    pause_id: str


def resume_point(state: ResumeState, signature: type[Signature]) -> ResumePoint:
    """Read ReAct's saved state from ``state`` (as raised, or rebuilt from JSON).

    Raises:
        ConfigurationError: The state was not raised by a ReAct run with this signature, or
            it is malformed.
    """
    saved = state.context.get(CONTEXT_KEY)
    if not isinstance(saved, Mapping):
        raise ConfigurationError(
            f"resume_state was not raised by a ReAct run: its context has no {CONTEXT_KEY!r} entry"
        )
    name = saved.get("signature")
    if name != signature.__name__:
        raise ConfigurationError(
            f"resume_state belongs to a ReAct run over {name!r}, not {signature.__name__!r}"
        )
    try:
        trajectory = Trajectory.from_json(saved["trajectory"])
        step, call = int(saved["step"]), int(saved["call"])
        pending = trajectory[step].calls[call]
        mode = saved["mode"]
        usage = Usage(**{k: int(v) for k, v in dict(saved.get("usage") or {}).items()})
        inputs = dict(saved["inputs"])
        tools = frozenset(str(t) for t in saved["tools"])
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise ConfigurationError(f"resume_state holds a malformed ReAct state: {exc!r}") from exc
    if mode not in ("tools", "union") or pending.observation is not None:
        raise ConfigurationError("resume_state holds a malformed ReAct state: no pending call")
    pause_id = saved.get("pause_id")
    if not isinstance(pause_id, str) or not pause_id:
        # Saved before pauses had ids: the state's own content stands for it.
        canonical = json.dumps(to_jsonable(dict(saved)), sort_keys=True, separators=(",", ":"))
        pause_id = "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    return ResumePoint(inputs, trajectory, step, call, mode, tools, usage, pause_id)
