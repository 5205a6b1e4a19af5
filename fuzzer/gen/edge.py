"""Grammars for where compiled numerics break outside models: small programs at the edges.

Each grows a short graph (one to five ops) through the same ``Builder`` as the model grammars:

- ``special_body``: special functions and transcendental ops (the registry's ``special`` tag),
  powers, binary float ops (``binary-float``: ``atan2``, ``fmax``, ``copysign`` …), whose
  compiled forms use other math
  libraries; the inputs are drawn at the ops' domain edges by the strategy;
- ``decimal_body``: floor division, remainder, ``fmod`` and rounding by 0.1, 0.3, 1/3 …;
- ``integer_body``: integer and bool tensors of at least 16 elements: wrap-around arithmetic
  (the type's own minimum and maximum among the constants), bitwise ops and shifts, floor and
  truncating division and remainder with negative operands, comparisons, reductions and scans
  whose output dtype differs from the input's, arg-reductions, casts, in-graph factories
  (``arange`` times a large constant) and promotion with float scalars and float64 0-d tensors;
- ``shapes_body``: empty, size-1 and 0-d dims, sizes around the vector widths and their tails,
  non-contiguous inputs, and reductions long enough to be split;
- ``vision_ops_body``: resampling, pooling and padding in all their variants (``resample``,
  ``pool`` and ``pad`` tags), on maps whose batch or channels may be empty.

Each also reaches the rest of the vocabulary (``place``: an op from a registry tag, its attrs
drawn from its ``choices``): the special functions end in a selection (argmax, a sort's or
topk's indices, judged by what they pick) or a sign bit, beside fused multiply-adds
(``blend``); integers are sorted, selected, scanned and rearranged, and meet ``one_hot``; the
awkward shapes go through all of that and the layers (``layer_step``: batched and fused GEMMs,
1-d and transposed convolutions, max pooling with indices, ``index_add``/``scatter_add`` out of
place, ``embedding_bag``). The patterns rewrites match (``grammar.rewrite``) and copies into
another layout (``grammar.relayout``) sit between their steps.

Shapes come from ``sizes``: dims around the vector widths, bounded in total, because compile
time, not run time, bounds a campaign.
"""

from __future__ import annotations

import functools

import torch

from fuzzer.gen import sizes
from fuzzer.gen.domains import LAYOUTS
from fuzzer.gen.grammar import Builder, relayout, rewrite
from fuzzer.ir import ops
from fuzzer.ir.graph import Graph

# Shapes come from ``sizes`` (dims around the vector widths, long reductions, empty dims, up to
# rank 5); these are the degenerate ones beside them.
DEGENERATE_SHAPES = ((1,), (1, 1), (), (1, 17), (5, 1, 3), (4, 1))
INT_DTYPES = ("int8", "uint8", "int16", "int32", "int64", "int64", "bool")
DECIMALS = (0.1, 0.2, 0.3, 0.7, 1.0 / 3.0, 3.0, -0.3)
POWERS = (-1.0, -0.5, 0.5, 1.5, 2.0, 3.0, -2.0, 2.5, 0.0)


def special_body(b: Builder) -> tuple[int, list[int]]:
    """Special functions at their edges: SLEEF and libdevice against eager's own math."""
    shape = sizes.shape(b.rng, empty=0.05)
    x = b.input(shape)
    y = x
    for _ in range(b.rng.randint(1, 3)):
        y = special_step(b, y, shape)
    if b.chance(0.15):  # a pattern a rewrite matches, on values at the edges
        y = rewrite(b, y)
    if b.chance(0.2):  # a signed zero only shows through 1/x (+0.0 == -0.0 everywhere else)
        y = b.op("reciprocal", y)
    if b.chance(0.2):  # which element is largest, or where the sign bit is: picked from y
        tail = place(b, b.pick([*ops.tagged("select"), *ops.tagged("head")]), y)
        if tail is not None:
            return tail, [x, y, tail]
    return y, [x, y]


# ---------------------------------------------------------------- the rest of the vocabulary

_EAGER: dict[tuple, bool] = {}


