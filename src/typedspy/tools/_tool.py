"""`Tool`: a callable bound to a signature; inputs are its parameters, outputs its result.

A Signature is a tool whose handler is the model (DSPy.rb ADR-018): `Predict(Sig)` is the
LLM-backed implementation, a `Module` subclass with ``signature = Sig`` a code-backed one, and
both export the same OpenAI and MCP tool definitions because those come from the signature only.
``@ts.tool`` makes one of a plain function.
"""

from __future__ import annotations

import asyncio
import copy
import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any, SupportsIndex, overload

from pydantic import BaseModel

from typedspy._runtime import call_user, own_cancellation, run_sync
from typedspy._scope import TOOL_DEPTH, current
from typedspy.errors import ToolError
from typedspy.program import Module
from typedspy.schema import compile_schema
from typedspy.signature import Signature, to_jsonable, to_jsonable_fields
from typedspy.tools._approvals import (
    Question,
    confirmation_id,
    confirmation_mark,
    require_confirmation,
)
from typedspy.tools._introspect import signature_from_function, unwrapped
from typedspy.tools._names import check_tool_name, tool_name
from typedspy.tools._values import check_arguments, check_result

__all__ = ["MAX_TOOL_DEPTH", "Tool", "tool"]

MAX_TOOL_DEPTH = 16
"""How many tool calls may nest (a tool running an agent whose tool runs ...): the level past it
is a `ToolError`, not run. An agent wired as its own tool otherwise recursed as deep as its
model asked, a thread a level for a sync tool (ADR-098)."""


