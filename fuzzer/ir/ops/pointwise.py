"""Elementwise ops: activations, float steps, scalar and binary arithmetic, the special-function
vocabulary at its domain edges, comparisons, bitwise ops and casts.

Ops whose compiled forms use other math libraries (SLEEF, libdevice) or other algorithms (floor
division, remainder) carry the input values where they are most fragile (``edges``); torch
decides the shapes and dtypes of most of them (``meta``), so integer and bool inputs promote as
in eager.
"""

from __future__ import annotations

import math

import torch

from fuzzer.ir.ops.boundaries import (
    compare_boundary,
    multiple_boundary,
    round_boundary,
    sign_boundary,
    to_int_boundary,
)
from fuzzer.ir.ops.spec import (
    binary,
    clamp_zero_tie,
    lift_clamp,
    lift_gelu,
    lift_not_inplace,
    lift_scalar,
    nan_sign_of,
    register,
    torch_names,
    unary,
    zero_tie,
)

# ---------------------------------------------------------------- float activations


def _overflow(f: torch.finfo) -> tuple[float, ...]:
    """exp and friends: where they overflow and where they underflow to subnormals."""
    top = math.log(f.max)
    return (top, -top, math.log(f.tiny), 0.0)


_PI = math.pi
SPECIAL = ("special",)  # drawn as a step of the special-functions strategy

unary("relu", "torch.relu({0})", exact=True, signs_zero=True, tags=("swappable",),
      captures=("torch.relu", "Tensor.relu", "F.relu"), lift=lift_not_inplace)
unary("sigmoid", "torch.sigmoid({0})", tags=(*SPECIAL, "swappable"),
      edges=lambda f: (-math.log(f.max), math.log(f.max), 0.0), captures=torch_names("sigmoid"))
unary("tanh", "torch.tanh({0})", tags=(*SPECIAL, "swappable"), edges=lambda f: (0.0, 9.0, -9.0),
      captures=torch_names("tanh"))
unary("silu", "F.silu({0})", tags=(*SPECIAL, "swappable"),
      edges=lambda f: (-math.log(f.max), 0.0), captures=("F.silu",), lift=lift_not_inplace)
unary("erf", "torch.erf({0})", tags=(*SPECIAL, "swappable"), edges=lambda f: (0.0, 4.0, -4.0),
      captures=torch_names("erf"))
unary("log2", "torch.log2({0})", tags=SPECIAL, edges=lambda f: (0.0, f.tiny, 1.0),
      captures=torch_names("log2"))
unary("sqrt", "torch.sqrt({0})", tags=SPECIAL, signs_zero=True, edges=lambda f: (0.0, f.tiny),
      captures=torch_names("sqrt"))
unary("rsqrt", "torch.rsqrt({0})", tags=SPECIAL, edges=lambda f: (0.0, f.tiny, f.max / 4),
      captures=torch_names("rsqrt"))
unary("gelu", "F.gelu({0}, approximate={approximate})", attrs=("approximate",),
      choices={"approximate": ("none", "tanh")}, tags=("swappable",), captures=("F.gelu",),
      lift=lift_gelu)

# ---------------------------------------------------------------- float steps (exact results)

for _name, _step in (("floor", to_int_boundary), ("ceil", to_int_boundary),
                     ("trunc", to_int_boundary), ("round", round_boundary),
                     ("sign", sign_boundary)):
    unary(_name, f"torch.{_name}({{0}})", step=_step, meta=True, exact=True, signs_zero=True,
          tags=("swappable",), captures=torch_names(_name))
for _name in ("abs", "neg"):  # also integers: -abs(x) on uint8 wraps
    unary(_name, f"torch.{_name}({{0}})", meta=True, exact=True, tags=("swappable",),
          captures=torch_names(_name), signs_zero=True)

# An explicit round trip through a narrower float: eager rounds here; a fused kernel may not.
unary("cast_roundtrip", "{0}.to(torch.{to}).to({0}.dtype)", attrs=("to",), raw=("to",),
      signs_zero=True)

