from typedspy.signature._fields import InputField, OutputField
from typedspy.signature._jsonable import to_jsonable
from typedspy.signature._parse import make_signature
from typedspy.signature._signature import Signature, build_signature

__all__ = [
    "InputField",
    "OutputField",
    "Signature",
    "build_signature",
    "make_signature",
    "to_jsonable",
]