class Tool:
    """A signature-bound callable that a model (or code) can call with JSON arguments.

    Arguments are validated against the signature's inputs before the implementation runs; its
    result is validated against the outputs. ``acall`` returns the outputs as a dict.

    Example:
        ```python
        search = ts.Tool.from_module(SearchModule())      # code-backed
        same = ts.Tool.from_module(ts.Predict(SearchDocuments))  # LLM-backed, same schemas
        outputs = await search.acall('{"query": "pydantic", "limit": 3}')
        outputs["documents"]
        ```

    Attributes:
        name: The function name (``SearchDocuments`` gives ``search_documents``).
        description: Shown to the model; the signature's instructions unless given.
        signature: Inputs are the parameters, outputs the result.
        impl: The implementation, called with validated keyword arguments (sync or async).
        requires_confirmation: Ask a person before each call (see `confirm_first`).
        confirmation_question: The custom question for that, if any.
        title: A human-readable title, exported to MCP when set.
    """

    def __init__(
        self,
        signature: type[Signature],
        impl: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        requires_confirmation: bool = False,
        confirmation_question: Question | None = None,
        title: str | None = None,
    ) -> None:
        """Bind an implementation to a signature.

        Args:
            signature: A `Signature` subclass.
            impl: Called with the validated arguments as keywords; a sync function runs in a
                worker thread (with the caller's contextvars), an async one in the loop.
            name: The tool name; derived from the signature class when None.
            description: The description; the signature's instructions when None.
            requires_confirmation: Raise `ConfirmationRequired` until a person approves.
            confirmation_question: A custom question (template or function of the arguments).
            title: A display title for MCP clients.

        Raises:
            ToolError: Not a signature, ``impl`` not callable, or an invalid name.
        """
        if not (isinstance(signature, type) and issubclass(signature, Signature)) or (
            signature is Signature
        ):
            raise ToolError(f"a Tool needs a Signature subclass, not {signature!r}")
        if not callable(impl):
            raise ToolError(f"a Tool needs a callable implementation, not {impl!r}")
        self.signature = signature
        self.impl = impl
        self.name = tool_name(signature) if name is None else check_tool_name(name)
        self.description = signature.instructions if description is None else description
        self.requires_confirmation = requires_confirmation or confirmation_question is not None
        self.confirmation_question = confirmation_question
        self.title = title
        # Instances of these classes are read field by field as the outputs.
        self._result_models: tuple[type[BaseModel], ...] = (signature.output_model,)

    def __repr__(self) -> str:
        confirm = ", requires_confirmation=True" if self.requires_confirmation else ""
        return f"Tool({self.name!r}, signature={self.signature.__name__}{confirm})"

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        # `@ts.tool` rebinds the function's module-level name to this Tool, so the function can
        # no longer be pickled by reference; the Tool itself can, under that same name.
        module = getattr(self.impl, "__module__", None)
        qualname = getattr(self.impl, "__qualname__", "")
        if module and "<locals>" not in qualname and _lookup(module, qualname) is self:
            return (_lookup, (module, qualname))
        return super().__reduce_ex__(protocol)

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def from_module(
        cls, module: Module, *, name: str | None = None, description: str | None = None
    ) -> Tool:
        """Wrap a module bound to a signature: ``Predict(Sig)`` or a subclass with ``signature``.

        A module's ``original_signature``, when it has one, comes first: the tool for
        ``ChainOfThought(Sig)`` has ``Sig``'s contract, and its ``reasoning`` output is dropped
        from the result. The module runs through ``acall``; a subclass that only overrides a
        synchronous ``forward`` runs that in a worker thread. A `confirm_first` mark on the
        module or its class is kept.

        Args:
            module: A module instance with a ``signature`` attribute.
            name: Overrides the name derived from the signature.
            description: Overrides the signature's instructions.

        Raises:
            ToolError: ``module`` is a class, not a module, or has no signature.
        """
        if isinstance(module, type):
            raise ToolError(f"pass a module instance, not the class: {module.__name__}()")
        if not isinstance(module, Module):
            raise ToolError(f"Tool.from_module needs a Module instance, not {module!r}")
        # A module that adds outputs of its own (ChainOfThought's `reasoning`) keeps the
        # signature it was given as `original_signature`: that is the tool's contract.
        signature = getattr(module, "original_signature", None)
        if not (isinstance(signature, type) and issubclass(signature, Signature)):
            signature = getattr(module, "signature", None)
        if not (isinstance(signature, type) and issubclass(signature, Signature)):
            raise ToolError(
                f"{type(module).__name__} is not bound to a signature: set "
                f"`signature = MySignature` on the class"
            )
        mark = confirmation_mark(module)
        return cls(
            signature,
            # A module class that writes only a synchronous `forward` gets an `aforward` that
            # runs it in a thread (`Module.__init_subclass__`), so `acall` is always the way in.
            module.acall,
            name=name,
            description=description,
            requires_confirmation=mark is not None,
            confirmation_question=mark.question if mark else None,
        )

    @classmethod
    def from_function(
        cls, fn: Callable[..., Any], *, name: str | None = None, description: str | None = None
    ) -> Tool:
        """Wrap a plain sync or async function, reading its schema from its type hints.

        Parameters become the inputs (an unannotated one is ``Any``; defaults, ``Field(...)``
        defaults and ``Annotated`` constraints are kept). The return annotation becomes the
        outputs: a Pydantic model's fields, or else one output named ``result``. The
        description and the per-parameter descriptions come from a Google-style docstring
        (``Args:``; ``Returns:`` describes ``result``). A `confirm_first` mark is kept.

        Args:
            fn: The function; every parameter must be passable by keyword.
            name: The tool name; the function's name (in snake_case) when None.
            description: Overrides the docstring's description.

        Raises:
            ToolError: Unsupported parameters, unreadable hints, or an invalid name.
        """
        if isinstance(fn, Tool):
            raise ToolError(f"{fn!r} is already a Tool")
        chosen = check_tool_name(name) if name is not None else tool_name(_function_name(fn))
        built = signature_from_function(fn, name=chosen)
        mark = confirmation_mark(fn)
        tool = cls(
            built.signature,
            fn,
            name=chosen,
            # No docstring: no description, rather than the signature's generic sentence.
            description=built.description if description is None else description,
            requires_confirmation=mark is not None,
            confirmation_question=mark.question if mark else None,
        )
        if built.result_model is not None:
            tool._result_models += (built.result_model,)
        return tool

    def with_confirmation(self, question: Question | None = None) -> Tool:
        """A copy of this tool that asks for confirmation first (what `confirm_first` does)."""
        marked = copy.copy(self)
        marked.requires_confirmation = True
        marked.confirmation_question = (
            question if question is not None else self.confirmation_question
        )
        return marked

    # -- calling -----------------------------------------------------------------------------

    def parse_arguments(self, arguments: str | Mapping[str, Any]) -> dict[str, Any]:
        """Decode and validate arguments; the tool does not run.

        A string is decoded leniently (trailing commas, single quotes, a JSON object encoded
        twice; empty means no arguments). ``null`` for a parameter that has a default but does
        not accept None means "use the default". Names that are not parameters are errors.

        Args:
            arguments: The model's JSON text, or a mapping.

        Returns:
            Every parameter by name (defaults filled in), as validated Python values.

        Raises:
            ToolArgumentsError: Not a JSON object, unknown names, or failed validation; its
                ``errors`` name each field path.
        """
        return check_arguments(self.name, self.signature, arguments)

    async def acall(self, arguments: str | Mapping[str, Any]) -> dict[str, Any]:
        """Validate the arguments, confirm if required, run, and validate the result.

        Args:
            arguments: The model's JSON text, or a mapping.

        Returns:
            The outputs by name, as validated Python values (see `dump_outputs` for JSON).

        Raises:
            ToolArgumentsError: Invalid arguments (the implementation was not called).
            ConfirmationRequired: The tool needs a person's approval for these arguments.
            ConfirmationRejected: The person rejected this call.
            ToolError: The result does not match the signature's outputs.
        """
        checked = self._confirmed(self.parse_arguments(arguments))
        return await self._run(checked)

    def __call__(self, **kwargs: Any) -> dict[str, Any]:
        """Run synchronously with keyword arguments; see `acall`."""
        # Confirm here, in the caller's context, so the approval it consumes stays consumed.
        checked = self._confirmed(self.parse_arguments(kwargs))
        return run_sync(lambda: self._run(checked), async_name="Tool.acall")

    def confirmation_id(self, arguments: str | Mapping[str, Any]) -> str | None:
        """The id a confirmation of a call with ``arguments`` has; None if it needs none.

        Raises:
            ToolArgumentsError: Invalid arguments.
        """
        if not self.requires_confirmation:
            return None
        return confirmation_id(self.name, self._shown(self.parse_arguments(arguments)))

    def dump_outputs(self, outputs: Mapping[str, Any]) -> dict[str, Any]:
        """The outputs of `acall` as JSON-ready data (union members carry ``_type``)."""
        return to_jsonable_fields(outputs, self.signature.output_fields)

    # -- export ------------------------------------------------------------------------------

    def to_openai_tool(self, target: str = "openai-strict") -> dict[str, Any]:
        """The Chat Completions ``tools`` entry: a function with the input schema.

        Send it with ``parallel_tool_calls: false`` (strict tools and parallel calls do not mix).
        The description is left out when it is empty. The parameters object is closed
        (``additionalProperties: false``) in every target, as the arguments are checked.

        Args:
            target: The schema target (an LM's ``profile.target``); ``strict`` is sent as the
                target says.

        Raises:
            SchemaError: An input type the target cannot express.
        """
        parameters, strict = self._openai_parameters(target)
        function: dict[str, Any] = {"name": self.name}
        if self.description:
            function["description"] = self.description
        function["parameters"] = parameters
        function["strict"] = strict
        return {"type": "function", "function": function}

    def _openai_parameters(self, target: str) -> tuple[dict[str, Any], bool]:
        """`to_openai_tool`'s ``parameters`` for ``target``, and whether they are strict."""
        if not self.signature.input_fields:
            # The compiler refuses a property-less object (as an output); a tool may have one.
            empty = {
                "type": "object",
                "properties": {},
                "required": [],
                "additionalProperties": False,
            }
            return empty, True
        compiled = compile_schema(self.signature.input_model, target)
        # `parse_arguments` refuses names that are not parameters, so the schema says so too:
        # a server enforcing a json-schema target's schema otherwise lets the model add
        # properties (ADR-072; the strict target closes every object).
        return _exported({**compiled.schema, "additionalProperties": False}), compiled.strict

    def to_mcp_tool(self) -> dict[str, Any]:
        """The MCP tool definition: name, description, inputSchema and outputSchema.

        Both schemas are full JSON Schema objects (``type: "object"``) from the json-schema
        target: defaults and constraints kept, union members tagged with ``_type``; the input
        object is closed (``additionalProperties: false``), as the arguments are checked.
        ``title`` is included when set, ``description`` when not empty.
        """
        tool: dict[str, Any] = {"name": self.name}
        if self.title is not None:
            tool["title"] = self.title
        if self.description:
            tool["description"] = self.description
        inputs = compile_schema(self.signature.input_model, "json-schema").schema
        outputs = compile_schema(self.signature, "json-schema").schema
        tool["inputSchema"] = _exported({**inputs, "additionalProperties": False})  # as checked
        tool["outputSchema"] = _exported(outputs)
        return tool

    # -- internals ---------------------------------------------------------------------------

    def _shown(self, arguments: dict[str, Any]) -> dict[str, Any]:
        return {
            name: to_jsonable(arguments[name], info.annotation)
            for name, info in self.signature.input_fields.items()
        }

    def _confirmed(self, arguments: dict[str, Any]) -> dict[str, Any]:
        if not self.requires_confirmation:
            return arguments
        shown = self._shown(arguments)
        edits = require_confirmation(self.name, shown, self.confirmation_question)
        if edits is None:
            return arguments
        return self.parse_arguments({**shown, **edits})

    async def _run(self, arguments: dict[str, Any]) -> dict[str, Any]:
        depth = current().tool_depth
        if depth >= MAX_TOOL_DEPTH:
            raise ToolError(
                f"{self.name} was not run: tool calls nest {MAX_TOOL_DEPTH} deep here "
                "(MAX_TOOL_DEPTH; a tool calling its own agent?)"
            )
        saved = TOOL_DEPTH.set(depth + 1)
        try:
            # A sync one in a worker thread with the contextvars: settings (ts.context) apply.
            result = await call_user(self.impl, **arguments)
        except asyncio.CancelledError as exc:  # the call's own, or the implementation's
            raise own_cancellation(self.name, exc) from exc
        finally:
            TOOL_DEPTH.restore(saved)
        return check_result(self.name, self.signature, result, self._result_models)


