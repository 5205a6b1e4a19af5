"""Seeded inputs and weights for a graph, drawn by role and magnitude class.

Weights (every non-activation input) are drawn once per case; activations are drawn again for each
of several draws, because one compile serves many inputs and compile time dominates. Each draw has a
magnitude class: unit normal, large, tiny, or values sitting on the heads' discontinuities (powers
of
two for E8M0, half-integers for rounding) where one ulp decides the answer.
"""

from __future__ import annotations

import math

import torch

from fuzzer.ir import ops
from fuzzer.ir.graph import Graph

MAGNITUDES = ("normal", "large", "boundary", "tiny")

_LARGE = {"float16": 300.0, "bfloat16": 1e5, "float32": 1e5, "float64": 1e5}
_TINY = {"float16": 2e-4, "bfloat16": 1e-6, "float32": 1e-6, "float64": 1e-6}

Inputs = dict[str, torch.Tensor]


def _generator(seed: int) -> torch.Generator:
    gen = torch.Generator()
    gen.manual_seed(seed & 0x7FFF_FFFF_FFFF_FFFF)
    return gen


def _activation(shape: tuple[int, ...], dtype: str, magnitude: str,
                gen: torch.Generator) -> torch.Tensor:
    normal = torch.randn(shape, generator=gen, dtype=torch.float64)
    if magnitude == "large":
        return normal * _LARGE[dtype]
    if magnitude == "tiny":
        return normal * _TINY[dtype]
    if magnitude == "boundary":
        eps = torch.finfo(ops.torch_dtype(dtype)).eps
        exponent = torch.randint(-6, 7, shape, generator=gen).double()
        nudge = torch.randint(-2, 3, shape, generator=gen).double() * eps
        powers = torch.exp2(exponent) * (1 + nudge)
        halves = (torch.randint(-20, 20, shape, generator=gen).double() + 0.5) / 8
        pick = torch.rand(shape, generator=gen) < 0.5
        return torch.where(pick, powers, halves) * torch.sign(normal)
    return normal


def _weight(node: dict, gen: torch.Generator) -> torch.Tensor:
    shape, role = node["shape"], node["attrs"].get("role", "w")
    if role == "mask":
        mask = torch.rand(shape, generator=gen) < 0.25
        mask[..., 0] = False  # never mask a whole row: eager would give NaN, which is no finding
        return mask
    if role == "keep":  # the complement, for SDPA's "may attend" masks
        keep = torch.rand(shape, generator=gen) < 0.75
        keep[..., 0] = True
        return keep
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
    fan_in = node["attrs"].get("fan_in", shape[-1] if shape else 1)
    return torch.randn(shape, generator=gen, dtype=torch.float64) / math.sqrt(max(fan_in, 1))


def _cast(t: torch.Tensor, dtype: str) -> torch.Tensor:
    return t if t.dtype == torch.bool else t.to(ops.torch_dtype(dtype))


def draw_weights(graph: Graph, seed: int) -> Inputs:
    """Every non-activation input, keyed by node id (as a string)."""
    gen = _generator(seed)
    out = {}
    for node_id in graph.input_ids():
        node = graph.node(node_id)
        if node["attrs"].get("role", "x") != "x":
            out[str(node_id)] = _cast(_weight(node, gen), node["dtype"])
    return out


def draw_activations(graph: Graph, seed: int, magnitude: str) -> Inputs:
    gen = _generator(seed)
    out = {}
    for node_id in graph.input_ids():
        node = graph.node(node_id)
        if node["attrs"].get("role", "x") == "x":
            value = _activation(node["shape"], node["dtype"], magnitude, gen)
            out[str(node_id)] = _cast(value, node["dtype"])
    return out


def draws(graph: Graph, seed: int, count: int) -> list[tuple[str, Inputs]]:
    """``count`` complete input sets sharing one set of weights, cycling the magnitude classes."""
    weights = draw_weights(graph, seed)
    result = []
    for i in range(count):
        magnitude = MAGNITUDES[(seed + i) % len(MAGNITUDES)]
        activations = draw_activations(graph, seed * 1000 + i + 1, magnitude)
        result.append((magnitude, {**weights, **activations}))
    return result


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
            if key not in known or tuple(known[key].shape) != graph.node(node_id)["shape"]:
                continue
            value = known[key]
            if graph.node(node_id)["attrs"].get("role", "x") == "x" and i > 0:
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
    scale = {"large": _LARGE, "tiny": _TINY}.get(magnitude)
    if scale is None:
        return value
    factor = scale[str(value.dtype).removeprefix("torch.")] / 4
    return (value.double() * factor).to(value.dtype)
