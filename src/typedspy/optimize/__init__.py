"""Optimizers: demos chosen from data (labelled, bootstrapped, searched, nearest)."""

from __future__ import annotations

from typedspy.optimize._base import Optimizer, Plan
from typedspy.optimize._bootstrap import BootstrapFewShot, BootstrapResult
from typedspy.optimize._labeled import LabeledFewShot

__all__ = ["BootstrapFewShot", "BootstrapResult", "LabeledFewShot", "Optimizer", "Plan"]
