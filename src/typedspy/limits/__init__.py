"""Limits on what calls may spend: `Budget`, `RateLimit`, and per-block usage meters."""

from typedspy.limits._budget import Budget, Reservation
from typedspy.limits._budget import price_of as price_of
from typedspy.limits._meter import (
    Spent,
    UsageMeter,
    completion_cap,
    estimate_tokens,
    metering,
    record,
    record_sent,
    spending,
    usage_counted,
)
from typedspy.limits._rate import RateLimit, parse_reset

__all__ = [
    "Budget",
    "RateLimit",
    "Reservation",
    "Spent",
    "UsageMeter",
    "completion_cap",
    "estimate_tokens",
    "metering",
    "parse_reset",
    "record",
    "record_sent",
    "spending",
    "usage_counted",
]
