"""The rest of the vocabulary compiled kernels lower on their own: fused multiply-adds
(``lerp``, ``addcmul``, ``addcdiv``), ``nan_to_num``, ``signbit`` and ``heaviside``, the
NaN-skipping and log-space reductions and scans, padding modes, ``roll``, ``repeat``,
``tril``/``triu``, pixel shuffles, batched and fused GEMMs, 1-d and transposed convolutions.

Torch decides every shape and dtype here (``meta``). What a generator draws for an attribute
when it places one of them is in its ``choices``; the tags say where: ``blend`` (elementwise
float ops beside the special functions), ``scan`` (reductions and scans over a dim),
``rearrange`` (layouts that move, repeat or mask elements) and ``head`` (a discrete code to end
a program with).
"""

from __future__ import annotations

import math

from fuzzer.ir.ops.boundaries import sign_boundary
from fuzzer.ir.ops.spec import TENSOR, Preset, _number, lift_signature, register, unary


def _x(*shape: int, role: str = "x") -> dict:
    return {"shape": shape, "role": role}


X = (_x(4, 6),)

# ---------------------------------------------------------------- elementwise


def _lift_lerp_scalar(args: list, kwargs: dict) -> dict | None:
    """``torch.lerp(a, b, 0.25)``: two tensors and a number."""
    given = list(args) + [kwargs[k] for k in ("weight",) if k in kwargs]
    if len(given) == 3 and given[:2] == [TENSOR, {"in": 1}] and _number(given[2]) \
            and set(kwargs) <= {"weight"}:
        return {"weight": float(given[2])}
    return None


def _lift_addc(args: list, kwargs: dict) -> dict | None:
    """``torch.addcmul(x, a, b, value=v)``: three tensors in order, ``value`` 1 by default."""
    value = kwargs.get("value", 1)
    if args == [TENSOR, {"in": 1}, {"in": 2}] and set(kwargs) <= {"value"} and _number(value):
        return {"value": value}
    return None


# lerp switches formula at |weight| = 0.5 (from a or from b): weights on both sides of it.
WEIGHTS = (0.5, 0.25, 0.75, 1.0, 1.5, -0.5, 0.4999999)
register("lerp", 3, "torch.lerp({0}, {1}, {2})", category="binary", meta=True,
         tags=("blend",), captures=("torch.lerp", "Tensor.lerp"), example=(X * 3, {}))
register("lerp_scalar", 2, "torch.lerp({0}, {1}, {weight})", category="binary",
         attrs=("weight",), meta=True, tags=("blend",), choices={"weight": WEIGHTS},
         captures=("torch.lerp", "Tensor.lerp"), lift=_lift_lerp_scalar,
         example=(X * 2, {"weight": 0.75}))
for _name in ("addcmul", "addcdiv"):
    register(_name, 3, f"torch.{_name}({{0}}, {{1}}, {{2}}, value={{value}})", category="binary",
             attrs=("value",), meta=True, tags=("blend",),
             choices={"value": (1.0, 0.5, -2.0, 0.1, 1e-3)},
             captures=(f"torch.{_name}", f"Tensor.{_name}"), lift=_lift_addc,
             example=(X * 3, {"value": 0.1 if _name == "addcmul" else -2.0}))
unary("nan_to_num", "torch.nan_to_num({0}, nan={nan}, posinf={posinf}, neginf={neginf})",
      attrs=("nan", "posinf", "neginf"), meta=True, exact=True, tags=("blend",),
      choices={"nan": (0.0, -1.5, 1e4), "posinf": (None, 1e4, 0.0), "neginf": (None, -1e4)},
      captures=("torch.nan_to_num", "Tensor.nan_to_num"),
      lift=lift_signature(("nan", "posinf", "neginf"),
                          {"nan": 0.0, "posinf": None, "neginf": None}),
      example=(X, {"nan": 0.0, "posinf": None, "neginf": -100.0}))
