"""`Predict`: one signature, one model, typed validated outputs with bounded retry.

``mode="auto"`` (the default setting) starts with the first mode of the LM's profile. When the
endpoint rejects ``response_format``, the call steps down the profile's list (the profile
remembers it, so later calls start lower) and runs again; an explicit mode never steps down.
``mode="think_then_format"`` first asks for a free answer, then runs ``auto`` with that answer
to write as the outputs (ADR-086).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from types import UnionType
from typing import TYPE_CHECKING, Any, ClassVar, Generic, cast, get_args, overload

from typing_extensions import ParamSpec, TypeAliasType, TypeVar, Unpack

from typedspy.adapter import Mode
from typedspy.engine import (
    CallPlan,
    Draft,
    Event,
    check_inputs,
    over_chain,
    plan_call,
    plan_draft,
    run_call,
    run_draft,
    signature_of,
    stepping_down,
)
from typedspy.errors import (
    ConfigurationError,
    LMUnsupportedFeatureError,
    check_instance,
    check_int,
)
from typedspy.lm import BaseLM, ChatMessage, FallbackLM, RequestParams, check_params
from typedspy.modules._history import History, history_messages
from typedspy.modules._state import checked_demos, predictor_state, read_predictor_state
from typedspy.prediction import Prediction
from typedspy.program import Module, PredictorState
from typedspy.schema import compile_schema
from typedspy.settings import ModeSetting, get_settings, resolve_lm
from typedspy.signature import FieldTexts, Returns, Signature, with_texts
from typedspy.streaming import OutputDelta, PartialPrediction, RetryStarted, closing

__all__ = ["Predict"]

logger = logging.getLogger("typedspy")
MODES: tuple[str, ...] = get_args(ModeSetting)
TWO_STEP = "think_then_format"
_STEPS_DOWN = ("auto", TWO_STEP)  # the modes whose structured request follows the profile

SigT = TypeVar("SigT", bound=Signature, default=Signature)  # a string signature: any
OutT = TypeVar("OutT")
# ADR-015: the signature's inputs as a parameter list (its dataclass_transform __init__);
# ``Predict[Decide]`` alone means any keywords.
InputsT = ParamSpec("InputsT", default=...)

PredictEvent = TypeAliasType(
    "PredictEvent",
    OutputDelta | PartialPrediction[SigT] | RetryStarted | Prediction[SigT],
    type_params=(SigT,),
)
"""What `Predict.stream` / `astream` yield: the events of the call, then its `Prediction`."""


class PredictOptions(RequestParams, total=False):
    """The keywords `Predict` and `ChainOfThought` take besides the signature (see `Predict`).

    Their overloads differ in the signature and ``output`` only; these are typed once, here.
    """

    lm: BaseLM | None
    mode: ModeSetting | None
    max_retries: int | None
    demos: Sequence[Mapping[str, Any]] | None
    token_budget: int | None


class Predict(Module, Generic[SigT, InputsT]):
    """Ask a model for a signature's outputs; validate them; retry with feedback when needed.

    Example:
        ```python
        predict = ts.Predict(Decide)
        pred = predict(task="Ship the release")
        pred.action  # a SpawnTask, CompleteTask or Continue instance
        ```

    Under mypy and pyright, ``pred.outputs.action`` has the declared type and the call's
    keywords are checked against the signature's inputs (ADR-015).

    Args:
        signature: A `Signature` subclass, or a string such as ``"question -> answer: int"``
            (with ``output=``, the inputs only: ``"text, lang"``).
        output: A root-level output type (``list[Item]``, ``A | B``, a model): the signature
            is then a `Returns` of it, read as ``pred.outputs.output`` (typed, ADR-045).
        lm: The model to call; defaults to the one set with `ts.configure` / `ts.context`.
        mode: ``"auto"`` (the first mode of the LM's profile, stepping down its list when the
            endpoint rejects ``response_format``), ``"json_schema"``,
            ``"json_object"``, ``"prompt"``, ``"tools"`` (the outputs as one forced call) or
            ``"think_then_format"`` (a free answer first, then ``auto`` writes it as the
            outputs: ``pred.free_answer``; ADR-086). Defaults to the ``mode`` setting (``"auto"``).
        max_retries: Retries after a decode or validation failure (default from settings: 2).
        demos: Few-shot examples: mappings with values for input and output fields.
        token_budget: Stop retrying once this many tokens were spent on the call.
        **lm_kwargs: Request parameters for every call (temperature, max_tokens, ...; an
            endpoint's own ones inside ``extra_body={...}``).

    Raises:
        ConfigurationError: An unknown mode or request parameter (the message names the
            closest known one), an ``lm`` that is not an LM, or a ``max_retries`` (an int
            >= 0) or ``token_budget`` (an int >= 1) of another type or range.
        SchemaError: The signature cannot be compiled to a response schema.
    """

    _learnable: ClassVar[bool] = True  # its instructions and demos: named_predictors
    _prediction: ClassVar[type[Prediction[Any]]] = Prediction  # what a call returns

    @overload
    def __init__(
        self: Predict[Returns[OutT], ...],
        signature: str,
        *,
        output: type[OutT],
        **options: Unpack[PredictOptions],
    ) -> None: ...

    @overload
    def __init__(
        self: Predict[Returns[Any], ...],
        signature: str,
        *,
        output: UnionType,
        **options: Unpack[PredictOptions],
    ) -> None: ...

    @overload
    def __init__(
        self,
        signature: Callable[InputsT, SigT] | str,
        *,
        output: None = None,
        **options: Unpack[PredictOptions],
    ) -> None: ...

    def __init__(
        self,
        signature: type[SigT] | Callable[..., SigT] | str,
        *,
        output: Any = None,
        lm: BaseLM | None = None,
        mode: ModeSetting | None = None,
        max_retries: int | None = None,
        demos: Sequence[Mapping[str, Any]] | None = None,
        token_budget: int | None = None,
        **lm_kwargs: Unpack[RequestParams],
    ) -> None:
        if mode is not None and mode not in MODES:
            raise ConfigurationError(f"unknown mode {mode!r}; use one of {list(MODES)}")
        owner = type(self).__name__
        check_instance(owner, "lm", lm, BaseLM, "an LM (ts.LM('gpt-4o-mini'), ...)")
        check_int(owner, "max_retries", max_retries, minimum=0)
        check_int(owner, "token_budget", token_budget)
        sig = signature_of(signature, output)
        self.signature: type[SigT] = cast("type[SigT]", sig)
        check_params(lm_kwargs, where=f"{type(self).__name__}({sig.__name__})")
        self.lm = lm
        self.mode: ModeSetting | None = mode
        self.max_retries = max_retries
        self.demos = demos if demos is not None else []
        self.token_budget = token_budget
        self.lm_kwargs = lm_kwargs
        # SchemaError now, not at the first call; the LM's profile picks the target it sends.
        compile_schema(self.signature, "json-schema")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.signature.__name__}, mode={self.mode!r})"

    @property
    def demos(self) -> list[Mapping[str, Any]]:
        """Few-shot examples, checked against the signature when set.

        Raises:
            ConfigurationError: On assignment, a demo with an unknown key, no output, or a
                value of the wrong type (the message names the demo and the field).
        """
        return self._demos

    @demos.setter
    def demos(self, demos: Sequence[Mapping[str, Any]]) -> None:
        self._demos = checked_demos(self.signature, demos)

    @property
    def instructions(self) -> str:
        """The instruction sent to the model (the signature's docstring unless replaced)."""
        return self.signature.instructions

    @instructions.setter
    def instructions(self, text: str) -> None:
        self.signature = cast("type[SigT]", self.signature.with_instructions(text))

    def _state(self) -> PredictorState:
        """Instructions and demos as saved state (see `Module.save`).

        The signature's name and fingerprint (a digest of its fields and types) go with them:
        loading refuses state saved for a different signature. Demo values are written as the
        prompt shows them (`to_jsonable` with each field's type: union members carry
        ``_type``); loading validates them back into values.
        """
        return predictor_state(self.signature, self.instructions, self.demos)

    def _read_state(
        self, state: PredictorState
    ) -> tuple[str, list[Mapping[str, Any]], FieldTexts | None]:
        """Check saved state and type its demos; nothing is changed yet."""
        return read_predictor_state(self.signature, state)

    def _apply_state(self, read: tuple[str, list[Mapping[str, Any]], FieldTexts | None]) -> None:
        instructions, demos, texts = read
        if texts is not None:
            self.signature = cast("type[SigT]", with_texts(self.signature, texts))
        if instructions != self.instructions:
            self.instructions = instructions
        self.demos = demos

    # -- public entry points --

    async def aexecute(
        self,
        *,
        stream: bool = False,
        history: History | Sequence[ChatMessage] | None = None,
        **inputs: Any,
    ) -> AsyncIterator[Event]:
        """The implementation: yield stream events (when ``stream``), then the `Prediction`.

        Raises:
            InputError: Missing, unexpected or invalid inputs (before any request).
            OutputDecodeError: No attempt produced decodable JSON.
            OutputValidationError: The last attempt failed validation; ``errors`` name paths.
            RefusalError: The model refused. TruncatedOutputError: it hit the token limit.
            ContentFilterError: The provider filtered it. TokenBudgetExceededError.
            LMError: The endpoint could not be used.
        """
        checked = check_inputs(self.signature, inputs)
        lm = self._lm()
        turns = history_messages(history)
        if isinstance(lm, FallbackLM):  # ADR-022: the whole call on each endpoint in turn
            run = over_chain(
                lm,
                lambda one: self._execute_on(one, checked, turns, stream),
                schema_sent=lambda one: one.profile.sends_schema(self._start_mode(one)),
                stream=stream,
            )
        else:
            run = self._execute_on(lm, checked, turns, stream)
        async with closing(run) as events:
            async for event in events:
                yield event

    async def _execute_on(
        self,
        lm: BaseLM,
        checked: dict[str, Any],
        turns: Sequence[ChatMessage],
        stream: bool,
    ) -> AsyncIterator[Event]:
        """The call on ``lm`` (one of a chain's, for a `FallbackLM`), stepping down while refused.

        It is planned for the start mode (`_start_mode`); in ``think_then_format`` the free
        answer comes first (`run_draft`, not streamed), the structured call gets it, and the
        `Prediction` has it as ``extras["free_answer"]``. The mode asked for is read when the
        call starts and again when the endpoint refuses (only ``"auto"`` and
        ``"think_then_format"`` step down).

        Raises:
            LMUnsupportedFeatureError: Refused with an explicit mode, refused for another
                feature than ``response_format``, or refused in the profile's last mode.
        """
        await lm.aidentify()  # ADR-084: the profile is read from here on
        drafted = None
        if self._mode() == TWO_STEP:
            draft = plan_draft(
                self.signature, lm, checked, turns, demos=self.demos, params=self.lm_kwargs
            )
            drafted = await run_draft(draft)
        mode: Mode = self._start_mode(lm)

        def step_down(exc: LMUnsupportedFeatureError) -> bool:
            nonlocal mode
            if self._mode() not in _STEPS_DOWN or exc.feature != "response_format":
                return False
            step = lm.profile.next_mode(mode)  # remembered by the LM's profile
            if step is None:
                return False
            logger.warning(
                "%s rejected response_format %s (%s); falling back to %s for this LM",
                lm.model,
                mode,
                exc,
                step,
            )
            mode = step
            return True

        events = stepping_down(
            lambda: run_call(self._plan(lm, mode, checked, turns, drafted), stream=stream),
            step_down,
        )
        async with closing(events):
            async for event in events:
                if drafted is not None and isinstance(event, Prediction):
                    event.extras["free_answer"] = drafted.text
                yield event

    async def aforward(
        self, *, history: History | Sequence[ChatMessage] | None = None, **inputs: Any
    ) -> Prediction[SigT]:
        """Predict the outputs for ``inputs`` (see `aexecute` for the errors)."""
        result: Any = None
        # Predict's own path, not ``self.aexecute``: a subclass's `aforward` override is what
        # ``self.aexecute`` runs (ADR-035), and its ``super().aforward()`` lands here.
        async with closing(Predict.aexecute(self, stream=False, history=history, **inputs)) as run:
            async for event in run:
                result = event
        return cast("Prediction[SigT]", result)

    if TYPE_CHECKING:
        # What `Module`'s entry points are typed with (ADR-015, ADR-080): the keywords are the
        # signature's inputs (a call that passes ``history=`` takes them unchecked), the result
        # this module's prediction, the stream's events `PredictEvent`.

        def _typed_call(
            self, *args: InputsT.args, **inputs: InputsT.kwargs
        ) -> Prediction[SigT]: ...

        def _typed_event(self) -> PredictEvent[SigT]: ...

    # -- one call --

    def one_request(self, lm: BaseLM) -> Callable[[BaseLM, dict[str, Any]], CallPlan] | None:
        """How a call that sends one request is planned on ``lm``'s profile (for a Batch API file).

        For callers that send that request themselves; ``None`` when calls send two
        (``think_then_format``: the second carries the first's answer). ``plan(on, inputs)`` is
        the call's plan for checked ``inputs``, without history, in the mode the call would
        start in, sent through ``on`` (``lm``, or a stand-in answering from elsewhere):
        ``lm.request_body(plan(lm, inputs).base)`` is the body `render` returns.

        Raises:
            ConfigurationError: The mode asked for is not one of `MODES`.
        """
        if self._mode() == TWO_STEP:
            return None
        mode = self._start_mode(lm)
        return lambda on, inputs: self._plan(on, mode, inputs, ())

    def _lm(self) -> BaseLM:
        return resolve_lm(self.lm)

    def _mode(self) -> str:
        """The mode asked for: ``mode``, else the ``mode`` setting.

        Raises:
            ConfigurationError: It is not one of `MODES`.
        """
        mode = self.mode or get_settings().mode
        if mode not in MODES:
            raise ConfigurationError(f"unknown mode {mode!r}; use one of {list(MODES)}")
        return mode

    def _start_mode(self, lm: BaseLM) -> Mode:
        """The mode the structured request starts in: the one asked for, or the profile's.

        ``"auto"`` and ``"think_then_format"`` (its second request) start in the profile's mode.
        """
        mode = self._mode()
        return lm.profile.auto_mode() if mode in _STEPS_DOWN else cast("Mode", mode)

    def _plan(
        self,
        lm: BaseLM,
        mode: Mode,
        inputs: dict[str, Any],
        history: Sequence[ChatMessage],
        draft: Draft | None = None,
    ) -> CallPlan:
        return plan_call(
            self.signature,
            lm,
            mode,
            inputs,
            history,
            demos=self.demos,
            params=self.lm_kwargs,
            max_retries=self.max_retries,
            token_budget=self.token_budget,
            prediction=self._prediction,
            draft=draft,
        )
