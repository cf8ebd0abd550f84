from typedspy.schema._compile import CompiledSchema, Target, compile_schema

__all__ = ["CompiledSchema", "Target", "compile_schema"]
