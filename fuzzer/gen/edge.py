"""Grammars for where compiled numerics break outside models: small programs at the edges.

Each grows a short graph (one to five ops) through the same ``Builder`` as the model grammars:

- ``special_body``: special functions and transcendental ops (``ops.EDGE_UNARY``, powers, binary
  float ops such as ``atan2``, ``fmax``, ``copysign``), whose compiled forms use other math
  libraries; the inputs are drawn at the ops' domain edges by the strategy;
- ``decimal_body``: floor division, remainder, ``fmod`` and rounding by 0.1, 0.3, 1/3 …;
- ``integer_body``: integer and bool tensors: wrap-around arithmetic, bitwise ops and shifts,
  floor division and remainder with negative operands, comparisons, reductions whose output dtype
  differs from the input's, casts, in-graph factories (``arange`` times a large constant) and
  promotion with float scalars and float64 0-d tensors;
- ``shapes_body``: empty, size-1 and 0-d dims, sizes around the SIMD width and its tails,
  non-contiguous inputs, and reductions long enough to be split.

Shapes are small on purpose: compile time, not run time, bounds a campaign.
"""

from __future__ import annotations

import functools

import torch

from fuzzer.gen.domains import LAYOUTS
from fuzzer.gen.grammar import Builder
from fuzzer.ir import ops

# Around the vector width (8/16 lanes on AVX2/AVX-512 for float32) and its scalar tails.
SIMD_SHAPES = ((17,), (4, 9), (2, 33), (31,), (64,), (3, 5, 7), (1, 16), (8, 1), (15,))
EMPTY_SHAPES = ((0,), (3, 0), (0, 4), (2, 0, 3))
DEGENERATE_SHAPES = ((1,), (1, 1), (), (1, 17), (5, 1, 3), (4, 1))
SPLIT_SHAPES = ((4099,), (2, 8193), (65537,), (3, 4097))  # long enough for split reductions
INT_DTYPES = ("int8", "uint8", "int16", "int32", "int64", "int64", "bool")
FLOAT_ONLY_UNARY = ("sigmoid", "tanh", "erf", "sqrt", "rsqrt", "log2", "silu")
FLOAT_BINARY = ("atan2", "hypot", "xlogy", "copysign", "fmax", "fmin", "logaddexp", "maximum",
                "minimum", "pow", "mul", "add", "sub", "div")
DECIMALS = (0.1, 0.2, 0.3, 0.7, 1.0 / 3.0, 3.0, -0.3)
POWERS = (-1.0, -0.5, 0.5, 1.5, 2.0, 3.0, -2.0, 2.5, 0.0)


def special_body(b: Builder) -> tuple[int, list[int]]:
    """Special functions at their edges: SLEEF and libdevice against eager's own math."""
    shape = b.pick(list(SIMD_SHAPES))
    x = b.input(shape)
    y = x
    for _ in range(b.rng.randint(1, 3)):
        y = special_step(b, y, shape)
    if b.chance(0.2):  # a signed zero only shows through 1/x (+0.0 == -0.0 everywhere else)
        y = b.op("reciprocal", y)
    return y, [x, y]


@functools.cache
def has_kernel(name: str, dtype: str) -> bool:
    """Does eager implement unary op ``name`` for ``dtype`` on the CPU? (Several special
    functions have no bf16/fp16 kernel: a case built on one would only be skipped.)"""
    try:
        ops.evaluate(name, [torch.ones(2, dtype=ops.torch_dtype(dtype))], {})
    except (RuntimeError, NotImplementedError, TypeError):
        return False
    return True


def special_step(b: Builder, y: int, shape: tuple[int, ...]) -> int:
    roll = b.rng.random()
    if roll < 0.6:
        dtype = b.graph.node(y).dtype
        names = [n for n in (*ops.EDGE_UNARY, *FLOAT_ONLY_UNARY) if has_kernel(n, dtype)]
        return b.op(b.pick(names), y)
    if roll < 0.72:
        return b.op("pow_scalar", y, value=b.pick(list(POWERS)))
    if roll < 0.92:
        other = b.input(shape if b.chance(0.8) else ())
        return b.op(b.pick(list(FLOAT_BINARY)), y, other)
    kind = b.pick(["frexp", "ldexp", "round_decimals", "frac"])
    if kind == "frexp":
        return b.op("frexp", y, pick=0)
    if kind == "ldexp":
        return b.op("ldexp_scalar", y, value=b.pick([-130, -20, 20, 120]))
    if kind == "round_decimals":
        return b.op("round_decimals", y, decimals=b.pick([1, 2, -1]))
    return b.op("frac", y)


