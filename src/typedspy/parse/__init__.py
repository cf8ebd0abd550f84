from typedspy.parse._runaway import RunawayKind, runaway_kind, split_reasoning
from typedspy.parse._validate import ParseFailure, ParseResult, parse_outputs, validate_outputs

__all__ = [
    "ParseFailure",
    "ParseResult",
    "RunawayKind",
    "parse_outputs",
    "runaway_kind",
    "split_reasoning",
    "validate_outputs",
]
