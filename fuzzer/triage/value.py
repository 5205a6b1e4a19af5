"""What a cause is worth to a maintainer: its value class, from its minimized case.

Maintainers fix silent wrong values on ordinary inputs within days, take aliasing and memory
safety seriously, and close reports that need inf, NaN or values near the largest float as edge
cases (field notes, "What maintainers fix"). The classes, best first:

1. a silent wrong value, or a memory-unsafe write, on ordinary inputs (every input finite, none
   near its dtype's largest value, none subnormal, none empty: ``gen.domains.edge_mask``);
2. wrong aliasing or mutation semantics (which outputs share storage with which inputs, an input
   compiled writes that the program never does);
3. a compile error or crash on valid code;
4. a divergence that needs edge inputs (the minimizer tried ordinary ones in their place:
   ``reduce.shrinker.tame_edge_values``);
5. a signed zero or a NaN's sign, however it shows (through ``copysign`` a zero of the wrong sign
   is a wrong value: the first divergent op says what it is, ``triage.locate``).

A memory-unsafe write is class 1 whatever its inputs. The nightly minimizes, triages and drafts
in class order (then by evidence), a draft's first line says the class in words, and a new cause
earns its arm ``WEIGHT`` (``campaign.arms``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fuzzer.corpus.case import Case
from fuzzer.gen import domains
from fuzzer.judge.kinds import CRASHES, Kind

CLASSES = {
    1: "a silent wrong value or a memory-unsafe write on ordinary inputs",
    2: "wrong aliasing or mutation semantics",
    3: "a compile error or crash on valid code",
    4: "needs edge inputs",
    5: "a signed zero or a NaN's sign",
}
# What a new cause of each class earns its arm: the order maintainers fix them in.
WEIGHT = {1: 1.0, 2: 1.0, 3: 0.5, 4: 0.2, 5: 0.1}
UNKNOWN = 6  # a cause recorded before value classes: after every class
FLOAT32_MAX, FLOAT32_TINY = 3.4028234663852886e38, 1.1754943508222875e-38  # a constant's scale


@dataclass(frozen=True)
class ValueClass:
    number: int
    why: str  # what decided it, in words

    @property
    def words(self) -> str:
        return CLASSES.get(self.number, "not classed")

    @property
    def weight(self) -> float:
        return WEIGHT.get(self.number, 0.0)

    def line(self) -> str:
        """The draft's first line."""
        return f"Value class {self.number} of 5: {self.words} ({self.why})."


def classify(case: Case, mechanism: dict | None = None) -> ValueClass:
    """The value class of a (minimized) case; ``mechanism`` is what its first divergent op
    showed (``triage.locate.mechanism``: ``kind``), where located."""
    verdict = case.verdict
    kind = verdict.kind if verdict is not None else None
    shown = (mechanism or {}).get("kind")
    if kind == Kind.SIGNED_ZERO or shown == Kind.SIGNED_ZERO:
        where = (mechanism or {}).get("op") if shown == Kind.SIGNED_ZERO else None
        return ValueClass(5, f"a zero of the other sign first appears at {where}" if where
                          else "compiled gives a zero of the other sign")
    if kind == Kind.MEMORY:
        return ValueClass(1, "a compiled kernel reads or writes outside its buffers")
    edges = edge_inputs(case)
    if edges:
        return ValueClass(4, edges)
    if kind == Kind.ALIASING:
        return ValueClass(2, "storage shared, or an input written, unlike eager")
    if kind in CRASHES:
        return ValueClass(3, "eager runs the program; compiled raises or hangs")
    return ValueClass(1, "every input finite and ordinary")


def edge_inputs(case: Case) -> str:
    """Why the case needs edge values ('' when it does not): its inputs (``domains.edge_words``)
    or its constants (non-finite, near float32's largest, subnormal)."""
    said = []
    for n in case.graph.input_ids():
        t = case.inputs.get(str(n))
        words = domains.edge_words(t) if t is not None else []
        if words:
            said.append(f"input {case.graph.var(n)} holds {' and '.join(words)}"
                        if words != ["empty"] else f"input {case.graph.var(n)} is empty")
    for n in case.graph.op_ids():
        for key, value in case.graph.node(n).attrs.items():
            if isinstance(value, float) and _edge_constant(value):
                said.append(f"the constant {key}={value!r} of {case.graph.node(n).label}")
    return "; ".join(said[:3])


def _edge_constant(value: float) -> bool:
    if not math.isfinite(value):
        return True
    magnitude = abs(value)
    return magnitude >= FLOAT32_MAX * domains.NEAR_MAX or 0 < magnitude < FLOAT32_TINY
