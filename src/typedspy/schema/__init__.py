from typedspy.schema._check import validate_instance
from typedspy.schema._compile import (
    SCHEMA_COMPILER_VERSION,
    CompiledSchema,
    Target,
    compile_schema,
)

__all__ = [
    "SCHEMA_COMPILER_VERSION",
    "CompiledSchema",
    "Target",
    "compile_schema",
    "validate_instance",
]
