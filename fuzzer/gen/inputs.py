"""Seeded inputs and weights for a graph, drawn by role and input domain.

Weights (every non-activation input) are drawn once per case; activations are drawn again for each
of several draws, because one compile serves many inputs and compile time dominates. Each draw has
an input domain (``domains``: unit normal, large, tiny, on the heads' discontinuities, around the
overflow edges, special values, subnormals, decimal grids, exact integers, the edges of the op an
input feeds); a case's strategy says which domains its draws cycle through. Any input node,
activation or weight, may name a ``layout`` (``domains.LAYOUTS``: transposed, permuted,
channels-last, strided, sliced, padded, expanded, offset): the tensor drawn then has that layout.
"""

from __future__ import annotations

import math

import torch

from fuzzer.gen import domains
from fuzzer.gen.strategy import MAGNITUDES
from fuzzer.ir import ops
from fuzzer.ir.graph import Graph, Node

Inputs = dict[str, torch.Tensor]


def _generator(seed: int) -> torch.Generator:
    gen = torch.Generator()
    gen.manual_seed(seed & 0x7FFF_FFFF_FFFF_FFFF)
    return gen


def edges_for(graph: Graph, node_id: int) -> tuple[float, ...]:
    """The domain edges of the ops reading this input as their first argument."""
    dtype = ops.torch_dtype(graph.node(node_id).dtype)
    if not dtype.is_floating_point:
        return ()
    info = torch.finfo(dtype)
    found: list[float] = []
    for user in sorted(graph.consumers(node_id)):
        data = graph.node(user)
        spec = ops.REGISTRY.get(data.op)
        if spec is not None and spec.edges is not None and data.inputs[:1] == [node_id]:
            found += [e for e in spec.edges(info) if math.isfinite(e)]
    return tuple(found)


def _activation(graph: Graph, node_id: int, domain: str, gen: torch.Generator) -> torch.Tensor:
    node = graph.node(node_id)
    dtype = ops.torch_dtype(node.dtype)
    attrs = node.attrs
    if attrs.get("role") == "index":  # in range by construction: out of range is an eager error
        value = torch.randint(0, int(attrs["bound"]), node.shape, generator=gen)
    elif attrs.get("role") == "unique":  # in range and distinct along ``dim``
        value = _unique_indices(node.shape, int(attrs["bound"]), int(attrs.get("dim", 0)), gen)
    else:
        value = domains.fill(node.shape, dtype, domain, gen, edges_for(graph, node_id))
    if attrs.get("role") == "divisor" and not dtype.is_floating_point:
        # x // 0 raises, and INT_MIN // -1 kills the process with SIGFPE in eager itself.
        value = torch.where((value == 0) | (value == -1), torch.full_like(value, 3), value)
    return domains.lay_out(value, attrs.get("layout", "contiguous"))


def _unique_indices(shape: tuple[int, ...], bound: int, dim: int,
                    gen: torch.Generator) -> torch.Tensor:
    """Indices in [0, bound), distinct along ``dim`` (a write to a repeated index without
    accumulation keeps whichever came last: not defined, so never drawn)."""
    if not shape:
        return torch.randint(0, bound, (), generator=gen)
    dim %= len(shape)
    if shape[dim] > bound:  # a generator bug: there is no such index
        raise ValueError(f"{shape[dim]} distinct indices below {bound} do not exist")
    wide = shape[:dim] + (bound,) + shape[dim + 1:]
    order = torch.rand(wide, generator=gen).argsort(dim=dim)
    return order.narrow(dim, 0, shape[dim]).contiguous()


def _weight(node: Node, gen: torch.Generator) -> torch.Tensor:
    shape, role = node.shape, node.attrs.get("role", "w")
    if role == "mask":
        mask = torch.rand(shape, generator=gen) < 0.25
        # Never mask a whole row (eager would give NaN, which is no finding); an empty row has
        # nothing to keep.
        if mask.dim() and mask.shape[-1]:
            mask[..., 0] = False
        return mask
    if role == "keep":  # the complement, for SDPA's "may attend" masks
        keep = torch.rand(shape, generator=gen) < 0.75
        if keep.dim() and keep.shape[-1]:
            keep[..., 0] = True
        return keep
    if role == "count":  # a step counter a forward increments
        return torch.randint(0, 1000, shape, generator=gen)
    if role in ("gamma", "var"):
        return 1.0 + 0.1 * torch.rand(shape, generator=gen, dtype=torch.float64)
    if role in ("b", "beta", "mean"):
        return 0.1 * torch.randn(shape, generator=gen, dtype=torch.float64)
    if role in ("cos", "sin"):
        positions, dim = shape[-2], shape[-1]
        freqs = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
        angles = torch.outer(torch.arange(positions, dtype=torch.float64), freqs)
        angles = torch.cat((angles, angles), dim=-1)
        return torch.cos(angles) if role == "cos" else torch.sin(angles)
    fan_in = node.attrs.get("fan_in", shape[-1] if shape else 1)
    return torch.randn(shape, generator=gen, dtype=torch.float64) / math.sqrt(max(fan_in, 1))