# The sign bit: a head (bool code) that flips at zero, and at -0.0 against +0.0.
unary("signbit", "torch.signbit({0})", category="head", meta=True, exact=True,
      boundary=sign_boundary, tags=("head",), captures=("torch.signbit", "Tensor.signbit"),
      example=(X, {}))
register("heaviside", 2, "torch.heaviside({0}, {1})", category="binary", meta=True, exact=True,
         tags=("blend",), edges=lambda f: (0.0, f.tiny),
         captures=("torch.heaviside", "Tensor.heaviside"), example=(X * 2, {}))

# ---------------------------------------------------------------- reductions and scans

DIMS = (-1, 0, 1)
REDUCE: Preset = {"category": "reduce", "meta": True, "tags": ("scan",)}

unary("logcumsumexp", "torch.logcumsumexp({0}, dim={dim})", attrs=("dim",),
      edges=lambda f: (math.log(f.max), -math.log(f.max), 0.0), choices={"dim": DIMS},
      captures=("torch.logcumsumexp", "Tensor.logcumsumexp"), lift=lift_signature(("dim",), {}),
      example=(X, {"dim": 1}), **REDUCE)
for _name in ("nansum", "nanmean"):
    unary(_name, f"torch.{_name}({{0}}, dim={{dims}}, keepdim={{keepdim}})",
          attrs=("dims", "keepdim"),
          choices={"dims": ((-1,), (0,), None, (0, -1)), "keepdim": (False, True)},
          captures=(f"torch.{_name}", f"Tensor.{_name}"),
          lift=lift_signature(("dim", "keepdim"), {"dim": None, "keepdim": False},
                              rename={"dim": "dims"}),
          example=(X, {"dims": (1,), "keepdim": _name == "nanmean"}), **REDUCE)

# ---------------------------------------------------------------- layout

MOVE: Preset = {"category": "layout", "meta": True, "exact": True, "tags": ("rearrange",)}


def _lift_repeat(args: list, kwargs: dict) -> dict | None:
    """``x.repeat(2, 3)`` or ``x.repeat((2, 3))``."""
    if kwargs or not args or args[0] != TENSOR:
        return None
    sizes = args[1] if len(args) == 2 and isinstance(args[1], (list, tuple)) else args[1:]
    if not sizes or not all(isinstance(s, int) and not isinstance(s, bool) for s in sizes):
        return None
    return {"sizes": tuple(sizes)}


def _lift_pad_mode(args: list, kwargs: dict) -> dict | None:
    """``F.pad(x, pad, mode)`` in a mode other than constant, with no value."""
    lifted = lift_signature(("pad", "mode", "value"), {"mode": "constant", "value": None})(
        args, kwargs)
    if lifted is None or lifted["mode"] == "constant" or lifted["value"] is not None:
        return None
    return {"pad": lifted["pad"], "mode": lifted["mode"]}


# ``pad``: also drawn by the vision-op programs
PAD: Preset = {**MOVE, "tags": ("rearrange", "pad")}
unary("pad", "F.pad({0}, {pad}, mode='constant', value={value})", attrs=("pad", "value"),
      choices={"pad": ((1, 2), (0, 3), (2, 0, 1, 1), (-1, 1), (0, 0, -1, 2), (1,) * 6),
               "value": (0.0, -1.0, None, float("-inf"))},
      captures=("F.pad",), lift=lift_signature(("pad", "mode", "value"),
                                               {"mode": "constant", "value": None},
                                               fixed={"mode": "constant"}),
      example=(X, {"pad": (1, 2, 0, 1), "value": -0.5}), **PAD)
unary("pad_mode", "F.pad({0}, {pad}, mode={mode})", attrs=("pad", "mode"),
      choices={"pad": ((1, 2), (2, 1), (1, 1, 1, 1), (0, 3, 2, 0), (1,) * 6),
               "mode": ("reflect", "replicate", "circular")},
      captures=("F.pad",), lift=_lift_pad_mode,
      example=((_x(2, 4, 6),), {"pad": (2, 1), "mode": "reflect"}), **PAD)
