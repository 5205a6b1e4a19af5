"""The one divergence key: "is this the same divergence?" asked by every stage the same way.

The minimizer (is a candidate still interesting?), triage (does a knob make it vanish?), the
bisector, recheck, the nightly, capture's check against the user's file and ``repro.py`` all
compare ``DivergenceKey``s. A key is plain data (it is serialised into repro files): the kind
(``int-flip`` is strong evidence by definition, ``weak-flip`` another kind, so a strong flip never
shrinks into a weak one); for value divergences the output node (node ids survive minimization,
output positions do not), or for a gradient (``--training``) the input node it is taken for;
for crashes and timeouts the exception type and the innermost frames
inside torch where it was raised; for the state a program leaves behind (it writes its inputs),
the input node whose value after the call diverged. ``moved`` is the one way the key's output
node changes: the same divergence wanted on an earlier node made the output (the shrinker's
``output_earlier_node``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from fuzzer.ir.ops import FLOAT_DTYPES
from fuzzer.judge.kinds import FLIPS, RAISED, Kind
from fuzzer.judge.verdict import OutputVerdict, Verdict

FLOAT_KINDS = (Kind.NONFINITE, Kind.HIDDEN_NONFINITE, Kind.ACCURACY,  # judged on float outputs
               Kind.SIGNED_ZERO)


@dataclass(frozen=True)
class DivergenceKey:
    kind: Kind  # a strong int-flip and a weak-flip are different kinds: evidence is in the key
    node: int | None = None
    error: str = ""
    frames: tuple[str, ...] = ()
    gradient: bool = False  # node is the input whose gradient diverged, not an output node
    state: bool = False  # node is the input whose value after the call diverged

    @classmethod
    def of(cls, verdict: Verdict) -> DivergenceKey:
        if verdict.kind == Kind.MEMORY:  # one bug whatever way the process died this time (a
            return cls(verdict.kind)  # glibc abort in one run, a segfault in the next)
        if verdict.kind in RAISED:
            return cls(verdict.kind, None, error_type(verdict.message), tuple(verdict.frames))
        out = verdict.diverging
        return cls.of_output(out) if out is not None else cls(verdict.kind, verdict.node)

    @classmethod
    def of_output(cls, out: OutputVerdict) -> DivergenceKey:
        return cls(out.kind, out.node, gradient=out.details.gradient_of is not None,
                   state=out.details.state_of is not None)

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


def shows_on(kind: Kind, dtype: str) -> bool:
    """Can an output of ``dtype`` show a divergence of ``kind``? Float outputs are judged by the
    float rules (non-finite, accuracy), every other dtype by the discrete ones (flips); a shape
    or dtype change, a crash or a hang can show anywhere."""
    if kind in FLOAT_KINDS:
        return dtype in FLOAT_DTYPES
    if kind in FLIPS:
        return dtype not in FLOAT_DTYPES
    return True


def moved(target: Verdict, node: int, dtype: str) -> Verdict:
    """``target``'s divergence, wanted on output node ``node`` (of ``dtype``) instead of its own:
    what a candidate whose output moved to an earlier node must show to keep the same key. A crash
    or hang names no node, so it is wanted as it is."""
    if target.kind in RAISED:
        return target
    out = target.diverging
    kind = out.kind if out is not None else target.kind
    position = target.output if target.output is not None else 0
    return Verdict(kind, position, node, [OutputVerdict(position, node, kind, dtype)])
