"""The op registry: every op a graph may hold, with its arity, shape rule, dtype rule and source.

One table (``REGISTRY``) in the NNSmith style. The grammar draws from it, the IR checks graphs
against
it, the renderer turns nodes into Python through each spec's template, and the oracle asks discrete
heads how far a float64 value sits from their discontinuity. Nothing else knows what an op means.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from fuzzer.errors import InputError

Shape = tuple[int, ...]
# A discrete head's discontinuity nearest each input element: (float64 inputs, attrs) -> points.
Boundary = Callable[[list[torch.Tensor], dict], torch.Tensor]

FLOAT_DTYPES = ("float32", "bfloat16", "float16", "float64")
DISCRETE_DTYPES = ("uint8", "int8", "int32", "int64", "bool")


class InvalidGraph(InputError):
    """A node's inputs do not satisfy its op's shape or dtype rule."""


def literal(value: Any) -> str:
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


# ---------------------------------------------------------------- shape rules


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


# ---------------------------------------------------------------- discontinuities
# Each returns, per element of the head's first input, the nearest input value at which the
# head's output changes (float64 in, float64 out). The oracle measures how far float64's own value
# sits from it (``judge.rules.evidence``): a flip 1 ulp from a boundary is weaker evidence than
# one 1000 ulps away. Plain torch, so ``repro.py`` can carry the one its head uses.


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


# ---------------------------------------------------------------- the registry


@dataclass(frozen=True)
class OpSpec:
    """One op: how many tensor inputs, how shapes and dtypes flow, and the source it renders to.

    ``template`` is a str.format pattern: ``{0}``, ``{1}`` … are the input variables, ``{name}`` an
    attribute rendered as an exact Python literal. ``roles`` names the parameter inputs the grammar
    must create (after the first input) for ops such as conv2d. ``boundary`` marks a discrete head;
    ``step`` a float op whose output jumps (floor, ceil, round, sign): a head fed by one flips
    where the step's own input crosses these points, so the oracle measures there. ``infer``
    ``by_meta`` lets torch itself decide shape and dtype (promotion of integers, bools, 0-d
    tensors and Python scalars), so the IR's dtype is the one eager produces.
    """

    name: str
    arity: int
    template: str
    shape_rule: Callable[[list[Shape], dict], Shape] = same_shape
    dtype_rule: Callable[[list[str], dict], str] = float_in_same_out
    category: str = "elementwise"
    boundary: Boundary | None = None
    step: Boundary | None = None
    attrs: tuple[str, ...] = field(default=())
    raw: tuple[str, ...] = field(default=())  # attrs spliced in as identifiers (dtype names)
    # For ops no template or shape rule can describe (generic calls): arity -1 means any.
    renderer: Callable[[list[str], dict], str] | None = None
    infer: Callable[[list[Shape], list[str], dict], tuple[Shape, str]] | None = None
    # The op's input domain: where its first input is interesting (poles, branch points, where it
    # overflows or saturates), as a function of the working dtype's finfo. The ``edges`` input
    # domain (gen.domains) draws there.
    edges: Callable[[torch.finfo], tuple[float, ...]] | None = None
    # The torch calls a captured model makes that this op renders exactly (generic target names:
    # ``torch.erf``, ``Tensor.transpose``, ``operator.add``), and how such a call's plain-data
    # arguments become this op's attrs (``lift``: None when the call's form is not one it
    # renders bit for bit; default ``lift_exact``). ``user.lift`` reads both.
    captures: tuple[str, ...] = field(default=())
    lift: Callable[[list, dict], dict | None] | None = None

    def render(self, args: list[str], attrs: dict) -> str:
        if self.arity >= 0 and len(args) != self.arity:
            raise InvalidGraph(f"{self.name} takes {self.arity} inputs, got {len(args)}")
        if self.renderer is not None:
            return self.renderer(args, attrs)
        values = {}
        for key, value in attrs.items():
            if key in self.raw:
                if not (isinstance(value, str) and value.isidentifier()):
                    raise InvalidGraph(f"{self.name}.{key} must be a name, got {value!r}")
                values[key] = value
            else:
                values[key] = literal(value)
        try:
            return self.template.format(*args, **values)
        except (KeyError, IndexError) as err:
            raise InvalidGraph(f"{self.name} is missing attribute {err}") from None

    @property
    def discrete(self) -> bool:
        return self.boundary is not None


REGISTRY: dict[str, OpSpec] = {}


MAX_NUMEL = 1 << 28  # elements one node may make: a case file cannot make numfuzz allocate more


def _check_sizes(name: str, attrs: dict) -> None:
    """A factory's length comes from its attributes: bound it before anything runs (the output
    alone does not tell, ``x + arange(n)`` broadcast against an empty ``x`` is empty)."""
    lengths = [attrs.get(key) for key in ("n", "length")]
    if {"start", "end", "step"} <= set(attrs):
        try:
            lengths.append(math.ceil((attrs["end"] - attrs["start"]) / attrs["step"]))
        except (TypeError, ZeroDivisionError, ValueError, OverflowError):
            raise InvalidGraph(f"{name}: arange bounds {attrs!r} are not numbers") from None
    size = attrs.get("size", ())
    lengths += list(size) if isinstance(size, (list, tuple)) else [size]
    for length in lengths:
        if isinstance(length, (int, float)) and not abs(length) <= MAX_NUMEL:
            raise InvalidGraph(f"{name}: a length of {length} is more than numfuzz runs")


def evaluate(name: str, tensors: list[torch.Tensor], attrs: dict) -> Any:
    """Op ``name`` run on ``tensors``: its registry template with literal attributes, the same
    text the renderer emits and the runner executes."""
    names = [f"_in{i}" for i in range(len(tensors))]
    scope: dict[str, Any] = {"torch": torch, "F": torch.nn.functional, **dict(zip(names, tensors))}
    return eval(REGISTRY[name].render(names, attrs), scope)  # noqa: S307 - registry text


def by_meta(name: str) -> Callable[[list[Shape], list[str], dict], tuple[Shape, str]]:
    """Shape and dtype as torch computes them: the op's own source (``evaluate``) on meta
    tensors, so nothing is allocated."""

    def infer(shapes: list[Shape], dtypes: list[str], attrs: dict) -> tuple[Shape, str]:
        _check_sizes(name, attrs)
        tensors = [torch.empty(s, dtype=torch_dtype(d), device="meta")
                   for s, d in zip(shapes, dtypes)]
        try:
            with torch.device("meta"):
                out = evaluate(name, tensors, attrs)
        except InvalidGraph:
            raise
        except Exception as err:  # torch rejects these shapes or dtypes: an invalid graph
            first = str(err).strip().splitlines()[0][:200] if str(err).strip() else ""
            raise InvalidGraph(f"{name}: {type(err).__name__}: {first}") from None
        if not isinstance(out, torch.Tensor):
            raise InvalidGraph(f"{name} does not return one tensor")
        if out.numel() > MAX_NUMEL:
            raise InvalidGraph(f"{name} makes {out.numel()} elements, more than numfuzz runs")
        return tuple(out.shape), str(out.dtype).removeprefix("torch.")

    return infer


def register(spec: OpSpec) -> OpSpec:
    REGISTRY[spec.name] = spec
    return spec


def unary(name: str, template: str, category: str = "elementwise", **kw: Any) -> None:
    register(OpSpec(name, 1, template, category=category, **kw))


for _name, _template in {
    "relu": "torch.relu({0})",
    "sigmoid": "torch.sigmoid({0})",
    "tanh": "torch.tanh({0})",
    "silu": "F.silu({0})",
    "erf": "torch.erf({0})",
    "log2": "torch.log2({0})",
    "sqrt": "torch.sqrt({0})",
    "rsqrt": "torch.rsqrt({0})",
}.items():
    unary(_name, _template)

for _name, _step in (("floor", "to_int_boundary"), ("ceil", "to_int_boundary"),
                     ("trunc", "to_int_boundary"), ("round", "round_boundary"),
                     ("sign", "sign_boundary")):
    unary(_name, f"torch.{_name}({{0}})", step=globals()[_step], infer=by_meta(_name))
for _name in ("abs", "neg"):  # also integers: -abs(x) on uint8 wraps
    unary(_name, f"torch.{_name}({{0}})", infer=by_meta(_name))

unary("gelu", "F.gelu({0}, approximate={approximate})", attrs=("approximate",))
# An explicit round trip through a narrower float: eager rounds here; a fused kernel may not.
unary("cast_roundtrip", "{0}.to(torch.{to}).to({0}.dtype)", attrs=("to",), raw=("to",))
# Scalar arithmetic follows torch's promotion: an integer tensor times 0.5 is a float tensor.
for _name, _template, _step in (
        ("mul_scalar", "{0} * {value}", None),
        ("div_scalar", "{0} / {value}", None),
        ("add_scalar", "{0} + {value}", None),
        ("floordiv_scalar", "torch.div({0}, {value}, rounding_mode='floor')", multiple_boundary),
        ("truncdiv_scalar", "torch.div({0}, {value}, rounding_mode='trunc')", multiple_boundary),
        ("remainder_scalar", "torch.remainder({0}, {value})", None),
        ("fmod_scalar", "torch.fmod({0}, {value})", None)):
    unary(_name, _template, attrs=("value",), step=_step, infer=by_meta(_name))
unary("clamp", "torch.clamp({0}, {lo}, {hi})", attrs=("lo", "hi"), infer=by_meta("clamp"))

for _name, _template in {
    "add": "{0} + {1}",
    "sub": "{0} - {1}",
    "mul": "{0} * {1}",
    "div": "{0} / {1}",
    "maximum": "torch.maximum({0}, {1})",
    "minimum": "torch.minimum({0}, {1})",
    "floordiv": "torch.div({0}, {1}, rounding_mode='floor')",
}.items():
    register(OpSpec(_name, 2, _template, category="binary", infer=by_meta(_name)))

for _name, _template in {
    "amax": "torch.amax({0}, dim={dim}, keepdim=True)",
    "sum": "torch.sum({0}, dim={dim}, keepdim=True)",
}.items():  # also integers: sum of int8 is int64
    unary(_name, _template, category="reduce", attrs=("dim",), infer=by_meta(_name))
for _name, _template in {
    "mean": "torch.mean({0}, dim={dim}, keepdim=True)",
    "var": "torch.var({0}, dim={dim}, keepdim=True, correction=0)",
}.items():
    unary(_name, _template, category="reduce", shape_rule=reduce_keepdim, attrs=("dim",))

unary("softmax", "torch.softmax({0}, dim={dim})", category="reduce", shape_rule=softmax_shape,
      attrs=("dim",))
unary("log_softmax", "torch.log_softmax({0}, dim={dim})", category="reduce",
      shape_rule=softmax_shape, attrs=("dim",))

register(OpSpec("layer_norm", 3, "F.layer_norm({0}, {normalized_shape}, {1}, {2}, eps={eps})",
                shape_rule=norm_shape, category="norm", attrs=("normalized_shape", "eps")))
register(OpSpec("rms_norm", 2, "F.rms_norm({0}, {normalized_shape}, {1}, eps={eps})",
                shape_rule=norm_shape, category="norm", attrs=("normalized_shape", "eps")))
register(OpSpec("batch_norm", 5,
                "F.batch_norm({0}, {1}, {2}, {3}, {4}, training=False, eps={eps})",
                shape_rule=batch_norm_shape, category="norm", attrs=("eps",)))
register(OpSpec("group_norm", 3, "F.group_norm({0}, {groups}, {1}, {2}, eps={eps})",
                shape_rule=group_norm_shape, category="norm", attrs=("groups", "eps")))
register(OpSpec("conv2d", 3,
                "F.conv2d({0}, {1}, {2}, stride={stride}, padding={padding}, groups={groups})",
                shape_rule=conv2d_shape, category="conv", attrs=("stride", "padding", "groups")))
register(OpSpec("linear", 3, "F.linear({0}, {1}, {2})", shape_rule=linear_shape, category="conv"))

unary("avg_pool2d", "F.avg_pool2d({0}, {kernel})", category="pool", shape_rule=pool_shape,
      attrs=("kernel",))
unary("max_pool2d", "F.max_pool2d({0}, {kernel})", category="pool", shape_rule=pool_shape,
      attrs=("kernel",))
unary("adaptive_avg_pool2d", "F.adaptive_avg_pool2d({0}, {size})", category="pool",
      shape_rule=adaptive_pool_shape, attrs=("size",))
unary("interpolate", "F.interpolate({0}, scale_factor={scale}, mode={mode})", category="pool",
      shape_rule=interpolate_shape, attrs=("scale", "mode"))

# The other pooling and resampling variants: strides, padding, ceil mode, dilation, explicit
# output sizes, align_corners; torch decides their shapes (``by_meta``).
for _name, _template, _attrs in (
        ("avg_pool2d_ex", "F.avg_pool2d({0}, {kernel}, stride={stride}, padding={padding}, "
         "ceil_mode={ceil}, count_include_pad={include_pad})",
         ("kernel", "stride", "padding", "ceil", "include_pad")),
        ("max_pool2d_ex", "F.max_pool2d({0}, {kernel}, stride={stride}, padding={padding}, "
         "dilation={dilation}, ceil_mode={ceil})",
         ("kernel", "stride", "padding", "dilation", "ceil")),
        ("adaptive_max_pool2d", "F.adaptive_max_pool2d({0}, {size})", ("size",)),
        ("avg_pool1d", "F.avg_pool1d({0}, {kernel}, stride={stride}, padding={padding}, "
         "ceil_mode={ceil})", ("kernel", "stride", "padding", "ceil")),
        ("interpolate_size", "F.interpolate({0}, size={size}, mode={mode}, "
         "align_corners={align})", ("size", "mode", "align"))):
    unary(_name, _template, category="pool", attrs=_attrs, infer=by_meta(_name))

register(OpSpec("matmul", 2, "torch.matmul({0}, {1})", shape_rule=matmul_shape, category="layout"))
unary("transpose", "{0}.transpose({dim0}, {dim1})", category="layout", shape_rule=transpose_shape,
      attrs=("dim0", "dim1"))
unary("split_heads", "{0}.unflatten(-1, ({heads}, -1)).transpose(1, 2)", category="layout",
      shape_rule=split_heads_shape, attrs=("heads",))
unary("merge_heads", "{0}.transpose(1, 2).flatten(2)", category="layout",
      shape_rule=merge_heads_shape)
unary("flatten", "{0}.flatten(1)", category="layout", shape_rule=flatten_shape)

unary("causal_mask",
      "{0}.masked_fill(torch.ones({0}.shape[-2:], dtype=torch.bool, device={0}.device).triu(1), "
      "float('-inf'))",
      category="attention", shape_rule=square_last_shape)
register(OpSpec("padding_mask", 2, "{0}.masked_fill({1}, float('-inf'))", shape_rule=masked_shape,
                category="attention"))
register(OpSpec("sdpa", 3, "F.scaled_dot_product_attention({0}, {1}, {2}, is_causal={causal}, "
                "scale={scale})", shape_rule=sdpa_shape, category="attention",
                attrs=("causal", "scale")))
register(OpSpec("sdpa_masked", 4, "F.scaled_dot_product_attention({0}, {1}, {2}, attn_mask={3}, "
                "scale={scale})", shape_rule=sdpa_shape, category="attention", attrs=("scale",)))
register(OpSpec("rope", 3,
                "{0} * {1} + torch.cat((-{0}[..., {half}:], {0}[..., :{half}]), dim=-1) * {2}",
                shape_rule=rope_shape, category="attention", attrs=("half",)))

# ---------------------------------------------------------------- the edge vocabulary
# Ops whose compiled forms use other math libraries (SLEEF, libdevice), other algorithms (floor
# division, remainder) or other masks, each with the input values where it is most fragile.
# torch decides their shapes and dtypes (``by_meta``).


def _overflow(f: torch.finfo) -> tuple[float, ...]:
    """exp and friends: where they overflow and where they underflow to subnormals."""
    top = math.log(f.max)
    return (top, -top, math.log(f.tiny), 0.0)


_PI = math.pi
EDGE_UNARY: dict[str, tuple[str, Callable[[torch.finfo], tuple[float, ...]]]] = {
    "exp": ("torch.exp({0})", _overflow),
    "exp2": ("torch.exp2({0})", lambda f: (math.log2(f.max), math.log2(f.tiny), 0.0)),
    "expm1": ("torch.expm1({0})", lambda f: (*_overflow(f), -1e-5)),
    "sinh": ("torch.sinh({0})", lambda f: (math.log(f.max) + math.log(2), -math.log(f.max)
                                           - math.log(2), math.log(f.max), 0.0)),
    "cosh": ("torch.cosh({0})", lambda f: (math.log(f.max) + math.log(2), math.log(f.max), 0.0)),
    "asinh": ("torch.asinh({0})", lambda f: (math.sqrt(f.max), -math.sqrt(f.max), f.max / 4,
                                             1e19, 0.0)),
    "acosh": ("torch.acosh({0})", lambda f: (1.0, math.sqrt(f.max), f.max / 4)),
    "atanh": ("torch.atanh({0})", lambda f: (1.0, -1.0, 0.0)),
    "asin": ("torch.asin({0})", lambda f: (1.0, -1.0)),
    "acos": ("torch.acos({0})", lambda f: (1.0, -1.0)),
    "atan": ("torch.atan({0})", lambda f: (0.0, 1e20, -1e20)),
    "tan": ("torch.tan({0})", lambda f: (_PI / 2, -_PI / 2, 3 * _PI / 2, 1e4)),
    "sin": ("torch.sin({0})", lambda f: (_PI, 1e5, 1e30 if f.max > 1e30 else 6e4)),
    "cos": ("torch.cos({0})", lambda f: (_PI / 2, 1e5, 1e30 if f.max > 1e30 else 6e4)),
    "log": ("torch.log({0})", lambda f: (0.0, f.tiny, 1.0)),
    "log10": ("torch.log10({0})", lambda f: (0.0, f.tiny, 1.0)),
    "log1p": ("torch.log1p({0})", lambda f: (-1.0, 0.0, f.eps)),
    "reciprocal": ("torch.reciprocal({0})", lambda f: (0.0, f.tiny, 1 / f.max)),
    "square": ("torch.square({0})", lambda f: (math.sqrt(f.max), -math.sqrt(f.max))),
    "erfinv": ("torch.erfinv({0})", lambda f: (1.0, -1.0, 0.0)),
    "erfc": ("torch.erfc({0})", lambda f: (9.0 if f.bits > 16 else 4.0, -4.0, 0.0)),
    "erfcx": ("torch.special.erfcx({0})", lambda f: (-9.0, 0.0, 1e4)),
    "ndtri": ("torch.special.ndtri({0})", lambda f: (0.0, 1.0, 0.5)),
    "log_ndtr": ("torch.special.log_ndtr({0})", lambda f: (-40.0, 0.0, 6.0)),
    "lgamma": ("torch.lgamma({0})", lambda f: (0.0, -1.0, -2.0, 1.0, 2.0, f.max ** 0.5)),
    "digamma": ("torch.digamma({0})", lambda f: (0.0, -1.0, -2.0, 1.0)),
    "i0": ("torch.special.i0({0})", lambda f: (math.log(f.max), -math.log(f.max), 0.0)),
    "i0e": ("torch.special.i0e({0})", lambda f: (0.0, 700.0)),
    "i1": ("torch.special.i1({0})", lambda f: (math.log(f.max), -math.log(f.max), 0.0)),
    "i1e": ("torch.special.i1e({0})", lambda f: (0.0, 700.0)),
    "bessel_j0": ("torch.special.bessel_j0({0})", lambda f: (2.404825557695773, 0.0, 25.0)),
    "bessel_j1": ("torch.special.bessel_j1({0})", lambda f: (3.831705970207512, 0.0, 25.0)),
    "sinc": ("torch.special.sinc({0})", lambda f: (0.0, 1.0, -1.0, f.max / 8)),
    "entr": ("torch.special.entr({0})", lambda f: (0.0, 1.0)),
    "logit": ("torch.logit({0})", lambda f: (0.0, 1.0, 0.5)),
    "frac": ("torch.frac({0})", lambda f: (0.0, -1.0, 1.0)),
    "softplus": ("F.softplus({0})", lambda f: (20.0, -20.0, math.log(f.max))),
    "mish": ("F.mish({0})", lambda f: (-20.0, 20.0, math.log(f.max))),
    "logsigmoid": ("F.logsigmoid({0})", lambda f: (-math.log(f.max), 0.0, 20.0)),
    "hardswish": ("F.hardswish({0})", lambda f: (3.0, -3.0, 0.0)),
    "hardsigmoid": ("F.hardsigmoid({0})", lambda f: (3.0, -3.0)),
}
for _name, (_template, _edges) in EDGE_UNARY.items():
    unary(_name, _template, edges=_edges, infer=by_meta(_name))
for _name, _edges in {  # the float-only unary ops above, at their edges too
    "sigmoid": lambda f: (-math.log(f.max), math.log(f.max), 0.0),
    "tanh": lambda f: (0.0, 9.0, -9.0),
    "erf": lambda f: (0.0, 4.0, -4.0),
    "silu": lambda f: (-math.log(f.max), 0.0),
    "sqrt": lambda f: (0.0, f.tiny),
    "rsqrt": lambda f: (0.0, f.tiny, f.max / 4),
    "log2": lambda f: (0.0, f.tiny, 1.0),
}.items():
    REGISTRY[_name] = replace(REGISTRY[_name], edges=_edges)
# Powers with negative and fractional exponents: where they overflow, and at zero.
unary("pow_scalar", "torch.pow({0}, {value})", attrs=("value",), infer=by_meta("pow_scalar"),
      edges=lambda f: (0.0, f.tiny, math.sqrt(f.max), -1.0))
unary("round_decimals", "torch.round({0}, decimals={decimals})", attrs=("decimals",),
      infer=by_meta("round_decimals"))
unary("ldexp_scalar", "torch.ldexp({0}, torch.tensor({value}, device={0}.device))",
      attrs=("value",), infer=by_meta("ldexp_scalar"), edges=lambda f: (f.tiny, f.max / 4))
unary("frexp", "torch.frexp({0})[{pick}]", attrs=("pick",), infer=by_meta("frexp"),
      edges=lambda f: (0.0, f.tiny, f.tiny * f.eps, f.max))

for _name, _template in {
    "atan2": "torch.atan2({0}, {1})",
    "hypot": "torch.hypot({0}, {1})",
    "xlogy": "torch.xlogy({0}, {1})",
    "copysign": "torch.copysign({0}, {1})",
    "fmax": "torch.fmax({0}, {1})",
    "fmin": "torch.fmin({0}, {1})",
    "logaddexp": "torch.logaddexp({0}, {1})",
    "pow": "torch.pow({0}, {1})",
    "remainder": "torch.remainder({0}, {1})",
    "fmod": "torch.fmod({0}, {1})",
    "truncdiv": "torch.div({0}, {1}, rounding_mode='trunc')",
    "true_divide": "torch.true_divide({0}, {1})",
    "bitwise_and": "{0} & {1}",
    "bitwise_or": "{0} | {1}",
    "bitwise_xor": "{0} ^ {1}",
    "lt": "{0} < {1}",
    "le": "{0} <= {1}",
    "eq": "{0} == {1}",
    "ne": "{0} != {1}",
}.items():
    register(OpSpec(_name, 2, _template, category="binary", infer=by_meta(_name),
                    boundary=compare_boundary if _name in ("lt", "le", "eq", "ne") else None))

for _name, _template in {
    "bitwise_not": "torch.bitwise_not({0})",
    "shl_scalar": "{0} << {value}",
    "shr_scalar": "{0} >> {value}",
    "lt_scalar": "{0} < {value}",
}.items():
    unary(_name, _template, attrs=("value",) if "{value}" in _template else (),
          infer=by_meta(_name), boundary=compare_boundary if _name == "lt_scalar" else None)
# Casts, and promotion against a 0-d tensor (a bf16 tensor times a float64 0-d tensor stays bf16).
unary("cast", "{0}.to(torch.{to})", attrs=("to",), raw=("to",), infer=by_meta("cast"))
register(OpSpec("where", 3, "torch.where({0}, {1}, {2})", category="binary",
                infer=by_meta("where")))
register(OpSpec("masked_fill", 2, "{0}.masked_fill({1}, {value})", category="binary",
                attrs=("value",), infer=by_meta("masked_fill")))

# Reductions, including over empty and one-element dims (``dims`` a tuple of dims).
for _name, _template in {
    "amin": "torch.amin({0}, dim={dims}, keepdim={keepdim})",
    "amax_dims": "torch.amax({0}, dim={dims}, keepdim={keepdim})",
    "sum_dims": "torch.sum({0}, dim={dims}, keepdim={keepdim})",
    "mean_dims": "torch.mean({0}, dim={dims}, keepdim={keepdim})",
    "prod": "torch.prod({0}, dim={dim}, keepdim={keepdim})",
    "any": "torch.any({0}, dim={dim}, keepdim={keepdim})",
    "all": "torch.all({0}, dim={dim}, keepdim={keepdim})",
    "logsumexp": "torch.logsumexp({0}, dim={dims}, keepdim={keepdim})",
    "norm": "torch.linalg.vector_norm({0}, {p}, dim={dims}, keepdim={keepdim})",
    "var_c": "torch.var({0}, dim={dims}, correction={correction}, keepdim={keepdim})",
    "std_c": "torch.std({0}, dim={dims}, correction={correction}, keepdim={keepdim})",
    "var_mean": "torch.var_mean({0}, dim={dims}, correction={correction}, "
                "keepdim={keepdim})[{pick}]",
    "std_mean": "torch.std_mean({0}, dim={dims}, correction={correction}, "
                "keepdim={keepdim})[{pick}]",
}.items():
    unary(_name, _template, category="reduce", infer=by_meta(_name),
          attrs=tuple(a for a in ("dim", "dims", "keepdim", "p", "correction", "pick")
                      if "{" + a + "}" in _template))
for _name in ("cumsum", "cumprod"):
    unary(_name, f"torch.{_name}({{0}}, dim={{dim}})", category="reduce", attrs=("dim",),
          infer=by_meta(_name))

# Indexing with int64 indices (drawn in range: an out-of-range index is an eager error).
register(OpSpec("gather", 2, "torch.gather({0}, {dim}, {1})", category="layout", attrs=("dim",),
                infer=by_meta("gather")))
register(OpSpec("index_select", 2, "torch.index_select({0}, {dim}, {1})", category="layout",
                attrs=("dim",), infer=by_meta("index_select")))
register(OpSpec("embedding", 2, "F.embedding({1}, {0})", category="layout",
                infer=by_meta("embedding")))

# Factories inside the graph, with int64 and float steps, feeding arithmetic.
unary("arange_mul", "{0} + torch.arange({n}, device={0}.device) * {value}", category="factory",
      attrs=("n", "value"), infer=by_meta("arange_mul"))
unary("arange_step", "{0} + torch.arange({start}, {end}, {step}, device={0}.device)",
      category="factory", attrs=("start", "end", "step"), infer=by_meta("arange_step"))
unary("linspace_mul", "{0} * torch.linspace({lo}, {hi}, {n}, device={0}.device)",
      category="factory", attrs=("lo", "hi", "n"), infer=by_meta("linspace_mul"))
unary("full_like", "torch.full_like({0}, {value})", category="factory", attrs=("value",),
      infer=by_meta("full_like"))

# Layout changes: views the compiled kernel must index correctly.
for _name, _template, _attrs in (
        ("permute", "{0}.permute({dims})", ("dims",)),
        ("expand", "{0}.expand({size})", ("size",)),
        ("flip", "{0}.flip({dims})", ("dims",)),
        ("slice_step", "{0}[..., ::{step}]", ("step",)),
        ("narrow", "{0}.narrow({dim}, {start}, {length})", ("dim", "start", "length")),
        ("chunk", "{0}.chunk({chunks}, dim={dim})[{pick}]", ("chunks", "dim", "pick")),
        ("contiguous", "{0}.contiguous()", ()),
        ("unsqueeze", "{0}.unsqueeze({dim})", ("dim",))):
    unary(_name, _template, category="layout", attrs=_attrs, infer=by_meta(_name))
register(OpSpec("cat", 2, "torch.cat(({0}, {1}), dim={dim})", category="layout",
                attrs=("dim",), infer=by_meta("cat")))

# Heads: the discontinuous encodings where one ulp upstream becomes a wrong answer.
unary("e8m0",
      "(torch.clamp(torch.ceil(torch.log2({0}.abs() + {eps})), -127, 127) + 127).to(torch.uint8)",
      category="head", dtype_rule=float_in("uint8"), boundary=e8m0_boundary, attrs=("eps",))
unary("quant_int8",
      "torch.clamp(torch.round({0} / {scale}) + {zero_point}, -128, 127).to(torch.int8)",
      category="head", dtype_rule=float_in("int8"), boundary=quant_boundary,
      attrs=("scale", "zero_point"))
unary("quant_uint8",
      "torch.clamp(torch.round({0} / {scale}) + {zero_point}, 0, 255).to(torch.uint8)",
      category="head", dtype_rule=float_in("uint8"), boundary=quant_boundary,
      attrs=("scale", "zero_point"))
unary("sign_int8", "torch.sign({0}).to(torch.int8)", category="head",
      dtype_rule=float_in("int8"), boundary=sign_boundary)
unary("gt_scalar", "{0} > {value}", category="head", dtype_rule=float_in("bool"),
      boundary=compare_boundary, attrs=("value",))
register(OpSpec("gt", 2, "{0} > {1}", shape_rule=broadcast, category="head",
                dtype_rule=float_in("bool"), boundary=compare_boundary))
unary("to_int32", "{0}.to(torch.int32)", category="head", dtype_rule=float_in("int32"),
      boundary=to_int_boundary)

# Graph inputs: activations, weights and masks arrive as function arguments.
register(OpSpec("input", 0, "", dtype_rule=same_dtype, category="input", attrs=("role",)))


# ---------------------------------------------------------------- what a captured call is
# A captured model's calls arrive as generic ``call`` nodes (``fuzzer.ir.generic``): a target name
# and plain-data arguments, a tensor input written ``{"in": k}``. Where a registry op renders the
# very same computation, capture lifts the call to it (``user.lift``), so the oracle knows its
# boundary and the minimizer its category. Each lift returns the op's attrs, or None when the
# call's form differs from what the op renders.

TENSOR = {"in": 0}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def lift_exact(arity: int) -> Callable[[list, dict], dict | None]:
    """``f(t0, t1, …)``: the tensors in order, nothing else."""
    def lift(args: list, kwargs: dict) -> dict | None:
        return {} if args == [{"in": i} for i in range(arity)] and not kwargs else None

    return lift


def lift_not_inplace(args: list, kwargs: dict) -> dict | None:
    """``F.relu(x)`` / ``F.silu(x, inplace=False)``."""
    return {} if args == [TENSOR] and set(kwargs) <= {"inplace"} \
        and not kwargs.get("inplace") else None


def lift_gelu(args: list, kwargs: dict) -> dict | None:
    if args != [TENSOR] or not set(kwargs) <= {"approximate"}:
        return None
    return {"approximate": kwargs.get("approximate", "none")}


def lift_scalar(commutative: bool, as_float: bool = False) -> Callable[[list, dict],
                                                                         dict | None]:
    """``x * 2.0`` (and ``2.0 * x`` where that is the same bits): the scalar is ``value``."""
    def lift(args: list, kwargs: dict) -> dict | None:
        if len(args) != 2 or kwargs:
            return None
        a, b = args
        if a == TENSOR and _number(b):
            return {"value": float(b) if as_float else b}
        if commutative and b == TENSOR and _number(a):
            return {"value": float(a) if as_float else a}
        return None

    return lift


def lift_clamp(args: list, kwargs: dict) -> dict | None:
    if len(args) == 3 and args[0] == TENSOR and not kwargs and _number(args[1]) \
            and _number(args[2]):
        return {"lo": args[1], "hi": args[2]}
    return None


def lift_transpose(args: list, kwargs: dict) -> dict | None:
    if len(args) == 3 and args[0] == TENSOR and not kwargs:
        return {"dim0": args[1], "dim1": args[2]}
    return None


def lift_softmax(args: list, kwargs: dict) -> dict | None:
    dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
    if args[:1] == [TENSOR] and isinstance(dim, int) and kwargs.get("dtype") is None \
            and len(args) <= 2:
        return {"dim": dim}
    return None


def lift_conv2d(args: list, kwargs: dict) -> dict | None:
    """``F.conv2d(x, w, b, ...)`` with square stride and padding, no dilation."""
    names = ("input", "weight", "bias", "stride", "padding", "dilation", "groups")
    given = dict(zip(names, args)) | kwargs
    if [given.get(n) for n in names[:3]] != [{"in": 0}, {"in": 1}, {"in": 2}]:
        return None

    def square(v: Any, default: int) -> int | None:
        v = default if v is None else v
        v = list(v) if isinstance(v, (list, tuple)) else [v, v]
        return v[0] if len(v) == 2 and v[0] == v[1] and isinstance(v[0], int) else None

    stride, padding = square(given.get("stride"), 1), square(given.get("padding"), 0)
    dilation, groups = square(given.get("dilation"), 1), given.get("groups", 1)
    if None in (stride, padding) or dilation != 1 or not isinstance(groups, int):
        return None
    return {"stride": stride, "padding": padding, "groups": groups}


def _captures(name: str, *targets: str,
              lift: Callable[[list, dict], dict | None] | None = None) -> None:
    REGISTRY[name] = replace(REGISTRY[name], captures=targets, lift=lift)


for _name in ("erf", "exp", "tanh", "sigmoid", "abs", "neg", "log2", "sqrt", "rsqrt",
              "floor", "ceil", "round", "trunc", "sign"):
    _captures(_name, f"torch.{_name}", f"Tensor.{_name}", f"torch.special.{_name}")
_captures("relu", "torch.relu", "Tensor.relu", "F.relu", lift=lift_not_inplace)
_captures("silu", "F.silu", lift=lift_not_inplace)
_captures("gelu", "F.gelu", lift=lift_gelu)
for _name, _target, _commutes in (("mul_scalar", "operator.mul", True),
                                  ("add_scalar", "operator.add", True),
                                  ("div_scalar", "operator.truediv", False)):
    _captures(_name, _target, lift=lift_scalar(_commutes))
_captures("gt_scalar", "operator.gt", lift=lift_scalar(False, as_float=True))
for _name, _targets in (("add", ("operator.add",)), ("sub", ("operator.sub",)),
                        ("mul", ("operator.mul",)), ("div", ("operator.truediv",)),
                        ("maximum", ("torch.maximum",)), ("minimum", ("torch.minimum",)),
                        ("gt", ("operator.gt",)), ("matmul", ("torch.matmul", "operator.matmul")),
                        ("linear", ("F.linear",))):
    _captures(_name, *_targets)
_captures("clamp", "torch.clamp", lift=lift_clamp)
_captures("transpose", "Tensor.transpose", lift=lift_transpose)
_captures("softmax", "torch.softmax", "F.softmax", "Tensor.softmax", lift=lift_softmax)
_captures("conv2d", "F.conv2d", lift=lift_conv2d)


def capturing(target: str) -> list[OpSpec]:
    """The registry ops a captured call of ``target`` may be lifted to."""
    return [op for op in REGISTRY.values() if target in op.captures]


def spec(name: str) -> OpSpec:
    """The spec for ``name``; an unknown op is an invalid graph, never a KeyError traceback."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise InvalidGraph(f"unknown op {name!r}") from None