# ---------------------------------------------------------------- scalar arithmetic
# Torch's promotion decides: an integer tensor times 0.5 is a float tensor.

unary("mul_scalar", "{0} * {value}", attrs=("value",), meta=True, captures=("operator.mul",),
      strict=True, signs_zero=True,
      lift=lift_scalar(True))
unary("div_scalar", "{0} / {value}", strict=True, attrs=("value",), meta=True, signs_zero=True,
      captures=("operator.truediv",), lift=lift_scalar(False))
unary("add_scalar", "{0} + {value}", attrs=("value",), meta=True, captures=("operator.add",),
      strict=True, signs_zero=True,
      lift=lift_scalar(True))
unary("floordiv_scalar", "torch.div({0}, {value}, rounding_mode='floor')", attrs=("value",),
      step=multiple_boundary, meta=True)
unary("truncdiv_scalar", "torch.div({0}, {value}, rounding_mode='trunc')", attrs=("value",),
      step=multiple_boundary, meta=True)
unary("remainder_scalar", "torch.remainder({0}, {value})", attrs=("value",), meta=True)
unary("fmod_scalar", "torch.fmod({0}, {value})", attrs=("value",), meta=True, exact=True)
# A zero input at a zero bound of the other sign (clamp(-0.0, 0.0, 1.0)) is either zero; any other
# zero it gives has the sign eager and the formula min(max(x, lo), hi) agree on.
unary("clamp", "torch.clamp({0}, {lo}, {hi})", attrs=("lo", "hi"), meta=True, exact=True,
      signs_zero=True, unsigned=clamp_zero_tie, captures=("torch.clamp",), lift=lift_clamp)

# ---------------------------------------------------------------- binary arithmetic

binary("add", "{0} + {1}", meta=True, signs_zero=True, tags=("binary-float", "combine"),
       strict=True, captures=("operator.add",))
binary("sub", "{0} - {1}", meta=True, signs_zero=True, tags=("binary-float", "combine"),
       strict=True, captures=("operator.sub",))
binary("mul", "{0} * {1}", meta=True, signs_zero=True, tags=("binary-float", "combine"),
       strict=True, captures=("operator.mul",))
binary("div", "{0} / {1}", meta=True, signs_zero=True, tags=("binary-float", "combine"),
       strict=True, captures=("operator.truediv",))
binary("maximum", "torch.maximum({0}, {1})", meta=True, exact=True, signs_zero=True,
       unsigned=zero_tie(negative=False), tags=("binary-float", "combine"),
       captures=("torch.maximum",))
binary("minimum", "torch.minimum({0}, {1})", meta=True, exact=True, signs_zero=True,
       unsigned=zero_tie(negative=True), tags=("binary-float", "combine"),
       captures=("torch.minimum",))
binary("floordiv", "torch.div({0}, {1}, rounding_mode='floor')", meta=True)

# ---------------------------------------------------------------- the special-function vocabulary

