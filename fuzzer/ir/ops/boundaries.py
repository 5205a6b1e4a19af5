"""Discontinuities: where a discrete head's code, or a float step's value, jumps.

Each returns, per element of the head's first input, the nearest input value at which the
head's output changes (float64 in, float64 out). The oracle measures how far float64's own value
sits from it (``judge.rules.evidence``): a flip 1 ulp from a boundary is weaker evidence than
one 1000 ulps away. Plain torch, so ``repro.py`` can carry the one its head uses.
"""

from __future__ import annotations

import torch


def e8m0_boundary(ins: list[torch.Tensor], attrs: dict) -> torch.Tensor:
    """``ceil(log2(|x| + eps))`` changes where |x| + eps crosses a power of two."""
    power = torch.exp2(torch.round(torch.log2(ins[0].abs() + attrs["eps"])))
    return torch.sign(ins[0]) * (power - attrs["eps"])


def quant_boundary(ins: list[torch.Tensor], attrs: dict) -> torch.Tensor:
    """``round(x / scale)`` changes at the half-integer multiples of scale nearest x."""
    return (torch.floor(ins[0] / attrs["scale"]) + 0.5) * attrs["scale"]


def sign_boundary(ins: list[torch.Tensor], attrs: dict) -> torch.Tensor:
    """``sign(x)`` changes at zero."""
    return torch.zeros_like(ins[0])


def compare_boundary(ins: list[torch.Tensor], attrs: dict) -> torch.Tensor:
    """``x > y`` changes where x crosses y (a tensor, or the scalar ``value``)."""
    other = ins[1] if len(ins) > 1 else torch.full_like(ins[0], attrs["value"])
    return torch.broadcast_to(other, torch.broadcast_shapes(ins[0].shape, other.shape))


def round_boundary(ins: list[torch.Tensor], attrs: dict) -> torch.Tensor:
    """``round(x)`` changes at the half-integers: the nearest one is floor(x) + 0.5."""
    return torch.floor(ins[0]) + 0.5


def multiple_boundary(ins: list[torch.Tensor], attrs: dict) -> torch.Tensor:
    """``x // value`` (floor or trunc) changes where x crosses a multiple of value."""
    return torch.round(ins[0] / attrs["value"]) * attrs["value"]


def to_int_boundary(ins: list[torch.Tensor], attrs: dict) -> torch.Tensor:
    """A float-to-integer conversion truncates: it changes at the integers."""
    return torch.round(ins[0])