def runs_eagerly(graph: Graph, node_id: int) -> bool:
    """Does eager's CPU kernel take this node's input dtypes (a meta kernel takes more:
    ``logcumsumexp`` of an int, ``topk`` of a bool)? Run once per op, shapes, dtypes and
    attrs, on zeros (in range for every index)."""
    node = graph.node(node_id)
    ins = [graph.node(i) for i in node.inputs]
    key = (node.op, tuple((i.shape, i.dtype) for i in ins), repr(sorted(node.attrs.items())))
    if key not in _EAGER:
        try:
            with ops.probe("cpu"):
                ops.evaluate(node.op, [torch.zeros(i.shape, dtype=ops.torch_dtype(i.dtype))
                                       for i in ins], node.attrs)
            _EAGER[key] = True
        except (RuntimeError, NotImplementedError, TypeError, ValueError, IndexError):
            _EAGER[key] = False
    return _EAGER[key]


def _kept(b: Builder, node_id: int | None) -> int | None:
    """``node_id`` where eager can run it; else None, and the node is gone (its fresh inputs
    go with the graph's dead nodes)."""
    if node_id is None or runs_eagerly(b.graph, node_id):
        return node_id
    b.graph.remove_node(node_id)
    return None


def place(b: Builder, name: str, y: int, same_shape: bool = False) -> int | None:
    """Op ``name`` on ``y``, its other operands fresh inputs of ``y``'s shape and dtype, its
    attrs drawn from its ``choices`` (``OpSpec.choices``); None where torch refuses them, eager
    has no kernel for them, or (``same_shape``) the result is not ``y``'s shape."""
    spec = ops.spec(name)
    node = b.graph.node(y)
    attrs = {key: b.pick(list(spec.choices[key])) for key in spec.attrs}
    others = [b.input(node.shape, "x", dtype=node.dtype) for _ in range(spec.arity - 1)]
    made = _kept(b, b.attempt(name, y, *others, **attrs))
    if made is not None and same_shape and b.shape(made) != node.shape:
        b.graph.remove_node(made)
        return None
    return made


def vocabulary_step(b: Builder, y: int) -> int | None:
    """A selection, scan or rearrangement of ``y`` (its tags), or ``one_hot`` of fresh indices
    mixed into it."""
    if b.chance(0.15):
        return one_hot_into(b, y)
    family = b.pick(["select", "select", "scan", "rearrange"])
    return place(b, b.pick(list(ops.tagged(family))), y)


def one_hot_into(b: Builder, y: int) -> int | None:
    """``y[..., None] * one_hot(i, n)``: fresh indices in range, their codes times ``y``."""
    classes = b.pick([1, 3, 17])
    codes = b.attempt("one_hot", b.input(b.shape(y), role="index", dtype="int64",
                                         bound=classes), num_classes=classes)
    wide = b.attempt("unsqueeze", y, dim=-1)
    if codes is None or wide is None:
        return None
    return _kept(b, b.attempt(b.pick(["mul", "add"]), wide, codes))


# The rank each layer reads ``y`` at (``_as_rank``): unsqueezed in front, or flattened to 2-d.
LAYER_RANKS = {"bmm": 3, "baddbmm": 3, "addmm": 2, "conv1d": 3, "conv_transpose2d": 4,
               "max_pool2d_indices": 4, "pixel_shuffle": 4, "pixel_unshuffle": 4,
               "index_add": 1, "scatter_add": 1, "embedding_bag": 2}


def _as_rank(b: Builder, y: int, rank: int) -> int | None:
    """``y`` with ``rank`` dims: size-1 dims in front, or, for 2, ``flatten(1)``; None when
    neither gets there. (``rank`` 1 means at least one dim.)"""
    out: int | None = y
    while out is not None and len(b.shape(out)) < rank:
        out = b.attempt("unsqueeze", out, dim=0)
    if out is not None and len(b.shape(out)) > rank > 1:
        out = b.attempt("flatten", out) if rank == 2 else None
    return out


