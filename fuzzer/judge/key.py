"""The one divergence key: "is this the same divergence?" asked by every stage the same way.

The minimizer (is a candidate still interesting?), triage (does a knob make it vanish?), the
bisector, recheck, the nightly, capture's check against the user's file and ``repro.py`` all
compare ``DivergenceKey``s. A key is plain data (it is serialised into repro files): the kind; for
value divergences the output node (node ids survive minimization, output positions do not); for
crashes and timeouts the exception type.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from fuzzer.judge.oracle import Verdict

RAISED = ("crash", "timeout")  # kinds told apart by the exception, not by an output


@dataclass(frozen=True)
class DivergenceKey:
    kind: str
    node: int | None = None
    error: str = ""

    @classmethod
    def of(cls, verdict: Verdict) -> DivergenceKey:
        if verdict.kind in RAISED:
            return cls(verdict.kind, None, error_type(verdict.message))
        return cls(verdict.kind, verdict.node)

    def to_dict(self) -> dict:
        return asdict(self)


def error_type(message: str) -> str:
    """``RuntimeError`` from ``RuntimeError: boom (at x.py:3)``: what a crash is told apart by."""
    return message.split(":", 1)[0].strip()


def same_divergence(target: Verdict, verdict: Verdict) -> bool:
    """Does ``verdict`` show the divergence ``target`` recorded? Never true for a non-finding."""
    return verdict.is_finding and DivergenceKey.of(verdict) == DivergenceKey.of(target)
