"""The one divergence key: "is this the same divergence?" asked by every stage the same way.

The minimizer (is a candidate still interesting?), triage (does a knob make it vanish?), the
bisector, recheck, the nightly, capture's check against the user's file and ``repro.py`` all
compare ``DivergenceKey``s. A key is plain data (it is serialised into repro files): the kind
(``int-flip`` is strong evidence by definition, ``weak-flip`` another kind, so a strong flip never
shrinks into a weak one); for value divergences the output node (node ids survive minimization,
output positions do not); for crashes and timeouts the exception type and the innermost frames
inside torch where it was raised.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from fuzzer.judge.oracle import Verdict

RAISED = ("crash", "timeout")  # kinds told apart by the exception, not by an output


@dataclass(frozen=True)
class DivergenceKey:
    kind: str  # a strong int-flip and a weak-flip are different kinds: evidence is in the key
    node: int | None = None
    error: str = ""
    frames: tuple[str, ...] = ()

    @classmethod
    def of(cls, verdict: Verdict) -> DivergenceKey:
        if verdict.kind in RAISED:
            return cls(verdict.kind, None, error_type(verdict.message), tuple(verdict.frames))
        return cls(verdict.kind, verdict.node)

    def to_dict(self) -> dict:
        return {**asdict(self), "frames": list(self.frames)}


def error_type(message: str) -> str:
    """``RuntimeError`` from ``RuntimeError: boom (at x.py:3)``: what a crash is told apart by."""
    return message.split(":", 1)[0].strip()


def same_divergence(target: Verdict, verdict: Verdict) -> bool:
    """Does ``verdict`` show the divergence ``target`` recorded? Never true for a non-finding."""
    return verdict.is_finding and DivergenceKey.of(verdict) == DivergenceKey.of(target)
