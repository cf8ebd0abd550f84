# The package's interface to typedspy's other packages (not public API): they import from the
# package, never from its modules (ADR-034, checked by import-linter).
from typedspy.parse._lenient import LenientDecodeError as LenientDecodeError
from typedspy.parse._lenient import decode_lenient as decode_lenient
from typedspy.parse._partial import PartialParser as PartialParser
from typedspy.parse._reasoning import ReasoningSplitter, split_reasoning
from typedspy.parse._runaway import RunawayKind, runaway_kind
from typedspy.parse._validate import ParseFailure, ParseResult, parse_outputs, validate_outputs
from typedspy.parse._validate import field_errors as field_errors
from typedspy.parse._validate import field_value as field_value

__all__ = [
    "ParseFailure",
    "ParseResult",
    "ReasoningSplitter",
    "RunawayKind",
    "parse_outputs",
    "runaway_kind",
    "split_reasoning",
    "validate_outputs",
]
