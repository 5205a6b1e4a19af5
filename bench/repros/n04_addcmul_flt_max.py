"""N4: torch.addcmul(x, t1, t2, value=0.5) with t1 = 3e38, t2 = 2: the product t1 * t2 = 6e38
overflows float32, value * t1 * t2 = 3e38 does not. Compiled forms t1 * t2 first (inf); CPU eager
scales first, (value * t1) * t2, and is finite like float64.
Cause N4 (§20 cause 4; §26 `019baa7755240bd4`). Checked on torch 2.15.0 CPU, 2026-12-07.
Exit 1 while compiled is inf where eager is finite."""
import sys
import torch


def f(x, t1, t2):
    return torch.addcmul(x, t1, t2, value=0.5)


x, t1, t2 = torch.tensor([0.0]), torch.tensor([3e38]), torch.tensor([2.0])
want, got = f(x, t1, t2), torch.compile(f)(x, t1, t2)
ref = f(x.double(), t1.double(), t2.double())
print("torch", torch.__version__, "| addcmul(0, 3e38, 2, value=0.5):")
print("eager", want.item(), "| float64", ref.item(), "| compiled", got.item())
sys.exit(1 if (want.isfinite() & ~got.isfinite()).any() else 0)
