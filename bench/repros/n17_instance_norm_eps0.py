"""N17: F.instance_norm(x, eps=0.0) of an instance [-1.4e-45, 0.0] (subnormal). Its variance
rounds to 0 in float32: ATen's CPU `InvStd` returns 0 where var + eps == 0, so eager gives 0;
the decomposition's `rsqrt(var + eps)` is inf and compiled gives NaN/inf. float64 gives -1, 1.
(On a constant instance float64 is NaN as well, so the subnormal one is the clear case.)
Cause N17 (§25, decompositions strategy). Checked on torch 2.15.0 CPU, 2026-12-07.
Exit 1 while compiled is NaN/inf where eager is finite."""
import sys
import torch
import torch.nn.functional as F


def f(x):
    return F.instance_norm(x, eps=0.0)


x = torch.tensor([[[-1.4e-45, 0.0]]])  # (N=1, C=1, L=2)
want, got, ref = f(x), torch.compile(f)(x), f(x.double())
print("torch", torch.__version__, "| instance_norm([-1.4e-45, 0.0], eps=0):")
print("eager", want.flatten().tolist(), "| float64", ref.flatten().tolist(), "| compiled", got.flatten().tolist())
sys.exit(1 if (want.isfinite() & ~got.isfinite()).any() else 0)
