"""How big a case is to read: the one total order every shrink pass must descend (``size_key``).

Ops first (each is a line a maintainer reads), then input elements (a tensor printed in the
repro), then its edge values (inf, NaN, near the largest, subnormal: a report that needs none is
one maintainers fix), then the digits its constants and inputs take to write, then a float32 case
before a half-precision one (float32 says precision is not the point).
"""

from __future__ import annotations

import torch

from fuzzer.corpus.case import Case
from fuzzer.gen import domains


def elements(case: Case) -> int:
    return sum(t.numel() for t in case.inputs.values())


def size_key(case: Case) -> tuple[int, int, int, int, int, int]:
    """The total order candidates must descend: ops, views passed as arguments of their own
    (each one a second function and a caller to read), input elements, edge values, constant
    digits, and a float32 case before a half-precision one."""
    return (len(case.graph), len(case.graph.passed_views()), elements(case), edge_values(case),
            constant_digits(case), int(case.dtype != "float32"))


def edge_values(case: Case) -> int:
    """Input elements that are edge values (``gen.domains.edge_mask``)."""
    return sum(int(domains.edge_mask(t).sum()) for t in case.inputs.values() if t.numel())


def constant_digits(case: Case) -> int:
    """How much there is to read in the constants: characters of every float attribute, plus the
    mantissa bits every float input element needs (0 for zeros and powers of two)."""
    graph = case.graph
    chars = sum(len(repr(v)) for n in graph.op_ids() for v in graph.node(n).attrs.values()
                if isinstance(v, float))
    return chars + sum(mantissa_bits(t) for t in case.inputs.values() if t.is_floating_point())


def mantissa_bits(t: torch.Tensor) -> int:
    """Total significant bits after the leading one, over the finite elements of ``t``."""
    mantissa, _ = torch.frexp(t.double()[torch.isfinite(t)])
    bits = torch.zeros_like(mantissa, dtype=torch.long)
    scaled = mantissa.abs() * 2  # in [1, 2): the leading one is free
    for _ in range(53):
        frac = scaled - scaled.floor()
        more = frac != 0
        if not bool(more.any()):
            break
        bits += more.long()
        scaled = torch.where(more, scaled * 2, scaled)
    return int(bits.sum())
