"""Layers: norms, convolution, linear and matmul, pooling and resampling, attention."""

from __future__ import annotations

from fuzzer.ir.ops.shapes import (
    adaptive_pool_shape,
    batch_norm_shape,
    conv2d_shape,
    group_norm_shape,
    interpolate_shape,
    linear_shape,
    masked_shape,
    matmul_shape,
    norm_shape,
    pool_shape,
    rope_shape,
    sdpa_shape,
    square_last_shape,
)
from fuzzer.ir.ops.spec import lift_conv2d, register, unary

register("layer_norm", 3, "F.layer_norm({0}, {normalized_shape}, {1}, {2}, eps={eps})",
         shape_rule=norm_shape, category="norm", attrs=("normalized_shape", "eps"))
register("rms_norm", 2, "F.rms_norm({0}, {normalized_shape}, {1}, eps={eps})",
         shape_rule=norm_shape, category="norm", attrs=("normalized_shape", "eps"))
register("batch_norm", 5, "F.batch_norm({0}, {1}, {2}, {3}, {4}, training=False, eps={eps})",
         shape_rule=batch_norm_shape, category="norm", attrs=("eps",))
register("group_norm", 3, "F.group_norm({0}, {groups}, {1}, {2}, eps={eps})",
         shape_rule=group_norm_shape, category="norm", attrs=("groups", "eps"))
register("conv2d", 3,
         "F.conv2d({0}, {1}, {2}, stride={stride}, padding={padding}, groups={groups})",
         shape_rule=conv2d_shape, category="conv", attrs=("stride", "padding", "groups"),
         captures=("F.conv2d",), lift=lift_conv2d)
register("linear", 3, "F.linear({0}, {1}, {2})", shape_rule=linear_shape, category="conv",
         captures=("F.linear",))
register("matmul", 2, "torch.matmul({0}, {1})", shape_rule=matmul_shape, category="layout",
         captures=("torch.matmul", "operator.matmul"))

unary("avg_pool2d", "F.avg_pool2d({0}, {kernel})", category="pool", shape_rule=pool_shape,
      attrs=("kernel",))
unary("max_pool2d", "F.max_pool2d({0}, {kernel})", category="pool", shape_rule=pool_shape,
      attrs=("kernel",), exact=True)
unary("adaptive_avg_pool2d", "F.adaptive_avg_pool2d({0}, {size})", category="pool",
      shape_rule=adaptive_pool_shape, attrs=("size",))
unary("interpolate", "F.interpolate({0}, scale_factor={scale}, mode={mode})", category="pool",
      shape_rule=interpolate_shape, attrs=("scale", "mode"))

