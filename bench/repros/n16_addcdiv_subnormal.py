"""N16: torch.addcdiv(a, b, c, value=0.001) with c = -9.18e-41 (subnormal). CPU eager computes
a + (value * b) / c = -1.09e37, as float64 does; Dynamo's `handle_addcdiv` (and Inductor's
lowering) divide first, b / c = 1 / -9.18e-41 overflows to -inf, and compiled is -inf.
Cause N16 (§27 `df60f066621ed6d1`). Checked on torch 2.15.0 CPU, 2026-12-07.
Exit 1 while compiled is inf where eager is finite."""
import sys
import torch


def f(a, b, c):
    return torch.addcdiv(a, b, c, value=0.001)


a, b, c = torch.tensor([0.0195]), torch.tensor([1.0]), torch.tensor([-9.18e-41])
want, got = f(a, b, c), torch.compile(f)(a, b, c)
ref = f(a.double(), b.double(), c.double())
print("torch", torch.__version__, "| addcdiv(0.0195, 1.0, -9.18e-41, value=0.001):")
print("eager", want.item(), "| float64", ref.item(), "| compiled", got.item())
sys.exit(1 if (want.isfinite() & ~got.isfinite()).any() else 0)
