"""Limits on what calls may spend: `Budget`, `RateLimit`, and per-block usage meters."""

from typedspy.limits._budget import Budget
from typedspy.limits._meter import UsageMeter, estimate_tokens, metering, record
from typedspy.limits._rate import RateLimit, parse_reset

__all__ = [
    "Budget",
    "RateLimit",
    "UsageMeter",
    "estimate_tokens",
    "metering",
    "parse_reset",
    "record",
]
