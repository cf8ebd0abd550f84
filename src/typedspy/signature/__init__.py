# The package's interface to typedspy's other packages (not public API): they import from the
# package, never from its modules (ADR-034, checked by import-linter).
from typedspy.signature._declared import field_type_error as field_type_error
from typedspy.signature._dispatch import NOMATCH_TAG as NOMATCH_TAG
from typedspy.signature._dispatch import OTHER_TAG as OTHER_TAG
from typedspy.signature._dispatch import TAG_PREFIX as TAG_PREFIX
from typedspy.signature._dispatch import TYPE_KEY as TYPE_KEY
from typedspy.signature._dispatch import decode_json_once as decode_json_once
from typedspy.signature._dispatch import is_model as is_model
from typedspy.signature._dispatch import is_union as is_union
from typedspy.signature._dispatch import resolve_name as resolve_name
from typedspy.signature._dispatch import to_jsonable
from typedspy.signature._dispatch import to_jsonable_fields as to_jsonable_fields
from typedspy.signature._dispatch import unsendable as unsendable
from typedspy.signature._dispatch import wire_names as wire_names
from typedspy.signature._fields import InputField, OutputField
from typedspy.signature._fields import copy_field as copy_field
from typedspy.signature._fields import without_role as without_role
from typedspy.signature._parse import make_signature
from typedspy.signature._returns import Returns
from typedspy.signature._returns import returns_signature as returns_signature
from typedspy.signature._signature import Signature, build_signature
from typedspy.signature._texts import FieldTexts as FieldTexts
from typedspy.signature._texts import SignatureTexts as SignatureTexts
from typedspy.signature._texts import texts_errors as texts_errors
from typedspy.signature._texts import texts_of as texts_of
from typedspy.signature._texts import with_texts as with_texts
from typedspy.signature._unions import TypeRewriter as TypeRewriter

__all__ = [
    "InputField",
    "OutputField",
    "Returns",
    "Signature",
    "build_signature",
    "make_signature",
    "to_jsonable",
]
