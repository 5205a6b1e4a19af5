"""What a graph says about its outputs' elements before they are compared (the oracle's semantics).

Questions only the graph can answer, asked of the float64 (and eager) values of every node:
- how far each element of a discrete head sits from the head's discontinuity (ulps of the working
  dtype; measured before any float step such as ceil that feeds the head, where the jump really
  is), and whether that is farther than eager's own noise there, so a flip can be graded as
  evidence; and whether a head's codes are ordered (nearer is better) or only right or wrong;
- which elements are undefined: an integer converted from a float64 NaN (C++ leaves the result
  undefined; for an unclamped cast, also from inf or out of the integer's range; for ``frexp``'s
  exponent, also from inf), and index
  outputs (argmax/topk indices: ties make any answer valid), never compared;
- whether a float step further up (``round(x / 0.3)`` under a silu, ``x // 0.1`` on the other
  side of a compare) sits on a tie anywhere: its jump could be the flip, so none is strong;
- whether a discrete output is computed without floats at all (``EXACT``): integer arithmetic
  has no rounding noise, so every regressing element of it is strong evidence;
- the verdict itself: ``judge_graph`` hands all of it to ``oracle.judge``.
A value missing from ``values`` (a user's model judged on its outputs alone) means "no boundary,
nothing undefined" for that output.
"""

from __future__ import annotations

import math

import networkx as nx
import torch

from fuzzer.ir import generic, ops
from fuzzer.ir.graph import Graph, canonical_order
from fuzzer.judge import oracle, rules
from fuzzer.judge.oracle import Verdict

EXACT = "exact"  # evidence_source: a code computed without floats
INDEX_OPS = {"argmax", "argmin", "argsort"}  # always indices
INDEX_PICKS = {"topk", "sort", "max", "min", "kthvalue", "mode", "median"}  # element 1: indices
UNCLAMPED_CASTS = ("to_int32", "cast", "call")  # float to integer: out of range is undefined


def heads(graph: Graph, fp64: dict[int, torch.Tensor],
          eager: dict[int, torch.Tensor]) -> list[oracle.Head | None]:
    """Per output: the evidence its head gives (``rules.evidence``), or None for a float output,
    a head without a known discontinuity, or values that were not traced."""
    result: list[oracle.Head | None] = []
    for out in graph.outputs:
        source = evidence_source(graph, out)
        if source == EXACT:
            result.append(exact_head(fp64[out]) if out in fp64 else None)
            continue
        if source is None:
            result.append(None)
            continue
        at, boundary = source
        node = graph.node(at)
        if any(i not in fp64 or i not in eager for i in node.inputs):
            result.append(None)
            continue
        ins = [fp64[i].double().cpu() for i in node.inputs]
        head = oracle.Head(*rules.head_evidence(
            ins, eager[node.inputs[0]].cpu(), boundary, node.attrs,
            tuple(graph.node(out).shape), working_dtype(graph, at)))
        if any(_on_a_tie(graph, step, fp64, eager) for step in upstream_steps(graph, at)):
            head.strong = torch.zeros_like(head.strong)
        result.append(head)
    return result


def upstream_steps(graph: Graph, at: int) -> list[int]:
    """The float steps further up than the measuring point ``at`` (see ``evidence_source``), in
    canonical order: their jumps reach the head through ops the evidence cannot follow."""
    above = set().union(*(nx.ancestors(graph.g, i) | {i} for i in graph.node(at).inputs))
    return [n for n in canonical_order(graph) if n in above and step_of(graph, n) is not None]


def step_of(graph: Graph, node: int) -> ops.Boundary | None:
    """Where a one-input float step (floor, ceil, round, trunc, sign, ``x // c``) jumps."""
    data = graph.node(node)
    spec = ops.REGISTRY.get(data.op)
    if spec is None or spec.step is None or len(data.inputs) != 1 \
            or data.dtype not in ops.FLOAT_DTYPES:
        return None
    return spec.step


def _on_a_tie(graph: Graph, step: int, fp64: dict[int, torch.Tensor],
              eager: dict[int, torch.Tensor]) -> bool:
    source = graph.node(step).inputs[0]
    if source not in fp64 or source not in eager:
        return False
    return rules.on_a_tie([fp64[source].double().cpu()], eager[source].cpu(),
                          step_of(graph, step), graph.node(step).attrs,
                          working_dtype(graph, step))


FLOATS = tuple(ops.torch_dtype(d) for d in ops.FLOAT_DTYPES)


def working_dtype(graph: Graph, node: int) -> torch.dtype:
    """The float dtype whose ulps measure a jump at ``node``: its first input's, or, where that
    input is an integer tensor (``int_x // 0.3``), the float dtype the node computes in. Integer
    inputs are exact; the rounding that can land either side of the jump is the node's own. (Not
    a float dtype where neither is: then nothing at ``node`` has ulps.)"""
    source = graph.node(graph.node(node).inputs[0]).dtype
    own = graph.node(node).dtype
    if source in ops.FLOAT_DTYPES or own not in ops.FLOAT_DTYPES:
        return ops.torch_dtype(source)
    return ops.torch_dtype(own)


