# The package's interface to typedspy's other packages (not public API): they import from the
# package, never from its modules (ADR-034, checked by import-linter).
from typedspy.schema._check import meta_schema_violation as meta_schema_violation
from typedspy.schema._check import validate_instance
from typedspy.schema._compile import (
    SCHEMA_COMPILER_VERSION,
    CompiledSchema,
    Target,
    compile_schema,
)
from typedspy.schema.targets._openai_rules import check_name as check_name
from typedspy.schema.targets._openai_rules import check_openai_strict as check_openai_strict
from typedspy.schema.targets._openai_rules import format_violation as format_violation
from typedspy.schema.targets.openai_strict import to_openai_strict as to_openai_strict

__all__ = [
    "SCHEMA_COMPILER_VERSION",
    "CompiledSchema",
    "Target",
    "compile_schema",
    "validate_instance",
]