for _name, _template, _edges in (
        ("exp", "torch.exp({0})", _overflow),
        ("exp2", "torch.exp2({0})", lambda f: (math.log2(f.max), math.log2(f.tiny), 0.0)),
        ("expm1", "torch.expm1({0})", lambda f: (*_overflow(f), -1e-5)),
        ("sinh", "torch.sinh({0})", lambda f: (math.log(f.max) + math.log(2), -math.log(f.max)
                                               - math.log(2), math.log(f.max), 0.0)),
        ("cosh", "torch.cosh({0})", lambda f: (math.log(f.max) + math.log(2), math.log(f.max),
                                               0.0)),
        ("asinh", "torch.asinh({0})", lambda f: (math.sqrt(f.max), -math.sqrt(f.max), f.max / 4,
                                                 1e19, 0.0)),
        ("acosh", "torch.acosh({0})", lambda f: (1.0, math.sqrt(f.max), f.max / 4)),
        ("atanh", "torch.atanh({0})", lambda f: (1.0, -1.0, 0.0)),
        ("asin", "torch.asin({0})", lambda f: (1.0, -1.0)),
        ("acos", "torch.acos({0})", lambda f: (1.0, -1.0)),
        ("atan", "torch.atan({0})", lambda f: (0.0, 1e20, -1e20)),
        ("tan", "torch.tan({0})", lambda f: (_PI / 2, -_PI / 2, 3 * _PI / 2, 1e4)),
        ("sin", "torch.sin({0})", lambda f: (_PI, 1e5, 1e30 if f.max > 1e30 else 6e4)),
        ("cos", "torch.cos({0})", lambda f: (_PI / 2, 1e5, 1e30 if f.max > 1e30 else 6e4)),
        ("log", "torch.log({0})", lambda f: (0.0, f.tiny, 1.0)),
        ("log10", "torch.log10({0})", lambda f: (0.0, f.tiny, 1.0)),
        ("log1p", "torch.log1p({0})", lambda f: (-1.0, 0.0, f.eps)),
        ("reciprocal", "torch.reciprocal({0})", lambda f: (0.0, f.tiny, 1 / f.max)),
        ("square", "torch.square({0})", lambda f: (math.sqrt(f.max), -math.sqrt(f.max))),
        ("erfinv", "torch.erfinv({0})", lambda f: (1.0, -1.0, 0.0)),
        ("erfc", "torch.erfc({0})", lambda f: (9.0 if f.bits > 16 else 4.0, -4.0, 0.0)),
        ("erfcx", "torch.special.erfcx({0})", lambda f: (-9.0, 0.0, 1e4)),
        ("ndtri", "torch.special.ndtri({0})", lambda f: (0.0, 1.0, 0.5)),
        ("log_ndtr", "torch.special.log_ndtr({0})", lambda f: (-40.0, 0.0, 6.0)),
        ("lgamma", "torch.lgamma({0})", lambda f: (0.0, -1.0, -2.0, 1.0, 2.0, f.max ** 0.5)),
        ("digamma", "torch.digamma({0})", lambda f: (0.0, -1.0, -2.0, 1.0)),
        ("i0", "torch.special.i0({0})", lambda f: (math.log(f.max), -math.log(f.max), 0.0)),
        ("i0e", "torch.special.i0e({0})", lambda f: (0.0, 700.0)),
        ("i1", "torch.special.i1({0})", lambda f: (math.log(f.max), -math.log(f.max), 0.0)),
        ("i1e", "torch.special.i1e({0})", lambda f: (0.0, 700.0)),
        ("bessel_j0", "torch.special.bessel_j0({0})", lambda f: (2.404825557695773, 0.0, 25.0)),
        ("bessel_j1", "torch.special.bessel_j1({0})", lambda f: (3.831705970207512, 0.0, 25.0)),
        ("sinc", "torch.special.sinc({0})", lambda f: (0.0, 1.0, -1.0, f.max / 8)),
        ("entr", "torch.special.entr({0})", lambda f: (0.0, 1.0)),
        ("logit", "torch.logit({0})", lambda f: (0.0, 1.0, 0.5)),
        ("softplus", "F.softplus({0})", lambda f: (20.0, -20.0, math.log(f.max))),
        ("mish", "F.mish({0})", lambda f: (-20.0, 20.0, math.log(f.max))),
        ("logsigmoid", "F.logsigmoid({0})", lambda f: (-math.log(f.max), 0.0, 20.0)),
        ("hardswish", "F.hardswish({0})", lambda f: (3.0, -3.0, 0.0)),
        ("hardsigmoid", "F.hardsigmoid({0})", lambda f: (3.0, -3.0))):
    extra = {"tags": (*SPECIAL, "swappable"), "captures": torch_names("exp")} \
        if _name == "exp" else {"tags": SPECIAL}
    unary(_name, _template, edges=_edges, meta=True, **extra)
unary("frac", "torch.frac({0})", edges=lambda f: (0.0, -1.0, 1.0), meta=True, exact=True,
      signs_zero=True,
      tags=SPECIAL)