unary("roll", "torch.roll({0}, shifts={shifts}, dims={dims})", attrs=("shifts", "dims"),
      choices={"shifts": ((1,), (-3,), (7,)), "dims": ((-1,), (0,), None)},
      captures=("torch.roll", "Tensor.roll"),
      lift=lift_signature(("shifts", "dims"), {"dims": None}),
      example=(X, {"shifts": (1, -2), "dims": (0, 1)}), **MOVE)
unary("repeat", "{0}.repeat({sizes})", attrs=("sizes",),
      choices={"sizes": ((2,), (1, 3), (2, 1, 1), (1, 1, 2))},
      captures=("Tensor.repeat",), lift=_lift_repeat,
      example=(X, {"sizes": (2, 1, 3)}), **MOVE)
for _name in ("tril", "triu"):
    unary(_name, f"torch.{_name}({{0}}, {{diagonal}})", attrs=("diagonal",),
          choices={"diagonal": (0, 1, -1, 2)}, captures=(f"torch.{_name}", f"Tensor.{_name}"),
          lift=lift_signature(("diagonal",), {"diagonal": 0}),
          example=(X, {"diagonal": 1 if _name == "tril" else -1}), **MOVE)
unary("pixel_shuffle", "F.pixel_shuffle({0}, {factor})", attrs=("factor",),
      choices={"factor": (2,)}, captures=("F.pixel_shuffle", "torch.pixel_shuffle"),
      lift=lift_signature(("upscale_factor",), {}, rename={"upscale_factor": "factor"}),
      example=((_x(2, 8, 3, 5),), {"factor": 2}), **MOVE)
unary("pixel_unshuffle", "F.pixel_unshuffle({0}, {factor})", attrs=("factor",),
      choices={"factor": (2,)}, captures=("F.pixel_unshuffle", "torch.pixel_unshuffle"),
      lift=lift_signature(("downscale_factor",), {}, rename={"downscale_factor": "factor"}),
      example=((_x(2, 3, 4, 6),), {"factor": 2}), **MOVE)

# ---------------------------------------------------------------- layers

GEMM: Preset = {"category": "conv", "meta": True}
register("bmm", 2, "torch.bmm({0}, {1})", captures=("torch.bmm", "Tensor.bmm"),
         example=((_x(3, 4, 5), _x(3, 5, 6, role="w")), {}), **GEMM)
register("baddbmm", 3, "torch.baddbmm({0}, {1}, {2}, beta={beta}, alpha={alpha})",
         attrs=("beta", "alpha"),
         example=((_x(3, 4, 6, role="b"), _x(3, 4, 5), _x(3, 5, 6, role="w")),
                  {"beta": 0.5, "alpha": 2.0}), **GEMM)
register("addmm", 3, "torch.addmm({0}, {1}, {2}, beta={beta}, alpha={alpha})",
         attrs=("beta", "alpha"),
         example=((_x(6, role="b"), _x(4, 5), _x(5, 6, role="w")), {"beta": 1.0, "alpha": 1.0}),
         **GEMM)
register("conv1d", 3, "F.conv1d({0}, {1}, {2}, stride={stride}, padding={padding}, "
         "dilation={dilation}, groups={groups})",
         attrs=("stride", "padding", "dilation", "groups"),
         example=((_x(2, 4, 9), _x(6, 2, 3, role="w"), _x(6, role="b")),
                  {"stride": 2, "padding": 1, "dilation": 1, "groups": 2}), **GEMM)
register("conv_transpose2d", 3, "F.conv_transpose2d({0}, {1}, {2}, stride={stride}, "
         "padding={padding}, output_padding={output_padding}, groups={groups}, "
         "dilation={dilation})",
         attrs=("stride", "padding", "output_padding", "groups", "dilation"),
         example=((_x(2, 4, 5, 5), _x(4, 3, 3, 3, role="w"), _x(3, role="b")),
                  {"stride": 2, "padding": 1, "output_padding": 1, "groups": 1,
                   "dilation": 1}), **GEMM)