def _exported(schema: Mapping[str, Any]) -> dict[str, Any]:
    # A copy: compiled schemas are shared through the compiler's cache (which never holds an
    # empty `$defs`: the generator drops definitions nothing refers to).
    return copy.deepcopy(dict(schema))


def _function_name(fn: Callable[..., Any]) -> str:
    target = unwrapped(fn)
    return str(getattr(target, "__name__", type(target).__name__))


def _lookup(module: str, qualname: str) -> Any:
    """The object a module-level dotted name refers to (None when there is none)."""
    target: Any = sys.modules.get(module) or importlib.import_module(module)
    for part in qualname.split("."):
        target = getattr(target, part, None)
    return target


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None
) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a function a tool; bare (``@ts.tool``) or configured (``@ts.tool(name=...)``).

    The schema comes from the type hints and the descriptions from the Google-style docstring,
    as in `Tool.from_function`. The result is a `Tool`: call it with keyword arguments
    (synchronously) or ``await search.acall({...})``.

    Example:
        ```python
        @ts.tool
        async def search(query: str, limit: int = 5) -> list[str]:
            \"\"\"Search the index; `query` is what to look for.\"\"\"
            ...
        ```

    Args:
        fn: The function (when used bare).
        name: The tool name; the function's name when None.
        description: Overrides the docstring's description.

    Raises:
        ToolError: As for `Tool.from_function`.
    """
    if fn is not None:
        return Tool.from_function(fn, name=name, description=description)

    def wrap(function: Callable[..., Any]) -> Tool:
        return Tool.from_function(function, name=name, description=description)

    return wrap
