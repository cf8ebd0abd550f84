"""The person's answer to a paused call: `ResumeState`, a Pydantic model saved as signed JSON.

A saved state may travel through a browser session, a queue or a database row that someone else
can edit, so its JSON carries an HMAC-SHA256 signature over all of its content, keyed by an
application secret; a state unsigned or changed is refused with `ResumeStateError` before any of
it is used, and there is no unsigned format to fall back to (ADR-052).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal, TypeAlias, overload

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    ValidationError,
    field_serializer,
    field_validator,
)
from pydantic_core import PydanticCustomError, PydanticSerializationError

from typedspy._json import MAX_JSON_DEPTH, depth_exceeded, loads
from typedspy._signing import Secrets, canonical, secret_keys, sign, verify
from typedspy._types import first_error, format_path
from typedspy.errors import ConfigurationError, ResumeStateError
from typedspy.settings import get_settings
from typedspy.signature import to_jsonable, unsendable
from typedspy.tools._approvals import ConfirmationRequired, ResumeAction, record

__all__ = ["Answer", "ResumeState"]

Answer: TypeAlias = "str | Mapping[str, Any] | bool"
"""A person's answer: a word or free text, edited arguments, or yes/no as a bool."""

_APPROVE = frozenset({"yes", "y", "approve"})
_REJECT = frozenset({"no", "n", "reject", ""})
_PURPOSE = "typedspy.ResumeState"  # what the signature is for: never valid for other records
_SIGNATURE = "signature"


