"""Op grammars: random small vision and attention models, hazard motifs, and encoding heads.

A grammar is a function that grows a ``Graph`` through a ``Builder`` from a seeded
``random.Random``.
Bodies (vision, attention) produce a float value; hazard motifs from the field notes (a product
computed twice and subtracted, a value recomputed in two consumers, division feeding floor, the
algebraic patterns graph rewrites and constant folding match: ``rewrite``) are woven in between
blocks, and so are copies into another memory layout (``relayout``); heads turn values into
outputs, several per model. Spatial and sequence sizes sit around the vector widths
(``sizes.around``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import TypeVar

import torch

from fuzzer.gen import sizes
from fuzzer.ir import ops
from fuzzer.ir.graph import Graph

GRAMMARS = ("vision", "attention", "mixed")
T = TypeVar("T")


class Builder:
    """Grows a graph; every op goes through ``op`` so shape rules are checked as it is built."""

    def __init__(self, rng: random.Random, dtype: str,
                 hazards: list[Callable[[Builder, int], int]] | None = None,
                 hazard_rate: float = 1.0) -> None:
        self.rng = rng
        self.dtype = dtype
        self.graph = Graph()
        self.hazards = HAZARDS if hazards is None else hazards  # motifs maybe_hazard weaves in
        self.hazard_rate = hazard_rate  # multiplies each block's chance of one

    def input(self, shape: tuple[int, ...], role: str = "x", dtype: str | None = None,
              **attrs: object) -> int:
        return self.graph.add("input", [], shape=tuple(shape), dtype=dtype or self.dtype,
                              role=role, **attrs)

    def op(self, name: str, *inputs: int, **attrs: object) -> int:
        # named, so that no attr is taken for them: an op's shape and dtype are inferred
        return self.graph.add(name, inputs, shape=None, dtype=None, **attrs)

    def attempt(self, name: str, *inputs: int, **attrs: object) -> int | None:
        """``op`` where torch accepts these inputs, else None (and no node is left behind)."""
        node_id = self.graph._next_id
        try:
            return self.op(name, *inputs, **attrs)
        except ops.InvalidGraph:
            if node_id in self.graph:
                self.graph.remove_node(node_id)
            return None

    def drawn(self, name: str, *inputs: int) -> int | None:
        """``attempt`` with each attr drawn from the op's ``choices`` (``OpSpec.choices``)."""
        spec = ops.spec(name)
        return self.attempt(name, *inputs, **{key: self.pick(list(spec.choices[key]))
                                              for key in spec.attrs})

    def accepts(self, name: str, *inputs: int, **attrs: object) -> bool:
        """Would op ``name`` take these inputs (their shapes and dtypes, by its rules)?"""
        nodes = [self.graph.node(i) for i in inputs]
        return ops.accepts(name, [n.shape for n in nodes], [n.dtype for n in nodes], attrs)

    def shape(self, node_id: int) -> tuple[int, ...]:
        return self.graph.node(node_id).shape

    def current(self, node_id: int) -> int:
        """``node_id`` as a later node may read it (``Graph.current``)."""
        return self.graph.current(node_id)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, options: Sequence[T]) -> T:
        return self.rng.choice(options)

    # -------------------------------------------------------- composite layers

    def conv(self, x: int, out_channels: int, kernel: int, stride: int = 1,
             depthwise: bool = False) -> int:
        c = self.shape(x)[1]
        groups = c if depthwise else 1
        out_channels = c if depthwise else out_channels
        w = self.input((out_channels, c // groups, kernel, kernel), "w",
                       fan_in=c // groups * kernel * kernel)
        b = self.input((out_channels,), "b")
        return self.op("conv2d", x, w, b, stride=stride, padding=kernel // 2, groups=groups)

    def linear(self, x: int, out_features: int) -> int:
        d = self.shape(x)[-1]
        w = self.input((out_features, d), "w", fan_in=d)
        b = self.input((out_features,), "b")
        return self.op("linear", x, w, b)

    def layer_norm(self, x: int, normalized: tuple[int, ...]) -> int:
        return self.op("layer_norm", x, self.input(normalized, "gamma"),
                       self.input(normalized, "beta"), normalized_shape=normalized, eps=1e-5)

    def rms_norm(self, x: int) -> int:
        d = (self.shape(x)[-1],)
        return self.op("rms_norm", x, self.input(d, "gamma"), normalized_shape=d, eps=1e-6)

    def activation(self, x: int) -> int:
        kind = self.pick(["gelu_erf", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "relu"])
        if kind == "gelu_erf":
            # Exact GELU written out, as many models do: 0.5 * x * (1 + erf(x / sqrt(2))).
            inner = self.op("erf", self.op("mul_scalar", x, value=0.7071067811865476))
            half = self.op("mul_scalar", x, value=0.5)
            return self.op("mul", half, self.op("add_scalar", inner, value=1.0))
        if kind in ("gelu", "gelu_tanh"):
            return self.op("gelu", x, approximate="tanh" if kind == "gelu_tanh" else "none")
        return self.op(kind, x)


# ------------------------------------------------------------------ hazards


def hazard_cse_product(b: Builder, x: int) -> int:
    """exp(x*s - x*s) is exactly 1 in eager; an FMA that keeps one product unrounded is not."""
    s = b.pick([3.0, 1e3, 1e5, 12345.678])
    diff = b.op("sub", b.op("mul_scalar", x, value=s), b.op("mul_scalar", x, value=s))
    return b.op("mul", x, b.op("exp", diff))


def hazard_recompute_softmax(b: Builder, x: int) -> int:
    """x/s feeds both amax and exp: if recomputed differently, the max no longer gives exp(0)=1."""
    dim = -1
    scaled = b.op("div_scalar", x, value=b.pick([0.125, 0.3, 3.0, 1.7]))
    shifted = b.op("sub", scaled, b.op("amax", scaled, dim=dim))
    e = b.op("exp", shifted)
    return b.op("div", e, b.op("sum", e, dim=dim))


def hazard_divide(b: Builder, x: int) -> int:
    """Division by a tensor or scalar, then floor/trunc: approximate division becomes off-by-one."""
    if b.chance(0.5):
        denom = b.op("add_scalar", b.op("abs", x), value=b.pick([0.5, 1.0, 3.0]))
        q = b.op("div", x, denom)
    else:
        q = b.op("div_scalar", x, value=b.pick([0.1, 0.3, 7.0, 1.0 / 3.0]))
    return b.op(b.pick(["floor", "trunc", "round", "ceil"]), q)


def hazard_floordiv(b: Builder, x: int) -> int:
    """Python-style floor division on floats: a quotient one ulp under an integer floors wrong."""
    return b.op(b.pick(["floordiv_scalar", "truncdiv_scalar"]), x,
                value=b.pick([0.1, 0.2, 0.3, 1.0 / 3.0, 0.7]))


def hazard_cast(b: Builder, x: int) -> int:
    """An explicit round trip through a narrower float that a fused kernel may skip."""
    return b.op("cast_roundtrip", x, to=b.pick(["bfloat16", "float16"]))


def hazard_rewrite(b: Builder, x: int) -> int:
    """A pattern Inductor's graph rewrites and constant folding match (``rewrite``)."""
    return rewrite(b, x)


HAZARDS: list[Callable[[Builder, int], int]] = [
    hazard_cse_product, hazard_recompute_softmax, hazard_divide, hazard_floordiv, hazard_cast,
    hazard_rewrite,
]

# ------------------------------------------------------------------ rewrites and layouts

# Constants a folded subexpression meets: where ``c - c``, ``c / c`` or ``x * c`` is not what
# algebra says (``max`` and ``tiny`` are the working dtype's).
CONSTANTS: tuple[float | str, ...] = (math.inf, -math.inf, math.nan, 0.0, -0.0, 1.0, "max", "tiny")
REWRITES = ("times_zero", "plus_zero", "identity", "self_sub", "self_div", "where_same",
            "cumsum_last", "transpose_twice", "same_cast", "idempotent", "constant",
            "folded_constant")


def rewrite(b: Builder, x: int) -> int:
    """``x`` through a pattern a rewrite or constant folding matches, equal to ``x`` (or a plain
    function of it) in algebra but not on every value, so a rewrite that fires where it should
    not drops a NaN, an inf or a zero's sign: ``x + x * 0.0`` (NaN at inf), ``x + 0.0`` (+0.0
    from -0.0, where ``x + -0.0`` is ``x``), ``x * 1.0``, ``x + (x - x)`` and ``x * (x / x)``
    (NaN at inf and 0), ``where(c, x, x)``, ``x`` plus the last element of its cumsum (a sum),
    a permutation of a permutation, ``x.to(its own dtype)``, ``-(-x)``, ``abs(abs(x))`` and
    ``maximum(x, x)``, and constants (``full_like``: inf, NaN, ±0.0, 1, the dtype's max and
    tiny) combined with ``x`` or with each other before ``x`` (what folding computes once).
    ``x`` itself where the pattern does not apply (its dtype, its rank)."""
    first = b.graph._next_id
    try:
        return _rewrite(b, x, b.pick(list(REWRITES)))
    except ops.InvalidGraph:
        b.graph.remove_nodes([n for n in list(b.graph.node_ids()) if n >= first])
        return x


def _rewrite(b: Builder, x: int, kind: str) -> int:
    node = b.graph.node(x)
    if kind == "times_zero":
        return b.op("add", x, b.op("mul_scalar", x, value=b.pick([0.0, -0.0])))
    if kind == "plus_zero":
        return b.op("add_scalar", x, value=b.pick([0.0, -0.0]))
    if kind == "identity":
        name = b.pick(["mul_scalar", "div_scalar", "pow_scalar"])
        return b.op(name, x, value=1.0 if node.dtype in ops.FLOAT_DTYPES else 1)
    if kind == "self_sub":
        return b.op("add", x, b.op("sub", x, x))
    if kind == "self_div":
        return b.op("mul", x, b.op("div", x, x))
    if kind == "where_same":
        return b.op("where", b.input(node.shape, dtype="bool"), x, x)
    if kind == "cumsum_last":
        last = b.op("select", b.op("cumsum", x, dim=-1), dim=-1, index=-1)
        return b.op("add", x, b.op("unsqueeze", last, dim=-1))
    if kind == "transpose_twice":
        order = tuple(reversed(range(len(node.shape))))  # its own inverse
        return b.op("permute", b.op("permute", x, dims=order), dims=order)
    if kind == "same_cast":
        return b.op("own_dtype", x)
    if kind == "idempotent":
        name = b.pick(["neg", "abs", "maximum"])
        if name == "maximum":
            return b.op("maximum", x, x)
        return b.op(name, b.op(name, x))
    if node.dtype not in ops.FLOAT_DTYPES:
        raise ops.InvalidGraph("constants with inf and NaN are float")
    info = torch.finfo(ops.torch_dtype(node.dtype))
    value = b.pick(list(CONSTANTS))
    if isinstance(value, str):  # named: the dtype's own
        value = {"max": info.max, "tiny": info.tiny}.get(value, value)
    constant = b.op("full_like", x, value=value)
    if kind == "folded_constant":  # computed from constants alone: folded at compile time
        constant = b.op(b.pick(["sub", "div", "mul", "add"]), constant, constant)
    return b.op(b.pick(["add", "mul", "sub", "div"]), x, constant)


def relayout(b: Builder, x: int) -> int | None:
    """``x`` copied into another memory layout (registry tag ``relayout``: channels-last at rank 4
    or 5, the last two dims or the first dim moved innermost), so the kernels after it read a
    channels-last or transposed intermediate; None where none applies to its rank."""
    if len(b.shape(x)) < 2:
        return None
    for _ in range(3):
        made = b.drawn(b.pick(list(ops.tagged("relayout"))), x)
        if made is not None:
            return made
    return None


def maybe_hazard(b: Builder, x: int, p: float = 0.35) -> int:
    if b.hazards and b.chance(min(1.0, p * b.hazard_rate)):
        return b.pick(b.hazards)(b, x)
    return x


# ------------------------------------------------------------------ bodies


def vision_body(b: Builder) -> tuple[int, list[int]]:
    """Conv stacks with norms, pooling, resampling and residuals. Returns (last value, taps)."""
    n, c = b.pick([1, 2]), b.pick([3, 4, 8])
    size = b.pick([12, sizes.around(b.rng)])  # 7 to 17: the vector tails of the rows
    x = b.input((n, c, size, size))
    taps = []
    for _ in range(b.rng.randint(1, 3)):
        block_in = x
        width = b.pick([4, 8, 16])
        kind = b.pick(["3x3", "1x1", "depthwise", "strided"])
        if kind == "depthwise":
            x = b.conv(x, width, 3, depthwise=True)
        elif kind == "strided" and b.shape(x)[2] >= 4:
            x = b.conv(x, width, 3, stride=2)
        else:
            x = b.conv(x, width, 3 if kind == "3x3" else 1)
        x = vision_norm(b, x)
        x = b.activation(x)
        if b.shape(x) == b.shape(block_in) and b.chance(0.5):
            x = b.op("add", x, block_in)
        x = maybe_hazard(b, x)
        # Both spatial dims must fit the window (a resample before may have shrunk only one).
        if b.chance(0.3) and min(b.shape(x)[2:]) >= 4:
            x = pool_variant(b, x) if b.chance(0.3) else \
                b.op(b.pick(["avg_pool2d", "max_pool2d"]), x, kernel=2)
        elif b.chance(0.15):
            x = resample_variant(b, x) if b.chance(0.3) else \
                b.op("interpolate", x, scale=2.0, mode=b.pick(["nearest", "bilinear"]))
        if b.chance(0.15):  # the next block reads a channels-last or transposed map
            x = relayout(b, x) or x
        taps.append(x)
    if b.chance(0.4):
        x = b.op("flatten", b.op("adaptive_avg_pool2d", x, size=b.pick([1, 2])))
        x = b.linear(x, b.pick([8, 16]))
        if b.chance(0.5):
            x = b.activation(x)
        taps.append(x)
    return x, taps


def pool_variant(b: Builder, x: int) -> int:
    """A pool with stride, padding, ceil mode or dilation: the index arithmetic of the edges."""
    kernel = b.pick([2, 3])
    padding = b.pick([0, kernel // 2])
    if b.chance(0.5):
        return b.attempt("avg_pool2d_ex", x, kernel=kernel, stride=b.pick([1, 2]),
                         padding=padding, ceil=b.chance(0.5), include_pad=b.chance(0.5)) or x
    if b.chance(0.3):
        return b.op("adaptive_max_pool2d", x, size=b.pick([1, 3]))
    return b.attempt("max_pool2d_ex", x, kernel=kernel, stride=b.pick([1, 2]), padding=padding,
                     dilation=b.pick([1, 2]), ceil=b.chance(0.5)) or x


def resample_variant(b: Builder, x: int) -> int:
    """Resampling to an explicit size, where the source index is a rounded float."""
    _, _, h, w = b.shape(x)
    size = (max(1, h + b.pick([-1, 1, 3])), max(1, w + b.pick([-2, 1, 5])))
    mode = b.pick(["bilinear", "bicubic", "nearest-exact", "area"])
    align = b.chance(0.5) if mode in ("bilinear", "bicubic") else None
    return b.op("interpolate_size", x, size=size, mode=mode, align=align)


def vision_norm(b: Builder, x: int) -> int:
    c = b.shape(x)[1]
    kind = b.pick(["batch_norm", "group_norm", "layer_norm", "none"])
    if kind == "batch_norm":
        params = [b.input((c,), role) for role in ("mean", "var", "gamma", "beta")]
        return b.op("batch_norm", x, *params, eps=1e-5)
    if kind == "group_norm":
        groups = b.pick([g for g in (1, 2, 4) if c % g == 0])
        return b.op("group_norm", x, b.input((c,), "gamma"), b.input((c,), "beta"),
                    groups=groups, eps=1e-5)
    if kind == "layer_norm":
        return b.layer_norm(x, b.shape(x)[1:])
    return x


def attention_body(b: Builder) -> tuple[int, list[int]]:
    """One or two pre-norm transformer blocks: projections, RoPE, masked softmax or SDPA, MLP."""
    batch, t = b.pick([1, 2]), b.pick([1, 4, sizes.around(b.rng), sizes.around(b.rng)])
    heads, head_dim = b.pick([1, 2, 4]), b.pick([4, 8])
    d = heads * head_dim
    x = b.input((batch, t, d))
    taps = []
    for _ in range(b.rng.randint(1, 2)):
        h = b.rms_norm(x) if b.chance(0.5) else b.layer_norm(x, (d,))
        q, k, v = (b.op("split_heads", b.linear(h, d), heads=heads) for _ in range(3))
        if b.chance(0.4):
            cos, sin = b.input((t, head_dim), "cos"), b.input((t, head_dim), "sin")
            q = b.op("rope", q, cos, sin, half=head_dim // 2)
            k = b.op("rope", k, cos, sin, half=head_dim // 2)
        attn = attention_core(b, q, k, v, head_dim)
        x = b.op("add", x, b.linear(b.op("merge_heads", attn), d))
        taps.append(x)
        if b.chance(0.6):
            h = b.rms_norm(x) if b.chance(0.5) else b.layer_norm(x, (d,))
            hidden = b.activation(b.linear(h, d * b.pick([2, 4])))
            x = b.op("add", x, b.linear(hidden, d))
            taps.append(x)
        x = maybe_hazard(b, x, 0.25)
        if b.chance(0.1):  # the next block reads a transposed or permuted copy
            x = relayout(b, x) or x
    return x, taps


def attention_core(b: Builder, q: int, k: int, v: int, head_dim: int) -> int:
    if b.chance(0.35):
        scale = b.pick([None, 1.0 / math.sqrt(head_dim), 0.3])
        if b.chance(0.3):
            mask_shape = (b.shape(q)[0], 1, 1, b.shape(k)[2])
            # SDPA's boolean mask means "may attend", the opposite of masked_fill's.
            keep = b.input(mask_shape, "keep", dtype="bool")
            return b.op("sdpa_masked", q, k, v, keep, scale=scale)
        return b.op("sdpa", q, k, v, causal=b.chance(0.5), scale=scale)
    scores = b.op("matmul", q, b.op("transpose", k, dim0=-2, dim1=-1))
    if b.chance(0.5):
        scores = b.op("mul_scalar", scores, value=1.0 / math.sqrt(head_dim))
    else:
        scores = b.op("div_scalar", scores, value=math.sqrt(head_dim))
    if b.chance(0.4):
        scores = b.op("causal_mask", scores)
    elif b.chance(0.3):
        mask = b.input((b.shape(q)[0], 1, 1, b.shape(k)[2]), "mask", dtype="bool")
        scores = b.op("padding_mask", scores, mask)
    if b.chance(0.5):
        probs = b.op("softmax", scores, dim=-1)
    else:
        shifted = b.op("sub", scores, b.op("amax", scores, dim=-1))
        e = b.op("exp", shifted)
        probs = b.op("div", e, b.op("sum", e, dim=-1))
    return b.op("matmul", probs, v)


# ------------------------------------------------------------------ heads


def add_head(b: Builder, x: int, taps: list[int]) -> int:
    kind = b.pick(["float", "e8m0", "e8m0", "quant_int8", "quant_uint8", "sign_int8",
                   "gt_scalar", "gt", "to_int32"])
    if kind == "float":
        return x
    if kind == "e8m0":
        if b.chance(0.5):
            x = b.activation(x)  # the explicit-GELU-then-E8M0 pattern of MX quantizers
        return b.op("e8m0", x, eps=b.pick([1e-30, 1e-12, 2.0 ** -126]))
    if kind in ("quant_int8", "quant_uint8"):
        return b.op(kind, x, scale=b.pick([0.01, 0.05, 1.0 / 16, 1.0 / 3, 0.1]),
                    zero_point=0 if kind == "quant_int8" else 128)
    if kind == "gt":
        # A tap of the same shape that the comparison's dtype rule accepts (in the integer
        # strategy a float value's taps include the integer tensor it was computed from).
        same = [t for t in taps if t != x and b.shape(t) == b.shape(x) and b.accepts("gt", x, t)]
        if same:
            return b.op("gt", x, b.pick(same))
        kind = "gt_scalar"
    if kind == "gt_scalar":
        return b.op("gt_scalar", x, value=b.pick([0.0, 0.5, 1.0, -0.25]))
    if kind == "to_int32":
        return b.op("to_int32", b.op("mul_scalar", x, value=b.pick([10.0, 100.0, 3.0])))
    return b.op(kind, x)


BODIES = {"vision": vision_body, "attention": attention_body}


def generate(seed: int, grammar: str = "mixed", dtype: str = "float32",
             hazards: list[Callable[[Builder, int], int]] | None = None,
             hazard_rate: float = 1.0) -> Graph:
    """A random model: a body from ``grammar`` and one to three heads on its values; the hazard
    motifs woven in are ``hazards`` (default all), each block's chance scaled by
    ``hazard_rate``."""
    if grammar not in GRAMMARS:
        raise ops.InvalidGraph(f"unknown grammar {grammar!r}; choose from {', '.join(GRAMMARS)}")
    rng = random.Random(seed)
    b = Builder(rng, dtype, hazards, hazard_rate)
    body = BODIES[rng.choice(["vision", "attention"]) if grammar == "mixed" else grammar]
    x, taps = body(b)
    outputs = [add_head(b, x, taps)]
    for _ in range(rng.randint(0, 2)):
        outputs.append(add_head(b, b.pick(taps), taps))
    b.graph.outputs = list(dict.fromkeys(outputs))
    b.graph.remove_dead()
    if rng.random() < MODULE_SHARE:
        as_module(b.graph, rng)
    return b.graph


MODULE_SHARE = 0.5  # models whose weights are module parameters and buffers, not arguments
PARAM_ROLES = ("w", "b", "gamma", "beta")  # learned: parameters; the rest of a model's state
BUFFER_ROLES = ("mean", "var", "cos", "sin", "mask", "keep", "count")  # statistics, tables


def as_module(graph: Graph, rng: random.Random | None = None) -> None:
    """The model as an ``nn.Module``: its weights parameters, its statistics and tables buffers
    (the input's ``state``), so that freezing, constant folding and norm folding have something
    to fold; what the program writes in place is always a buffer. With ``rng``, in a share of
    them (``FLAT_SHARE``) some parameters of one dtype are views into one flat buffer (their
    ``flat`` group), as a model whose weights were loaded into one allocation has them: a
    compiler that treats a weight as its own storage reads the wrong place."""
    written = set(graph.written_inputs())
    for node_id in graph.input_ids():
        node = graph.node(node_id)
        if node.role in PARAM_ROLES and node_id not in written:
            node.attrs["state"] = "param"
        elif node.role in BUFFER_ROLES or (node_id in written and node.role != "x"):
            node.attrs["state"] = "buffer"
    if rng is not None and rng.random() < FLAT_SHARE:
        flatten_weights(graph, rng)


FLAT_SHARE = 0.3


def flatten_weights(graph: Graph, rng: random.Random) -> None:
    """Two or more parameters of one dtype made views of one flat buffer (``flat`` group 0,
    packed in input order, each contiguous: ``execute.calling.Module`` builds them so)."""
    params = [n for n in graph.input_ids() if graph.node(n).attrs.get("state") == "param"]
    by_dtype: dict[str, list[int]] = {}
    for n in params:
        by_dtype.setdefault(graph.node(n).dtype, []).append(n)
    groups = [members for members in by_dtype.values() if len(members) >= 2]
    if not groups:
        return
    members = rng.choice(groups)
    chosen = sorted(rng.sample(members, rng.randint(2, len(members))))
    for n in chosen:
        graph.node(n).attrs["flat"] = 0
        graph.node(n).attrs.pop("layout", None)
