"""N3: torch.lerp(start, end, w) with end near FLT_MAX and |w| >= 0.5 (here w = -0.562). The
decomposition takes the `end - (end - start) * (1 - w)` branch and rounds the product alone:
3.4e38 * 1.562 overflows to inf, so compiled is -inf; eager's kernel fuses the multiply-add and
gives -1.91e38, as float64 does. Cause N3 (§20 cause 3; §26/§27 `74cfa0bf7fe82881`).
Checked on torch 2.15.0 CPU, 2026-12-07. Exit 1 while compiled is inf where eager is finite."""
import sys
import torch


def f(s, e, w):
    return torch.lerp(s, e, w)


s, e, w = torch.tensor([0.938]), torch.tensor([3.4e38]), torch.tensor([-0.562])
want, got = f(s, e, w), torch.compile(f)(s, e, w)
ref = f(s.double(), e.double(), w.double())
print("torch", torch.__version__, "| lerp(0.938, 3.4e38, -0.562):")
print("eager", want.item(), "| float64", ref.item(), "| compiled", got.item())
sys.exit(1 if (want.isfinite() & ~got.isfinite()).any() else 0)
