"""Layout, indexing and factories: views the compiled kernel must index correctly, gathers with
int64 indices, and factories inside the graph feeding arithmetic.

A view shares its input's storage (``alias=0``; also what may return its input itself, such as
``contiguous`` of a contiguous tensor or ``flatten``): a write through it is a write to its
base (``ir.graph`` orders statements by it). None of these rounds (``exact``). The ``relayout``
entries copy a value into another memory layout (channels-last, transposed, permuted).
"""

from __future__ import annotations

from fuzzer.ir.ops.shapes import (
    flatten_shape,
    merge_heads_shape,
    split_heads_shape,
    transpose_shape,
)
from fuzzer.ir.ops.spec import Preset, lift_transpose, register, unary

VIEW: Preset = {"category": "layout", "exact": True, "alias": 0, "signs_zero": True}

unary("transpose", "{0}.transpose({dim0}, {dim1})", shape_rule=transpose_shape,
      attrs=("dim0", "dim1"), captures=("Tensor.transpose",), lift=lift_transpose, **VIEW)
unary("split_heads", "{0}.unflatten(-1, ({heads}, -1)).transpose(1, 2)",
      shape_rule=split_heads_shape, attrs=("heads",), **VIEW)
unary("merge_heads", "{0}.transpose(1, 2).flatten(2)", shape_rule=merge_heads_shape, **VIEW)
unary("flatten", "{0}.flatten(1)", shape_rule=flatten_shape, **VIEW)
for _name, _template, _attrs in (
        ("permute", "{0}.permute({dims})", ("dims",)),
        ("expand", "{0}.expand({size})", ("size",)),
        ("slice_step", "{0}[..., ::{step}]", ("step",)),
        ("narrow", "{0}.narrow({dim}, {start}, {length})", ("dim", "start", "length")),
        ("chunk", "{0}.chunk({chunks}, dim={dim})[{pick}]", ("chunks", "dim", "pick")),
        ("contiguous", "{0}.contiguous()", ()),
        ("unsqueeze", "{0}.unsqueeze({dim})", ("dim",))):
    unary(_name, _template, attrs=_attrs, meta=True, **VIEW)
unary("flip", "{0}.flip({dims})", category="layout", attrs=("dims",), meta=True, exact=True,
      signs_zero=True)
unary("clone", "{0}.clone()", category="layout", meta=True, exact=True,  # storage of its own
      signs_zero=True, example=(({"shape": (4, 6), "role": "x"},), {}))
unary("contiguous_clone", "{0}.clone(memory_format=torch.contiguous_format)", category="layout",
      meta=True, exact=True, signs_zero=True, example=(({"shape": (4, 6), "role": "x"},), {}))
register("cat", 2, "torch.cat(({0}, {1}), dim={dim})", category="layout", attrs=("dim",),
         meta=True, exact=True, signs_zero=True)

# The same values stored in another layout (tag ``relayout``: the grammars place one between
# blocks, so an intermediate is channels-last or transposed in memory and the kernels reading it
# take their strided, tiled or channels-last paths). Each returns its input itself where it is
# already stored so (``alias``).
RELAYOUT: Preset = {**VIEW, "meta": True, "tags": ("relayout",)}
unary("memory_format", "{0}.contiguous(memory_format=torch.{format})", attrs=("format",),
      raw=("format",), choices={"format": ("channels_last", "channels_last_3d")},
      example=(({"shape": (2, 3, 4, 5), "role": "x"},), {"format": "channels_last"}),
      **RELAYOUT)
unary("transposed_copy", "{0}.mT.contiguous().mT",
      example=(({"shape": (3, 4, 5), "role": "x"},), {}), **RELAYOUT)
unary("permuted_copy", "{0}.movedim(0, -1).contiguous().movedim(-1, 0)",
      example=(({"shape": (3, 4, 5), "role": "x"},), {}), **RELAYOUT)

# Indexing with int64 indices (drawn in range: an out-of-range index is an eager error).
register("gather", 2, "torch.gather({0}, {dim}, {1})", category="layout", attrs=("dim",),
         meta=True, exact=True)
register("index_select", 2, "torch.index_select({0}, {dim}, {1})", category="layout",
         attrs=("dim",), meta=True, exact=True)
register("embedding", 2, "F.embedding({1}, {0})", category="layout", meta=True, exact=True)

# Factories inside the graph, with int64 and float steps, feeding arithmetic.
unary("arange_mul", "{0} + torch.arange({n}, device={0}.device) * {value}", category="factory",
      attrs=("n", "value"), meta=True)
unary("arange_step", "{0} + torch.arange({start}, {end}, {step}, device={0}.device)",
      category="factory", attrs=("start", "end", "step"), meta=True)
unary("linspace_mul", "{0} * torch.linspace({lo}, {hi}, {n}, device={0}.device)",
      category="factory", attrs=("lo", "hi", "n"), meta=True)
unary("full_like", "torch.full_like({0}, {value})", category="factory", attrs=("value",),
      meta=True, exact=True)
