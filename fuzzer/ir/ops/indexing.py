"""Ops reading int64 indices, out of place: ``index_add`` and ``scatter_add`` (accumulating
repeated indices: atomic adds on a GPU), ``one_hot`` and ``embedding_bag``.

Their indices are graph inputs of role ``index`` with a ``bound`` (``gen.inputs``): always in
range, since an index out of range is an eager error, never a finding. ``embedding_bag``'s bags
are an attribute (``offsets``), checked before anything runs: they start at 0 and never go back
or past the end, so every case is valid (a bag may be empty).
"""

from __future__ import annotations

from fuzzer.ir.ops.base import InvalidGraph, Shape
from fuzzer.ir.ops.spec import by_meta, register, unary


def _x(*shape: int) -> dict:
    return {"shape": shape, "role": "x"}


def _index(*shape: int, bound: int) -> dict:
    return {"shape": shape, "role": "index", "dtype": "int64", "bound": bound}


register("index_add", 3, "torch.index_add({0}, {dim}, {1}, {2}, alpha={alpha})",
         category="layout", attrs=("dim", "alpha"), meta=True,
         example=((_x(4, 6), _index(5, bound=4), _x(5, 6)), {"dim": 0, "alpha": 2}))
register("scatter_add", 3, "torch.scatter_add({0}, {dim}, {1}, {2})", category="layout",
         attrs=("dim",), meta=True,
         example=((_x(4, 6), _index(4, 3, bound=6), _x(4, 3)), {"dim": 1}))
unary("one_hot", "F.one_hot({0}, {num_classes})", category="layout", attrs=("num_classes",),
      meta=True, exact=True, example=((_index(2, 5, bound=7),), {"num_classes": 7}))

_meta_bag = by_meta("embedding_bag")


def _bag(shapes: list[Shape], dtypes: list[str], attrs: dict) -> tuple[Shape, str]:
    """Bags that start at 0, never go back and end within the indices: else an invalid graph
    (an offset past the end reads out of bounds in eager)."""
    offsets, length = attrs.get("offsets"), shapes[1][0] if len(shapes[1]) == 1 else -1
    if length < 0:
        raise InvalidGraph("embedding_bag takes 1-d indices with offsets")
    if not isinstance(offsets, (list, tuple)) or not offsets or offsets[0] != 0 \
            or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets) \
            or any(b < a for a, b in zip(offsets, offsets[1:])) or offsets[-1] > length:
        raise InvalidGraph(f"embedding_bag offsets {offsets!r} for {length} indices")
    return _meta_bag(shapes, dtypes, attrs)


# (weight, indices), as ``embedding``: the weight table first.
register("embedding_bag", 2,
         "F.embedding_bag({1}, {0}, torch.tensor({offsets}, device={1}.device), mode={mode})",
         category="layout", attrs=("offsets", "mode"), infer=_bag,
         example=(({"shape": (10, 6), "role": "w"}, _index(7, bound=10)),
                  {"offsets": (0, 2, 2, 5), "mode": "max"}))