def infer(name: str, shapes: list[Shape], dtypes: list[str], attrs: dict) -> tuple[Shape, str]:
    """The shape and dtype op ``name`` gives inputs of these shapes and dtypes; InvalidGraph
    where its rules refuse them. The one place a spec's rules are applied: the IR infers every
    node through it, and the grammar asks it before choosing an operand."""
    op = spec(name)
    if op.arity >= 0 and len(shapes) != op.arity:
        raise InvalidGraph(f"{name} takes {op.arity} inputs")
    if op.infer is not None:
        shape, dtype = op.infer(shapes, dtypes, attrs)
        return tuple(shape), dtype
    return tuple(op.shape_rule(shapes, attrs)), op.dtype_rule(dtypes, attrs)


def accepts(name: str, shapes: list[Shape], dtypes: list[str], attrs: dict) -> bool:
    """Do op ``name``'s shape and dtype rules accept these inputs?"""
    try:
        infer(name, shapes, dtypes, attrs)
    except InvalidGraph:
        return False
    return True


def label(op: str, attrs: dict) -> str:
    """How a node reads in op chains and signatures: its op, or a generic call's target."""
    return str(attrs.get("target", op)) if op == "call" else op


def torch_dtype(name: str) -> torch.dtype:
    value = getattr(torch, name, None)
    if not isinstance(value, torch.dtype):
        raise InvalidGraph(f"unknown dtype {name!r}")
    return value

