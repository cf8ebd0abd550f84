"""Endpoint profiles: the one home of what an endpoint accepts and how it fails (ADR-016)."""

from __future__ import annotations

from typedspy.errors import ConfigurationError
from typedspy.profiles._builtin import PROFILE_NAMES, builtin, detect_profile, model_for_endpoint
from typedspy.profiles._detect import Identification, identify_server

# For typedspy.lm, which sends the probe's canaries (not public API).
from typedspy.profiles._probe import Canary as Canary
from typedspy.profiles._probe import Capability, Finding, ProbeReport, Verdict
from typedspy.profiles._probe import Seen as Seen
from typedspy.profiles._probe import canaries as canaries
from typedspy.profiles._probe import findings as findings
from typedspy.profiles._profile import LoopRemedy, Mode, Profile
from typedspy.profiles._profile import token_cap_problem as token_cap_problem

__all__ = [
    "PROFILE_NAMES",
    "Capability",
    "Finding",
    "Identification",
    "LoopRemedy",
    "Mode",
    "ProbeReport",
    "Profile",
    "Verdict",
    "builtin",
    "detect_profile",
    "identify_server",
    "model_for_endpoint",
    "resolve_profile",
]


def resolve_profile(profile: str | Profile | None, base_url: str | None) -> Profile:
    """The profile an LM owns: a built-in by name, a copy of an instance, or the detected one.

    Raises:
        ConfigurationError: An unknown profile name, or something that is not a profile.
    """
    if profile is None:
        return builtin(detect_profile(base_url) or "generic")
    if isinstance(profile, str):
        return builtin(profile)
    if isinstance(profile, Profile):
        return profile.derive()
    raise ConfigurationError(
        f"profile must be a name or a ts.Profile, not {type(profile).__name__}"
    )