class ResumeState(BaseModel):
    """A paused call and the person's answer to it; saved as signed JSON for later resumption.

    The answer decides the action: ``"yes"``/``"y"``/``"approve"`` or True approve;
    ``"no"``/``"n"``/``"reject"``, an empty answer or False reject; a mapping approves with those
    arguments edited (merged over the original ones, validated again); any other text is
    feedback: the tool does not run and the text goes back to the model. Words are matched
    case-insensitively, ignoring surrounding spaces and a trailing ``.`` or ``!``.

    Example:
        ```python
        state = ts.ResumeState(pause, "yes")
        saved = state.to_json(secret=SECRET)                # signed: store it anywhere
        state = ts.ResumeState.from_json(saved, secret=SECRET)
        ```

    Attributes:
        version: The saved format's version (2: signed).
        question: The question that was asked.
        confirmation_id: The paused call's id (tool name and canonical arguments).
        tool_call: The paused tool call: name, arguments and, when set, id.
        context: The orchestrator's saved state (ReAct's `PausedRun` under ``"react"``, read
            back as JSON data that ReAct validates on resumption).
        response: The answer as given.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_inf_nan="constants")

    version: Literal[2] = 2
    question: StrictStr
    confirmation_id: StrictStr
    tool_call: dict[str, Any] = Field(default_factory=dict)
    context: dict[str, Any] = Field(default_factory=dict)
    response: StrictStr | StrictBool | dict[str, Any]

    @overload
    def __init__(self, pause: ConfirmationRequired, response: Answer, /) -> None: ...
    @overload
    def __init__(self, /, **data: Any) -> None: ...
    def __init__(
        self,
        pause: ConfirmationRequired | None = None,
        response: Answer | None = None,
        /,
        **data: Any,
    ) -> None:
        """Pair ``pause`` with ``response`` (Pydantic's validation passes the fields instead).

        Raises:
            ConfigurationError: ``response`` is not a str, a mapping or a bool, or an edited
                argument JSON cannot write (it contains itself, an ``object()``, bytes that
                are not UTF-8), named.
        """
        if pause is None:
            super().__init__(**data)
            return
        _classify(response)
        try:
            super().__init__(
                question=pause.question,
                confirmation_id=pause.confirmation_id,
                tool_call=pause.tool_call,
                context=pause.context,
                response=dict(response) if isinstance(response, Mapping) else response,
            )
        except ValidationError as exc:
            raise ConfigurationError(f"ResumeState: {first_error(exc)}") from exc

    @field_validator("response")
    @classmethod
    def _sendable(cls, value: str | bool | dict[str, Any]) -> str | bool | dict[str, Any]:
        # Edited arguments are sent to the model and saved: each must be JSON-writable.
        for name, argument in value.items() if isinstance(value, dict) else ():
            if problem := unsendable(argument):
                raise PydanticCustomError(
                    "argument_unsendable",
                    "edited argument {name} cannot be sent: {problem}",
                    {"name": repr(name), "problem": problem},
                )
        return value

    @field_serializer("tool_call", "response")
    def _jsonable(self, value: Any) -> Any:
        # Models become objects with their `_type`, as everywhere else.
        return to_jsonable(value)

    @field_serializer("context")
    def _owned(self, value: dict[str, Any]) -> Any:
        # A model right under a key is its orchestrator's record (ReAct's `PausedRun`): dumped
        # as its own fields, which its owner validates on resumption (ADR-069); models deeper
        # in carry their `_type`.
        return to_jsonable(value, dict[str, Any])

    @property
    def exception(self) -> ConfirmationRequired:
        """The pause this state answers, rebuilt from its fields (a new object each time)."""
        return ConfirmationRequired(
            self.question,
            confirmation_id=self.confirmation_id,
            tool_call=self.tool_call,
            context=self.context,
        )

    @property
    def action(self) -> ResumeAction:
        """What the answer does: ``"approve"``, ``"edit"``, ``"reject"`` or ``"feedback"``."""
        return _classify(self.response)

    @property
    def approved(self) -> bool:
        """True for approve and edit: the tool will run."""
        return self.action in ("approve", "edit")

    @property
    def rejected(self) -> bool:
        """True for a plain rejection (feedback is neither approved nor rejected)."""
        return self.action == "reject"

    @property
    def edited_arguments(self) -> dict[str, Any] | None:
        """The edited arguments when the answer was a mapping, else None."""
        return dict(self.response) if isinstance(self.response, Mapping) else None

    @property
    def feedback(self) -> str | None:
        """The free-text answer when it was feedback, else None."""
        return (
            self.response.strip()
            if self.action == "feedback" and isinstance(self.response, str)
            else None
        )

    def apply(self) -> None:
        """Record this answer in the current context (what `resume` does on entry).

        The next call with the paused arguments consumes it: it runs (with the edits, if any),
        or raises `ConfirmationRejected` carrying the feedback.
        """
        record(self)

    # -- saving: signed JSON --

    def to_dict(self, *, secret: Secrets | None = None) -> dict[str, Any]:
        """The state as signed JSON-ready data: its fields plus ``signature``.

        Args:
            secret: The key to sign with (or several, newest first: the first signs);
                default: the ``resume_secret`` setting.

        Raises:
            ConfigurationError: No secret (neither ``secret=`` nor the setting), a secret under
                32 bytes, or something in the context or tool call that is not JSON-ready.
        """
        keys = _keys(secret, "to_json")
        try:
            content = self.model_dump(mode="json")
            payload = canonical(content)
        except (PydanticSerializationError, TypeError, ValueError, RecursionError) as exc:
            raise ConfigurationError(
                f"ResumeState cannot be saved as JSON: {exc} (keep ConfirmationRequired.context "
                "JSON-ready: dicts, lists, strings, numbers, booleans, None, Pydantic models)"
            ) from exc
        if depth_exceeded(content, MAX_JSON_DEPTH):
            raise ConfigurationError(
                f"ResumeState cannot be saved: it nests deeper than {MAX_JSON_DEPTH} levels, "
                "which from_json refuses to read"
            )
        return {**content, _SIGNATURE: sign(keys, _PURPOSE, payload)}

    def to_json(self, *, secret: Secrets | None = None) -> str:
        """The state as signed JSON text; `from_json` checks and reads it back.

        The text is readable, not encrypted: keep secrets out of the context and answers.

        Args:
            secret: As `to_dict`.

        Raises:
            ConfigurationError: As `to_dict`.
        """
        return json.dumps(self.to_dict(secret=secret), ensure_ascii=False)

    @classmethod
    def from_json(
        cls, data: str | bytes | Mapping[str, Any], *, secret: Secrets | None = None
    ) -> ResumeState:
        """Check the signature of a state saved with `to_json` (or `to_dict`), then read it.

        The signature is checked over the content before anything in it is validated or used;
        models in the context come back as plain dicts (JSON has no classes).

        Args:
            data: The saved JSON text, or the data it decodes to.
            secret: The key it was signed with (or several, newest first: any may match);
                default: the ``resume_secret`` setting.

        Raises:
            ConfigurationError: No secret, or a secret under 32 bytes.
            ResumeStateError: The state is not signed, its signature does not match (it was
                changed after it was signed, or signed with another secret), it is not JSON,
                or it is not a saved ResumeState (the message and ``path`` name the field).
        """
        keys = _keys(secret, "from_json")
        saved = _read(data)
        signature = saved.pop(_SIGNATURE, None)
        if signature is None:
            raise ResumeStateError(
                "ResumeState refused: the state is not signed (it has no 'signature'; "
                "save states with to_json, which signs them)",
                path=_SIGNATURE,
            )
        try:
            payload = canonical(saved)
        except (TypeError, ValueError) as exc:
            raise ResumeStateError(f"not a saved ResumeState: {exc}") from exc
        if not isinstance(signature, str) or not verify(keys, _PURPOSE, payload, signature):
            raise ResumeStateError(
                "ResumeState refused: the signature does not match the content (the state "
                "was changed after it was signed, or signed with another secret)",
                path=_SIGNATURE,
            )
        try:
            return cls.model_validate(saved)
        except ValidationError as exc:
            first = first_error(exc)
            raise ResumeStateError(
                f"not a saved ResumeState: {first}", path=format_path(first.path)
            ) from exc


def _keys(secret: Secrets | None, method: str) -> tuple[bytes, ...]:
    if secret is not None:
        return secret_keys(secret, name=f"ResumeState.{method}(secret=...)")
    keys = get_settings().resume_secret
    if not keys:
        raise ConfigurationError(
            f"ResumeState.{method} needs the secret saved states are signed with: pass "
            "secret=... or set it once with ts.configure(resume_secret=...) (at least 32 random "
            "bytes, kept apart from where the states are stored; docs/confirmations.md)"
        )
    return keys


def _read(data: object) -> dict[str, Any]:
    """The saved JSON object, within the JSON depth limit; anything else is refused."""
    if isinstance(data, (str, bytes)):
        try:
            text = data.decode() if isinstance(data, bytes) else data
            value = loads(text, max_depth=MAX_JSON_DEPTH)
        except ValueError as exc:  # not UTF-8, not JSON, or past a JSON limit
            raise ResumeStateError(f"not a saved ResumeState: not JSON ({exc})") from exc
    elif isinstance(data, Mapping):
        value = dict(data)
        if depth_exceeded(value, MAX_JSON_DEPTH):
            raise ResumeStateError(
                f"not a saved ResumeState: nested deeper than {MAX_JSON_DEPTH} levels"
            )
    else:
        raise ResumeStateError(
            f"not a saved ResumeState: expected JSON text or a mapping, not {type(data).__name__}"
        )
    if not isinstance(value, dict):
        raise ResumeStateError(
            f"not a saved ResumeState: expected a JSON object, not {type(value).__name__}"
        )
    return value


def _classify(response: object) -> ResumeAction:
    if isinstance(response, bool):
        return "approve" if response else "reject"
    if isinstance(response, Mapping):
        return "edit"
    if not isinstance(response, str):
        raise ConfigurationError(
            "a confirmation answer is a str, a mapping of edited arguments or a bool, "
            f"not {response!r}"
        )
    word = response.strip().rstrip(".!").strip().casefold()
    if word in _APPROVE:
        return "approve"
    if word in _REJECT:
        return "reject"
    return "feedback"
