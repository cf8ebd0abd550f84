from typedspy.schema._compile import (
    SCHEMA_COMPILER_VERSION,
    CompiledSchema,
    Target,
    compile_schema,
)

__all__ = ["SCHEMA_COMPILER_VERSION", "CompiledSchema", "Target", "compile_schema"]