def _cast(t: torch.Tensor, dtype: str) -> torch.Tensor:
    return t if t.dtype == torch.bool else t.to(ops.torch_dtype(dtype))


def draw_weights(graph: Graph, seed: int) -> Inputs:
    """Every non-activation input, keyed by node id (as a string)."""
    gen = _generator(seed)
    out = {}
    for node_id in graph.input_ids():
        node = graph.node(node_id)
        if node.role not in ACTIVATIONS:
            out[str(node_id)] = domains.lay_out(_cast(_weight(node, gen), node.dtype),
                                                node.attrs.get("layout", "contiguous"))
    return out


ACTIVATIONS = ("x", "index", "unique", "divisor")  # roles drawn again for every draw


def draw_activations(graph: Graph, seed: int, domain: str) -> Inputs:
    gen = _generator(seed)
    return {str(node_id): _activation(graph, node_id, domain, gen)
            for node_id in graph.input_ids()
            if graph.node(node_id).role in ACTIVATIONS}


def draws(graph: Graph, seed: int, count: int,
          cycle: tuple[str, ...] = MAGNITUDES) -> list[tuple[str, Inputs]]:
    """``count`` complete input sets sharing one set of weights, cycling the domains in
    ``cycle``."""
    weights = draw_weights(graph, seed)
    result = []
    for i in range(count):
        domain = cycle[(seed + i) % len(cycle)]
        activations = draw_activations(graph, seed * 1000 + i + 1, domain)
        result.append((domain, {**weights, **activations}))
    return result


def same_state(graph: Graph, drawn: list[tuple[str, Inputs]]) -> list[tuple[str, Inputs]]:
    """The draws with the first one's module state (every input held as a parameter or buffer,
    its ``state`` attr) in all of them: a deployed model's weights and buffers are constants of
    its package, what changes from call to call is what it is called with."""
    state = [str(n) for n in graph.input_ids() if graph.node(n).attrs.get("state")]
    if not drawn or not state:
        return drawn
    first = drawn[0][1]
    return [(domain, {**values, **{key: first[key] for key in state}})
            for domain, values in drawn]


def ordered(graph: Graph, inputs: Inputs) -> list[torch.Tensor]:
    """Inputs in the order the rendered function takes them."""
    return [inputs[str(n)] for n in graph.input_ids()]


def draws_around(graph: Graph, known: Inputs, seed: int, count: int) -> list[tuple[str, Inputs]]:
    """Input draws for a mutant of a captured model: the user's own values come first.

    Inputs the seed graph had keep their values (weights always; activations in the first draw,
    then rescaled by the magnitude classes so the same data also meets large, tiny and boundary
    ranges). Inputs a mutation added are drawn as ``draws`` would.
    """
    fresh = draws(graph, seed, count)
    result = []
    for i, (magnitude, drawn) in enumerate(fresh):
        values = dict(drawn)
        for node_id in graph.input_ids():
            key = str(node_id)
            if key not in known or tuple(known[key].shape) != graph.node(node_id).shape:
                continue
            value = known[key]
            if graph.node(node_id).role == "x" and i > 0:
                value = _rescaled(value, magnitude, drawn[key])
            values[key] = value
        result.append(("user" if i == 0 else magnitude, values))
    return result


def _rescaled(value: torch.Tensor, magnitude: str, drawn: torch.Tensor) -> torch.Tensor:
    """The user's activation moved into a magnitude class (non-float inputs stay as they are)."""
    if not value.is_floating_point():
        return value
    if magnitude == "boundary":
        return drawn  # on-the-boundary values are about where they sit, not the user's data
    scale = {"large": domains.LARGE, "tiny": domains.TINY}.get(magnitude)
    if scale is None:
        return value
    factor = scale[value.dtype] / 4
    return (value.double() * factor).to(value.dtype)