def evidence_source(graph: Graph, out: int) -> tuple[int, ops.Boundary] | str | None:
    """Where a discrete output's evidence is measured: ``EXACT`` when no float feeds it (integer
    arithmetic has no rounding noise); else the node whose first input is measured and the
    discontinuity there: the head's own, or, when a one-input head reads a float step
    (``sign(ceil(x))``), the step's, since the head can only flip where the step jumps; else
    None: no known discontinuity, or one whose inputs hold no floats although floats feed them
    further up (``all(a / b) < k``): no ulps to measure there."""
    node = graph.node(out)
    if node.dtype in ops.DISCRETE_DTYPES and not float_upstream(graph, out):
        return EXACT
    boundary = boundary_of(graph, node)
    if boundary is None:
        return None
    at = out
    while len(graph.node(at).inputs) == 1:
        step = step_of(graph, graph.node(at).inputs[0])
        if step is None:
            break
        at, boundary = graph.node(at).inputs[0], step
    if working_dtype(graph, at) not in FLOATS:
        return None
    return at, boundary


def float_upstream(graph: Graph, node: int) -> bool:
    """Does any value feeding ``node`` (itself included) hold floats?"""
    upstream = nx.ancestors(graph.g, node) | {node}
    return any(graph.node(n).dtype in ops.FLOAT_DTYPES for n in upstream)


def exact_head(value: torch.Tensor) -> oracle.Head:
    """Evidence for a code computed without floats: every regressing element is strong."""
    shape = value.shape
    return oracle.Head(value.double().cpu(), torch.full(shape, math.inf, dtype=torch.float64),
                       torch.zeros(shape, dtype=torch.float64), torch.ones(shape, dtype=torch.bool))


def ordinal(graph: Graph) -> list[bool]:
    """Per output: are its codes ordered (an exponent, a quantized level, an integer), so that
    nearer is better? Bool and sign codes are only right or wrong."""
    return [graph.node(o).op != "sign_int8" and graph.node(o).dtype != "bool"
            for o in graph.outputs]


def boundary_of(graph: Graph, node: dict) -> ops.Boundary | None:
    """The discontinuity of an output node's head, if it is a discrete head numfuzz knows."""
    spec = ops.REGISTRY.get(node.op)
    if node.op == "call" and generic.is_int_cast(node.attrs) and node.inputs \
            and graph.node(node.inputs[0]).dtype in ops.FLOAT_DTYPES:
        return ops.to_int_boundary  # a captured x.to(int8): flips at the integers
    return spec.boundary if spec is not None else None


def undefined_elements(graph: Graph,
                       values: dict[int, torch.Tensor]) -> list[torch.Tensor | None]:
    """Per integer output: the elements whose value no rule defines (see the module docstring)."""
    result: list[torch.Tensor | None] = []
    for out in graph.outputs:
        node = graph.node(out)
        if is_index_output(node):  # maintainers do not treat differing indices as bugs
            result.append(torch.ones(tuple(node.shape), dtype=torch.bool))
            continue
        source = values.get(node.inputs[0]) if node.inputs else None
        if node.dtype == "bool" or node.dtype not in ops.DISCRETE_DTYPES \
                or source is None or not source.is_floating_point():
            result.append(None)
            continue
        bad = torch.isnan(source)
        if node.op in UNCLAMPED_CASTS:  # no clamp before the conversion
            info = torch.iinfo(ops.torch_dtype(node.dtype))
            bad |= (source < info.min) | (source > info.max) | torch.isinf(source)
        if node.op == "frexp":  # the exponent of an infinity is unspecified too
            bad |= torch.isinf(source)
        shape = tuple(node.shape)
        result.append(bad.cpu() if tuple(bad.shape) == shape else None)
    return result


def is_index_output(node: dict) -> bool:
    """A captured argmax/argmin/topk-indices output: ties make any answer valid."""
    if node.op != "call":
        return False
    name = str(node.attrs.get("target", "")).rsplit(".", 1)[-1]
    return name in INDEX_OPS or (name in INDEX_PICKS and node.attrs.get("pick") == 1)


def judge_graph(graph: Graph, eager: list[torch.Tensor], compiled: list[torch.Tensor],
                fp64: dict[int, torch.Tensor], eager_values: dict[int, torch.Tensor],
                policy: str = "float64") -> Verdict:
    """The verdict on one run, from the float64 and eager values of every node (or of the
    outputs only, for a model judged as itself), under ``policy`` (``kinds.POLICIES``)."""
    ref = [fp64[o] for o in graph.outputs]
    return oracle.judge(eager, compiled, ref, heads(graph, fp64, eager_values), graph.outputs,
                        undefined_elements(graph, fp64), ordinal(graph), policy)