def decimal_body(b: Builder) -> tuple[int, list[int]]:
    """Division, floor division, remainder and rounding by values no float holds exactly."""
    shape = b.pick(list(SIMD_SHAPES))
    x = b.input(shape)
    value = b.pick(list(DECIMALS))
    kind = b.pick(["floordiv_scalar", "truncdiv_scalar", "remainder_scalar", "fmod_scalar",
                   "div_floor", "floordiv", "remainder", "round_decimals", "scaled_round",
                   "arange_step"])
    if kind in ("floordiv_scalar", "truncdiv_scalar", "remainder_scalar", "fmod_scalar"):
        y = b.op(kind, x, value=value)
    elif kind == "div_floor":
        y = b.op(b.pick(["floor", "trunc", "round", "ceil"]), b.op("div_scalar", x, value=value))
    elif kind in ("floordiv", "remainder"):
        y = b.op(kind, x, b.input(shape, role="divisor"))
    elif kind == "round_decimals":
        y = b.op("round_decimals", x, decimals=b.pick([1, 2, 3]))
    elif kind == "arange_step":  # a float-step arange: its length and values are computed twice
        n, step = shape[-1], abs(value)
        ramp = b.op("arange_step", x, start=0.0, end=(n - 0.5) * step, step=step)
        y = b.op(b.pick(["floor", "round", "trunc"]), b.op("div_scalar", ramp, value=step))
    else:  # x * 10 then round: the classic "round to one decimal" that double rounding breaks
        y = b.op("round", b.op("mul_scalar", x, value=b.pick([10.0, 100.0, 3.0])))
    if b.chance(0.3):
        y = b.op("add", y, b.op("mul_scalar", x, value=value))
    return y, [x, y]


def integer_body(b: Builder) -> tuple[int, list[int]]:
    """Integer and bool programs: exact arithmetic, so any regression is strong evidence."""
    dtype = b.pick(list(INT_DTYPES))
    shape = b.pick(list(SIMD_SHAPES))
    x = b.input(shape, dtype=dtype)
    taps = [x]
    y = x
    for _ in range(b.rng.randint(2, 4)):
        y = integer_step(b, y, shape) or y
        taps.append(y)
    return y, taps


def integer_step(b: Builder, y: int, shape: tuple[int, ...]) -> int | None:
    dtype = b.graph.node(y).dtype
    current = b.shape(y)
    integral = dtype not in ops.FLOAT_DTYPES
    roll = b.rng.random()
    if roll < 0.3:
        name = b.pick(["add", "sub", "mul", "floordiv", "remainder", "truncdiv", "lt", "eq",
                       "maximum", "true_divide",
                       *(["bitwise_and", "bitwise_or", "bitwise_xor"] if integral else [])])
        role = "divisor" if name in ("floordiv", "remainder", "truncdiv", "true_divide") else "x"
        other_dtype = b.pick([dtype, *INT_DTYPES]) if integral else b.pick(list(INT_DTYPES))
        if other_dtype == "bool" and role == "divisor":
            other_dtype = "int32"
        return b.attempt(name, y, b.input(current, role=role, dtype=other_dtype))
    if roll < 0.45:
        name = b.pick(["mul_scalar", "add_scalar", "floordiv_scalar", "remainder_scalar"])
        value = b.pick([2**31 - 1, 1000003, -7, 255, 3, 0.5, 0.1, -2.5])
        if name in ("floordiv_scalar", "remainder_scalar"):
            value = b.pick([-7, 3, 10, 0.3])
        return b.attempt(name, y, value=value)
    if roll < 0.55 and integral and dtype != "bool":
        bits = 8 * {"int8": 1, "uint8": 1, "int16": 2, "int32": 4}.get(dtype, 8)
        return b.attempt(b.pick(["shl_scalar", "shr_scalar"]), y,
                         value=b.rng.randint(0, bits - 1))
    if roll < 0.65:
        return b.attempt(b.pick(["neg", "abs", "sign", *(["bitwise_not"] if integral else [])]),
                         y)
    if roll < 0.75 and current:
        name = b.pick(["sum_dims", "prod", "amax_dims", "amin", "any", "all", "cumsum"])
        if name == "cumsum":
            return b.attempt(name, y, dim=-1)
        if name in ("prod", "any", "all"):
            return b.attempt(name, y, dim=-1, keepdim=b.chance(0.5))
        return b.attempt(name, y, dims=(-1,), keepdim=b.chance(0.5))
    if roll < 0.83:  # a float cast to an integer is undefined out of range: not drawn
        targets = ["int8", "uint8", "int32", "int64"] if integral else []
        return b.attempt("cast", y, to=b.pick([*targets, "float32", "float16", "bool"]))
    if roll < 0.9 and current:
        return b.attempt("arange_mul", y, n=current[-1],
                         value=b.pick([2**31 + 11, 65537, 3_000_000_007, 1 << 33]))
    if roll < 0.95:
        cond = b.attempt("lt_scalar", y, value=b.pick([0, 1, 100]))
        other = b.input(current, dtype=dtype if integral else "int64")
        return b.attempt("where", cond, y, other) if cond is not None else None
    # Mixed promotion: a half-precision tensor with a float64 0-d tensor keeps its own dtype.
    half = b.input(current, dtype=b.pick(["bfloat16", "float16"]))
    scaled = b.op("mul", half, b.input((), dtype="float64"))
    return b.attempt("add", scaled, y)