def layer_step(b: Builder, y: int) -> int | None:
    """``y`` through a layer whose other operands fit its shape: a batched or fused GEMM, a
    1-d or transposed convolution, max pooling with its indices, a pixel shuffle (of ``y``
    repeated to fit), an out-of-place ``index_add``/``scatter_add`` or an ``embedding_bag``
    over ``y`` as its table."""
    kind = b.pick(list(LAYER_RANKS))
    ranked = _as_rank(b, y, LAYER_RANKS[kind])
    if ranked is None:
        return None
    y = ranked
    shape, dtype = b.shape(y), b.graph.node(y).dtype
    width = b.pick([1, 5, 17])
    if kind in ("bmm", "baddbmm"):
        w = b.input((shape[0], shape[2], width), "w", dtype=dtype, fan_in=shape[2])
        if kind == "bmm":
            return _kept(b, b.attempt("bmm", y, w))
        bias = b.input(b.pick([(width,), (shape[0], shape[1], width)]), "b", dtype=dtype)
        return _kept(b, b.attempt("baddbmm", bias, y, w, beta=b.pick([1.0, 0.5, 0.0]),
                                  alpha=b.pick([1.0, -0.5, 3.0])))
    if kind == "addmm":
        w = b.input((shape[1], width), "w", dtype=dtype, fan_in=shape[1])
        bias = b.input(b.pick([(width,), (shape[0], width)]), "b", dtype=dtype)
        return _kept(b, b.attempt("addmm", bias, y, w, beta=b.pick([1.0, 0.5, 0.0]),
                                  alpha=b.pick([1.0, -0.5, 3.0])))
    if kind == "conv1d" and shape[1] > 0:
        groups, k = b.pick([1, shape[1]]), b.pick([1, 2, 3])
        out = groups * b.pick([1, 2])
        w = b.input((out, shape[1] // groups, k), "w", dtype=dtype,
                    fan_in=shape[1] // groups * k)
        return _kept(b, b.attempt("conv1d", y, w, b.input((out,), "b", dtype=dtype),
                                  stride=b.pick([1, 2]), padding=b.pick([0, 1]),
                                  dilation=b.pick([1, 2]), groups=groups))
    if kind == "conv_transpose2d" and shape[1] > 0:
        channels, k, stride, out = shape[1], b.pick([1, 2, 3]), b.pick([1, 2]), b.pick([1, 2])
        w = b.input((channels, out, k, k), "w", dtype=dtype, fan_in=channels * k * k)
        return _kept(b, b.attempt("conv_transpose2d", y, w, b.input((out,), "b", dtype=dtype),
                                  stride=stride, padding=b.pick([0, 1]),
                                  output_padding=b.pick([0, stride - 1]), groups=1,
                                  dilation=b.pick([1, 2])))
    if kind == "max_pool2d_indices":  # a few draws: a short map needs padding or ceil mode
        for _ in range(4):
            made = _kept(b, b.drawn("max_pool2d_indices", y))
            if made is not None:
                return made
        return None
    if kind in ("pixel_shuffle", "pixel_unshuffle"):  # repeated until the factor divides
        sizes = (1, 4, 1, 1) if kind == "pixel_shuffle" else (1, 1, 2, 2)
        tiled = b.attempt("repeat", y, sizes=sizes)
        return _kept(b, b.attempt(kind, tiled, factor=2)) if tiled is not None else None
    if kind in ("index_add", "scatter_add"):
        dim = b.rng.randrange(len(shape))
        if shape[dim] == 0:
            return None
        rows = b.rng.randint(1, shape[dim] + 2)  # repeats accumulate
        moved = shape[:dim] + (rows,) + shape[dim + 1:]
        index = b.input((rows,) if kind == "index_add" else moved, role="index", dtype="int64",
                        bound=shape[dim])
        source = b.input(moved, dtype=dtype)
        extra = {"alpha": b.pick([1, 2, -1])} if kind == "index_add" else {}
        return _kept(b, b.attempt(kind, y, index, source, dim=dim, **extra))
    if kind == "embedding_bag" and shape[0] > 0:
        length = b.rng.randint(1, 9)
        cuts = sorted(b.rng.randint(0, length) for _ in range(b.rng.randint(0, 3)))
        index = b.input((length,), role="index", dtype="int64", bound=shape[0])
        return _kept(b, b.attempt("embedding_bag", y, index, offsets=(0, *cuts),
                                  mode=b.pick(["sum", "mean", "max"])))
    return None


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
    if b.chance(0.15):  # lerp, addcmul, addcdiv, nan_to_num, heaviside, a log-space scan
        name = b.pick([*ops.tagged("blend"), "logcumsumexp"])
        blended = place(b, name, y, same_shape=True)
        if blended is not None:
            return blended
    roll = b.rng.random()
    if roll < 0.6:
        dtype = b.graph.node(y).dtype
        names = [n for n in ops.tagged("special") if has_kernel(n, dtype)]
        return b.op(b.pick(names), y)
    if roll < 0.72:
        return b.op("pow_scalar", y, value=b.pick(list(POWERS)))
    if roll < 0.92:
        other = b.input(shape if b.chance(0.8) else ())
        return b.op(b.pick(list(ops.tagged("binary-float"))), y, other)
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
    shape = sizes.shape(b.rng, empty=0.0)
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
    if b.chance(0.1):
        y = rewrite(b, y)
    return y, [x, y]


def integer_body(b: Builder) -> tuple[int, list[int]]:
    """Integer and bool programs at vector width (at least 16 elements, dims around the widths
    of 8-bit to 64-bit lanes): exact arithmetic, so any regression is strong evidence. The
    ``extreme`` draws hold each type's minimum and maximum."""
    dtype = b.pick(list(INT_DTYPES))
    shape = sizes.shape(b.rng, empty=0.0, at_least=MIN_INT_ELEMENTS)
    x = b.input(shape, dtype=dtype)
    taps = [x]
    y = x
    for _ in range(b.rng.randint(2, 4)):
        y = integer_step(b, y, shape) or y
        taps.append(y)
    return y, taps


MIN_INT_ELEMENTS = 16  # an integer program's input is at least a vector of 8-bit lanes wide
SCALARS = (2**31 - 1, 1000003, -7, 255, 3, 0.5, 0.1, -2.5, -1, 2**15)
DIVISORS = (-7, 3, 10, 0.3, 2, -2, 128)  # never -1: INT_MIN // -1 is SIGFPE in eager itself


def _extremes(dtype: str) -> list[int]:
    """The type's own edges, as scalars an op meets them with."""
    if dtype == "bool" or dtype in ops.FLOAT_DTYPES:
        return [0, 1]
    info = torch.iinfo(ops.torch_dtype(dtype))
    return [info.min, info.max, info.max - 1, info.min + 1, 0]


def integer_step(b: Builder, y: int, shape: tuple[int, ...]) -> int | None:
    dtype = b.graph.node(y).dtype
    current = b.shape(y)
    integral = dtype not in ops.FLOAT_DTYPES
    if b.chance(0.2):  # sorted, selected (argmax, topk, cummax …), scanned, rearranged; one_hot
        return vocabulary_step(b, y)
    if b.chance(0.06):  # a pattern a rewrite matches (x - x, where(c, x, x), --x …)
        return rewrite(b, y)
    roll = b.rng.random()
    if roll < 0.28:
        name = b.pick(["add", "sub", "mul", "floordiv", "remainder", "truncdiv", "lt", "le",
                       "eq", "ne", "maximum", "minimum", "true_divide",
                       *(["bitwise_and", "bitwise_or", "bitwise_xor"] if integral else [])])
        role = "divisor" if name in ("floordiv", "remainder", "truncdiv", "true_divide") else "x"
        other_dtype = b.pick([dtype, *INT_DTYPES]) if integral else b.pick(list(INT_DTYPES))
        if other_dtype == "bool" and role == "divisor":
            other_dtype = "int32"
        return _kept(b, b.attempt(name, y, b.input(current, role=role, dtype=other_dtype)))
    if roll < 0.42:  # wrap-around: a constant or the type's own edge added, multiplied
        name = b.pick(["mul_scalar", "add_scalar", "floordiv_scalar", "truncdiv_scalar",
                       "remainder_scalar"])
        value = b.pick([*SCALARS, *_extremes(dtype)[:2]])
        if name in ("floordiv_scalar", "truncdiv_scalar", "remainder_scalar"):
            value = b.pick(list(DIVISORS))
        return _kept(b, b.attempt(name, y, value=value))
    if roll < 0.5 and integral and dtype != "bool":
        bits = 8 * {"int8": 1, "uint8": 1, "int16": 2, "int32": 4}.get(dtype, 8)
        return b.attempt(b.pick(["shl_scalar", "shr_scalar"]), y,
                         value=b.pick([b.rng.randint(0, bits - 1), bits - 1, 1]))
    if roll < 0.58:  # at the minimum: -INT_MIN and abs(INT_MIN) wrap to themselves
        return _kept(b, b.attempt(b.pick(["neg", "abs", "sign",
                                          *(["bitwise_not"] if integral else [])]), y))
    if roll < 0.7 and current:  # reductions and scans over a dim, their output dtypes
        name = b.pick(["sum_dims", "prod", "amax_dims", "amin", "any", "all", "cumsum",
                       "cumprod"])
        dim = b.pick([-1, -1, 0])
        if name in ("cumsum", "cumprod"):
            return _kept(b, b.attempt(name, y, dim=dim))
        if name in ("prod", "any", "all"):
            return _kept(b, b.attempt(name, y, dim=dim, keepdim=b.chance(0.5)))
        return _kept(b, b.attempt(name, y, dims=(dim,), keepdim=b.chance(0.5)))
    if roll < 0.78 and current:  # which element: arg-reductions and order statistics
        return place(b, b.pick(list(ops.tagged("select"))), y)
    if roll < 0.84:  # a float cast to an integer is undefined out of range: not drawn
        targets = ["int8", "uint8", "int16", "int32", "int64"] if integral else []
        return _kept(b, b.attempt("cast", y, to=b.pick(
            [*targets, "float32", "float16", "bfloat16", "float64", "bool"])))
    if roll < 0.88 and current:
        return b.attempt("arange_mul", y, n=current[-1],
                         value=b.pick([2**31 + 11, 65537, 3_000_000_007, 1 << 33]))
    if roll < 0.95:  # a comparison at the type's edges picks between two values
        cond = b.attempt("lt_scalar", y, value=b.pick([0, 1, 100, *_extremes(dtype)]))
        other = b.input(current, dtype=dtype if integral else "int64")
        return b.attempt("where", cond, y, other) if cond is not None else None
    # Mixed promotion: a half-precision tensor with a float64 0-d tensor keeps its own dtype.
    half = b.input(current, dtype=b.pick(["bfloat16", "float16"]))
    scaled = b.op("mul", half, b.input((), dtype="float64"))
    return b.attempt("add", scaled, y)


def shapes_body(b: Builder) -> tuple[int, list[int]]:
    """Degenerate and awkward shapes, non-contiguous inputs, long and empty reductions."""
    family = b.rng.choices(["empty", "degenerate", "width", "long"], [3, 3, 3, 2])[0]
    if family == "degenerate":
        shape = b.pick(list(DEGENERATE_SHAPES))
    elif family == "long":
        shape = sizes.long_shape(b.rng)
    else:
        shape = sizes.shape(b.rng, empty=1.0 if family == "empty" else 0.0)
    x = b.input(shape, layout=b.pick(list(LAYOUTS)))
    y = x
    if b.chance(0.5):
        y = b.op(b.pick(["exp", "sigmoid", "tanh", "abs", "sin", "square"]), y)
    for _ in range(b.rng.randint(1, 2)):
        y = shape_step(b, y) or y
    return y, [x, y]


def shape_step(b: Builder, y: int) -> int | None:
    shape = b.shape(y)
    if b.chance(0.35):  # selections, scans, layouts and layers on the awkward shapes
        return layer_step(b, y) if b.chance(0.5) else vocabulary_step(b, y)
    if b.chance(0.15):  # an intermediate in another layout, or a pattern a rewrite matches
        return relayout(b, y) if b.chance(0.5) else rewrite(b, y)
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
        return _kept(b, b.attempt(name, y, **attrs))
    if roll < 0.65:
        name = b.pick(["prod", "cumsum", "cumprod"])
        if name == "prod":
            return _kept(b, b.attempt(name, y, dim=dims[0], keepdim=keepdim))
        return _kept(b, b.attempt(name, y, dim=dims[0]))
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


# ---------------------------------------------------------------- decompositions


def decomposition_body(b: Builder) -> tuple[int, list[int]]:
    """Ops the compiler rewrites into others (registry tag ``decomp``: thresholded activations,
    losses with each reduction, distances, normalizations, ``nextafter`` …), one to three in a
    chain, their attrs from their ``choices`` (a ``beta`` or ``lambd`` of 0, an ``eps`` of 0, a
    ``p`` of 0 or inf), on inputs at their thresholds (``edges``) or the strategy's other
    domains; a rewrite's pattern between steps now and then."""
    x = b.input(sizes.shape(b.rng, empty=0.05))
    y, taps = x, [x]
    for _ in range(b.rng.randint(1, 3)):
        made = next((m for m in (place(b, b.pick(list(ops.tagged("decomp"))), y)
                                 for _ in range(6)) if m is not None), None)
        if made is None or b.graph.node(made).dtype not in ops.FLOAT_DTYPES:
            break
        y = made
        taps.append(y)
        if b.chance(0.15):
            y = rewrite(b, y)
    return y, taps


# ---------------------------------------------------------------- vision decompositions


def vision_ops_body(b: Builder) -> tuple[int, list[int]]:
    """Resampling, pooling and padding as the compiler decomposes them (registry tags
    ``resample``, ``pool``, ``pad``): every interpolation mode, non-integer scales and a scale of
    1 in one dim, explicit sizes that keep a dim or move it by one (``resize``), antialiasing;
    ceil mode, padding counted or not, divisor overrides, dilation, indices, adaptive windows
    that overlap; constant, reflect, replicate and circular padding. On 1-d to 3-d maps
    (``sizes.image``) whose batch or channels may be empty and whose dims sit around the vector
    widths; the strategy's draws bring inf and NaN."""
    x = b.input(sizes.image(b.rng, b.pick([2, 2, 2, 1, 3])))
    y = x
    if b.chance(0.3):  # a producer the resampling may fuse with
        y = b.op(b.pick(["relu", "exp", "tanh", "neg"]), y)
    taps = [x]
    for _ in range(b.rng.randint(1, 3)):
        y = vision_op_step(b, y) or y
        taps.append(y)
        if b.chance(0.15):
            y = relayout(b, y) or y
        elif b.chance(0.15):
            y = rewrite(b, y)
    return y, taps


def vision_op_step(b: Builder, y: int) -> int | None:
    """A resampling, pooling or padding op on ``y``, its attrs drawn from the entry's
    ``choices`` until torch and eager take them; None where none was taken in a few draws (or
    ``y`` is no float map: the indices of a pool)."""
    if b.graph.node(y).dtype not in ops.FLOAT_DTYPES or len(b.shape(y)) < 3:
        return None
    family = b.pick(["resample", "resample", "pool", "pool", "pad"])
    if family == "resample" and b.chance(0.4):
        return resize(b, y)
    for _ in range(6):
        made = place(b, b.pick(list(ops.tagged(family))), y)
        if made is not None:
            return made
    return None


def resize(b: Builder, y: int) -> int | None:
    """``interpolate`` to an explicit size: each spatial dim kept, one more or one less, twice
    plus one, halved or 1; mode and ``align_corners`` as ``interpolate_scale`` draws them."""
    size = tuple(b.pick([s, s, s + 1, max(s - 1, 1), 2 * s + 1, max(s // 2, 1), 1])
                 for s in b.shape(y)[2:])
    choices = ops.spec("interpolate_scale").choices
    for _ in range(4):
        made = _kept(b, b.attempt("interpolate_size", y, size=size,
                                  mode=b.pick(list(choices["mode"])),
                                  align=b.pick(list(choices["align"]))))
        if made is not None:
            return made
    return None
