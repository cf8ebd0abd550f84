from typedspy.parse._validate import ParseFailure, ParseResult, parse_outputs, validate_outputs

__all__ = ["ParseFailure", "ParseResult", "parse_outputs", "validate_outputs"]