def shapes_body(b: Builder) -> tuple[int, list[int]]:
    """Degenerate and awkward shapes, non-contiguous inputs, long and empty reductions."""
    family = b.rng.choices([EMPTY_SHAPES, DEGENERATE_SHAPES, SIMD_SHAPES, SPLIT_SHAPES],
                           [3, 3, 2, 2])[0]
    shape = b.pick(list(family))
    x = b.input(shape, layout=b.pick(list(LAYOUTS)))
    y = x
    if b.chance(0.5):
        y = b.op(b.pick(["exp", "sigmoid", "tanh", "abs", "sin", "square"]), y)
    for _ in range(b.rng.randint(1, 2)):
        y = shape_step(b, y) or y
    return y, [x, y]


def shape_step(b: Builder, y: int) -> int | None:
    shape = b.shape(y)
    if not shape:
        return b.attempt(b.pick(["mul", "add", "maximum"]), y, b.input((2, 3)))
    dims = tuple(sorted(b.rng.sample(range(len(shape)), b.rng.randint(1, len(shape)))))
    keepdim = b.chance(0.5)
    roll = b.rng.random()
    if roll < 0.5:
        name = b.pick(["var_c", "std_c", "var_mean", "std_mean", "mean_dims", "sum_dims",
                       "amax_dims", "logsumexp", "norm"])
        attrs: dict = {"dims": dims, "keepdim": keepdim}
        if name in ("var_c", "std_c", "var_mean", "std_mean"):
            attrs["correction"] = b.pick([0, 1, 2])
        if name in ("var_mean", "std_mean"):
            attrs["pick"] = b.pick([0, 1])
        if name == "norm":
            attrs["p"] = b.pick([2.0, 1.0, float("inf"), 0.5])
        return b.attempt(name, y, **attrs)
    if roll < 0.65:
        name = b.pick(["prod", "cumsum", "cumprod"])
        if name == "prod":
            return b.attempt(name, y, dim=dims[0], keepdim=keepdim)
        return b.attempt(name, y, dim=dims[0])
    if roll < 0.7 and len(shape) == 3:  # a 1-d pool over the last dim, its edges padded
        return b.attempt("avg_pool1d", y, kernel=b.pick([2, 3]), stride=b.pick([1, 2]),
                         padding=b.pick([0, 1]), ceil=b.chance(0.5))
    if roll < 0.8:
        layout = b.pick(["permute", "flip", "slice_step", "cat", "chunk", "gather",
                         "index_select", "linspace"])
        if layout == "permute":
            return b.attempt("permute", y, dims=tuple(reversed(range(len(shape)))))
        if layout == "flip":
            return b.attempt("flip", y, dims=dims)
        if layout == "slice_step":
            return b.attempt("slice_step", y, step=2)
        if layout in ("gather", "index_select") and shape[dims[0]] > 0:
            size = shape[dims[0]]
            index_shape = shape if layout == "gather" else (b.rng.randint(1, 5),)
            index = b.input(index_shape, role="index", dtype="int64", bound=size)
            return b.attempt(layout, y, index, dim=dims[0])
        if layout == "linspace":
            return b.attempt("linspace_mul", y, lo=-1.0, hi=b.pick([1.0, 0.3, 1e4]), n=shape[-1])
        if layout == "cat":
            return b.attempt("cat", y, b.input(shape, layout=b.pick(list(LAYOUTS))), dim=dims[0])
        return b.attempt("chunk", y, chunks=2, dim=dims[0], pick=b.pick([0, 1]))
    other = b.input(shape, layout=b.pick(list(LAYOUTS)))
    return b.attempt(b.pick(["add", "mul", "sub", "maximum"]), y, other)
