"""The vocabulary every part of the op registry shares: shapes, dtypes, the error an invalid
graph raises, and exact literals."""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Callable, Iterator

import torch

from fuzzer.errors import InputError

Shape = tuple[int, ...]
# A discrete head's discontinuity nearest each input element: (float64 inputs, attrs) -> points.
Boundary = Callable[[list[torch.Tensor], dict], torch.Tensor]

FLOAT_DTYPES = ("float32", "bfloat16", "float16", "float64")
DISCRETE_DTYPES = ("uint8", "int8", "int32", "int64", "bool")
MAX_NUMEL = 1 << 28  # elements one node may make: a case file cannot make numfuzz allocate more


class InvalidGraph(InputError):
    """A node's inputs do not satisfy its op's shape or dtype rule."""


@contextlib.contextmanager
def probe(device: str = "meta") -> Iterator[None]:
    """Run an op to learn what it makes or whether eager takes it (on meta tensors, or on zeros):
    torch's warnings there (an ``out=`` it would resize, a ``std`` over one element) are about
    the probe, not the user's program, and are kept from the user's terminal."""
    with torch.device(device), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def literal(value: object) -> str:
    """Python source for an attribute value, exact for floats (repr round-trips bit for bit)."""
    if isinstance(value, float):
        if math.isinf(value):
            return "float('inf')" if value > 0 else "float('-inf')"
        if math.isnan(value):
            return "float('nan')"
        return repr(value)
    if isinstance(value, (list, tuple)):
        items = ", ".join(literal(v) for v in value)
        return f"({items},)" if len(value) == 1 else f"({items})"
    return repr(value)


def torch_dtype(name: str) -> torch.dtype:
    value = getattr(torch, name, None)
    if not isinstance(value, torch.dtype):
        raise InvalidGraph(f"unknown dtype {name!r}")
    return value
