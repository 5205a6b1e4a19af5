"""Selections: ops that pick elements of their input by order (argmax, sort, topk, kthvalue,
median, mode, max/min over a dim, cummax/cummin, max pooling with its indices) and the order
statistics beside them (aminmax, the median of everything).

Their values are elements of the input (``exact``); their indices (``selects``) are judged by
what they select, never as raw numbers, as torch documents them: an index out of range is
always wrong; an index selecting another value than float64's is wrong however eager broke its
ties; among equal values a different index is wrong only where torch defines which one
(``sort(stable=True)``; the first, for argmax, argmin and max/min over a dim: ``first``) and the
tie is exact (``judge.semantics.Selection.ordered``): a tie that float noise made is no
finding. The ``select`` functions below map indices to the values they pick, in plain torch,
as ``boundaries`` does for discontinuities, so a repro can carry them verbatim.

Attributes a generator draws when it places one of them (``choices``): which dim, whether it
keeps it, ``k``, and ``pick`` (the values or the indices; the indices twice as often).
"""

from __future__ import annotations

import torch

from fuzzer.ir.ops.spec import Preset, Selects, lift_signature, unary


def along_dim(x: torch.Tensor, index: torch.Tensor, attrs: dict
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """The values of ``x`` that ``index`` picks along ``attrs["dim"]`` (a reduction without
    keepdim lost that dim: it is put back; no dim, or a 0-d ``x``: positions in ``x``
    flattened), and whether each index is in range."""
    dim = attrs.get("dim")
    if dim is None or x.dim() == 0:
        flat = x.reshape(-1)
        valid = (index >= 0) & (index < flat.numel())
        picked = flat[index.clamp(0, max(flat.numel() - 1, 0)).reshape(-1)]
        return picked.reshape(index.shape), valid
    dim %= x.dim()
    size = x.shape[dim]
    valid = (index >= 0) & (index < size)
    at = index.clamp(0, max(size - 1, 0))
    if at.dim() < x.dim():  # keepdim=False
        at = at.unsqueeze(dim)
    return torch.gather(x, dim, at).reshape(index.shape), valid


def in_planes(x: torch.Tensor, index: torch.Tensor, attrs: dict
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """max_pool2d's indices: flat positions in each (H, W) plane of ``x``."""
    plane = x.flatten(-2)
    size = plane.shape[-1]
    valid = (index >= 0) & (index < size)
    at = index.clamp(0, max(size - 1, 0)).flatten(-2)
    return torch.gather(plane, -1, at).reshape(index.shape), valid


DIMS = (-1, 0, 1, -1)
KEEP = (False, True)
PICK = (1, 1, 0)  # the indices twice as often as the values
REDUCE: Preset = {"category": "reduce", "meta": True, "exact": True, "tags": ("select",)}


def _x(*shape: int) -> dict:
    return {"shape": shape, "role": "x"}


unary("argmax", "torch.argmax({0}, dim={dim}, keepdim={keepdim})", attrs=("dim", "keepdim"),
      selects=Selects(along_dim, first=True, picks="the maximum"),
      captures=("torch.argmax", "Tensor.argmax"),
      lift=lift_signature(("dim", "keepdim"), {"dim": None, "keepdim": False}),
      choices={"dim": (*DIMS, None), "keepdim": KEEP},
      example=((_x(4, 6),), {"dim": 1, "keepdim": False}), **REDUCE)
unary("argmin", "torch.argmin({0}, dim={dim}, keepdim={keepdim})", attrs=("dim", "keepdim"),
      selects=Selects(along_dim, first=True, picks="the minimum"),
      captures=("torch.argmin", "Tensor.argmin"),
      lift=lift_signature(("dim", "keepdim"), {"dim": None, "keepdim": False}),
      choices={"dim": (*DIMS, None), "keepdim": KEEP},
      example=((_x(4, 6),), {"dim": -1, "keepdim": True}), **REDUCE)
# A stable sort defines the order of equal values (``ordered_by``); an unstable one does not.
unary("argsort", "torch.argsort({0}, dim={dim}, descending={descending}, stable={stable})",
      attrs=("dim", "descending", "stable"),
      selects=Selects(along_dim, ordered_by="stable"), captures=("torch.argsort",
                                                                  "Tensor.argsort"),
      lift=lift_signature(("dim", "descending", "stable"),
                          {"dim": -1, "descending": False, "stable": False}),
      choices={"dim": DIMS, "descending": KEEP, "stable": (True, False)},
      example=((_x(4, 6),), {"dim": 1, "descending": True, "stable": True}), **REDUCE)
unary("sort", "torch.sort({0}, dim={dim}, descending={descending}, stable={stable})[{pick}]",
      attrs=("dim", "descending", "stable", "pick"),
      selects=Selects(along_dim, pick=1, ordered_by="stable"),
      captures=("torch.sort", "Tensor.sort"),
      lift=lift_signature(("dim", "descending", "stable"),
                          {"dim": -1, "descending": False, "stable": False}),
      choices={"dim": DIMS, "descending": KEEP, "stable": (True, False), "pick": PICK},
      example=((_x(4, 6),), {"dim": -1, "descending": False, "stable": True, "pick": 1}),
      **REDUCE)
unary("topk", "torch.topk({0}, {k}, dim={dim}, largest={largest}, sorted=True)[{pick}]",
      attrs=("k", "dim", "largest", "pick"), selects=Selects(along_dim, pick=1),
      captures=("torch.topk", "Tensor.topk"),
      lift=lift_signature(("k", "dim", "largest", "sorted"),
                          {"dim": -1, "largest": True, "sorted": True}, fixed={"sorted": True}),
      choices={"k": (1, 2, 3), "dim": DIMS, "largest": KEEP, "pick": PICK},
      example=((_x(4, 6),), {"k": 3, "dim": 1, "largest": True, "pick": 1}), **REDUCE)
unary("kthvalue", "torch.kthvalue({0}, {k}, dim={dim}, keepdim={keepdim})[{pick}]",
      attrs=("k", "dim", "keepdim", "pick"), selects=Selects(along_dim, pick=1),
      captures=("torch.kthvalue", "Tensor.kthvalue"),
      lift=lift_signature(("k", "dim", "keepdim"), {"dim": -1, "keepdim": False}),
      choices={"k": (1, 2, 3), "dim": DIMS, "keepdim": KEEP, "pick": PICK},
      example=((_x(4, 6),), {"k": 2, "dim": 1, "keepdim": False, "pick": 1}), **REDUCE)
# torch documents the first index among equal values for argmax, argmin and max/min over a dim
# (``first``), not for median's or mode's.
for _name, _torch, _first, _picks in (
        ("median_dim", "median", False, "the median"), ("mode", "mode", False, "the mode"),
        ("max_dim", "max", True, "the maximum"), ("min_dim", "min", True, "the minimum")):
    # ``torch.max(x, dim)`` and friends: a dim is required (without one, max is another call).
    unary(_name, f"torch.{_torch}({{0}}, dim={{dim}}, keepdim={{keepdim}})[{{pick}}]",
          attrs=("dim", "keepdim", "pick"),
          selects=Selects(along_dim, pick=1, first=_first, picks=_picks),
          captures=(f"torch.{_torch}", f"Tensor.{_torch}"),
          lift=lift_signature(("dim", "keepdim"),
                              {"keepdim": False, **({"dim": -1} if _torch == "mode" else {})}),
          choices={"dim": DIMS, "keepdim": KEEP, "pick": PICK},
          example=((_x(4, 6),), {"dim": 0, "keepdim": _torch == "max", "pick": 1}), **REDUCE)
for _name in ("cummax", "cummin"):
    unary(_name, f"torch.{_name}({{0}}, dim={{dim}})[{{pick}}]", attrs=("dim", "pick"),
          selects=Selects(along_dim, pick=1), captures=(f"torch.{_name}", f"Tensor.{_name}"),
          lift=lift_signature(("dim",), {}), choices={"dim": DIMS, "pick": PICK},
          example=((_x(4, 6),), {"dim": 1, "pick": 1}), **REDUCE)
unary("aminmax", "torch.aminmax({0}, dim={dim}, keepdim={keepdim})[{pick}]",
      attrs=("dim", "keepdim", "pick"), choices={"dim": (*DIMS, None), "keepdim": KEEP,
                                                 "pick": (0, 1)},
      example=((_x(4, 6),), {"dim": 1, "keepdim": True, "pick": 0}), **REDUCE)
unary("median", "torch.median({0})", captures=("torch.median", "Tensor.median"),
      example=((_x(4, 6),), {}), **REDUCE)

# max_pool2d with its indices: flat positions in each input plane (``in_planes``).
WINDOW_MAX = "its window's maximum"
unary("max_pool2d_indices",
      "F.max_pool2d({0}, {kernel}, stride={stride}, padding={padding}, dilation={dilation}, "
      "ceil_mode={ceil}, return_indices=True)[{pick}]",
      category="pool", attrs=("kernel", "stride", "padding", "dilation", "ceil", "pick"),
      meta=True, exact=True, selects=Selects(in_planes, pick=1, picks=WINDOW_MAX),
      captures=("F.max_pool2d",),
      lift=lift_signature(("kernel_size", "stride", "padding", "dilation", "ceil_mode",
                           "return_indices"),
                          {"stride": None, "padding": 0, "dilation": 1, "ceil_mode": False,
                           "return_indices": False},
                          rename={"kernel_size": "kernel", "ceil_mode": "ceil"},
                          fixed={"return_indices": True}),
      tags=("pool",),
      choices={"kernel": (2, 3), "stride": (None, 1, 2), "padding": (0, 1), "dilation": (1, 2),
               "ceil": KEEP, "pick": PICK},
      example=((_x(2, 3, 6, 6),), {"kernel": 3, "stride": 2, "padding": 1, "dilation": 1,
                                   "ceil": True, "pick": 1}))
# Adaptive max pooling with its indices: windows of uneven sizes that overlap where the output
# size does not divide the input's.
unary("adaptive_max_pool2d_indices",
      "F.adaptive_max_pool2d({0}, {size}, return_indices=True)[{pick}]", category="pool",
      attrs=("size", "pick"), meta=True, exact=True,
      selects=Selects(in_planes, pick=1, picks=WINDOW_MAX),
      tags=("pool",), choices={"size": (1, 3, 5, (2, 7), (None, 3)), "pick": PICK},
      example=((_x(2, 3, 7, 9),), {"size": (3, 4), "pick": 1}))
