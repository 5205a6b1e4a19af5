"""The one divergence key: "is this the same divergence?" asked by every stage the same way.

The minimizer (is a candidate still interesting?), triage (does a knob make it vanish?), the
bisector, recheck, the nightly, capture's check against the user's file and ``repro.py`` all
compare ``DivergenceKey``s. A key is plain data (it is serialised into repro files): the kind
(``int-flip`` is strong evidence by definition, ``weak-flip`` another kind, so a strong flip never
shrinks into a weak one); for value divergences the output node (node ids survive minimization,
output positions do not), or for a gradient (``--training``) the input node it is taken for;
for crashes and timeouts the exception type and the innermost frames
inside torch where it was raised.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from fuzzer.judge.kinds import RAISED, Kind
from fuzzer.judge.oracle import OutputVerdict, Verdict


@dataclass(frozen=True)
class DivergenceKey:
    kind: Kind  # a strong int-flip and a weak-flip are different kinds: evidence is in the key
    node: int | None = None
    error: str = ""
    frames: tuple[str, ...] = ()
    gradient: bool = False  # node is the input whose gradient diverged, not an output node

    @classmethod
    def of(cls, verdict: Verdict) -> DivergenceKey:
        if verdict.kind in RAISED:
            return cls(verdict.kind, None, error_type(verdict.message), tuple(verdict.frames))
        out = verdict.diverging
        return cls.of_output(out) if out is not None else cls(verdict.kind, verdict.node)

    @classmethod
    def of_output(cls, out: OutputVerdict) -> DivergenceKey:
        return cls(out.kind, out.node, gradient="gradient_of" in out.details)

    def to_dict(self) -> dict:
        return {**asdict(self), "kind": str(self.kind), "frames": list(self.frames)}


def error_type(message: str) -> str:
    """``RuntimeError`` from ``RuntimeError: boom (at x.py:3)``: what a crash is told apart by."""
    return message.split(":", 1)[0].strip()


def same_divergence(target: Verdict, verdict: Verdict) -> bool:
    """Does ``verdict`` show the divergence ``target`` recorded, as its worst or on any of its
    outputs (a candidate whose other outputs now diverge worse still holds the target's: a
    training run's gradients often diverge together)? Never true for a non-finding."""
    if not verdict.is_finding:
        return False
    want = DivergenceKey.of(target)
    if DivergenceKey.of(verdict) == want:
        return True
    return want.kind not in RAISED and \
        any(DivergenceKey.of_output(o) == want for o in verdict.outputs)


def focus(target: Verdict, verdict: Verdict) -> Verdict:
    """``verdict`` naming the output that shows ``target``'s divergence (``same_divergence``),
    when its worst output is another one: what a minimized case records and its repro checks."""
    want = DivergenceKey.of(target)
    if DivergenceKey.of(verdict) == want or want.kind in RAISED:
        return verdict
    for out in verdict.outputs:
        if DivergenceKey.of_output(out) == want:
            return replace(verdict, kind=out.kind, output=out.output, node=out.node)
    return verdict
