"""Shape and dtype rules: how an op's output shape and dtype follow from its inputs', for the ops
whose rule is not simply torch's own (``register(..., meta=True)``)."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from fuzzer.ir.ops.base import FLOAT_DTYPES, InvalidGraph, Shape


def same_shape(shapes: list[Shape], attrs: dict) -> Shape:
    return shapes[0]


def broadcast(shapes: list[Shape], attrs: dict) -> Shape:
    try:
        return tuple(torch.broadcast_shapes(*shapes))
    except RuntimeError as err:
        raise InvalidGraph(f"cannot broadcast {shapes}") from err


def _dim(shape: Shape, dim: int) -> int:
    if not -len(shape) <= dim < len(shape):
        raise InvalidGraph(f"dim {dim} out of range for {shape}")
    return dim % len(shape)


def reduce_keepdim(shapes: list[Shape], attrs: dict) -> Shape:
    dim = _dim(shapes[0], attrs["dim"])
    return tuple(1 if i == dim else s for i, s in enumerate(shapes[0]))


def softmax_shape(shapes: list[Shape], attrs: dict) -> Shape:
    _dim(shapes[0], attrs["dim"])
    return shapes[0]


def _require(cond: bool, message: str) -> None:
    if not cond:
        raise InvalidGraph(message)


def norm_shape(shapes: list[Shape], attrs: dict) -> Shape:
    x, *params = shapes
    normalized = tuple(attrs["normalized_shape"])
    _require(x[-len(normalized):] == normalized, f"normalized_shape {normalized} vs {x}")
    _require(all(p == normalized for p in params), f"norm params {params} vs {normalized}")
    return x


def batch_norm_shape(shapes: list[Shape], attrs: dict) -> Shape:
    x, *params = shapes
    _require(len(x) >= 2 and all(p == (x[1],) for p in params), f"batch_norm {shapes}")
    return x


def group_norm_shape(shapes: list[Shape], attrs: dict) -> Shape:
    x, *params = shapes
    _require(len(x) >= 2 and x[1] % attrs["groups"] == 0, f"group_norm {shapes}")
    _require(all(p == (x[1],) for p in params), f"group_norm params {shapes}")
    return x


def conv2d_shape(shapes: list[Shape], attrs: dict) -> Shape:
    x, w, b = shapes
    _require(len(x) == 4 and len(w) == 4, f"conv2d needs 4-d, got {shapes}")
    groups, stride, pad = attrs["groups"], attrs["stride"], attrs["padding"]
    _require(x[1] == w[1] * groups and w[0] % groups == 0 and b == (w[0],), f"conv2d {shapes}")
    h = (x[2] + 2 * pad - w[2]) // stride + 1
    wd = (x[3] + 2 * pad - w[3]) // stride + 1
    _require(h > 0 and wd > 0, f"conv2d output empty for {shapes}")
    return (x[0], w[0], h, wd)


def linear_shape(shapes: list[Shape], attrs: dict) -> Shape:
    x, w, b = shapes
    _require(len(w) == 2 and x[-1] == w[1] and b == (w[0],), f"linear {shapes}")
    return x[:-1] + (w[0],)


def pool_shape(shapes: list[Shape], attrs: dict) -> Shape:
    x = shapes[0]
    k = attrs["kernel"]
    _require(len(x) == 4 and x[2] >= k and x[3] >= k, f"pool {x}")
    return x[:2] + (x[2] // k, x[3] // k)


def adaptive_pool_shape(shapes: list[Shape], attrs: dict) -> Shape:
    x = shapes[0]
    _require(len(x) == 4, f"adaptive pool {x}")
    return x[:2] + (attrs["size"], attrs["size"])


def interpolate_shape(shapes: list[Shape], attrs: dict) -> Shape:
    x = shapes[0]
    _require(len(x) == 4, f"interpolate {x}")
    s = attrs["scale"]
    return x[:2] + (int(x[2] * s), int(x[3] * s))


def matmul_shape(shapes: list[Shape], attrs: dict) -> Shape:
    a, b = shapes
    _require(len(a) >= 2 and len(b) >= 2 and a[-1] == b[-2], f"matmul {shapes}")
    batch = broadcast([a[:-2], b[:-2]], attrs)
    return batch + (a[-2], b[-1])


def transpose_shape(shapes: list[Shape], attrs: dict) -> Shape:
    x = list(shapes[0])
    d0, d1 = _dim(shapes[0], attrs["dim0"]), _dim(shapes[0], attrs["dim1"])
    x[d0], x[d1] = x[d1], x[d0]
    return tuple(x)


def split_heads_shape(shapes: list[Shape], attrs: dict) -> Shape:
    x, h = shapes[0], attrs["heads"]
    _require(len(x) == 3 and x[2] % h == 0, f"split_heads {x} into {h}")
    return (x[0], h, x[1], x[2] // h)


def merge_heads_shape(shapes: list[Shape], attrs: dict) -> Shape:
    x = shapes[0]
    _require(len(x) == 4, f"merge_heads {x}")
    return (x[0], x[2], x[1] * x[3])


def flatten_shape(shapes: list[Shape], attrs: dict) -> Shape:
    x = shapes[0]
    _require(len(x) >= 2, f"flatten {x}")
    return (x[0], math.prod(x[1:]))


def square_last_shape(shapes: list[Shape], attrs: dict) -> Shape:
    x = shapes[0]
    _require(len(x) >= 2 and x[-1] == x[-2], f"causal mask needs square scores, got {x}")
    return x


def masked_shape(shapes: list[Shape], attrs: dict) -> Shape:
    x, mask = shapes
    _require(broadcast([x, mask], attrs) == x, f"mask {mask} does not broadcast to {x}")
    return x


def sdpa_shape(shapes: list[Shape], attrs: dict) -> Shape:
    q, k, v, *mask = shapes
    _require(len(q) == 4 and k == v and q[:2] == k[:2] and q[-1] == k[-1], f"sdpa {shapes}")
    if mask:
        _require(broadcast([mask[0], q[:-1] + (k[-2],)], attrs) == q[:-1] + (k[-2],), "sdpa mask")
    if attrs.get("causal"):
        _require(q[-2] == k[-2], "causal sdpa needs square scores")
    return q[:-1] + (v[-1],)


def rope_shape(shapes: list[Shape], attrs: dict) -> Shape:
    x, cos, sin = shapes
    _require(x[-1] % 2 == 0 and cos == sin == x[-2:], f"rope {shapes}")
    _require(attrs["half"] * 2 == x[-1], "rope half")
    return x


# ---------------------------------------------------------------- dtype rules


def same_dtype(dtypes: list[str], attrs: dict) -> str:
    return dtypes[0]


def fixed(dtype: str) -> Callable[[list[str], dict], str]:
    def rule(dtypes: list[str], attrs: dict) -> str:
        return dtype

    return rule


def float_in_same_out(dtypes: list[str], attrs: dict) -> str:
    _require(dtypes[0] in FLOAT_DTYPES, f"needs a float input, got {dtypes[0]}")
    _require(all(d in FLOAT_DTYPES for d in dtypes[1:] if d != "bool"), f"mixed dtypes {dtypes}")
    return dtypes[0]


def float_in(out: str) -> Callable[[list[str], dict], str]:
    def rule(dtypes: list[str], attrs: dict) -> str:
        float_in_same_out(dtypes, attrs)
        return out

    return rule
