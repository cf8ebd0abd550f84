"""Limits on what calls may spend: `Budget`, `RateLimit`, and per-block usage meters."""

from typedspy.limits._budget import Budget, Reservation
from typedspy.limits._budget import price_of as price_of
from typedspy.limits._meter import (
    UsageMeter,
    completion_cap,
    estimate_tokens,
    metering,
    record,
    usage_counted,
)
from typedspy.limits._rate import RateLimit, parse_reset

__all__ = [
    "Budget",
    "RateLimit",
    "Reservation",
    "UsageMeter",
    "completion_cap",
    "estimate_tokens",
    "metering",
    "parse_reset",
    "record",
    "usage_counted",
]
