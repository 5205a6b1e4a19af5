"""State: views that alias their base, in-place writes through them, and reading again.

A view shares its input's storage (``alias=0``) and rounds nothing. A write names the inputs it
writes (``mutates``) and the one its node stands for afterwards (``alias``); most are
``statement`` s, rendered as the user writes them (``x.add_(y)``, ``x[1:] = y``), and a few ops
write beside computing a value of their own (``F.batch_norm(..., training=True)`` updates its
running statistics). ``reread`` reads a view again after a write to its storage: it renders as
nothing, the old alias's name read again. ``ir.graph.State`` derives versions and statement
order from these facts.

Shapes and dtypes of a statement are its target's; torch decides whether it accepts the write
(``by_meta_statement``: the statement run on meta tensors), so a cast an in-place op cannot
make (``int_x.add_(0.5)``) is an invalid graph, never an eager error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from fuzzer.ir.ops.base import InvalidGraph, Shape, literal, probe, torch_dtype
from fuzzer.ir.ops.shapes import same_dtype, same_shape
from fuzzer.ir.ops.spec import (
    REGISTRY,
    Preset,
    _check_sizes,
    nan_sign_of,
    register,
    unary,
)

VIEW: Preset = {"category": "view", "exact": True, "alias": 0, "meta": True, "signs_zero": True}


def x(*shape: int, dtype: str | None = None, role: str = "x", **attrs: object) -> dict:
    """An example input (``OpSpec.example``)."""
    return {"shape": shape, "role": role, **({"dtype": dtype} if dtype else {}), **attrs}


def index(*shape: int, bound: int) -> dict:
    return x(*shape, dtype="int64", role="index", bound=bound)


X = (x(4, 6),)  # one activation, for the unary entries


def index_source(index: object) -> str:
    """``[:, 1:5:2, 3]`` from plain data: per dim None (all), an int (select) or [start, stop,
    step] (a slice; None parts left out)."""
    if not isinstance(index, (list, tuple)) or not index:
        raise InvalidGraph(f"an index must be a non-empty list, got {index!r}")
    parts = []
    for part in index:
        if part is None:
            parts.append(":")
        elif isinstance(part, int) and not isinstance(part, bool):
            parts.append(literal(part))
        elif isinstance(part, (list, tuple)) and len(part) == 3 and all(
                p is None or (isinstance(p, int) and not isinstance(p, bool)) for p in part):
            start, stop, step = ("" if p is None else literal(p) for p in part)
            parts.append(f"{start}:{stop}" + (f":{step}" if step else ""))
        else:
            raise InvalidGraph(f"an index part must be None, an int or [start, stop, step], "
                               f"got {part!r}")
    return "[" + ", ".join(parts) + "]"


def _indexed(args: list[str], attrs: dict) -> str:
    return args[0] + index_source(attrs["index"])


def _setitem(args: list[str], attrs: dict) -> str:
    value = args[1] if len(args) > 1 else literal(attrs["value"])
    return f"{args[0]}{index_source(attrs['index'])} = {value}"


def by_meta_statement(name: str) -> Callable[[list[Shape], list[str], dict], tuple[Shape, str]]:
    """A write's shape and dtype are its target's; torch decides whether it takes the write:
    the statement runs on meta tensors (nothing is allocated)."""

    def infer(shapes: list[Shape], dtypes: list[str], attrs: dict) -> tuple[Shape, str]:
        _check_sizes(name, attrs)
        spec = REGISTRY[name]
        names = [f"_in{i}" for i in range(len(shapes))]
        tensors = [torch.empty(s, dtype=torch_dtype(d), device="meta")
                   for s, d in zip(shapes, dtypes)]
        scope: dict[str, object] = {"torch": torch, "F": torch.nn.functional,
                                 **dict(zip(names, tensors))}
        try:
            with probe():
                exec(spec.render(names, attrs), scope)  # noqa: S102 - registry text
        except InvalidGraph:
            raise
        except Exception as err:  # torch refuses this write: an invalid graph
            first = str(err).strip().splitlines()[0][:200] if str(err).strip() else ""
            raise InvalidGraph(f"{name}: {type(err).__name__}: {first}") from None
        target = spec.alias or 0
        if tuple(tensors[target].shape) != tuple(shapes[target]):  # an out= that would resize
            raise InvalidGraph(f"{name}: the result does not have its target's shape")
        return tuple(shapes[target]), dtypes[target]

    return infer


def write(name: str, arity: int, template: str, *, exact: bool = False,
          target: int = 0, tags: tuple[str, ...] = ("write",), **kw: Any) -> None:
    """A statement writing input ``target`` in place (its node is the target afterwards); its
    example is ``arity`` same-shaped activations unless it gives one."""
    kw.setdefault("example", (tuple(x(4, 6) for _ in range(arity)), {}))
    kw.setdefault("signs_zero", exact or name.split("_")[0] in ("add", "sub", "mul", "div"))
    register(name, arity, template, category="write", statement=True, alias=target,
             mutates=(target,), exact=exact, tags=tags, infer=by_meta_statement(name), **kw)


# ---------------------------------------------------------------- views

unary("select", "{0}.select({dim}, {index})", attrs=("dim", "index"),
      example=(X, {"dim": 1, "index": 2}), **VIEW)
unary("slice", "", renderer=_indexed, attrs=("index",),
      example=(X, {"index": ((1, None, None), (0, 5, 2))}), **VIEW)
unary("diagonal", "{0}.diagonal({offset}, {dim1}, {dim2})", attrs=("offset", "dim1", "dim2"),
      example=(X, {"offset": 1, "dim1": 0, "dim2": 1}), **VIEW)
unary("unfold", "{0}.unfold({dim}, {size}, {step})", attrs=("dim", "size", "step"),
      example=(X, {"dim": 1, "size": 3, "step": 2}), **VIEW)
unary("as_strided", "{0}.as_strided({size}, {stride}, {offset})",
      attrs=("size", "stride", "offset"),
      example=(X, {"size": (3, 2), "stride": (6, 2), "offset": 1}), **VIEW)
unary("view", "{0}.view({size})", attrs=("size",), example=(X, {"size": (2, 12)}), **VIEW)
unary("reshape", "{0}.reshape({size})", attrs=("size",),  # a view where it can be
      example=(X, {"size": (24,)}), **VIEW)
unary("unflatten", "{0}.unflatten({dim}, {sizes})", attrs=("dim", "sizes"),
      example=(X, {"dim": 1, "sizes": (2, 3)}), **VIEW)
unary("squeeze", "{0}.squeeze({dim})", attrs=("dim",), example=((x(4, 1, 6),), {"dim": 1}),
      **VIEW)
unary("t", "{0}.t()", example=(X, {}), **VIEW)
# The same bits read as another dtype: float64 cannot stand for it (judged against eager).
unary("view_dtype", "{0}.view(torch.{to})", attrs=("to",), raw=("to",), bits=True,
      example=(X, {"to": "int16"}), **VIEW)
register("reread", 2, "", category="view", exact=True, alias=0, statement=True, renews=True,
         shape_rule=same_shape, dtype_rule=same_dtype)  # no example: it needs a write

# ---------------------------------------------------------------- writes

# Elementwise ops in place: exact where the op is (``relu_``, ``abs_``, steps), rounding else.
for _name in ("relu", "abs", "neg", "floor", "ceil", "trunc", "round", "sign", "frac"):
    write(f"{_name}_", 1, f"{{0}}.{_name}_()", exact=True)
for _name in ("exp", "sigmoid", "tanh", "sqrt", "rsqrt", "reciprocal", "log", "expm1", "sin",
              "erf", "square"):
    write(f"{_name}_", 1, f"{{0}}.{_name}_()")
for _name in ("add", "sub", "mul", "div", "pow", "remainder", "atan2", "hypot"):
    write(f"{_name}_", 2, f"{{0}}.{_name}_({{1}})")
write("copysign_", 2, "{0}.copysign_({1})", exact=True, unsigned=nan_sign_of(1))
write("fmod_", 2, "{0}.fmod_({1})", exact=True)
write("addcmul_", 3, "{0}.addcmul_({1}, {2}, value={value})", attrs=("value",),
      example=((x(4, 6), x(4, 6), x(4, 6)), {"value": 0.5}))
for _name in ("add", "mul", "div"):  # scalars: ``count.add_(1)``, ``x.mul_(0.5)``
    write(f"{_name}_scalar_", 1, f"{{0}}.{_name}_({{value}})", attrs=("value",),
          example=(X, {"value": 3}))
write("clamp_", 1, "{0}.clamp_({lo}, {hi})", attrs=("lo", "hi"), exact=True, signs_zero=False,
      example=(X, {"lo": -0.5, "hi": 0.5}))
write("fill_", 1, "{0}.fill_({value})", attrs=("value",), exact=True, example=(X, {"value": -0.0}))
write("zero_", 1, "{0}.zero_()", exact=True)
write("copy_", 2, "{0}.copy_({1})", exact=True, example=((x(4, 6), x(6)), {}))
write("masked_fill_", 2, "{0}.masked_fill_({1}, {value})", attrs=("value",), exact=True,
      example=((x(4, 6), x(4, 6, dtype="bool", role="mask")), {"value": 2.5}))
# Assignment through an index: ``x[1:] = y`` copies, overlapping memory included.
write("setitem", 2, "", renderer=_setitem, attrs=("index",), exact=True,
      example=((x(4, 6), x(3, 6)), {"index": ((1, None, None),)}))
write("setitem_scalar", 1, "", renderer=_setitem, attrs=("index", "value"), exact=True,
      example=(X, {"index": (None, (0, None, 2)), "value": 1.5}))
# Indexed writes; an index may repeat (``accumulate`` sums the repeats; without it the last
# write of a repeated index is not defined, so the generator keeps those indices distinct).
write("index_put_", 3, "{0}.index_put_(({1},), {2}, accumulate={accumulate})",
      attrs=("accumulate",),
      example=((x(4, 6), index(5, bound=4), x(5, 6)), {"accumulate": True}))
write("index_add_", 3, "{0}.index_add_({dim}, {1}, {2})", attrs=("dim",),
      example=((x(4, 6), index(5, bound=4), x(5, 6)), {"dim": 0}))
write("index_copy_", 3, "{0}.index_copy_({dim}, {1}, {2})", attrs=("dim",), exact=True,
      example=((x(4, 6), index(1, bound=6), x(4, 1)), {"dim": 1}))
write("index_fill_", 2, "{0}.index_fill_({dim}, {1}, {value})", attrs=("dim", "value"),
      exact=True, example=((x(4, 6), index(3, bound=6)), {"dim": 1, "value": -1.0}))
write("scatter_", 3, "{0}.scatter_({dim}, {1}, {2})", attrs=("dim",), exact=True,
      example=((x(4, 6), index(1, 6, bound=4), x(1, 6)), {"dim": 0}))
write("scatter_add_", 3, "{0}.scatter_add_({dim}, {1}, {2})", attrs=("dim",),
      example=((x(4, 6), index(3, 6, bound=4), x(3, 6)), {"dim": 0}))
write("scatter_reduce_", 3, "{0}.scatter_reduce_({dim}, {1}, {2}, reduce={reduce}, "
      "include_self={include_self})", attrs=("dim", "reduce", "include_self"),
      example=((x(4, 6), index(4, 3, bound=6), x(4, 3)),
               {"dim": 1, "reduce": "amax", "include_self": False}))
# ``out=`` forms: the result written into the last input.
for _name, _template in (("add_out", "torch.add({0}, {1}, out={2})"),
                         ("mul_out", "torch.mul({0}, {1}, out={2})")):
    write(_name, 3, _template, target=2)
write("exp_out", 2, "torch.exp({0}, out={1})", target=1)
write("sum_out", 2, "torch.sum({0}, dim={dim}, keepdim=True, out={1})", attrs=("dim",),
      target=1, example=((x(4, 6), x(4, 1)), {"dim": 1}))

# A layer that updates state beside its value: training-mode batch norm writes its running
# mean and variance (inputs 1 and 2) in place.
register("batch_norm_train", 5, "F.batch_norm({0}, {1}, {2}, {3}, {4}, training=True, "
         "momentum={momentum}, eps={eps})", category="norm", attrs=("momentum", "eps"),
         mutates=(1, 2), meta=True,
         example=((x(2, 3, 4), x(3, role="mean"), x(3, role="var"), x(3, role="gamma"),
                   x(3, role="beta")), {"momentum": 0.1, "eps": 1e-5}))
