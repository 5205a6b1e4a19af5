"""The op registry: every op a graph may hold, and everything numfuzz knows about each, in one
entry per op (``spec.OpSpec``; NNSmith's style).

The grammar draws from it, the IR checks graphs against it and derives statement order from what
each op aliases and mutates, the renderer turns nodes into Python through each entry's template,
the oracle asks discrete heads how far a float64 value sits from their discontinuity and which
ops round, capture asks which torch calls an op renders. Nothing else keeps a list of ops.

The package is split by family (``pointwise``, ``reductions``, ``nn``, ``layout``, ``heads``,
``state``, ``selection``: ops whose outputs are indices, ``indexing``: ops reading indices,
``vocabulary``: the rest of torch's elementwise, scan, layout and GEMM ops, ``decomposed``: ops
the compiler rewrites into others);
importing it registers them all. ``from fuzzer.ir import ops`` and ``ops.X`` reach everything.
"""

from fuzzer.ir.ops import (  # noqa: F401
    decomposed,
    heads,
    indexing,
    layout,
    nn,
    pointwise,
    reductions,
    selection,
    state,
    vocabulary,
)
from fuzzer.ir.ops.base import (
    DISCRETE_DTYPES,
    FLOAT_DTYPES,
    MAX_NUMEL,
    Boundary,
    InvalidGraph,
    Shape,
    literal,
    probe,
    torch_dtype,
)
from fuzzer.ir.ops.boundaries import (
    compare_boundary,
    e8m0_boundary,
    multiple_boundary,
    quant_boundary,
    round_boundary,
    sign_boundary,
    to_int_boundary,
)
from fuzzer.ir.ops.shapes import broadcast
from fuzzer.ir.ops.spec import (
    REGISTRY,
    OpSpec,
    Selects,
    accepts,
    alias_of,
    by_meta,
    capturing,
    evaluate,
    infer,
    is_statement,
    label,
    lift_exact,
    mutates,
    register,
    spec,
    tagged,
)

__all__ = [
    "DISCRETE_DTYPES", "FLOAT_DTYPES", "MAX_NUMEL", "REGISTRY", "Boundary", "InvalidGraph",
    "OpSpec", "Selects", "Shape", "accepts", "alias_of", "broadcast", "by_meta", "capturing",
    "compare_boundary", "e8m0_boundary", "evaluate", "infer", "is_statement", "label",
    "lift_exact", "literal", "multiple_boundary", "mutates", "probe", "quant_boundary",
    "register", "round_boundary", "sign_boundary", "spec", "tagged", "to_int_boundary",
    "torch_dtype",
]
