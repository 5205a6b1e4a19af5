"""Heads, the discontinuous encodings where one ulp upstream becomes a wrong answer, and graph
inputs (activations, weights, masks arrive as function arguments)."""

from __future__ import annotations

from fuzzer.ir.ops.boundaries import (
    compare_boundary,
    e8m0_boundary,
    quant_boundary,
    sign_boundary,
    to_int_boundary,
)
from fuzzer.ir.ops.shapes import broadcast, float_in, same_dtype
from fuzzer.ir.ops.spec import Preset, lift_scalar, register, unary

HEAD: Preset = {"category": "head", "exact": True}  # codes: nothing to nudge

unary("e8m0",
      "(torch.clamp(torch.ceil(torch.log2({0}.abs() + {eps})), -127, 127) + 127).to(torch.uint8)",
      dtype_rule=float_in("uint8"), boundary=e8m0_boundary, attrs=("eps",), **HEAD)
unary("quant_int8",
      "torch.clamp(torch.round({0} / {scale}) + {zero_point}, -128, 127).to(torch.int8)",
      dtype_rule=float_in("int8"), boundary=quant_boundary, attrs=("scale", "zero_point"),
      **HEAD)
unary("quant_uint8",
      "torch.clamp(torch.round({0} / {scale}) + {zero_point}, 0, 255).to(torch.uint8)",
      dtype_rule=float_in("uint8"), boundary=quant_boundary, attrs=("scale", "zero_point"),
      **HEAD)
unary("sign_int8", "torch.sign({0}).to(torch.int8)", dtype_rule=float_in("int8"),
      boundary=sign_boundary, **HEAD)
unary("gt_scalar", "{0} > {value}", dtype_rule=float_in("bool"), boundary=compare_boundary,
      attrs=("value",), captures=("operator.gt",), lift=lift_scalar(False, as_float=True),
      **HEAD)
register("gt", 2, "{0} > {1}", shape_rule=broadcast, dtype_rule=float_in("bool"),
         boundary=compare_boundary, captures=("operator.gt",), **HEAD)
unary("to_int32", "{0}.to(torch.int32)", dtype_rule=float_in("int32"), boundary=to_int_boundary,
      unclamped=True, **HEAD)

register("input", 0, "", dtype_rule=same_dtype, category="input", attrs=("role",), exact=True)
