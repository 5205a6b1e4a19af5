"""The order a maintainer's time goes in: root causes by value class, then by evidence.

What the nightly drafts first, SUMMARY.md lists first and ``numfuzz findings`` shows first:
a cause's value class (``triage.value``: a silent wrong value on ordinary inputs before a crash,
edge values and signed zeros last; a cause recorded before classes after every class), then the
strength of its evidence within the class (``rank_key``), then the oldest.
"""

from __future__ import annotations

from fuzzer.judge.kinds import Kind
from fuzzer.report.store import Finding
from fuzzer.triage import value

FAR_ULPS = 1.0  # a flip at least this far from its boundary ranks above the rest


def rank_key(kind: str, distance_ulps: float | None) -> tuple:
    """Evidence within a value class: a memory-unsafe write, non-finite values, flips far from
    their boundary (farthest first), broken promises and aliasing, then the rest."""
    if kind == Kind.MEMORY:
        return (0, 0.0)
    if kind == Kind.NONFINITE:
        return (1, 0.0)
    if kind == Kind.INT_FLIP and distance_ulps is not None and distance_ulps >= FAR_ULPS:
        return (2, -distance_ulps)
    rest = (Kind.PROMISE, Kind.ALIASING, Kind.INT_FLIP, Kind.HIDDEN_NONFINITE, Kind.META,
            Kind.CRASH, Kind.TIMEOUT, Kind.ACCURACY, Kind.SIGNED_ZERO)
    position = rest.index(kind) if kind in rest else len(rest)
    return (3, position, -(distance_ulps or 0.0))


def ranked(findings: list[Finding]) -> list[Finding]:
    """What maintainers fix first: by value class (``triage.value``; a cause recorded before
    classes last), then by evidence (``rank_key``), then oldest."""
    return sorted(findings, key=lambda f: (f.value_class or value.UNKNOWN,
                                           rank_key(f.kind, f.distance_ulps), f.first_seen))