# Powers with negative and fractional exponents: where they overflow, and at zero.
unary("pow_scalar", "torch.pow({0}, {value})", attrs=("value",), meta=True,
      edges=lambda f: (0.0, f.tiny, math.sqrt(f.max), -1.0))
unary("round_decimals", "torch.round({0}, decimals={decimals})", attrs=("decimals",), meta=True)
unary("ldexp_scalar", "torch.ldexp({0}, torch.tensor({value}, device={0}.device))",
      attrs=("value",), meta=True, edges=lambda f: (f.tiny, f.max / 4))
unary("frexp", "torch.frexp({0})[{pick}]", attrs=("pick",), meta=True, exact=True,
      edges=lambda f: (0.0, f.tiny, f.tiny * f.eps, f.max))

for _name, _template, _exact in (
        ("atan2", "torch.atan2({0}, {1})", False),
        ("hypot", "torch.hypot({0}, {1})", False),
        ("xlogy", "torch.xlogy({0}, {1})", False),
        ("copysign", "torch.copysign({0}, {1})", True),
        ("fmax", "torch.fmax({0}, {1})", True),
        ("fmin", "torch.fmin({0}, {1})", True),
        ("logaddexp", "torch.logaddexp({0}, {1})", False),
        ("pow", "torch.pow({0}, {1})", False)):
    binary(_name, _template, meta=True, exact=_exact, tags=("binary-float",),
           signs_zero=_exact,  # copysign, fmax, fmin: the sign of a zero is the op's point
           unsigned={"copysign": nan_sign_of(1), "fmax": zero_tie(negative=False),
                     "fmin": zero_tie(negative=True)}.get(_name))
binary("remainder", "torch.remainder({0}, {1})", meta=True)
binary("fmod", "torch.fmod({0}, {1})", meta=True, exact=True)
binary("truncdiv", "torch.div({0}, {1}, rounding_mode='trunc')", meta=True)
binary("true_divide", "torch.true_divide({0}, {1})", meta=True)

# ---------------------------------------------------------------- integers, bits and comparisons

binary("bitwise_and", "{0} & {1}", meta=True, exact=True)
binary("bitwise_or", "{0} | {1}", meta=True, exact=True)
binary("bitwise_xor", "{0} ^ {1}", meta=True, exact=True)
for _name, _template in (("lt", "{0} < {1}"), ("le", "{0} <= {1}"), ("eq", "{0} == {1}"),
                         ("ne", "{0} != {1}")):
    binary(_name, _template, meta=True, exact=True, boundary=compare_boundary)
unary("bitwise_not", "torch.bitwise_not({0})", meta=True, exact=True)
unary("shl_scalar", "{0} << {value}", attrs=("value",), meta=True, exact=True)
unary("shr_scalar", "{0} >> {value}", attrs=("value",), meta=True, exact=True)
unary("lt_scalar", "{0} < {value}", attrs=("value",), meta=True, exact=True,
      boundary=compare_boundary)
# Casts, and promotion against a 0-d tensor (a bf16 tensor times a float64 0-d tensor stays bf16).
# A float cast to an integer truncates, undefined out of range (no clamp).
unary("cast", "{0}.to(torch.{to})", attrs=("to",), raw=("to",), meta=True, unclamped=True,
      strict=True, signs_zero=True,
      alias=0)  # x.to(x.dtype) is x itself
# A cast to the value's own dtype, whatever it is (a rewrite removes it): in the float64 reference
# it stays float64, where ``cast`` to the model's dtype would drop the reference to float16 and
# feed it to float64 weights.
unary("own_dtype", "{0}.to({0}.dtype)", meta=True, exact=True, signs_zero=True, alias=0)
register("where", 3, "torch.where({0}, {1}, {2})", category="binary", meta=True, exact=True,
         strict=True, signs_zero=True)
binary("masked_fill", "{0}.masked_fill({1}, {value})", attrs=("value",), meta=True, exact=True,
       signs_zero=True)