# The other pooling and resampling variants: strides, padding, ceil mode, padding counted or
# not, a divisor override, dilation, adaptive windows that overlap (an output size that does not
# divide the input), non-integer scales and a scale of 1 in one dim, every interpolation mode,
# align_corners, antialiasing, explicit output sizes; torch decides their shapes. Tags say where
# the vision-op programs draw them (``resample``, ``pool``; ``gen.edge``), their attrs from
# ``choices`` (a draw torch refuses for an input's rank or size is not placed).
# ``interpolate_size``'s sizes depend on its input: the generator derives them.
POOL_CHOICES: dict[str, tuple] = {
    "kernel": (2, 3, (2, 3), 2), "stride": (None, 1, 2, (2, 1)), "padding": (0, 1, (1, 0)),
    "dilation": (1, 2, 1), "ceil": (False, True), "include_pad": (True, False),
    "divisor": (None, 1, 3), "size": (1, 3, 5, 7, (2, 5), (None, 3), (4, 1), (3, 2, 1)),
    "mode": ("nearest", "nearest-exact", "bilinear", "bicubic", "linear", "trilinear", "area"),
    "align": (None, None, True, False),
    "scale": (0.5, 0.7, 1.5, 2.0, 2.5, 3.0, 1.3, (1.0, 2.5), (0.6, 1.0), (1.0, 1.7, 0.5)),
    "recompute": (None, True), "pick": (1, 1, 0),
}
_AVG = "stride={stride}, padding={padding}, ceil_mode={ceil}, count_include_pad={include_pad}"
_MAX = "stride={stride}, padding={padding}, dilation={dilation}, ceil_mode={ceil}"
for _name, _template, _exact, _tag, _example in (
        ("avg_pool2d_ex", f"F.avg_pool2d({{0}}, {{kernel}}, {_AVG})", False, "pool", None),
        ("max_pool2d_ex", f"F.max_pool2d({{0}}, {{kernel}}, {_MAX})", True, "pool", None),
        ("adaptive_max_pool2d", "F.adaptive_max_pool2d({0}, {size})", True, "pool", None),
        ("avg_pool1d", "F.avg_pool1d({0}, {kernel}, stride={stride}, padding={padding}, "
         "ceil_mode={ceil})", False, "pool", None),
        ("interpolate_size", "F.interpolate({0}, size={size}, mode={mode}, "
         "align_corners={align})", False, None, None),
        ("avg_pool2d_div", f"F.avg_pool2d({{0}}, {{kernel}}, {_AVG}, "
         "divisor_override={divisor})", False, "pool",
         ((2, 3, 7, 6), {"kernel": 3, "stride": 2, "padding": 1, "ceil": True,
                         "include_pad": False, "divisor": 3})),
        ("max_pool1d", f"F.max_pool1d({{0}}, {{kernel}}, {_MAX})", True, "pool",
         ((2, 3, 9), {"kernel": 3, "stride": 2, "padding": 1, "dilation": 2, "ceil": True})),
        ("avg_pool3d", f"F.avg_pool3d({{0}}, {{kernel}}, {_AVG}, divisor_override={{divisor}})",
         False, "pool", ((1, 2, 5, 6, 7), {"kernel": 2, "stride": None, "padding": 1,
                                           "ceil": True, "include_pad": True, "divisor": None})),
        ("max_pool3d", f"F.max_pool3d({{0}}, {{kernel}}, {_MAX})", True, "pool",
         ((1, 2, 5, 6, 7), {"kernel": 3, "stride": 2, "padding": 1, "dilation": 1,
                            "ceil": True})),
        ("adaptive_avg_pool1d", "F.adaptive_avg_pool1d({0}, {size})", False, "pool",
         ((2, 3, 9), {"size": 4})),
        ("adaptive_avg_pool2d_size", "F.adaptive_avg_pool2d({0}, {size})", False, "pool",
         ((2, 3, 7, 9), {"size": (None, 4)})),
        ("adaptive_avg_pool3d", "F.adaptive_avg_pool3d({0}, {size})", False, "pool",
         ((1, 2, 5, 6, 7), {"size": (3, 2, 4)})),
        ("adaptive_max_pool1d", "F.adaptive_max_pool1d({0}, {size})", True, "pool",
         ((2, 3, 9), {"size": 5})),
        ("interpolate_scale", "F.interpolate({0}, scale_factor={scale}, mode={mode}, "
         "align_corners={align}, recompute_scale_factor={recompute})", False, "resample",
         ((2, 3, 5, 7), {"scale": (1.0, 2.5), "mode": "bicubic", "align": False,
                         "recompute": None})),
        ("interpolate_antialias", "F.interpolate({0}, scale_factor={scale}, mode={mode}, "
         "align_corners={align}, antialias=True)", False, "resample",
         ((2, 3, 9, 7), {"scale": 0.7, "mode": "bilinear", "align": False}))):
    _attrs = tuple(dict.fromkeys(a for a in POOL_CHOICES if "{" + a + "}" in _template))
    unary(_name, _template, category="pool", attrs=_attrs, meta=True, exact=_exact,
          tags=(_tag,) if _tag else (),
          choices={a: POOL_CHOICES[a] for a in _attrs} if _tag else {},
          example=(({"shape": _example[0], "role": "x", "dtype": "float32"},), _example[1])
          if _example else ())

unary("causal_mask",
      "{0}.masked_fill(torch.ones({0}.shape[-2:], dtype=torch.bool, device={0}.device).triu(1), "
      "float('-inf'))",
      category="attention", shape_rule=square_last_shape, exact=True)
register("padding_mask", 2, "{0}.masked_fill({1}, float('-inf'))", shape_rule=masked_shape,
         category="attention", exact=True)
register("sdpa", 3, "F.scaled_dot_product_attention({0}, {1}, {2}, is_causal={causal}, "
         "scale={scale})", shape_rule=sdpa_shape, category="attention", attrs=("causal", "scale"))
register("sdpa_masked", 4, "F.scaled_dot_product_attention({0}, {1}, {2}, attn_mask={3}, "
         "scale={scale})", shape_rule=sdpa_shape, category="attention", attrs=("scale",))
register("rope", 3,
         "{0} * {1} + torch.cat((-{0}[..., {half}:], {0}[..., :{half}]), dim=-1) * {2}",
         shape_rule=rope_shape, category="attention", attrs=("half",))
