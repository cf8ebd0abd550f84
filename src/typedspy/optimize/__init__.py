"""Optimizers: demos chosen from data (labelled, bootstrapped, searched, nearest)."""

from __future__ import annotations

from typedspy.optimize._base import Optimizer, Plan
from typedspy.optimize._bootstrap import BootstrapFewShot, BootstrapResult
from typedspy.optimize._knn import KNNFewShot, KNNProgram
from typedspy.optimize._labeled import LabeledFewShot
from typedspy.optimize._random_search import BootstrapFewShotWithRandomSearch, Candidate

__all__ = [
    "BootstrapFewShot",
    "BootstrapFewShotWithRandomSearch",
    "BootstrapResult",
    "Candidate",
    "KNNFewShot",
    "KNNProgram",
    "LabeledFewShot",
    "Optimizer",
    "Plan",
]
