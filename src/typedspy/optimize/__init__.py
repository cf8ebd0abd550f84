"""Optimizers: demos chosen from data (labelled, bootstrapped, searched, nearest); texts evolved.

`GEPA` needs the ``gepa`` extra; the package is imported only when a `GEPA` is made.
"""

from __future__ import annotations

from typedspy.optimize._base import Optimizer, Plan
from typedspy.optimize._bootstrap import BootstrapFewShot, BootstrapResult
from typedspy.optimize._gepa import GEPA, GEPAPlan
from typedspy.optimize._gepa_run import GEPACandidate, GEPAResult
from typedspy.optimize._knn import KNNFewShot, KNNProgram
from typedspy.optimize._labeled import LabeledFewShot
from typedspy.optimize._random_search import BootstrapFewShotWithRandomSearch, Candidate
from typedspy.optimize._stratify import Coverage, demo_class
from typedspy.optimize._verify import VerifyReport, averify, devset_hash, verify

__all__ = [
    "GEPA",
    "BootstrapFewShot",
    "BootstrapFewShotWithRandomSearch",
    "BootstrapResult",
    "Candidate",
    "Coverage",
    "GEPACandidate",
    "GEPAPlan",
    "GEPAResult",
    "KNNFewShot",
    "KNNProgram",
    "LabeledFewShot",
    "Optimizer",
    "Plan",
    "VerifyReport",
    "averify",
    "demo_class",
    "devset_hash",
    "verify",
]
