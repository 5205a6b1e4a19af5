"""Verdict kinds and the orders over them: what a verdict can say, and which kinds are findings.

Kept apart from ``oracle`` and free of torch, so what only needs to name a kind (the worker pool,
the command line) does not load torch to do it.
"""

from __future__ import annotations

from enum import StrEnum


class Kind(StrEnum):
    """What a verdict says. A ``str`` too: files and JSON hold the value, ``rules`` (embedded in
    repro files, which know no numfuzz) returns plain strings that compare equal."""

    NONFINITE = "nonfinite"
    INT_FLIP = "int-flip"
    HIDDEN_NONFINITE = "hidden-nonfinite"
    META = "meta"
    ALIASING = "aliasing"  # which outputs share storage with inputs, or what compiled wrote
    CRASH = "crash"
    TIMEOUT = "timeout"
    WORKER_KILL = "worker-kill"
    ACCURACY = "accuracy"
    SIGNED_ZERO = "signed-zero"  # a zero of the other sign, where the program defines it
    PARITY = "parity"
    WEAK_FLIP = "weak-flip"
    BENIGN = "benign"
    # A divergence that vanishes with emulate_precision_casts: Inductor keeps fp16/bf16 round
    # trips in float32 by default, on purpose (``execute.runner.expected_by_default``).
    EXPECTED = "expected"
    OK = "ok"
    SKIP = "skip"
    EAGER_NONFINITE = "eager-nonfinite"  # read from older case files, never produced now


# Most severe first. Everything in SEVERITY is a finding; the rest are not.
SEVERITY = (Kind.NONFINITE, Kind.INT_FLIP, Kind.HIDDEN_NONFINITE, Kind.META, Kind.ALIASING,
            Kind.CRASH, Kind.TIMEOUT, Kind.WORKER_KILL, Kind.ACCURACY, Kind.SIGNED_ZERO,
            Kind.PARITY)
# Not findings, but counted: saved only with --keep-benign.
COUNTED = (Kind.WEAK_FLIP, Kind.BENIGN, Kind.EXPECTED)
RANK = SEVERITY + COUNTED  # how outputs and draws are ordered when picking the case's verdict
RAISED = (Kind.CRASH, Kind.TIMEOUT)  # told apart by the exception, not by an output
FLIPS = (Kind.INT_FLIP, Kind.WEAK_FLIP, Kind.PARITY)  # discrete codes that differ
POLICIES = ("float64", "parity")  # what a discrete mismatch is judged against (--policy)
