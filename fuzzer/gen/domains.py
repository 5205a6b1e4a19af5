"""Input domains: the named ways numfuzz fills an activation, each aimed at one way numerics break.

A domain is a function ``(shape, dtype, gen, edges) -> float64 or int64 tensor`` (``inputs`` casts
it to the input's dtype). Float domains:

- ``normal``, ``large``, ``tiny``: unit normal values and the same scaled up or down;
- ``boundary``: on the heads' discontinuities (powers of two for E8M0, half-integers for rounding),
  where one ulp decides the answer;
- ``overflow``: around the dtype's overflow edges: near ``max``, near ``sqrt(max)`` (a square or a
  product overflows), near ``log(max)`` (``exp``, ``sinh``, ``cosh`` overflow), where a fused kernel
  that keeps an intermediate in float32 or reorders a product behaves differently;
- ``special``: a normal tensor with a quarter of its elements replaced by inf, -inf, NaN, +0.0,
  -0.0, subnormals, the largest and the smallest normal value;
- ``subnormal``: values below the smallest normal (flush-to-zero, ``frexp``, ``log``);
- ``decimal``: multiples of 0.1, 0.2, 0.3, 0.7 and 1/3, none exactly representable: what floor
  division, ``remainder`` and rounding get wrong by one;
- ``integral``: exact integers stored as floats, up to where the dtype stops holding them;
- ``edges``: the input domain edges of the op the input feeds (``OpSpec.edges``: poles, branch
  points, overflow thresholds), a few ulps either side, among normal values;
- ``zeros``: signed zeros and NaNs of either sign among small values of either sign.

Integer domains (for integer inputs; bool inputs are fair coins): ``small`` (-10..10), ``extreme``
(the dtype's min, max, 0, ±1 mixed in; min and max always among them), ``wide`` (int64 values
beyond 2^31, the full range for narrower types). Index inputs (role ``index``) are always in
range: out of range is an eager error.

Edge values (``edge_mask``, ``edge_words``): what maintainers call edge cases, the values a cause
may need and a report must then say it needs: inf, NaN, a value near its dtype's largest
(``near_max``: within ten binades of it, and never under 4096), a subnormal, an integer at its
type's limit, an empty tensor. Everything else is ordinary.

Layouts (``LAYOUTS``, ``lay_out``): how an input is stored, the same values transposed, permuted,
channels-last, stepped in the last dim or in the rows, in padded rows, at an offset, or expanded;
``assign_layouts`` gives any program's inputs, activations and weights, one.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable

import torch

from fuzzer.ir.graph import Graph

Shape = tuple[int, ...]
Domain = Callable[[Shape, torch.dtype, torch.Generator, tuple[float, ...]], torch.Tensor]

LARGE = {torch.float16: 300.0, torch.bfloat16: 1e5, torch.float32: 1e5, torch.float64: 1e5}
TINY = {torch.float16: 2e-4, torch.bfloat16: 1e-6, torch.float32: 1e-6, torch.float64: 1e-6}
DECIMAL_STEPS = (0.1, 0.2, 0.3, 0.7, 1.0 / 3.0)


NEAR_MAX = 2.0 ** -10  # within ten binades of the largest finite value: near it
# ... but never below this: float16's largest is 65504, and ten binades under it is 64, where a
# pixel sum or a count of a few hundred is ordinary (a night classed a float16 scatter_add_ of
# -173 and 488 as needing edge values).
ORDINARY_MAGNITUDE = 2.0 ** 12


def near_max(info: torch.finfo) -> float:
    """The magnitude from which a value of this float dtype is near its largest value."""
    return max(info.max * NEAR_MAX, ORDINARY_MAGNITUDE)


def edge_mask(t: torch.Tensor) -> torch.Tensor:
    """Per element of ``t`` (its values, not the gaps of its storage): is it an edge value?"""
    if t.dtype == torch.bool:
        return torch.zeros(t.shape, dtype=torch.bool)
    v = t.detach().cpu()
    if v.is_floating_point():
        info = torch.finfo(v.dtype)
        a = v.double().abs()
        return ~torch.isfinite(v) | (a >= near_max(info)) | ((a > 0) & (a < info.tiny))
    if v.is_complex():
        return torch.zeros(t.shape, dtype=torch.bool)
    ints = torch.iinfo(v.dtype)
    w = v.long() if v.dtype != torch.uint64 else v
    return (w >= ints.max - 1) | (w <= ints.min + 1) if ints.min < 0 else w >= ints.max - 1


def edge_words(t: torch.Tensor) -> list[str]:
    """What makes ``t`` an edge input, in words (none for an ordinary one)."""
    if t.numel() == 0:
        return ["empty"]
    v = t.detach().cpu()
    mask = edge_mask(v)
    if not bool(mask.any()):
        return []
    if not v.is_floating_point():
        return ["at its type's limit"]
    words = []
    if bool(torch.isinf(v).any()):
        words.append("inf")
    if bool(torch.isnan(v).any()):
        words.append("NaN")
    a = v.double().abs()
    info = torch.finfo(v.dtype)
    if bool(((a >= near_max(info)) & torch.isfinite(a)).any()):
        words.append("near its dtype's largest value")
    if bool(((a > 0) & (a < info.tiny)).any()):
        words.append("subnormal")
    return words


def _normal(shape: Shape, dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    return torch.randn(shape, generator=gen, dtype=torch.float64)


def _signs(shape: Shape, gen: torch.Generator) -> torch.Tensor:
    return torch.where(torch.rand(shape, generator=gen) < 0.5, -1.0, 1.0).double()


def _pick(shape: Shape, gen: torch.Generator, values: list[float]) -> torch.Tensor:
    table = torch.tensor(values, dtype=torch.float64)
    return table[torch.randint(0, len(values), shape, generator=gen)]


def _ulps(shape: Shape, gen: torch.Generator, eps: float, spread: int = 3) -> torch.Tensor:
    """1 + k * eps for k in [-spread, spread]: a value a few ulps either side of its base."""
    return 1 + torch.randint(-spread, spread + 1, shape, generator=gen).double() * eps


def normal(shape: Shape, dtype: torch.dtype, gen: torch.Generator, edges: tuple) -> torch.Tensor:
    return _normal(shape, dtype, gen)


def large(shape: Shape, dtype: torch.dtype, gen: torch.Generator, edges: tuple) -> torch.Tensor:
    return _normal(shape, dtype, gen) * LARGE[dtype]


def tiny(shape: Shape, dtype: torch.dtype, gen: torch.Generator, edges: tuple) -> torch.Tensor:
    return _normal(shape, dtype, gen) * TINY[dtype]


def boundary(shape: Shape, dtype: torch.dtype, gen: torch.Generator,
             edges: tuple) -> torch.Tensor:
    eps = torch.finfo(dtype).eps
    exponent = torch.randint(-6, 7, shape, generator=gen).double()
    powers = torch.exp2(exponent) * _ulps(shape, gen, eps, 2)
    halves = (torch.randint(-20, 20, shape, generator=gen).double() + 0.5) / 8
    pick = torch.rand(shape, generator=gen) < 0.5
    return torch.where(pick, powers, halves) * _signs(shape, gen)


def overflow(shape: Shape, dtype: torch.dtype, gen: torch.Generator,
             edges: tuple) -> torch.Tensor:
    info = torch.finfo(dtype)
    bases = [info.max, info.max / 2, math.sqrt(info.max), math.log(info.max),
             math.log(info.max) + math.log(2), math.log2(info.max)]
    near = _pick(shape, gen, bases) * _ulps(shape, gen, info.eps, 4)
    scaled = _pick(shape, gen, bases) * torch.rand(shape, generator=gen, dtype=torch.float64)
    mixed = torch.where(torch.rand(shape, generator=gen) < 0.5, near, scaled)
    return mixed.clamp(max=info.max) * _signs(shape, gen)


def special_values(dtype: torch.dtype) -> list[float]:
    info = torch.finfo(dtype)
    subnormal = info.tiny * info.eps  # the smallest positive subnormal
    return [math.inf, -math.inf, math.nan, 0.0, -0.0, subnormal, -subnormal, info.max, -info.max,
            info.tiny, -info.tiny]


def special(shape: Shape, dtype: torch.dtype, gen: torch.Generator, edges: tuple) -> torch.Tensor:
    mixed = torch.rand(shape, generator=gen) < 0.25
    return torch.where(mixed, _pick(shape, gen, special_values(dtype)), _normal(shape, dtype, gen))


def subnormal(shape: Shape, dtype: torch.dtype, gen: torch.Generator,
              edges: tuple) -> torch.Tensor:
    info = torch.finfo(dtype)
    below = info.tiny * torch.rand(shape, generator=gen, dtype=torch.float64)
    mixed = torch.rand(shape, generator=gen) < 0.75
    return torch.where(mixed, below, info.tiny * _normal(shape, dtype, gen) * 4) \
        * _signs(shape, gen)


def decimal(shape: Shape, dtype: torch.dtype, gen: torch.Generator, edges: tuple) -> torch.Tensor:
    steps = _pick(shape, gen, list(DECIMAL_STEPS))
    return torch.randint(-60, 61, shape, generator=gen).double() * steps


def integral(shape: Shape, dtype: torch.dtype, gen: torch.Generator,
             edges: tuple) -> torch.Tensor:
    exact_up_to = 2.0 / torch.finfo(dtype).eps  # 2^24 for float32: integers stop being exact
    small = torch.randint(-100, 101, shape, generator=gen).double()
    top = (exact_up_to - torch.randint(0, 4, shape, generator=gen).double()) * _signs(shape, gen)
    return torch.where(torch.rand(shape, generator=gen) < 0.8, small, top)


def at_edges(shape: Shape, dtype: torch.dtype, gen: torch.Generator,
             edges: tuple) -> torch.Tensor:
    if not edges:
        return special(shape, dtype, gen, edges)
    info = torch.finfo(dtype)
    points = _pick(shape, gen, [e for e in edges if math.isfinite(e)] or [0.0])
    near = points * _ulps(shape, gen, info.eps, 4)
    # At zero, "a few ulps" means the smallest normals and subnormals of either sign.
    at_zero = _pick(shape, gen, [0.0, -0.0, info.tiny, -info.tiny, info.tiny * info.eps])
    near = torch.where(points == 0, at_zero, near)
    mixed = torch.rand(shape, generator=gen) < 0.6
    return torch.where(mixed, near, _normal(shape, dtype, gen) * 2).clamp(-info.max, info.max)


def zeros(shape: Shape, dtype: torch.dtype, gen: torch.Generator,
          edges: tuple) -> torch.Tensor:
    """Signed zeros and NaNs of either sign among small values of either sign: what makes a
    zero's sign, and a NaN's, reach a result (``1 / x``, ``copysign``, ``signbit``)."""
    info = torch.finfo(dtype)
    values = [0.0, -0.0, math.nan, -math.nan, info.tiny, -info.tiny, 1.0, -1.0, 0.5, -0.5,
              -0.25, 2.0]
    picked = _pick(shape, gen, values)
    return torch.where(torch.rand(shape, generator=gen) < 0.7, picked,
                       _normal(shape, dtype, gen))


FLOAT_DOMAINS: dict[str, Domain] = {
    "normal": normal, "large": large, "boundary": boundary, "tiny": tiny, "overflow": overflow,
    "special": special, "subnormal": subnormal, "decimal": decimal, "integral": integral,
    "edges": at_edges, "zeros": zeros,
}


def small_ints(shape: Shape, dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    info = torch.iinfo(dtype)
    return torch.randint(max(-10, info.min), min(10, info.max) + 1, shape, generator=gen)


def extreme_ints(shape: Shape, dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    info = torch.iinfo(dtype)
    edges = torch.tensor([info.min, info.min + 1, info.max, info.max - 1, 0, 1,
                          -1 if info.min < 0 else 2], dtype=torch.int64)
    picked = edges[torch.randint(0, len(edges), shape, generator=gen)]
    mixed = torch.where(torch.rand(shape, generator=gen) < 0.5, picked,
                        small_ints(shape, dtype, gen))
    if mixed.numel() >= 2:  # both ends of the range, always, wherever they land
        at = torch.randperm(mixed.numel(), generator=gen)[:2]
        mixed.view(-1)[at] = torch.tensor([info.min, info.max], dtype=mixed.dtype)
    return mixed


def wide_ints(shape: Shape, dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    info = torch.iinfo(dtype)
    if dtype != torch.int64:
        return torch.randint(info.min, info.max + 1, shape, generator=gen)
    # Around 2^31 and 2^32, where int32 index arithmetic wraps, and further out.
    base = torch.tensor([2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**40, 2**53 + 1],
                        dtype=torch.int64)
    picked = base[torch.randint(0, len(base), shape, generator=gen)]
    offset = torch.randint(-3, 4, shape, generator=gen)
    sign = torch.where(torch.rand(shape, generator=gen) < 0.5, -1, 1)
    return (picked + offset) * sign


INT_DOMAINS = {"small": small_ints, "extreme": extreme_ints, "wide": wide_ints}
# The integer domain each float domain's draw uses for the integer inputs of the same graph.
INT_FOR = {"normal": "small", "large": "wide", "boundary": "extreme", "tiny": "small",
           "overflow": "wide", "special": "extreme", "subnormal": "small", "decimal": "small",
           "integral": "wide", "edges": "extreme", "zeros": "extreme"}


def fill(shape: Shape, dtype: torch.dtype, domain: str, gen: torch.Generator,
         edges: tuple[float, ...] = ()) -> torch.Tensor:
    """A tensor of ``shape`` in ``domain``, already in ``dtype`` (bool, integer or float)."""
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) < 0.5
    if not dtype.is_floating_point:
        return INT_DOMAINS[INT_FOR.get(domain, domain)](shape, dtype, gen).to(dtype)
    return FLOAT_DOMAINS[domain](shape, dtype, gen, edges).to(dtype)


# ---------------------------------------------------------------- layouts
# How an input is stored: the backend picks its kernel (vectorized along the innermost dim, a 2-d
# tile for a transpose, a scalar tail, an index expression per stride) by the strides, so the same
# values in another layout run other code. Gaps a layout leaves in its storage hold NaN (the
# dtype's maximum for integers, True for bools): a kernel that reads one shows it.

LAYOUTS = ("contiguous", "transposed", "strided", "expanded", "offset", "permuted",
           "channels_last", "sliced", "padded")
LAYOUT_SHARE = 0.35  # graphs whose inputs ``assign_layouts`` lays out
LAYOUT_RATE = 0.5  # in such a graph, the share of its inputs laid out
UNEXPANDABLE_ROLES = ("unique",)  # values distinct along a dim: equal slices would repeat them


def _gap(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """A buffer for a layout with gaps, filled with what shows when a kernel reads a gap."""
    if dtype == torch.bool:
        return torch.ones(shape, dtype=dtype)
    if not dtype.is_floating_point:
        return torch.full(shape, torch.iinfo(dtype).max, dtype=dtype)
    return torch.full(shape, math.nan, dtype=dtype)


def _stored_as(value: torch.Tensor, order: list[int]) -> torch.Tensor:
    """``value`` in storage whose dims, outermost first, are ``order`` (a permutation)."""
    inverse = [order.index(d) for d in range(value.dim())]
    return value.permute(order).contiguous().permute(inverse)


def lay_out(value: torch.Tensor, layout: str) -> torch.Tensor:
    """``value`` (contiguous) stored as ``layout`` says, with the same shape and elements:

    - ``transposed``: the last two dims swapped in storage (2-d and up);
    - ``permuted``: the first dim innermost in storage (2-d and up; 2-d is ``transposed``);
    - ``channels_last``: dim 1 innermost (torch's ``channels_last`` at rank 4,
      ``channels_last_3d`` at rank 5, the same order at rank 3);
    - ``strided``: every other element of a buffer twice as wide (a step in the last dim);
    - ``sliced``: every third row of a buffer three times as tall (a step in dim -2, 2-d and up);
    - ``padded``: rows of a buffer three elements wider (the last dim narrowed, 2-d and up);
    - ``offset``: at storage offset 1;
    - ``expanded``: the first slice along the first dim longer than 1, broadcast along it with
      stride 0 (so that dim's slices become equal: the one layout that changes values).

    Where a layout does not apply (a rank it needs, a 0-d or empty tensor) the value is returned
    as it is; ``applies`` says whether it changes anything."""
    rank = value.dim()
    if layout == "contiguous" or rank == 0 or value.numel() == 0:
        return value
    shape, dtype = tuple(value.shape), value.dtype
    if layout == "transposed" and rank >= 2:
        return _stored_as(value, [*range(rank - 2), rank - 1, rank - 2])
    if layout == "permuted" and rank >= 2:
        return _stored_as(value, [*range(1, rank), 0])
    if layout == "channels_last" and rank >= 3:
        memory_format = {4: torch.channels_last, 5: torch.channels_last_3d}.get(rank)
        if memory_format is not None:
            return value.contiguous(memory_format=memory_format)
        return _stored_as(value, [0, *range(2, rank), 1])
    if layout == "strided":
        wide = _gap((*shape[:-1], shape[-1] * 2), dtype)
        wide[..., ::2] = value
        return wide[..., ::2]
    if layout == "sliced" and rank >= 2:
        tall = _gap((*shape[:-2], shape[-2] * 3, shape[-1]), dtype)
        tall[..., ::3, :] = value
        return tall[..., ::3, :]
    if layout == "padded" and rank >= 2:
        wide = _gap((*shape[:-1], shape[-1] + 3), dtype)
        wide[..., :shape[-1]] = value
        return wide[..., :shape[-1]]
    if layout == "offset":
        flat = _gap((value.numel() + 1,), dtype)
        flat[1:] = value.reshape(-1)
        return flat[1:].view(shape)
    if layout == "expanded":
        dim = next((d for d, s in enumerate(shape) if s > 1), None)
        if dim is None:
            return value
        return value.narrow(dim, 0, 1).expand(shape)
    return value


@functools.lru_cache(maxsize=4096)
def applies(layout: str, shape: tuple[int, ...]) -> bool:
    """Does ``layout`` store a tensor of ``shape`` other than contiguously (other strides where
    they matter, or an offset)?"""
    if layout == "contiguous" or not shape or 0 in shape:
        return False
    laid = lay_out(torch.zeros(shape, dtype=torch.uint8), layout)
    # bool(): newer torch stubs type the comparison as a SymBool
    return bool(not laid.is_contiguous() or laid.storage_offset() != 0)


def layouts_for(graph: Graph, node_id: int, written: set[int] | frozenset = frozenset()) \
        -> list[str]:
    """The layouts input ``node_id`` may take: those that change its storage, and never
    ``expanded`` for an input the program writes (a write to a stride-0 view is an eager error),
    for module state (copied into in place) or for values distinct along a dim."""
    node = graph.node(node_id)
    if "flat" in node.attrs:  # a view packed into a flat buffer: contiguous there
        return []
    unexpandable = node_id in written or "state" in node.attrs \
        or node.role in UNEXPANDABLE_ROLES
    return [layout for layout in LAYOUTS if applies(layout, node.shape)
            and not (layout == "expanded" and unexpandable)]


def assign_layouts(graph: Graph, rng: random.Random, share: float = LAYOUT_SHARE,
                   rate: float = LAYOUT_RATE) -> None:
    """Lay out the inputs of a finished program, activations and weights alike: in a ``share``
    of programs, each input that names no layout of its own (``attrs["layout"]``, which the
    grammar sets where it needs one) takes one with probability ``rate``, among ``layouts_for``
    it. The drawn tensors then have it (``inputs``), the case file keeps it, ``repro.py``
    rebuilds it."""
    if rng.random() >= share:
        return
    written = set(graph.written_inputs())
    for node_id in graph.input_ids():
        node = graph.node(node_id)
        if "layout" in node.attrs or rng.random() >= rate:
            continue
        options = layouts_for(graph, node_id, written)
        if options:  # channels-last, where it applies, as often as the others together
            weights = [max(len(options) - 1, 1) if layout == "channels_last" else 1
                       for layout in options]
            node.attrs["layout"] = rng.choices(options, weights)[0]


# ---------------------------------------------------------------- layout facts
# How a program's inputs are stored, as facts a cause can need: the generator's own layout
# choices (``assign_layouts``, ``grammar.flatten_weights``, ``state``'s views passed beside their
# input). Triage takes each back alone (``triage.attribute``'s layout knobs): a fact whose
# taking back makes a divergence vanish is what tells the cause ("vanishes when each weight is
# its own allocation"), and it goes into the cause's signature, title and matching.
LAYOUT_FACTS = {
    "flat": "each weight its own allocation (not views into one flat buffer)",
    "offset": "every input at storage offset 0",
    "strides": "every input contiguous (its strides, not its values, taken back)",
    "aliased": "no view passed beside its input (arguments that do not share storage)",
}
# What a title says of a cause that needs the fact.
LAYOUT_WORDS = {"flat": "with the weights views into one allocation",
                "offset": "with an input at a storage offset",
                "strides": "with a non-contiguous input",
                "aliased": "with arguments that share storage"}


def _laid_out_as(graph: Graph, inputs: dict[str, torch.Tensor], fact: str) -> list[int]:
    """The inputs (or, for ``aliased``, the passed views) that carry ``fact``: read off the
    tensors themselves for ``offset`` and ``strides`` (what a run is handed; a stride of 0,
    an expanded input, changes values and is left alone), off the graph for ``flat`` (packed
    when the module is built) and ``aliased``."""
    if fact == "flat":
        return [n for n in graph.input_ids() if "flat" in graph.node(n).attrs]
    if fact == "aliased":
        return graph.passed_views()
    found = []
    for n in graph.input_ids():
        t = inputs.get(str(n))
        if t is None or t.numel() <= 1:
            continue
        if fact == "offset" and t.storage_offset() != 0:
            found.append(n)
        elif fact == "strides" and not t.is_contiguous() and 0 not in t.stride():
            found.append(n)
    return found


def layout_words(graph: Graph, inputs: dict[str, torch.Tensor], fact: str) -> str:
    """``fact`` as a title says it (``LAYOUT_WORDS``), naming what carries an offset or strides
    for what it is: a weight (a module's parameter, as a bias at a stride of 2), a buffer, or
    an input."""
    said = LAYOUT_WORDS[fact]
    if fact not in ("offset", "strides"):
        return said
    held = frozenset(str(graph.node(n).attrs.get("state")) for n in
                     _laid_out_as(graph, inputs, fact))
    noun = {frozenset({"param"}): "weight", frozenset({"buffer"}): "buffer"}.get(held, "input")
    return said.replace("input", noun)


def layout_facts(graph: Graph, inputs: dict[str, torch.Tensor]) -> list[str]:
    """The layout facts (``LAYOUT_FACTS``) a program's inputs carry."""
    return [fact for fact in LAYOUT_FACTS if _laid_out_as(graph, inputs, fact)]


def without_layout_fact(graph: Graph, inputs: dict[str, torch.Tensor], fact: str
                        ) -> tuple[Graph, dict[str, torch.Tensor]]:
    """A copy of the program and its inputs without ``fact``: the same values, each weight its
    own allocation, every input at offset 0 or contiguous, or the passed views made inside the
    function."""
    copy, values = graph.copy(), dict(inputs)
    for n in _laid_out_as(graph, inputs, fact):
        if fact in ("offset", "strides"):
            values[str(n)] = inputs[str(n)].clone(memory_format=torch.contiguous_format)
            copy.node(n).attrs.pop("layout", None)
        else:
            copy.node(n).attrs.pop("flat" if fact == "flat" else "passed", None)
    return copy, values
