"""Reductions and scans: over one dim or several, over empty and one-element dims, with the
output dtypes torch gives integers (the sum of int8 is int64), softmax and its log."""

from __future__ import annotations

from fuzzer.ir.ops.shapes import reduce_keepdim, softmax_shape
from fuzzer.ir.ops.spec import lift_softmax, unary

unary("amax", "torch.amax({0}, dim={dim}, keepdim=True)", category="reduce", attrs=("dim",),
      meta=True, exact=True)
unary("sum", "torch.sum({0}, dim={dim}, keepdim=True)", category="reduce", attrs=("dim",),
      strict=True, meta=True)
unary("mean", "torch.mean({0}, dim={dim}, keepdim=True)", category="reduce",
      shape_rule=reduce_keepdim, attrs=("dim",))
unary("var", "torch.var({0}, dim={dim}, keepdim=True, correction=0)", category="reduce",
      shape_rule=reduce_keepdim, attrs=("dim",))
unary("softmax", "torch.softmax({0}, dim={dim})", category="reduce", shape_rule=softmax_shape,
      attrs=("dim",), captures=("torch.softmax", "F.softmax", "Tensor.softmax"),
      lift=lift_softmax)
unary("log_softmax", "torch.log_softmax({0}, dim={dim})", category="reduce",
      shape_rule=softmax_shape, attrs=("dim",))

# ``dims`` a tuple of dims; ``pick`` the element of a pair (var_mean: 0 the variance, 1 the mean).
for _name, _template, _exact in (
        ("amin", "torch.amin({0}, dim={dims}, keepdim={keepdim})", True),
        ("amax_dims", "torch.amax({0}, dim={dims}, keepdim={keepdim})", True),
        ("sum_dims", "torch.sum({0}, dim={dims}, keepdim={keepdim})", False),
        ("mean_dims", "torch.mean({0}, dim={dims}, keepdim={keepdim})", False),
        ("prod", "torch.prod({0}, dim={dim}, keepdim={keepdim})", False),
        ("any", "torch.any({0}, dim={dim}, keepdim={keepdim})", True),
        ("all", "torch.all({0}, dim={dim}, keepdim={keepdim})", True),
        ("logsumexp", "torch.logsumexp({0}, dim={dims}, keepdim={keepdim})", False),
        ("norm", "torch.linalg.vector_norm({0}, {p}, dim={dims}, keepdim={keepdim})", False),
        ("var_c", "torch.var({0}, dim={dims}, correction={correction}, keepdim={keepdim})", False),
        ("std_c", "torch.std({0}, dim={dims}, correction={correction}, keepdim={keepdim})", False),
        ("var_mean", "torch.var_mean({0}, dim={dims}, correction={correction}, "
         "keepdim={keepdim})[{pick}]", False),
        ("std_mean", "torch.std_mean({0}, dim={dims}, correction={correction}, "
         "keepdim={keepdim})[{pick}]", False)):
    unary(_name, _template, category="reduce", meta=True, exact=_exact,
          attrs=tuple(a for a in ("dim", "dims", "keepdim", "p", "correction", "pick")
                      if "{" + a + "}" in _template))
for _name in ("cumsum", "cumprod"):
    unary(_name, f"torch.{_name}({{0}}, dim={{dim}})", category="reduce", attrs=("dim",),
          meta=True)
